#!/usr/bin/env python3
"""runtime_test.py ONNXZ ORT_DIR WORK - ONNX Runtime as an oracle (spec/onnxz.md A-70..).

Builds the corpus (gen_models.py: python3-onnx; export_torch.py: Debian's python3-torch),
writes every model in every form onnxz writes, runs each form in ONNX Runtime
(runner.js: onnxruntime-node, CPU, one thread) with the same fixed inputs as the model it
came from, and requires the outputs to be bit-identical to the original's (a digest of
each output's dtype, dims and bytes). A form that ORT refuses to load or run fails the
test with ORT's message. Forms that need OpenSSL (checksums, encryption) are left out in
a build without it (ONNXZ_HAVE_OPENSSL=0); ONNXZ_TEST_REDUCED=1 (the sanitizer build,
tests/runtime/CMakeLists.txt) uses the small corpus only (no 72 MiB and 100 MB models).

Also checked, as facts the spec and README state about ORT:
- at the default threshold, every model loads in every form (RT-1: shape inputs stay in
  the model), and the forms that put data outside the model really do so;
- with --threshold 0 (everything out), the empty tensors stay inside the model (E-27,
  A-14) and every form of the `empty` model loads;
- `unpack` of an archive from another writer whose empty tensors are 0-byte entries
  writes those tensors inside the model (A-31): ORT loads it (it aborted the node
  process before) and onnx.load reads it;
- ORT cannot open an .onnxz itself (it is a ZIP): the stub is the way (A-70).
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import onnx
from onnx import TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
HAVE_OPENSSL = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "1"
REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
PY = sys.executable
KEY = "runtime-test passphrase"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def run(*args, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))}: exit {r.returncode}: {r.stderr.strip()}")
    return r


# ---- inputs: fixed values from each graph input's type ----

ONNX_TO_ORT = {TensorProto.FLOAT: "float32", TensorProto.DOUBLE: "float64",
               TensorProto.INT64: "int64", TensorProto.INT32: "int32", TensorProto.INT8: "int8",
               TensorProto.UINT8: "uint8", TensorProto.BOOL: "bool",
               TensorProto.STRING: "string"}


def feeds_for(path):
    model = onnx.load(path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        if inp.name in inits:
            continue
        tt = inp.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        n = 1
        for d in dims:
            n *= d
        kind = ONNX_TO_ORT[tt.elem_type]
        if kind.startswith("float"):
            data = [((i * 37) % 101 - 50) / 25.0 for i in range(n)]
        elif kind == "bool":
            data = [i % 2 == 0 for i in range(n)]
        elif kind == "string":
            data = [f"s{i}" for i in range(n)]
        else:  # valid row numbers of every Gather table of the corpus (at least 1024 rows)
            data = [str((i * 7919) % 997) if kind == "int64" else (i * 7919) % 97
                    for i in range(n)]
        feeds[inp.name] = {"type": kind, "dims": dims, "data": data}
    return feeds


def external_count(path):
    model = onnx.load(path, load_external_data=False)
    n = 0
    for t in onnx.external_data_helper._get_all_tensors(model):
        if t.data_location == TensorProto.EXTERNAL:
            n += 1
    return n


# ---- forms: (name, how to write it from SRC into DIR) -> the path ORT loads ----

def forms(onnxz, src, d, extra):
    """Yields (form, path) for every form of src, written into d with the convert
    options extra (threshold)."""
    def convert(out, *opts):
        run(onnxz, "-q", "convert", src, os.path.join(d, out), *extra, *opts)
        return os.path.join(d, out)

    def stub(archive):
        out = archive[:-len(".onnxz")] + ".stub.onnx"
        run(onnxz, "-q", "stub", archive, out)
        return out

    yield "two-file", convert("two.onnx", "--external-data", "two.data")
    yield "aligned-4096", convert("al.onnx", "--external-data", "al.data", "--align", "4096")
    yield "n-file", convert("nf.onnx", "--external-data", "nf.data", "--max-file-size", "64K")
    if HAVE_OPENSSL:
        yield "checksummed", convert("ck.onnx", "--external-data", "ck.data", "--checksum")
    a64 = convert("a64.onnxz")
    yield "onnxz-stub-64", stub(a64)
    yield "onnxz-stub-4096", stub(convert("a4k.onnxz", "--align", "4096"))
    yield "deflated-model-stub", stub(convert("def.onnxz", "--deflate-model"))
    un = os.path.join(d, "unpacked")
    run(onnxz, "-q", "unpack", a64, un)
    yield "unpacked", os.path.join(un, "model.onnx")
    back = os.path.join(d, "back.onnx")
    run(onnxz, "-q", "convert", a64, back)
    yield "archive-back-to-onnx", back
    edited = os.path.join(d, "meta.onnxz")
    shutil.copyfile(a64, edited)
    run(onnxz, "-q", "meta", edited, "--producer", "edited", "--doc-string", "x" * 5000,
        "--set", "runtime=ort")
    yield "meta-edited-stub", stub(edited)
    if HAVE_OPENSSL:
        key = os.path.join(d, "key.txt")
        with open(key, "w") as f:
            f.write(KEY + "\n")
        enc, dec = os.path.join(d, "a.enc"), os.path.join(d, "dec.onnxz")
        run(onnxz, "-q", "encrypt", "--key-file", key, a64, enc)
        run(onnxz, "-q", "decrypt", "--key-file", key, enc, dec)
        yield "encrypted-decrypted-stub", stub(dec)


EXTERNAL_FORMS = {"two-file", "aligned-4096", "n-file", "checksummed", "onnxz-stub-64",
                  "onnxz-stub-4096", "deflated-model-stub", "unpacked", "meta-edited-stub",
                  "encrypted-decrypted-stub"}


def run_ort(ort_dir, work, jobs):
    path = os.path.join(work, "jobs.json")
    with open(path, "w") as f:
        json.dump(jobs, f)
    r = subprocess.run(["node", os.path.join(HERE, "runner.js"), ort_dir, path],
                       capture_output=True, text=True)
    results = {res["id"]: res for res in map(json.loads, r.stdout.splitlines())}
    if r.returncode != 0:  # ORT took the process down: the job after the last result did it
        crashed = next((j["id"] for j in jobs if j["id"] not in results), None)
        if crashed is not None:
            results[crashed] = {"id": crashed, "error": f"the node process died (exit "
                                f"{r.returncode}): {r.stderr.strip()[-600:]}"}
    return results


def check_model(onnxz, ort_dir, work, name, src, extra, externals):
    """Every form of src against src itself, in one node process."""
    d = os.path.join(work, name + ("-t0" if extra else ""))
    shutil.rmtree(d, ignore_errors=True)
    failed_before = len(failures)
    os.makedirs(d)
    feeds = feeds_for(src)
    jobs = [{"id": "original", "model": src, "feeds": feeds},
            {"id": "single", "model": None, "feeds": feeds}]
    jobs[1]["model"] = os.path.join(d, "single.onnx")
    run(onnxz, "-q", "convert", src, jobs[1]["model"])
    try:
        for form, path in forms(onnxz, src, d, extra):
            jobs.append({"id": form, "model": path, "feeds": feeds})
            if form in EXTERNAL_FORMS:
                externals[form] = externals.get(form, 0) + external_count(path)
    except RuntimeError as e:
        fail(f"{name}: writing a form: {e}")
    results = run_ort(ort_dir, work, jobs)
    base = results["original"]
    if "error" in base:
        fail(f"{name}: the original does not run in ORT: {base['error']}")
        return
    for job in jobs[1:]:
        res = results.get(job["id"])
        label = f"{name}{' ' + ' '.join(extra) if extra else ''} [{job['id']}]"
        if res is None:
            fail(f"{label}: no result from the runner")
        elif "error" in res:
            fail(f"{label}: ORT: {res['error']}")
        elif res["outputs"] != base["outputs"]:
            diff = [k for k in base["outputs"] if res["outputs"].get(k) != base["outputs"][k]]
            fail(f"{label}: outputs differ from the original's: {', '.join(diff)}")
    if len(failures) == failed_before:  # a failing model's forms stay for a look
        print(f"ok {name}{' ' + ' '.join(extra) if extra else ''}: {len(jobs) - 1} forms, "
              f"{len(base['outputs'])} outputs each", flush=True)
        shutil.rmtree(d)


def foreign_archive(src, path):
    """An archive as another writer may make it (Python's zipfile, no alignment): every
    tensor with raw_data an entry, the empty ones too (0-byte entries, length 0)."""
    model = onnx.load(src)
    entries = []
    for t in onnx.external_data_helper._get_all_tensors(model):
        if t.HasField("raw_data"):
            entries.append((t.name, t.raw_data))
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", t.name), ("length", str(len(entries[-1][1])))):
                e = t.external_data.add()
                e.key, e.value = k, v
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(name, data)
        z.writestr("__MODEL_PROTO", model.SerializeToString())
    return sum(1 for _, d in entries if not d)


def check_foreign_empty(onnxz, ort_dir, work, src):
    d = os.path.join(work, "foreign")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    arc = os.path.join(d, "f.onnxz")
    n_empty = foreign_archive(src, arc)
    if n_empty == 0:
        fail("foreign archive: the corpus's empty model has no empty raw_data tensor")
    un = os.path.join(d, "un")
    try:
        run(onnxz, "-q", "unpack", arc, un)
    except RuntimeError as e:
        fail(f"unpack of an archive with 0-byte entries: {e}")
        return
    model_path = os.path.join(un, "model.onnx")
    refs = onnx.load(model_path, load_external_data=False)
    zero = [t.name for t in onnx.external_data_helper._get_all_tensors(refs)
            if t.data_location == TensorProto.EXTERNAL
            and any(e.key == "length" and e.value == "0" for e in t.external_data)]
    if zero:
        fail(f"unpack: references of length 0 left in the model (A-31): {zero}")
    try:
        loaded = onnx.load(model_path)
        onnx.checker.check_model(loaded)
    except Exception as e:  # noqa: BLE001 - the oracle's failure is the finding
        fail(f"unpack with 0-byte entries: onnx.load fails: {e}")
    feeds = feeds_for(src)
    res = run_ort(ort_dir, work, [{"id": "original", "model": src, "feeds": feeds},
                                  {"id": "unpacked", "model": model_path, "feeds": feeds}])
    if "error" in res.get("unpacked", {"error": "no result"}):
        fail(f"unpack with 0-byte entries: ORT: {res.get('unpacked', {}).get('error', 'no result')}")
    elif res["unpacked"]["outputs"] != res["original"]["outputs"]:
        fail("unpack with 0-byte entries: outputs differ from the original's")
    else:
        print(f"ok unpack of a foreign archive with {n_empty} empty entries (A-31)", flush=True)
    shutil.rmtree(d)


def main():
    onnxz, ort_dir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(work, "corpus")
    shutil.rmtree(corpus, ignore_errors=True)
    run(PY, os.path.join(HERE, "gen_models.py"), corpus, *(["--reduced"] if REDUCED else []))
    run(PY, os.path.join(HERE, "export_torch.py"), corpus)
    if not REDUCED:
        run(PY, os.path.join(HERE, "export_torch.py"), corpus, "--embedding")
    models = sorted(f[:-5] for f in os.listdir(corpus) if f.endswith(".onnx"))
    externals = {}
    for name in models:
        check_model(onnxz, ort_dir, work, name, os.path.join(corpus, name + ".onnx"), [],
                    externals)
    # Every form that puts tensors outside the model did so somewhere in the corpus at the
    # default threshold: the comparisons above are not between inline models.
    for form in sorted(EXTERNAL_FORMS & set(externals)):
        if externals[form] == 0:
            fail(f"[{form}]: no tensor of the corpus left the model at the default threshold")
    # Everything out but the 0-byte tensors (E-27, A-14).
    check_model(onnxz, ort_dir, work, "empty", os.path.join(corpus, "empty.onnx"),
                ["--threshold", "0"], {})
    check_foreign_empty(onnxz, ort_dir, work, os.path.join(corpus, "empty.onnx"))
    # ORT and an archive: it cannot open the ZIP itself; the stub is the way.
    archive = os.path.join(work, "direct.onnxz")
    run(onnxz, "-q", "convert", "-f", os.path.join(corpus, "cnn.onnx"), archive)
    res = run_ort(ort_dir, work, [{"id": "direct", "model": archive, "feeds": {}}])["direct"]
    if "error" not in res:
        fail("ORT opened an .onnxz itself: README and A-70 say it cannot")
    print(f"ok ORT on an .onnxz itself: {res.get('error', '')[:120]}")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    shutil.rmtree(corpus)
    print(f"all {len(models)} models in every form: outputs bit-identical to the originals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
