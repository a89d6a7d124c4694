#!/usr/bin/python3
"""Generate the ONNX backend test corpus and the bytes Google's protobuf writes for it.

Runs onnx.backend.test.cmd_tools generate-data (python3-onnx's ~945 node/simple test
models with ~2,900 input/output .pb files) into OUT/data, then writes OUT/manifest.tsv:

    TYPE <TAB> INPUT_PATH <TAB> EXPECTED_PATH

one line per file, paths relative to the manifest's directory. TYPE is the message name
oc_msgdesc_find accepts. EXPECTED is what protobuf writes after parsing INPUT
(ParseFromString + SerializeToString with onnx's own classes): a separate file under
OUT/expected only when it differs from INPUT, otherwise INPUT itself.

Usage: /usr/bin/python3 gen_corpus.py OUT
"""
import os
import shutil
import sys
import warnings

from oracle_common import require_onnx, write_manifest

# The message a test_data_set file holds, by the graph input/output type it feeds.
TYPE_BY_VALUE_CASE = {
    "tensor_type": "TensorProto",
    "sequence_type": "SequenceProto",
    "map_type": "MapProto",
    "optional_type": "OptionalProto",
    "sparse_tensor_type": "SparseTensorProto",
}


def restore_numpy_aliases(np):
    """numpy 1.24 removed np.float & co.; onnx 1.12's test cases still use them."""
    with warnings.catch_warnings():  # hasattr itself warns about np.bool & co.
        warnings.simplefilter("ignore", FutureWarning)
        for name, value in (("float", float), ("int", int), ("bool", bool),
                            ("object", object), ("complex", complex), ("str", str)):
            if not hasattr(np, name):
                setattr(np, name, value)


def generate(data_dir):
    import numpy as np
    restore_numpy_aliases(np)
    from onnx.backend.test import cmd_tools
    argv = sys.argv
    sys.argv = ["cmd_tools", "generate-data", "-o", data_dir]
    try:
        cmd_tools.main()
    finally:
        sys.argv = argv


def data_file_type(onnx, model, name):
    """TYPE of test_data_set_*/input_N.pb or output_N.pb from the model's graph."""
    stem = name[:-len(".pb")]
    kind, _, index = stem.rpartition("_")
    values = {"input": model.graph.input, "output": model.graph.output}[kind]
    case = values[int(index)].type.WhichOneof("value")
    if case not in TYPE_BY_VALUE_CASE:
        raise SystemExit(f"gen_corpus: unexpected value type {case!r} for {name}")
    return TYPE_BY_VALUE_CASE[case]


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = os.path.abspath(sys.argv[1])
    onnx = require_onnx()
    data_dir = os.path.join(out, "data")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(data_dir)
    generate(data_dir)

    classes = {name: getattr(onnx, name) for name in
               ("ModelProto", "TensorProto", "SequenceProto", "MapProto",
                "OptionalProto", "SparseTensorProto")}
    entries = []  # (type, input path)
    for root, dirs, files in os.walk(data_dir):
        dirs.sort()
        if "model.onnx" not in files:
            continue
        model_path = os.path.join(root, "model.onnx")
        entries.append(("ModelProto", model_path))
        model = onnx.load(model_path)
        for ds in dirs:
            if not ds.startswith("test_data_set_"):
                continue
            for name in sorted(os.listdir(os.path.join(root, ds))):
                if name.endswith(".pb"):
                    entries.append((data_file_type(onnx, model, name),
                                    os.path.join(root, ds, name)))

    lines = []
    for type_name, path in entries:
        with open(path, "rb") as f:
            data = f.read()
        msg = classes[type_name]()
        msg.ParseFromString(data)
        expected = msg.SerializeToString()
        lines.append((type_name, path, data, expected))
    counts = write_manifest(out, lines)
    print(f"gen_corpus: {counts['total']} files ({counts['ModelProto']} models), "
          f"{counts['differ']} re-serialize differently")
    if counts["ModelProto"] < 900 or counts["total"] < 3500:
        raise SystemExit("gen_corpus: the corpus is unexpectedly small")


if __name__ == "__main__":
    main()
