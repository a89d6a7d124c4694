#!/usr/bin/env python3
"""The .onnxz archive (spec/onnxz.md), checked by independent means.

1. Every model of python3-onnx's generated corpus goes .onnx -> .onnxz -> .onnx in the C
   driver and must come back byte-identical (A-22); at the default alignment, at 4096,
   and with a deflated __MODEL_PROTO.
2. Each archive is parsed here with a ZIP parser of our own (struct, not zipfile):
   every STORED entry's data offset is a multiple of the alignment (A-4), the padding sits
   in a well-formed extra-field record, __MODEL_PROTO is the last entry (A-2), entry names
   follow A-10, tensors point at entries as A-20 says.
3. Real clients from Debian accept a sample of them: unzip -t, 7z t, python -m zipfile -t,
   bsdtar -tf, zipalign -c (non-zip64), and python3-onnx loads an unzipped archive with
   tensors identical to the source (A-30).
4. Archives written by Python's zipfile (stored and deflated entries) load (A-23).
5. Archive-level hostile cases each give their status (A-1, A-21, A-40).
6. Random access to one tensor, and zero-copy pointers aligned in the mapping.

usage: archive_test.py ARCHIVE_DRIVER WORKDIR ORACLE_MANIFEST
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

driver, work, manifest = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)  # its own folder: the other archive tests work beside it, in parallel
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(*args, timeout=600):
    p = subprocess.run([driver, *args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()


# ---- an independent reader of local headers ----

def local_entries(path):
    """(name, method, data_offset, size, extra) of every local header, in file order,
    following the central directory (read here with struct, not zipfile)."""
    data = open(path, "rb").read()
    eocd = data.rfind(b"PK\x05\x06")
    assert eocd >= 0, "no end record"
    (_, _, _, _, count, cd_size, cd_off, _) = struct.unpack("<IHHHHIIH", data[eocd:eocd + 22])
    if count == 0xFFFF or cd_off == 0xFFFFFFFF:  # zip64: locator then end record
        loc = data.rfind(b"PK\x06\x07", 0, eocd)
        (_, _, z64_off, _) = struct.unpack("<IIQI", data[loc:loc + 20])
        (_, _, _, _, _, _, _, count, cd_size, cd_off) = struct.unpack(
            "<IQHHIIQQQQ", data[z64_off:z64_off + 56])
    out, p = [], cd_off
    for _ in range(count):
        sig, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, clen, _, _, _, lho = \
            struct.unpack("<IHHHHHHIIIHHHHHII", data[p:p + 46])
        assert sig == 0x02014B50
        name = data[p + 46:p + 46 + nlen].decode()
        cextra = data[p + 46 + nlen:p + 46 + nlen + elen]
        z = parse_extra(cextra).get(1)
        if z is not None:  # zip64 central fields in order of those that overflowed
            vals = list(struct.unpack("<%dQ" % (len(z) // 8), z[:len(z) // 8 * 8]))
            if usize == 0xFFFFFFFF: usize = vals.pop(0)
            if csize == 0xFFFFFFFF: csize = vals.pop(0)
            if lho == 0xFFFFFFFF: lho = vals.pop(0)
        lsig, _, _, _, _, _, _, _, _, lnlen, lelen = struct.unpack("<IHHHHHIIIHH", data[lho:lho + 30])
        assert lsig == 0x04034B50
        lextra = data[lho + 30 + lnlen:lho + 30 + lnlen + lelen]
        out.append((name, method, lho + 30 + lnlen + lelen, usize, lextra, lho))
        p += 46 + nlen + elen + clen
    return out


def parse_extra(extra):
    """Extra-field records {header id: payload}; asserts they tile the field exactly."""
    recs, i = {}, 0
    while i < len(extra):
        assert i + 4 <= len(extra), "extra field: truncated record header"
        hid, n = struct.unpack("<HH", extra[i:i + 4])
        assert i + 4 + n <= len(extra), "extra field: record runs past the field"
        recs[hid] = extra[i + 4:i + 4 + n]
        i += 4 + n
    return recs


NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_layout(path, align, source_model):
    ents = local_entries(path)
    by_file = sorted(ents, key=lambda e: e[5])
    check(ents[-1][0] == "__MODEL_PROTO" and by_file[-1][0] == "__MODEL_PROTO",
          f"{path}: __MODEL_PROTO is not the last entry (A-2)")
    lower = set()
    for name, method, off, size, lextra, _ in ents:
        try:
            parse_extra(lextra)
        except AssertionError as e:
            check(False, f"{path}: {name}: malformed local extra field: {e}")
        if method == 0:
            check(off % align == 0, f"{path}: {name} data at {off}, not a multiple of {align} (A-4)")
        if name != "__MODEL_PROTO":
            check(NAME_RE.match(name) is not None and not name.startswith("__"),
                  f"{path}: entry name {name!r} is not a C identifier (A-10)")
            check(name.lower() not in lower, f"{path}: {name} repeats ignoring case (A-10)")
            lower.add(name.lower())
    # each tensor that became an entry points at it with location and length
    with zipfile.ZipFile(path) as z:
        m = onnx.ModelProto.FromString(z.read("__MODEL_PROTO"))
        sizes = {i.filename: i.file_size for i in z.infolist()}
    from onnx.external_data_helper import _get_all_tensors
    for t in _get_all_tensors(m):
        if t.data_location == TensorProto.EXTERNAL:
            kv = {e.key: e.value for e in t.external_data}
            check(set(kv) == {"location", "length"} and not t.HasField("raw_data"),
                  f"{path}: tensor {t.name} reference {kv} (A-20)")
            check(sizes.get(kv.get("location")) == int(kv.get("length", -1)),
                  f"{path}: tensor {t.name} length differs from its entry (A-20)")


# ---- 1 + 2: the corpus ----
models = []
for line in open(manifest):
    typ, inp, _ = line.rstrip("\n").split("\t")
    if typ == "ModelProto":
        models.append(os.path.join(os.path.dirname(manifest), inp))
check(len(models) > 900, f"only {len(models)} corpus models")
listing = os.path.join(work, "models.txt")
open(listing, "w").write("\n".join(models) + "\n")
variants = [("default", [], 64), ("align4096", ["--align", "4096"], 4096),
            ("deflated", ["--deflate-model", "--threshold", "0"], 64)]
for vname, args, align in variants:
    out = os.path.join(work, vname)
    os.makedirs(out)
    rc, msg = run("roundtrip", listing, out, *args, timeout=900)
    check(rc == 0, f"roundtrip {vname}: {msg[-2000:]}")
    for i in range(0, len(models), 1 if vname == "default" else 7):
        check_layout(os.path.join(out, f"{i}.onnxz"), align, models[i])

# ---- 3: real clients on a sample, and python3-onnx on unzipped archives ----
def biggest(n):
    sized = sorted(range(len(models)), key=lambda i: -os.path.getsize(models[i]))
    return sized[:n] + list(range(0, len(models), 97))


sample = biggest(8)
clients = [(["unzip", "-tqq"], None), (["7z", "t"], "Everything is Ok"),
           ([sys.executable, "-m", "zipfile", "-t"], None), (["bsdtar", "-tf"], None)]
for vname, _, align in variants:
    for i in sample:
        path = os.path.join(work, vname, f"{i}.onnxz")
        for cmd, must in clients:
            p = subprocess.run(cmd + [path], capture_output=True, text=True)
            text = p.stdout + p.stderr
            check(p.returncode == 0 and (must is None or must in text) and "WARNING" not in text.upper(),
                  f"{' '.join(cmd[:2])} rejects {vname}/{i}.onnxz: {text[-300:]}")
        # zipalign -c ALIGN checks every STORED entry's data offset against ALIGN
        p = subprocess.run(["zipalign", "-c", str(align), path], capture_output=True, text=True)
        check(p.returncode == 0, f"zipalign -c {align} rejects {vname}/{i}.onnxz: {p.stdout[-300:]}")
for i in sample[:6]:
    d = os.path.join(work, f"unzipped{i}")
    subprocess.run(["unzip", "-qo", os.path.join(work, "default", f"{i}.onnxz"), "-d", d], check=True)
    src = onnx.load(models[i])
    got = onnx.load(os.path.join(d, "__MODEL_PROTO"))
    from onnx.external_data_helper import _get_all_tensors
    a = [numpy_helper.to_array(t).tobytes() for t in _get_all_tensors(src)]
    b = [numpy_helper.to_array(t).tobytes() for t in _get_all_tensors(got)]
    check(a == b, f"python3-onnx reads different tensors from unzipped archive {i} (A-30)")

# ---- a model with tensors in every place, and random access ----
rng = np.random.default_rng(3)
arr = lambda n, name: numpy_helper.from_array(rng.random((n,)).astype(np.float32), name)
sub = helper.make_graph([helper.make_node("Constant", [], ["s"], value=arr(900, "in-subgraph"))], "sub", [],
                        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [900])])
sparse = helper.make_sparse_tensor(arr(300, "sp.values"), numpy_helper.from_array(
    np.arange(300, dtype=np.int64), "sp.indices"), [1000])
g = helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], then_branch=sub, else_branch=sub),
     helper.make_node("Constant", [], ["k"], value=arr(500, "const value/with:odd chars"))],
    "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [900])],
    [arr(2000, "W"), arr(2000, "w"), arr(10, "small"), arr(700, "123start"), arr(600, "__MODEL_PROTO")])
g.sparse_initializer.append(sparse)
rich = helper.make_model(g)
rich_path = os.path.join(work, "rich.onnx")
onnx.save(rich, rich_path)
open(os.path.join(work, "rich.txt"), "w").write(rich_path + "\n")
os.makedirs(os.path.join(work, "rich"))
rc, msg = run("roundtrip", os.path.join(work, "rich.txt"), os.path.join(work, "rich"))
check(rc == 0, f"rich model roundtrip: {msg}")
rich_arc = os.path.join(work, "rich", "0.onnxz")
if rc == 0:
    check_layout(rich_arc, 64, rich)
    names = [e[0] for e in local_entries(rich_arc)]
    for want in ("W", "w_2", "t123start", "t__MODEL_PROTO", "const_value_with_odd_chars",
                 "in_subgraph", "in_subgraph_2", "sp_values", "sp_indices"):
        check(want in names, f"entry {want} missing from {names} (A-10, A-11)")
    check("small" not in names, "a 40-byte tensor became an entry (threshold 64, A-11)")
    out = os.path.join(work, "W.bin")
    rc, msg = run("tensor", rich_arc, "W", out)
    check(rc == 0 and open(out, "rb").read() == numpy_helper.to_array(g.initializer[0]).tobytes(),
          f"random access to W: {msg}")
    rc, msg = run("tensor", rich_arc, "small", out)
    check(rc == 0 and open(out, "rb").read() == numpy_helper.to_array(g.initializer[2]).tobytes(),
          f"random access to an inline tensor: {msg}")
    rc, msg = run("tensor", rich_arc, "nope", out)
    check(rc == 1 and msg.startswith("not found"), f"random access to a missing tensor: {msg}")
    rc, msg = run("aligned", rich_arc, "64")
    check(rc == 0, f"zero-copy tensors are not aligned in the mapping: {msg}")
    for mode in (["--copy"], ["--pread"], ["--copy", "--pread"]):
        o = os.path.join(work, "rich_mode.onnx")
        rc, msg = run("load", rich_arc, o, *mode)
        check(rc == 0 and open(o, "rb").read() == open(rich_path, "rb").read(), f"load {mode}: {msg}")

# ---- 4: archives written by Python's zipfile ----
def py_archive(path, compress_tensors, compress_model, entries_model=None):
    m = onnx.ModelProto()
    m.CopyFrom(rich)
    blobs = {}
    for t in m.graph.initializer:
        if len(t.raw_data) >= 64:
            name = re.sub(r"[^A-Za-z0-9_]", "_", t.name) + "_py"
            blobs[name] = t.raw_data
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", name), ("length", str(len(blobs[name])))):
                e = t.external_data.add()
                e.key, e.value = k, v
    with zipfile.ZipFile(path, "w") as z:
        for name, data in blobs.items():
            z.writestr(name, data, zipfile.ZIP_DEFLATED if compress_tensors else zipfile.ZIP_STORED)
        z.writestr("__MODEL_PROTO", entries_model or m.SerializeToString(),
                   zipfile.ZIP_DEFLATED if compress_model else zipfile.ZIP_STORED)
    return m


for ct, cm in ((False, False), (True, True), (False, True)):
    path = os.path.join(work, f"py_{int(ct)}{int(cm)}.onnxz")
    py_archive(path, ct, cm)
    o = os.path.join(work, "py_out.onnx")
    rc, msg = run("load", path, o)
    check(rc == 0, f"python zipfile archive (deflated tensors={ct}, model={cm}): {msg}")
    if rc == 0:
        back = onnx.load(o)
        check([numpy_helper.to_array(t).tobytes() for t in back.graph.initializer] ==
              [numpy_helper.to_array(t).tobytes() for t in rich.graph.initializer],
              f"python zipfile archive {ct}{cm}: tensors differ")

# ---- 5: hostile archives ----
H = os.path.join(work, "hostile")
os.makedirs(H)


def hostile(name, build, expect, fragment=None):
    path = os.path.join(H, name + ".onnxz")
    build(path)
    rc, msg = run("load", path, os.path.join(H, name + ".out"))
    ok = rc == 1 and msg.startswith(expect + ":")
    check(ok, f"hostile {name}: expected '{expect}', got rc={rc} '{msg}'")
    if ok and fragment:
        check(fragment in msg, f"hostile {name}: '{msg}' lacks '{fragment}'")


def no_model(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("W", b"x" * 100)


def reference(path, location, length, offset=None):
    m = helper.make_model(helper.make_graph([], "g", [], [], [TensorProto(name="x", data_type=1, dims=[4])]))
    t = m.graph.initializer[0]
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("length", length)) + ((("offset", offset),) if offset else ()):
        e = t.external_data.add()
        e.key, e.value = k, v
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x", b"\0" * 16)
        z.writestr("__MODEL_PROTO", m.SerializeToString())


def version2(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("__ONNXZ_VERSION", b"2")
        z.writestr("__MODEL_PROTO", helper.make_model(helper.make_graph([], "g", [], [])).SerializeToString())


def bad_model(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("__MODEL_PROTO", b"\x3a\xff\xff\xff\xff\x0f")  # graph with a huge length


hostile("no_model_proto", no_model, "not found", "__MODEL_PROTO")
hostile("missing_entry", lambda p: reference(p, "nothere", "16"), "not found", "nothere")
hostile("length_mismatch", lambda p: reference(p, "x", "12"), "inconsistent", "A-21")
hostile("offset_nonzero", lambda p: reference(p, "x", "16", "4"), "inconsistent", "A-21")
hostile("points_at_model", lambda p: reference(p, "__MODEL_PROTO", "16"), "not found")
hostile("path_location", lambda p: reference(p, "../x", "16"), "not found")
hostile("newer_version", version2, "unsupported", "A-40")
hostile("truncated_model", bad_model, "truncated")

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
