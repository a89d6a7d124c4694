"""Helpers shared by the oracle scripts (gen_corpus.py, gen_allfields.py, check_written.py)."""
import collections
import importlib
import os
import sys


def require_onnx():
    """Import python3-onnx or fail loudly: a missing oracle is a failure, not a skip."""
    try:
        import onnx
        importlib.import_module("numpy")  # needed too, not used here
    except ImportError as e:
        sys.stderr.write(
            f"oracle: {sys.executable} cannot import onnx/numpy ({e}).\n"
            "The oracle tests need Debian's python3-onnx: apt-get install python3-onnx\n")
        raise SystemExit(1)
    return onnx


def require_protobuf(protoc):
    """The protobuf runtime and protoc, or a clear failure."""
    import shutil
    try:
        from google.protobuf.internal import api_implementation
    except ImportError as e:
        sys.stderr.write(f"oracle: {sys.executable} cannot import google.protobuf ({e}).\n"
                         "The oracle tests need Debian's python3-protobuf.\n")
        raise SystemExit(1)
    if not shutil.which(protoc):
        sys.stderr.write(f"oracle: protoc not found ({protoc!r}); the oracle tests need "
                         "Debian's protobuf-compiler: apt-get install protobuf-compiler\n")
        raise SystemExit(1)
    return api_implementation.Type()


def write_manifest(out, entries):
    """Writes out/manifest.tsv from (type, input_path, input_bytes, expected_bytes).

    expected_bytes is stored in out/expected/ only when it differs from the input;
    otherwise the line names the input as its own expectation. Returns counts.
    """
    counts = collections.Counter()
    lines = []
    for type_name, input_path, input_bytes, expected in entries:
        expected_path = input_path
        if expected != input_bytes:
            rel = os.path.relpath(input_path, out).replace(os.sep, "__")
            expected_path = os.path.join(out, "expected", rel + ".expected")
            os.makedirs(os.path.dirname(expected_path), exist_ok=True)
            with open(expected_path, "wb") as f:
                f.write(expected)
            counts["differ"] += 1
        counts[type_name] += 1
        counts["total"] += 1
        lines.append(f"{type_name}\t{os.path.relpath(input_path, out)}\t"
                     f"{os.path.relpath(expected_path, out)}\n")
    if not lines:
        raise SystemExit("oracle: no cases generated")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.writelines(lines)
    return counts
