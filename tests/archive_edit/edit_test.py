#!/usr/bin/env python3
"""In-place model replacement (spec/onnxz.md A-50..A-59), checked by independent means.

Areas (one ctest each):
  replace  edits of every kind on archives from oz_archive_save and from Python's zipfile:
           every other entry keeps its local header, its bytes and its central header byte for
           byte (parsed here with struct, not zipfile); __MODEL_PROTO is last, aligned (A-53),
           holds the new model; the archive is compact after the edit, or in the appended
           layout with append_only (A-54, A-57); our reader loads the new model with the
           same tensors; unzip -t, 7z t, python -m zipfile -t, bsdtar -tf and zipalign -c
           accept every result
  refuse   every refusal leaves the file byte-identical and no journal behind; so does an
           append that fails half-way (a file size limit standing in for a full disk); the
           locks of A-58 (another editor, a reader, the editor's own mapping)
  crash    the editor killed (SIGKILL) at each step of A-54 and at random moments: the
           archive opens with the old model or the new one, or (killed while appending) is
           refused by our reader as by python's zipfile until the next edit rolls it back
           to the old one (A-56); the next edit completes normally
  zip64    an archive with more than 65,535 entries (zip64 end records, Z-23)
  large    a 4.1 GiB tensor entry: the model and the central directory past 4 GiB (zip64
           offsets, Z-22, Z-23); ctest label `large`

usage: edit_test.py AREA --driver EDIT_DRIVER --work DIR
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import time
import zipfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("area", choices=["replace", "refuse", "crash", "zip64", "large"])
ap.add_argument("--driver", required=True)
ap.add_argument("--work", required=True)
args = ap.parse_args()
W = args.work
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
failures = []
MODEL = "__MODEL_PROTO"
# Under valgrind (tests/CMakeLists.txt: ONNXZ_TEST_REDUCED=1 with ONNXZ_TEST_WRAPPER) every
# driver run costs seconds: crash kills at 10 random moments instead of 40, and zip64 does
# not load its 65,600-tensor archive (the load resolves each tensor's entry with a linear
# search, O(n^2): 15 s natively, about 8 minutes under valgrind); python's zipfile and unzip
# still check the edited archive, and every other build loads it.
REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
STEPS = ["journaled", "appending", "appended", "committed", "compacting", "compacted", "truncated"]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def drv(*a, timeout=600):
    p = subprocess.run([args.driver, *a], capture_output=True, text=True, timeout=timeout)
    out = (p.stdout + p.stderr).strip()
    lines = out.splitlines()
    steps = [l.split()[1] for l in lines if l.startswith("step ")]
    last = lines[-1] if lines and not lines[-1].startswith("step ") else ""
    return p.returncode, last, steps


def path_in(name):
    return os.path.join(W, name)


# ---- an independent ZIP parser (struct only) ----

def parse_extra(extra):
    recs, i = {}, 0
    while i < len(extra):
        assert i + 4 <= len(extra), "extra field: truncated record header"
        hid, n = struct.unpack("<HH", extra[i:i + 4])
        assert i + 4 + n <= len(extra), "extra field: record runs past the field"
        recs[hid] = extra[i + 4:i + 4 + n]
        i += 4 + n
    return recs


def parse_zip(path):
    data = open(path, "rb").read()
    eocd = None
    for i in range(len(data) - 22, max(-1, len(data) - 65557 - 1), -1):
        if data[i:i + 4] == b"PK\x05\x06" and i + 22 + struct.unpack("<H", data[i + 20:i + 22])[0] == len(data):
            eocd = i
            break
    assert eocd is not None, "no end record ends the file"
    _, _, _, _, n, cd_size, cd_off, clen = struct.unpack("<IHHHHIIH", data[eocd:eocd + 22])
    end_start, zip64 = eocd, False
    if eocd >= 20 and data[eocd - 20:eocd - 16] == b"PK\x06\x07":
        zip64 = True
        _, _, z_off, _ = struct.unpack("<IIQI", data[eocd - 20:eocd])
        sig, rec, _, _, _, _, _, n, cd_size, cd_off = struct.unpack("<IQHHIIQQQQ", data[z_off:z_off + 56])
        assert sig == 0x06064B50 and z_off + 12 + rec == eocd - 20, "zip64 end record"
        end_start = z_off
    assert cd_off + cd_size == end_start, "the central directory does not end where the end records begin"
    entries, p = [], cd_off
    for _ in range(n):
        (sig, _, _, flags, method, _, _, crc, csize, usize, nlen, elen, cmlen, _, _, _, lho) = \
            struct.unpack("<IHHHHHHIIIHHHHHII", data[p:p + 46])
        assert sig == 0x02014B50, "central header signature"
        name = data[p + 46:p + 46 + nlen].decode()
        z = parse_extra(data[p + 46 + nlen:p + 46 + nlen + elen]).get(1)
        if z is not None:
            vals = list(struct.unpack("<%dQ" % (len(z) // 8), z[:len(z) // 8 * 8]))
            if usize == 0xFFFFFFFF: usize = vals.pop(0)
            if csize == 0xFFFFFFFF: csize = vals.pop(0)
            if lho == 0xFFFFFFFF: lho = vals.pop(0)
        raw = data[p:p + 46 + nlen + elen + cmlen]
        lsig, _, _, _, _, _, _, _, _, lnl, lel = struct.unpack("<IHHHHHIIIHH", data[lho:lho + 30])
        assert lsig == 0x04034B50, "local header signature"
        lextra = data[lho + 30 + lnl:lho + 30 + lnl + lel]
        parse_extra(lextra)
        entries.append(dict(name=name, method=method, flags=flags, crc=crc, csize=csize, usize=usize,
                            lho=lho, data_off=lho + 30 + lnl + lel, raw=raw, lextra=lextra))
        p += len(raw)
    return dict(data=data, size=len(data), entries=entries, cd_off=cd_off, cd_size=cd_size,
                comment=data[eocd + 22:], zip64=zip64)


def span(z, e):
    return z["data"][e["lho"]:e["data_off"] + e["csize"]]


def payload(z, e):
    raw = z["data"][e["data_off"]:e["data_off"] + e["csize"]]
    return raw if e["method"] == 0 else zlib.decompress(raw, -15)


def tensors_end(z):
    """D: where the last entry before the model ends."""
    return max([e["data_off"] + e["csize"] for e in z["entries"] if e["name"] != MODEL] or [0])


def unused(z):
    return z["cd_off"] - sum(e["data_off"] + e["csize"] - e["lho"] for e in z["entries"])


# ---- models ----

def all_tensors(m):
    from onnx.external_data_helper import _get_all_tensors
    return list(_get_all_tensors(m))


def base_model(doc="base model " * 40, n=5):
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.random((k * 37 + 20,)).astype(np.float32), f"w{k}") for k in range(n)]
    inits.append(numpy_helper.from_array(np.arange(4, dtype=np.float32), "small"))  # stays inline
    const = numpy_helper.from_array(rng.random((300,)).astype(np.float32), "const.value")
    g = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=const), helper.make_node("Add", ["x", "c"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [300])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [300])], inits)
    m = helper.make_model(g, producer_name="edit_test")
    m.doc_string = doc
    return m


def model_of(path):
    with zipfile.ZipFile(path) as z:
        return onnx.ModelProto.FromString(z.read(MODEL))


def blobs_of(path):
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i.filename) for i in z.infolist() if i.filename != MODEL}


def inline(m, blobs):
    """What our reader gives for model m of an archive holding blobs (A-22)."""
    out = onnx.ModelProto()
    out.CopyFrom(m)
    for t in all_tensors(out):
        if t.data_location == TensorProto.EXTERNAL:
            kv = {e.key: e.value for e in t.external_data}
            t.raw_data = blobs[kv["location"]]
            t.ClearField("external_data")
            t.ClearField("data_location")
    return out


def write_model(m, name):
    p = path_in(name)
    open(p, "wb").write(m.SerializeToString())
    return p


def edited(m, how):
    n = onnx.ModelProto()
    n.CopyFrom(m)
    if how == "metadata":
        n.metadata_props.add(key="license", value="MIT")
    elif how == "doc":
        n.doc_string = "edited " + n.doc_string[:50]
    elif how == "node":
        n.graph.node.append(helper.make_node("Relu", ["y"], ["z"]))
        n.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [300]))
    elif how == "bigger":
        n.doc_string = "a much longer description. " * 4000
    elif how == "smaller":
        n.doc_string = ""
        n.producer_name = ""
    elif how == "same":
        pass
    else:
        raise ValueError(how)
    return n


def saved_archive(name, m=None, extra=()):
    src = write_model(m or base_model(), name + ".onnx")
    arc = path_in(name + ".onnxz")
    rc, msg, _ = drv("save", src, arc, *extra)
    assert rc == 0, msg
    return arc


def loads_as(arc, expected, what, *extra):
    out = arc + ".out.onnx"
    rc, msg, _ = drv("load", arc, out, *extra)
    if not check(rc == 0, f"{what}: our reader refuses the archive: {msg}"):
        return False
    got = onnx.load(out, load_external_data=False)
    return check(got == expected, f"{what}: our reader loads another model than expected")


def clients(arc, align, what):
    """Debian's ZIP clients accept the archive; zipalign checks STORED data against align
    (None: the archive was not aligned to begin with)."""
    tools = [(["unzip", "-tqq"], None), (["7z", "t"], "Everything is Ok"),
             ([sys.executable, "-m", "zipfile", "-t"], None), (["bsdtar", "-tf"], None)]
    if align:
        tools.append((["zipalign", "-c", str(align)], None))
    for cmd, must in tools:
        p = subprocess.run(cmd + [arc], capture_output=True, text=True)
        text = p.stdout + p.stderr
        check(p.returncode == 0 and (must is None or must in text) and "WARNING" not in text.upper(),
              f"{what}: {' '.join(cmd[:2])} rejects the archive: {text[-400:]}")


def check_edit(before, arc, new_model, what, align=64, layout="compact", method=0):
    """The rules of A-50..A-54 between the archive `before` (parsed) and `arc` now."""
    try:
        z = parse_zip(arc)
    except AssertionError as e:
        return check(False, f"{what}: the edited archive does not parse: {e}")
    others_b = [e for e in before["entries"] if e["name"] != MODEL]
    others_a = [e for e in z["entries"] if e["name"] != MODEL]
    check([e["name"] for e in z["entries"]] == [e["name"] for e in others_b] + [MODEL],
          f"{what}: entries are not the old ones in order with {MODEL} last (A-52)")
    for b, a in zip(others_b, others_a):
        check(a["raw"] == b["raw"], f"{what}: the central header of {b['name']} changed (A-52)")
        check(a["lho"] == b["lho"] and span(z, a) == span(before, b),
              f"{what}: entry {b['name']} moved or changed (A-50)")
    me = z["entries"][-1]
    check(all(e["lho"] < me["lho"] for e in others_a), f"{what}: {MODEL} is not last in the file (A-2)")
    check(me["method"] == method, f"{what}: {MODEL} method {me['method']}, expected {method}")
    body = payload(z, me)
    check(zlib.crc32(body) == me["crc"], f"{what}: {MODEL} CRC")
    check(onnx.ModelProto.FromString(body) == new_model, f"{what}: {MODEL} holds another model")
    if me["method"] == 0:
        check(me["data_off"] % align == 0, f"{what}: {MODEL} data at {me['data_off']}, not a multiple of {align} (A-53)")
        pad = parse_extra(me["lextra"]).get(0xD935)
        check(pad is None or struct.unpack("<H", pad[:2])[0] == align,
              f"{what}: the padding record does not state {align} (Z-11)")
    d = tensors_end(z)
    if layout == "compact":
        check(me["lho"] == d and unused(z) == 0 and z["cd_off"] == me["data_off"] + me["csize"],
              f"{what}: not compact: model at {me['lho']}, tensors end at {d}, {unused(z)} unused bytes (A-54)")
    else:
        check(me["lho"] >= before["size"], f"{what}: the appended model lies inside the old archive (A-57)")
    rc, msg, _ = drv("space", arc)
    check(rc == 0 and msg.split() == [str(z["size"]), str(z["size"]), str(unused(z))],
          f"{what}: oz_archive_get_space says '{msg}', the file has {z['size']} bytes, {unused(z)} unused")
    check(not os.path.exists(arc + "-journal"), f"{what}: a journal was left behind (A-55)")
    return z


def run_replace(arc, new_model, what, *extra, expect_steps=None, before=None):
    before = before or parse_zip(arc)
    rc, msg, steps = drv("replace", arc, write_model(new_model, "new.onnx"), *extra)
    check(rc == 0 and msg == "ok", f"{what}: replace failed: {msg}")
    if expect_steps is not None:
        check(steps == expect_steps, f"{what}: steps {steps}, expected {expect_steps}")
    return before, steps


# ======================================================================================
if args.area == "replace":
    base = base_model()
    for how in ("metadata", "doc", "node", "bigger", "smaller", "same"):
        arc = saved_archive("r_" + how, base)
        old = model_of(arc)
        blobs = blobs_of(arc)
        new = edited(old, how)
        before, steps = run_replace(arc, new, how, expect_steps=STEPS)
        check_edit(before, arc, new, how)
        loads_as(arc, inline(new, blobs), how)
        clients(arc, 64, how)

    # an archive with no tensor entry (every tensor small enough to stay inline): the tail
    # starts at offset 0, and compaction writes over the old model's local header there
    small = helper.make_model(helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["y"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "b")]))
    arc = saved_archive("modelonly", small)
    check([e["name"] for e in parse_zip(arc)["entries"]] == [MODEL], "model only: the archive has tensor entries")
    for how in ("bigger", "smaller", "metadata"):
        new = edited(model_of(arc), how)
        before, _ = run_replace(arc, new, f"model only, {how}")
        check_edit(before, arc, new, f"model only, {how}")
        loads_as(arc, inline(new, {}), f"model only, {how}")
    clients(arc, 64, "model only")

    # the usual flow in C, with the model's bytes shared with the mapping (no_copy)
    arc = saved_archive("touch", base)
    old, blobs = model_of(arc), blobs_of(arc)
    before = parse_zip(arc)
    data0 = open(arc, "rb").read()
    rc, msg, _ = drv("touch", arc, "k", "v", "--no-copy", "--mapped")
    check(rc == 1 and msg.startswith("busy: busy:") and "A-58" in msg,
          f"touch while the process maps the archive: expected busy (A-58), got {rc} '{msg}'")
    check(open(arc, "rb").read() == data0, "touch, refused: the file changed")
    rc, msg, _ = drv("touch", arc, "k", "v", "--no-copy")
    check(rc == 0 and msg == "ok", f"touch: {msg}")
    new = edited(old, "same")
    new.metadata_props.add(key="k", value="v")
    check_edit(before, arc, new, "touch")
    loads_as(arc, inline(new, blobs), "touch")

    # a deflated model; alignment 4096 found in the archive; an explicit alignment
    arc = saved_archive("deflate", base)
    new = edited(model_of(arc), "metadata")
    before, _ = run_replace(arc, new, "deflate", "--deflate")
    check_edit(before, arc, new, "deflate", method=8)
    loads_as(arc, inline(new, blobs_of(arc)), "deflate")
    clients(arc, 64, "deflate")
    arc = saved_archive("a4096", base, ("--align", "4096"))
    new = edited(model_of(arc), "bigger")
    before, _ = run_replace(arc, new, "align 4096")
    check_edit(before, arc, new, "align 4096", align=4096)
    clients(arc, 4096, "align 4096")
    arc = saved_archive("a256", base)
    new = edited(model_of(arc), "node")
    before, _ = run_replace(arc, new, "--align 256", "--align", "256")
    check_edit(before, arc, new, "--align 256", align=256)

    # append_only: the appended layout (old model left as unused bytes), which every client
    # accepts; then an edit that fits in the unused bytes writes there directly
    arc = saved_archive("append", base)
    blobs = blobs_of(arc)
    m0 = model_of(arc)
    big = edited(m0, "bigger")
    before, _ = run_replace(arc, big, "append_only", "--append-only",
                            expect_steps=["journaled", "appending", "appended", "committed"])
    z = check_edit(before, arc, big, "append_only", layout="appended")
    if z:
        old_tail = before["size"] - tensors_end(before)
        check(unused(z) == old_tail, f"append_only: {unused(z)} unused bytes, expected the old tail's {old_tail}")
    clients(arc, 64, "append_only")
    loads_as(arc, inline(big, blobs), "append_only")
    before, _ = run_replace(arc, m0, "direct", expect_steps=["compacting", "compacted", "truncated"])
    check_edit(before, arc, m0, "direct")
    loads_as(arc, inline(m0, blobs), "direct")
    clients(arc, 64, "direct")

    # a run of edits, each checked
    arc = saved_archive("series", base)
    blobs = blobs_of(arc)
    cur = model_of(arc)
    rng = random.Random(5)
    for i in range(12):
        how = rng.choice(["metadata", "doc", "node", "bigger", "smaller", "same"])
        opts = rng.choice([[], [], ["--append-only"], ["--deflate"]])
        new = edited(cur, how)
        before, _ = run_replace(arc, new, f"series {i} {how} {opts}", *opts)
        check_edit(before, arc, new, f"series {i} {how} {opts}",
                   layout="appended" if opts == ["--append-only"] else "compact",
                   method=8 if opts == ["--deflate"] else 0)
        loads_as(arc, inline(new, blobs), f"series {i}")
        cur = new
    clients(arc, 64, "series")

    # an archive from Python's zipfile: timestamps, a deflated tensor, a comment; the other
    # entries' central headers are kept byte for byte, the comment too
    m = base_model()
    blobs = {}
    for t in m.graph.initializer:
        if len(t.raw_data) >= 64:
            blobs[t.name] = t.raw_data
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            t.external_data.add(key="location", value=t.name)
            t.external_data.add(key="length", value=str(len(blobs[t.name])))
    arc = path_in("py.onnxz")
    with zipfile.ZipFile(arc, "w") as zf:
        for i, (name, b) in enumerate(blobs.items()):
            zf.writestr(zipfile.ZipInfo(name, (2020, 5, 17, 10, 20, 30)), b,
                        zipfile.ZIP_DEFLATED if i == 1 else zipfile.ZIP_STORED)
        zf.writestr(MODEL, m.SerializeToString())
        zf.comment = b"made by zipfile"
    infos = [(i.filename, i.date_time, i.compress_type, i.external_attr, i.extra) for i in zipfile.ZipFile(arc).infolist()]
    new = edited(m, "metadata")
    before, _ = run_replace(arc, new, "zipfile archive")
    z = check_edit(before, arc, new, "zipfile archive", align=64)
    if z:
        check(z["comment"] == b"made by zipfile", "zipfile archive: the archive comment was not kept")
    after = [(i.filename, i.date_time, i.compress_type, i.external_attr, i.extra) for i in zipfile.ZipFile(arc).infolist()]
    check(after[:-1] == infos[:-1], "zipfile archive: other entries' attributes changed")
    loads_as(arc, inline(new, blobs), "zipfile archive")
    clients(arc, None, "zipfile archive")

# ======================================================================================
elif args.area == "refuse":
    def refused(name, arc, new_model, expect, fragment, *extra):
        before = open(arc, "rb").read()
        src = write_model(new_model, name + ".new.onnx") if new_model is not None else path_in("any.onnx")
        rc, msg, steps = drv("replace", arc, src, *extra)
        check(rc == 1 and msg.startswith(expect + ":"), f"{name}: expected '{expect}', got rc={rc} '{msg}'")
        check(fragment in msg, f"{name}: '{msg}' lacks '{fragment}'")
        check(steps == [], f"{name}: the editor reached {steps}")
        check(open(arc, "rb").read() == before, f"{name}: the file changed")
        check(not os.path.exists(arc + "-journal"), f"{name}: a journal was left behind")

    write_model(base_model(), "any.onnx")
    arc = saved_archive("ref", base_model())
    m = model_of(arc)

    def pointing(location, length=None, offset=None, drop=None):
        n = onnx.ModelProto()
        n.CopyFrom(m)
        t = n.graph.initializer[0]
        kv = {e.key: e.value for e in t.external_data}
        kv["location"] = location
        if length is not None: kv["length"] = length
        if offset is not None: kv["offset"] = offset
        if drop: kv.pop(drop)
        t.ClearField("external_data")
        for k, v in kv.items():
            t.external_data.add(key=k, value=v)
        return n

    refused("missing_entry", arc, pointing("nothere"), "inconsistent", "A-51")
    refused("length_mismatch", arc, pointing("w0", length="12"), "inconsistent", "A-51")
    refused("offset_nonzero", arc, pointing("w0", offset="4"), "inconsistent", "A-51")
    refused("points_at_model", arc, pointing(MODEL), "inconsistent", "A-51")
    refused("no_location", arc, pointing("w0", drop="location"), "inconsistent", "A-51")
    refused("bad_alignment", arc, m, "invalid argument", "Z-10", "--align", "100")

    # __MODEL_PROTO not the last entry in the file (a tensor entry after it)
    notlast = path_in("notlast.onnxz")
    with zipfile.ZipFile(arc) as src, zipfile.ZipFile(notlast, "w") as dst:
        names = [i.filename for i in src.infolist()]
        for name in [names[0], MODEL] + [x for x in names[1:] if x != MODEL]:
            dst.writestr(name, src.read(name))
    refused("model_not_last", notlast, m, "unsupported", "A-50")

    # another editor holds the edit lock (byte 0), a reader the content lock (byte 1): A-58.
    # Python's lockf takes process-owned POSIX locks, which conflict with our OFD locks; a
    # process of its own holds them (any close of the file in this one would drop them).
    def holding(kind, byte):
        p = subprocess.Popen([sys.executable, "-c", "import fcntl, sys\n"
                              f"f = open({arc!r}, 'r+b')\n"
                              f"fcntl.lockf(f, fcntl.{kind} | fcntl.LOCK_NB, 1, {byte})\n"
                              "print('held', flush=True)\nsys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        check(p.stdout.readline().strip() == "held", f"lock {kind} on byte {byte}: not taken")
        return p

    def release(p):
        p.stdin.close()
        p.wait()

    h = holding("LOCK_EX", 0)
    refused("locked", arc, edited(m, "metadata"), "busy", "busy")
    refused("locked_append_only", arc, edited(m, "metadata"), "busy", "busy", "--append-only")
    release(h)
    h = holding("LOCK_SH", 1)
    refused("reader_open", arc, edited(m, "metadata"), "busy", "busy")
    release(h)

    # not an archive for us: a later format version, no model, not a ZIP, a cut archive
    v2 = path_in("v2.onnxz")
    with zipfile.ZipFile(v2, "w") as zf:
        zf.writestr("__ONNXZ_VERSION", b"2")
        zf.writestr(MODEL, m.SerializeToString())
    refused("newer_version", v2, m, "unsupported", "A-40")
    nomodel = path_in("nomodel.onnxz")
    with zipfile.ZipFile(nomodel, "w") as zf:
        zf.writestr("w0", b"x" * 100)
    refused("no_model", nomodel, m, "not found", MODEL)
    junk = path_in("junk.onnxz")
    open(junk, "wb").write(b"not a zip at all" * 10)
    refused("not_zip", junk, m, "malformed", "Z-60")
    torn = path_in("torn.onnxz")
    open(torn, "wb").write(open(arc, "rb").read() + b"PK\x03\x04 half an appended tail")
    refused("trailing_bytes_no_journal", torn, m, "malformed", "Z-62")
    rc, msg, _ = drv("replace", path_in("missing.onnxz"), path_in("any.onnx"))
    check(rc == 1 and msg.startswith("not found:"), f"missing file: {msg}")
    check(not os.path.exists(path_in("missing.onnxz")), "missing file: the editor created it")

    # the append fails half-way (a file size limit, as a full disk would): the edit is rolled
    # back and the file is byte-identical
    import resource
    import signal

    def limited(limit):
        def pre():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        return pre

    orig = open(arc, "rb").read()
    big = edited(m, "bigger")
    p = subprocess.run([args.driver, "replace", arc, write_model(big, "efbig.onnx")], capture_output=True,
                       text=True, preexec_fn=limited(len(orig) + 20000))
    out = p.stdout.strip().splitlines()
    check(p.returncode == 1 and out and out[-1].startswith("i/o error:") and "journaled" in " ".join(out),
          f"failed append: expected an i/o error after the journal, got rc={p.returncode} {out}")
    check(open(arc, "rb").read() == orig, "failed append: the file was not rolled back")
    check(not os.path.exists(arc + "-journal"), "failed append: a journal was left behind")

    # a file at the journal's name that is no journal is ignored by readers and refused
    # (left alone) by editors
    open(arc + "-journal", "wb").write(b"OZJRNL01" + b"\0" * 32)
    rc, msg, _ = drv("space", arc)
    check(rc == 0, f"stale journal: the archive does not open: {msg}")
    refused_before = open(arc, "rb").read()
    rc, msg, _ = drv("replace", arc, write_model(edited(m, "doc"), "stale.onnx"))
    check(rc == 1 and "no complete edit journal" in msg and os.path.exists(arc + "-journal"),
          f"not a journal: expected a refusal that leaves it, got {rc} '{msg}'")
    check(open(arc, "rb").read() == refused_before, "not a journal: the archive changed")
    os.remove(arc + "-journal")

    # a forged journal, well formed and with the right CRC, whose old_size lies inside the
    # tensor entries of a complete archive: the edit must neither cut the file there (data
    # loss) nor start from that prefix; the stale journal goes
    cur = open(arc, "rb").read()
    body = b"OZJRNL01" + struct.pack("<QQQI", 4096, len(cur) + 1, 0, zlib.crc32(cur[:4096]))
    open(arc + "-journal", "wb").write(body + struct.pack("<I", zlib.crc32(body)))
    rc, msg, _ = drv("space", arc)
    check(rc == 0 and msg.split()[:2] == [str(len(cur))] * 2, f"forged journal: readers take a prefix: {msg}")
    forged_new = edited(m, "doc")
    rc, msg, _ = drv("replace", arc, write_model(forged_new, "forged.onnx"))
    check(rc == 0 and not os.path.exists(arc + "-journal"), f"forged journal: {msg}")
    z = parse_zip(arc)
    check(all(span(z, e) == cur[e["lho"]:e["data_off"] + e["csize"]] for e in z["entries"] if e["name"] != MODEL),
          "forged journal: tensor entries changed (data loss)")
    loads_as(arc, inline(forged_new, blobs_of(arc)), "forged journal: the edit")

# ======================================================================================
elif args.area == "crash":
    def expect_after_kill(arc, before, old_inl, new_inl, step, what, direct=False):
        """A kill at `step`: the archive opens with the model A-54 says, weights untouched.
        Appending, the commit point is the journal's removal; writing directly into unused
        bytes, it is the truncation."""
        journal = os.path.exists(arc + "-journal")
        check(journal == (step in ("journaled", "appending", "appended")),
              f"{what}: journal present={journal} after a kill at {step} (A-55)")
        data = open(arc, "rb").read()
        for e in before["entries"]:
            if e["name"] != MODEL:
                check(data[e["lho"]:e["data_off"] + e["csize"]] == span(before, e),
                      f"{what}: entry {e['name']} changed (A-50)")
        if step == "journaled":
            check(data == before["data"], f"{what}: the file changed before the first append")
        # the commit point: the appended tail made durable
        committed = step == "truncated" if direct else step not in ("journaled", "appending")
        if step == "appending" and not direct:
            # a torn tail: refused by our reader, the same way with or without the
            # journal, whose presence only adds a note to the message; the next edit rolls
            # it back
            rc, msg, _ = drv("space", arc)
            check(rc == 1 and "Z-6" in msg and "-journal is there" in msg,
                  f"{what}: a torn tail must be refused, naming the journal: {rc} '{msg}'")
            os.rename(arc + "-journal", arc + ".aside")
            rc2, msg2, _ = drv("space", arc)
            os.rename(arc + ".aside", arc + "-journal")
            check(rc2 == 1 and msg.startswith(msg2), f"{what}: without the journal: '{msg2}'")
            rc, msg, _ = drv("recover", arc)
            check(rc == 0 and data_after_rollback(arc, before), f"{what}: rollback: {msg}")
        for mode in ((), ("--pread",)):
            loads_as(arc, new_inl if committed else old_inl,
                     f"{what} ({'new' if committed else 'old'} model{', pread' if mode else ''})", *mode)
        rc, msg, _ = drv("space", arc)
        fs, asz, _ = (int(x) for x in msg.split()) if rc == 0 else (0, 0, 0)
        check(rc == 0 and fs == asz, f"{what}: oz_archive_get_space after {step}: '{msg}'")
        if committed:  # a complete archive for everyone
            clients(arc, 64, what)

    def data_after_rollback(arc, before):
        return open(arc, "rb").read() == before["data"] and not os.path.exists(arc + "-journal")

    def recover(arc, blobs, m0, before, what):
        """The next edit rolls an interrupted one back (A-56) and completes. `before`: the
        archive before the interrupted edit (its other entries are the same)."""
        third = edited(m0, "node")
        third.doc_string = "third"
        run_replace(arc, third, f"{what}: the next edit", before=before)
        check_edit(before, arc, third, f"{what}: the next edit")
        loads_as(arc, inline(third, blobs), f"{what}: the next edit")
        clients(arc, 64, f"{what}: the next edit")

    base = base_model()
    # append + compact (a bigger model), and the direct path (after an append_only edit)
    for step in STEPS:
        arc = saved_archive(f"k_{step}", base)
        blobs, old = blobs_of(arc), model_of(arc)
        new = edited(old, "bigger")
        before = parse_zip(arc)
        rc, msg, steps = drv("replace", arc, write_model(new, "new.onnx"), "--crash-at", step)
        check(rc == -9 and steps[-1:] == [step], f"kill at {step}: rc={rc}, steps {steps}, '{msg}'")
        expect_after_kill(arc, before, inline(old, blobs), inline(new, blobs), step, f"kill at {step}")
        recover(arc, blobs, old, before, f"kill at {step}")
    for step in ("compacting", "compacted", "truncated"):
        arc = saved_archive(f"kd_{step}", base)
        blobs, m0 = blobs_of(arc), model_of(arc)
        big = edited(m0, "bigger")
        run_replace(arc, big, "append_only first", "--append-only")
        before = parse_zip(arc)
        rc, msg, steps = drv("replace", arc, write_model(m0, "new.onnx"), "--crash-at", step)
        check(rc == -9 and steps[0] == "compacting" and steps[-1] == step,
              f"direct, kill at {step}: rc={rc}, steps {steps}, '{msg}'")
        expect_after_kill(arc, before, inline(big, blobs), inline(m0, blobs), step,
                          f"direct, kill at {step}", direct=True)
        recover(arc, blobs, m0, before, f"direct, kill at {step}")

    # kills at random moments, models of some megabytes so that writes take a while
    arc = saved_archive("random", base)
    blobs = blobs_of(arc)
    m0 = model_of(arc)
    first = parse_zip(arc)
    variants = []
    for k in range(3):
        v = onnx.ModelProto()
        v.CopyFrom(m0)
        v.doc_string = chr(ord("a") + k) * (1 + k) * 1500000
        variants.append(v)
    srcs = [write_model(v, f"random{k}.onnx") for k, v in enumerate(variants)]
    t0 = time.monotonic()
    rc, msg, _ = drv("replace", arc, srcs[0])
    full = time.monotonic() - t0
    check(rc == 0, f"random: first edit: {msg}")
    cur = 0
    rng = random.Random(11)
    outcomes = {"old": 0, "new": 0, "torn tail (refused, rolled back)": 0, "appended layout": 0}
    for i in range(10 if REDUCED else 40):
        k = rng.choice([x for x in range(3) if x != cur])
        p = subprocess.Popen([args.driver, "replace", arc, srcs[k]], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, full * 1.2))
        p.kill()
        p.wait()
        rc, msg, _ = drv("space", arc)
        if rc != 0:  # killed while appending: refused until the next edit rolls it back
            check("-journal is there" in msg, f"random kill {i}: refused without a journal: {msg}")
            outcomes["torn tail (refused, rolled back)"] += 1
            rc, msg, _ = drv("recover", arc)
            check(rc == 0, f"random kill {i}: rollback: {msg}")
            rc, msg, _ = drv("space", arc)
        if rc == 0:
            fs, asz, un = (int(x) for x in msg.split())
            outcomes["appended layout"] += fs == asz and un > 0
        out = arc + ".out.onnx"
        rc, msg, _ = drv("load", arc, out)
        if not check(rc == 0, f"random kill {i}: the archive does not open: {msg}"):
            break
        got = onnx.load(out, load_external_data=False)
        if got == inline(variants[k], blobs):
            cur = k
            outcomes["new"] += 1
        else:
            check(got == inline(variants[cur], blobs), f"random kill {i}: neither the old nor the new model")
            outcomes["old"] += 1
        data = open(arc, "rb").read()
        for e in first["entries"]:
            if e["name"] != MODEL:
                check(data[e["lho"]:e["data_off"] + e["csize"]] == span(first, e), f"random kill {i}: {e['name']} changed")
    print("random kills:", outcomes)
    rc, msg, _ = drv("replace", arc, srcs[(cur + 1) % 3])
    check(rc == 0, f"random: final edit: {msg}")
    check_edit(parse_zip(arc), arc, variants[(cur + 1) % 3], "random: final edit (same model again)")
    clients(arc, 64, "random: final")

# ======================================================================================
elif args.area == "zip64":
    n = 65600
    g = helper.make_graph([], "many", [], [])
    for i in range(n):
        g.initializer.append(TensorProto(name=f"t{i}", data_type=TensorProto.UINT8, dims=[64],
                                         raw_data=i.to_bytes(4, "little") * 16))
    m = helper.make_model(g)
    arc = saved_archive("many", m)
    blobs = blobs_of(arc)
    before = parse_zip(arc)
    check(before["zip64"] and len(before["entries"]) == n + 1, "the saved archive has no zip64 end records")
    new = edited(model_of(arc), "metadata")
    before, _ = run_replace(arc, new, "zip64", expect_steps=STEPS)
    z = check_edit(before, arc, new, "zip64")
    check(z and z["zip64"], "zip64: the edited archive has no zip64 end records (Z-23)")
    if not REDUCED:
        loads_as(arc, inline(new, blobs), "zip64")
    p = subprocess.run([sys.executable, "-m", "zipfile", "-t", arc], capture_output=True, text=True)
    check(p.returncode == 0, f"zip64: python's zipfile rejects it: {p.stderr[-300:]}")
    p = subprocess.run(["unzip", "-tqq", arc], capture_output=True, text=True)
    check(p.returncode == 0, f"zip64: unzip rejects it: {(p.stdout + p.stderr)[-300:]}")

# ======================================================================================
elif args.area == "large":
    import mmap
    size = (4 << 30) + (100 << 20)
    arc = path_in("big.onnxz")
    rc, msg, _ = drv("big", arc, str(size), timeout=3000)
    assert rc == 0, msg

    def tail_of(path):
        """The central headers (raw) and the model entry's local header, via a mapping."""
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            n = len(mm)
            eocd = mm.rfind(b"PK\x05\x06", max(0, n - 65557))
            loc = mm[eocd - 20:eocd]
            assert loc[:4] == b"PK\x06\x07", "no zip64 locator"
            z_off = struct.unpack("<IIQI", loc)[2]
            _, _, _, _, _, _, _, count, cd_size, cd_off = struct.unpack("<IQHHIIQQQQ", mm[z_off:z_off + 56])
            cd = bytes(mm[cd_off:cd_off + cd_size])
            recs, p = [], 0
            for _ in range(count):
                nlen, elen, clen = struct.unpack("<HHH", cd[p + 28:p + 34])
                recs.append(cd[p:p + 46 + nlen + elen + clen])
                p += 46 + nlen + elen + clen
            head = bytes(mm[0:200])
            return dict(size=n, cd_off=cd_off, recs=recs, head=head)

    def lho_of(rec):
        """A central header's local header offset, from its zip64 record when deferred."""
        csize32, usize32 = struct.unpack("<II", rec[20:28])
        nlen, elen = struct.unpack("<HH", rec[28:32])
        lho = struct.unpack("<I", rec[42:46])[0]
        if lho == 0xFFFFFFFF:
            z = parse_extra(rec[46 + nlen:46 + nlen + elen])[1]
            vals = struct.unpack("<%dQ" % (len(z) // 8), z)
            lho = vals[(usize32 == 0xFFFFFFFF) + (csize32 == 0xFFFFFFFF)]
        return lho

    before = tail_of(arc)
    rc, msg, _ = drv("model", arc, path_in("bigmodel.onnx"))
    assert rc == 0, msg
    m = onnx.load(path_in("bigmodel.onnx"), load_external_data=False)
    new = edited(m, "metadata")
    rc, msg, steps = drv("replace", arc, write_model(new, "bignew.onnx"), timeout=3000)
    check(rc == 0 and steps == STEPS, f"large: replace: {msg} {steps}")
    after = tail_of(arc)
    check(after["head"] == before["head"], "large: the tensor entry's local header changed")
    check(after["recs"][0] == before["recs"][0], "large: the tensor's central header changed (A-52)")
    mlho = lho_of(after["recs"][1])
    check(size < mlho < size + 200, f"large: the model's local header at {mlho}, not right after the tensor (A-54)")
    rc, msg, _ = drv("space", arc)
    check(rc == 0 and msg.split()[2] == "0", f"large: not compact: {msg}")
    out = path_in("bigout.onnx")
    rc, msg, _ = drv("model", arc, out)
    check(rc == 0 and onnx.load(out, load_external_data=False) == new, f"large: the new model: {msg}")
    p = subprocess.run(["unzip", "-tqq", arc], capture_output=True, text=True)
    check(p.returncode == 0, f"large: unzip rejects it: {(p.stdout + p.stderr)[-300:]}")
    with zipfile.ZipFile(arc) as zf:
        check(onnx.ModelProto.FromString(zf.read(MODEL)) == new, "large: python's zipfile reads another model")
    os.remove(arc)

print(f"{args.area}: {len(failures)} failures")
sys.exit(1 if failures else 0)
