#!/usr/bin/env python3
"""External data (spec/external-data.md), checked against Debian's python3-onnx.

1. python3-onnx writes external-data models in each layout it has; we load them (copy,
   no_copy, two threads) and save them inline: the bytes must equal
   onnx.load(...).SerializeToString() (E-16).
2. We write two-file, aligned, split and checksummed models; python3-onnx loads them,
   onnx.checker.check_model passes on the path, and every tensor equals the source
   (E-20..E-24); offsets, file sizes and checksums are checked independently here.
3. One hostile model per safety rule (E-10..E-15, E-23), each with the status it must
   give; nothing outside the model directory is read or written.

usage: ext_test.py EXT_DRIVER WORKDIR
"""
import copy
import hashlib
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

driver, work = sys.argv[1], sys.argv[2]
# Built without OpenSSL, SHA-1 checksums are refused with a clear "unsupported" error.
HAVE_OPENSSL = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "1"
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([driver, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, (p.stdout + p.stderr).strip()


def source_model():
    """Tensors everywhere onnx looks for them: initializers, a Constant's attribute, and an
    If node's subgraphs; sizes around the thresholds."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.random((i * 53 + 3,)).astype(np.float32), f"w{i}")
             for i in range(12)]
    inits.append(numpy_helper.from_array(np.arange(4000, dtype=np.int64), "big_i64"))
    c_then = helper.make_node("Constant", [], ["t_out"],
                              value=numpy_helper.from_array(rng.random((700,)).astype(np.float32), "tv"))
    c_else = helper.make_node("Constant", [], ["e_out"],
                              value=numpy_helper.from_array(rng.random((700,)).astype(np.float32), "ev"))
    out = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [700])
    then_g = helper.make_graph([c_then], "then", [], [out("t_out")])
    else_g = helper.make_graph([c_else], "else", [], [out("e_out")])
    nodes = [
        helper.make_node("Constant", [], ["c"],
                         value=numpy_helper.from_array(rng.random((500,)).astype(np.float32), "cv")),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
    ]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                          [out("y"), helper.make_tensor_value_info("c", TensorProto.FLOAT, [500])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def python_expected(model_path):
    """What we write after loading a model with external data (E-16): onnx.load's model
    with data_location unset on the tensors that were external (onnx sets it to DEFAULT)."""
    from onnx.external_data_helper import _get_all_tensors
    refs = onnx.load(model_path, load_external_data=False)
    was_external = [t.data_location == TensorProto.EXTERNAL for t in _get_all_tensors(refs)]
    m = onnx.load(model_path)
    for t, ext in zip(_get_all_tensors(m), was_external):
        if ext:
            t.ClearField("data_location")
    return m.SerializeToString()


def all_tensors(m):
    from onnx.external_data_helper import _get_all_tensors
    return {t.name: numpy_helper.to_array(t).tobytes() for t in _get_all_tensors(m)}


SRC = source_model()
SRC_TENSORS = all_tensors(SRC)
inline_path = os.path.join(work, "inline.onnx")
onnx.save(SRC, inline_path)

# 1. python writes, we read (E-16)
layouts = [("one_file", dict(all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)),
           ("threshold", dict(all_tensors_to_one_file=True, location="weights.bin", size_threshold=1024)),
           ("per_tensor", dict(all_tensors_to_one_file=False, size_threshold=0)),
           ("subdir", dict(all_tensors_to_one_file=True, location="data/w.bin", size_threshold=0))]
for name, kw in layouts:
    d = os.path.join(work, "py_" + name)
    os.makedirs(os.path.join(d, "data"))
    onnx.save_model(copy.deepcopy(SRC), os.path.join(d, "m.onnx"), save_as_external_data=True, **kw)
    expected = python_expected(os.path.join(d, "m.onnx"))
    # and that is the model python had before it saved it with external data
    check(expected == SRC.SerializeToString(), f"{name}: not the model before the external save")
    for mode in ([], ["--no-copy"], ["--threads", "2"], ["--no-copy", "--align", "1"]):
        out = os.path.join(d, "ours.onnx")
        rc, msg = run(os.path.join(d, "m.onnx"), out, *mode)
        check(rc == 0, f"load python's {name} layout {mode}: {msg}")
        if rc == 0:
            check(open(out, "rb").read() == expected,
                  f"{name} {mode}: our inline save differs from python's model (E-16)")

# moved data: --data-dir and --location (E-17)
d = os.path.join(work, "py_one_file")
moved = os.path.join(work, "moved")
os.makedirs(moved)
shutil.copy(os.path.join(d, "weights.bin"), os.path.join(moved, "renamed.bin"))
shutil.copy(os.path.join(d, "m.onnx"), os.path.join(moved, "alone.onnx"))
os.makedirs(os.path.join(moved, "elsewhere"))
shutil.copy(os.path.join(d, "weights.bin"), os.path.join(moved, "elsewhere", "weights.bin"))
rc, msg = run(os.path.join(moved, "alone.onnx"), os.path.join(moved, "o1.onnx"),
              "--data-dir", os.path.join(moved, "elsewhere"))
check(rc == 0, f"--data-dir: {msg}")
rc, msg = run(os.path.join(moved, "alone.onnx"), os.path.join(moved, "o2.onnx"),
              "--location", os.path.join(moved, "renamed.bin"))
check(rc == 0, f"--location override: {msg}")
if rc == 0:
    check(open(os.path.join(moved, "o2.onnx"), "rb").read() ==
          python_expected(os.path.join(d, "m.onnx")), "--location: bytes differ")


# 2. we write, python reads (E-20..E-24)
def ext_refs(model_path):
    m = onnx.load(model_path, load_external_data=False)
    from onnx.external_data_helper import _get_all_tensors
    refs = []
    for t in _get_all_tensors(m):
        if t.data_location == TensorProto.EXTERNAL:
            kv = {e.key: e.value for e in t.external_data}
            refs.append((t.name, kv))
    return refs


variants = [("plain", [], None, None),
            ("aligned", ["--align", "4096"], 4096, None),
            ("split", ["--align", "64", "--max-file-size", "6000"], 64, 6000),
            ("checksum", ["--checksum"], None, None),
            ("threshold", ["--threshold", "2048"], None, None)]
for name, args, align, maxsize in variants:
    d = os.path.join(work, "ours_" + name)
    os.makedirs(d)
    model_path = os.path.join(d, "m.onnx")
    rc, msg = run(inline_path, model_path, "--external-data", "w.bin", *args)
    if name == "checksum" and not HAVE_OPENSSL:
        check(rc == 1 and msg.startswith("unsupported:") and "OpenSSL" in msg,
              f"--checksum without OpenSSL: {msg}")
        check(not os.path.exists(model_path), "--checksum without OpenSSL wrote a model")
        continue
    check(rc == 0, f"save {name}: {msg}")
    if rc != 0:
        continue
    try:
        onnx.checker.check_model(model_path)
        loaded = onnx.load(model_path)
        check(all_tensors(loaded) == SRC_TENSORS, f"{name}: tensors differ after onnx.load")
    except Exception as e:  # noqa: BLE001 - report any failure of the oracle
        check(False, f"{name}: python3-onnx cannot load our output: {e}")
        continue
    refs = ext_refs(model_path)
    check(len(refs) > 0, f"{name}: no tensor went external")
    threshold = 2048 if name == "threshold" else 1024  # the default: E-27
    from onnx.external_data_helper import _get_all_tensors
    for t in _get_all_tensors(SRC):
        if t.HasField("raw_data"):
            went = any(n == t.name for n, _ in refs)
            check(went == (len(t.raw_data) >= threshold),
                  f"{name}: tensor {t.name} ({len(t.raw_data)} bytes) external={went}")
    for tname, kv in refs:
        check(list(kv)[:3] == ["location", "offset", "length"], f"{name}: key order {list(kv)}")
        off, n = int(kv["offset"]), int(kv["length"])
        data = open(os.path.join(d, kv["location"]), "rb").read()[off:off + n]
        check(len(data) == n, f"{name}: {tname} runs past its file")
        if align:
            check(off % align == 0, f"{name}: {tname} offset {off} not aligned to {align}")
        if name == "checksum":
            check(kv.get("checksum") == hashlib.sha1(data).hexdigest(), f"{name}: checksum of {tname}")
    files = sorted(f for f in os.listdir(d) if f.startswith("w.bin"))
    if maxsize:
        check(len(files) > 1, f"split: only {files}")
        for f in files:
            size = os.path.getsize(os.path.join(d, f))
            single = sum(1 for _, kv in refs if kv["location"] == f) == 1
            check(size <= maxsize or single, f"split: {f} is {size} bytes")
    check(not [f for f in os.listdir(d) if ".tmp-" in f], f"{name}: temporary files left")
    # our own loader reads our output like onnx does
    rc, msg = run(model_path, os.path.join(d, "back.onnx"), *(["--verify"] if name == "checksum" else []))
    check(rc == 0 and open(os.path.join(d, "back.onnx"), "rb").read() == SRC.SerializeToString(),
          f"{name}: our reload is not the source model (E-16): {msg}")

# 3. hostile files: one per rule, each with its status
H = os.path.join(work, "hostile")
os.makedirs(os.path.join(H, "sub"))
outside = os.path.join(work, "outside")
os.makedirs(outside)
payload = np.arange(64, dtype=np.float32).tobytes()
for p in (os.path.join(H, "good.bin"), os.path.join(outside, "secret.bin")):
    open(p, "wb").write(payload)
os.symlink(os.path.join(H, "good.bin"), os.path.join(H, "link.bin"))
os.symlink(outside, os.path.join(H, "linkdir"))
open(os.path.join(H, "hard_src.bin"), "wb").write(payload)
os.link(os.path.join(H, "hard_src.bin"), os.path.join(H, "hard.bin"))
os.mkfifo(os.path.join(H, "fifo.bin"))
os.makedirs(os.path.join(H, "adir"))
device = None
if os.geteuid() == 0:
    try:
        os.mknod(os.path.join(H, "dev.bin"), stat.S_IFCHR | 0o600, os.makedev(1, 5))
        device = "dev.bin"
    except OSError:
        pass


def hostile(name, entries, expect, *args, fragment=None):
    t = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[16])
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        e = t.external_data.add()
        e.key = k
        e.value = v
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])], [t])
    path = os.path.join(H, name + ".onnx")
    open(path, "wb").write(helper.make_model(g).SerializeToString())
    rc, msg = run(path, os.path.join(H, name + ".out.onnx"), *args)
    ok = (rc == 0) if expect == "ok" else (rc == 1 and msg.startswith(expect + ":"))
    check(ok, f"hostile {name}: expected '{expect}', got rc={rc} '{msg}'")
    if fragment and ok:
        check(fragment in msg, f"hostile {name}: message '{msg}' lacks '{fragment}'")
    if expect != "ok":
        check("'x'" in msg or "x" in msg, f"hostile {name}: message does not name the tensor: {msg}")


L = lambda v: ("location", v)
hostile("absolute", [L(os.path.join(outside, "secret.bin"))], "unsafe path", fragment="absolute")
hostile("dotdot", [L("../outside/secret.bin")], "unsafe path", fragment="..")
hostile("dotdot_inner", [L("sub/../../outside/secret.bin")], "unsafe path")
hostile("symlink_file", [L("link.bin")], "unsafe path", fragment="symbolic link")
hostile("symlink_dir", [L("linkdir/secret.bin")], "unsafe path", fragment="symbolic link")
hostile("hard_link", [L("hard.bin")], "unsafe path", fragment="hard link")
hostile("fifo", [L("fifo.bin")], "unsafe path", fragment="not a regular file")
hostile("directory", [L("adir")], "unsafe path", fragment="not a regular file")
if device:
    hostile("device", [L(device)], "unsafe path", fragment="not a regular file")
hostile("empty_location", [L("")], "unsafe path")
hostile("nul_in_location", [L("good.bin\0../x")], "unsafe path")
hostile("no_location", [("offset", "0")], "malformed", fragment="no location")
hostile("missing_file", [L("nope.bin")], "not found")
hostile("negative_offset", [L("good.bin"), ("offset", "-1")], "malformed")
hostile("text_offset", [L("good.bin"), ("offset", "abc")], "malformed")
hostile("hex_offset", [L("good.bin"), ("offset", "0x10")], "malformed")
hostile("space_length", [L("good.bin"), ("length", " 64")], "malformed")
hostile("huge_length", [L("good.bin"), ("length", "99999999999999999999")], "malformed")
hostile("offset_past_end", [L("good.bin"), ("offset", "257")], "truncated")
hostile("length_past_end", [L("good.bin"), ("offset", "200"), ("length", "64")], "truncated")
hostile("overflowing_sum", [L("good.bin"), ("offset", "16"), ("length", "9223372036854775807")], "truncated")
hostile("checksum_bad", [L("good.bin"), ("checksum", "0" * 40)],
        "checksum mismatch" if HAVE_OPENSSL else "unsupported", "--verify",
        fragment="checksum" if HAVE_OPENSSL else "OpenSSL")
hostile("checksum_unverified", [L("good.bin"), ("checksum", "0" * 40)], "ok")
hostile("checksum_good", [L("good.bin"), ("checksum", hashlib.sha1(payload).hexdigest())],
        "ok" if HAVE_OPENSSL else "unsupported", "--verify")


def checksums_in_parallel():
    """E-15 with threads, in two layouts: 24 tensors of 320 KiB in one data file (hashed from
    the file with pread) and 24 files of 40 KiB (hashed through their mappings, no
    descriptor kept); checksums from hashlib, two of them wrong. Every thread count, copying
    or not, reports the first wrong tensor in model order, as a serial load does, and a
    model with every checksum right loads to the same bytes."""
    d = os.path.join(H, "par_sum")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(11)
    for layout, size in [("one", 320 << 10), ("many", 40 << 10)]:
        blobs = [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in range(24)]
        if layout == "one":
            refs = [("w.bin", i * size) for i in range(24)]
            with open(os.path.join(d, "w.bin"), "wb") as f:
                f.write(b"".join(blobs))
        else:
            refs = [(f"w{i}.bin", 0) for i in range(24)]
            for (name, _), blob in zip(refs, blobs):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(blob)
        for bad in ([], [7, 19]):
            inits = []
            for i, (blob, (loc, off)) in enumerate(zip(blobs, refs)):
                t = TensorProto(name=f"p{i}", data_type=TensorProto.UINT8, dims=[len(blob)],
                                data_location=TensorProto.EXTERNAL)
                digest = hashlib.sha1(blob).hexdigest()
                for k, v in [("location", loc), ("offset", str(off)), ("length", str(len(blob))),
                             ("checksum", "f" * 40 if i in bad else digest.upper() if i % 2 else digest)]:
                    e = t.external_data.add()
                    e.key, e.value = k, v
                inits.append(t)
            path = os.path.join(d, f"{layout}{len(bad)}.onnx")
            open(path, "wb").write(helper.make_model(helper.make_graph([], "g", [], [], inits)).SerializeToString())
            for threads in ["1", "2", "5"]:
                for mode in [[], ["--no-copy"]]:
                    out = os.path.join(d, "out.onnx")
                    rc, msg = run(path, out, "--verify", "--threads", threads, *mode)
                    what = f"checksums, {layout} file(s), {len(bad)} wrong, {threads} threads {mode}"
                    if bad:
                        check(rc == 1 and msg.startswith("checksum mismatch:") and "'p7'" in msg,
                              f"{what}: want the first wrong tensor p7: rc={rc} '{msg}'")
                    elif check(rc == 0, f"{what}: rc={rc} '{msg}'"):
                        got = [numpy_helper.to_array(t).tobytes() for t in onnx.load(out).graph.initializer]
                        check(got == blobs, f"{what}: the loaded bytes differ")


if HAVE_OPENSSL:
    checksums_in_parallel()

hostile("basepath_ignored", [L("good.bin"), ("basepath", outside)], "ok")
hostile("unknown_key_ignored", [L("good.bin"), ("mystery", "../../etc/passwd")], "ok")
# E-3: the key we do not define survives the load and the re-save; the known ones do not
kept = onnx.load(os.path.join(H, "unknown_key_ignored.out.onnx"), load_external_data=False).graph.initializer[0]
check([(e.key, e.value) for e in kept.external_data] == [("mystery", "../../etc/passwd")]
      and kept.HasField("raw_data"), f"E-3: external_data after load + save: {list(kept.external_data)}")
hostile("last_key_wins", [L("../outside/secret.bin"), L("good.bin")], "ok")
hostile("misaligned_no_copy", [L("good.bin"), ("offset", "4"), ("length", "64")], "inconsistent",
        "--no-copy", "--align", "64", fragment="aligned")
hostile("misaligned_copy", [L("good.bin"), ("offset", "4"), ("length", "64")], "ok", "--align", "64")

# saving never writes outside the model's directory (E-23)
rc, msg = run(inline_path, os.path.join(H, "save_out.onnx"), "--external-data", "../outside/evil.bin")
check(rc == 1 and msg.startswith("invalid argument"), f"save to ../: {msg}")
check(not os.path.exists(os.path.join(outside, "evil.bin")), "save wrote outside the directory")
rc, msg = run(inline_path, os.path.join(H, "abs.onnx"), "--external-data", os.path.join(outside, "abs.bin"))
check(rc == 0 and os.path.exists(os.path.join(H, "abs.bin")) and not os.path.exists(os.path.join(outside, "abs.bin")),
      f"absolute location not reduced to its file name: {msg}")
check(sorted(os.listdir(outside)) == ["secret.bin"], f"files appeared outside: {os.listdir(outside)}")
check(open(os.path.join(outside, "secret.bin"), "rb").read() == payload, "outside file changed")

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
