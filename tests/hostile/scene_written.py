#!/usr/bin/python3
"""What a written file may contain (spec/security.md, "What a written
file may contain").

    scene_written.py ONNXZ_EXE SAMPLE_MODEL WORKDIR

- names: a tensor named with U+202E and the other bidirectional controls, a C1 control,
  U+2028, a backslash; an archive of it with its tensor entries deflated (so `stub`
  fails naming both). No command (info, ls, verify, meta, stub; text and --json) may
  write any of those code points raw, nor a C0/C1 control byte, on stdout or stderr.
- end records: a metadata value, doc_string or graph name holding a ZIP end of central
  directory record whose comment length reaches the end of the file (or zip64 records,
  or a local header signature). The archive onnxz writes (convert, meta --set) must be
  accepted by onnxz itself and by the oracles (unzip -t, python zipfile, 7z), with the
  same entries.
- ONNXCRY1: a wrong passphrase that passes the PKCS#7 check (found by searching IVs
  with refcrypt, the python3-cryptography oracle): `onnxz decrypt` must exit 1 with
  "wrong passphrase" and write nothing; the right one gives the model back.
Skips what needs python3-onnx, OpenSSL or python3-cryptography when missing (a message).
"""

import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile

from scenelib import check, diff, finish, snapshot

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError:
    onnx = None

HERE = os.path.dirname(os.path.abspath(__file__))
# Code points that act on the line around them (oc_utf8_printable_len).
ACTING = [0x061C, 0x200E, 0x200F, 0x2028, 0x2029] + list(range(0x202A, 0x202F)) + \
    list(range(0x2066, 0x206A)) + list(range(0x80, 0xA0))
CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")


def run(exe, argv, cwd, env=None):
    return subprocess.run([exe] + argv, cwd=cwd, capture_output=True, timeout=120, env=env)


def no_acting(what, data):
    """No code point of ACTING, decoded or as raw bytes, and no control byte but \\t, \\n."""
    text = data.decode("utf-8", "replace")
    bad = sorted({f"U+{ord(c):04X}" for c in text if ord(c) in ACTING})
    check(not bad and not CONTROL.search(data), f"{what}: nothing raw that acts on the line {bad}")


def names(exe, work):
    d = os.path.join(work, "names")
    os.makedirs(d)
    name = "W\u202eevil\u2066x\u2069\u200f\u061c\u2028\\\u0085"
    # 4 KiB: over the default threshold (E-27), so the tensor is an entry of the archive.
    t = numpy_helper.from_array(np.arange(1024, dtype=np.float32), name)
    g = helper.make_graph([helper.make_node("Identity", [name], ["y"])], "g\u202e", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024])], [t])
    m = helper.make_model(g)
    helper.set_model_props(m, {"k\u202e": "v\u2067\u0085"})
    onnx.save(m, os.path.join(d, "m.onnx"))
    check(run(exe, ["-q", "convert", "m.onnx", "m.onnxz"], d).returncode == 0, "names: convert")
    with zipfile.ZipFile(os.path.join(d, "m.onnxz")) as zin, \
            zipfile.ZipFile(os.path.join(d, "deflated.onnxz"), "w") as zout:
        for i in zin.infolist():
            method = zipfile.ZIP_STORED if i.filename == "__MODEL_PROTO" else zipfile.ZIP_DEFLATED
            zout.writestr(i.filename, zin.read(i.filename), compress_type=method)
    runs = [["info", "m.onnx"], ["info", "--json", "m.onnx"], ["ls", "m.onnxz"],
            ["ls", "--json", "m.onnxz"], ["verify", "m.onnxz"], ["verify", "--json", "m.onnx"],
            ["meta", "m.onnx"], ["meta", "--json", "m.onnxz"], ["stub", "deflated.onnxz", "s.onnx"]]
    for argv in runs:
        r = run(exe, argv, d)
        no_acting(f"names: {' '.join(argv)} stdout", r.stdout)
        no_acting(f"names: {' '.join(argv)} stderr", r.stderr)
    r = run(exe, ["stub", "deflated.onnxz", "s.onnx"], d)
    err = r.stderr.decode()
    check(r.returncode == 1 and "W\\xe2\\x80\\xaeevil\\xe2\\x81\\xa6x" in err,
          f"names: stub names the tensor through oc_quote ({err.strip()})")


def reaching(body_of, field_at, build, no_nul):
    """Writes an archive whose value holds a record with a 2-byte length field (at
    field_at in the record) that reaches exactly the end of the file. build(raw, pad)
    writes the archive with the value raw (ASCII bytes) and pad filler bytes in another
    field, and returns its bytes; the layout depends only on the lengths, so a probe gives
    the position. The pad is chosen so that the length's bytes are ASCII (and not NUL
    where the value goes through argv). Returns the archive's bytes, or None."""
    for pad in range(0, 600):
        probe = body_of(0x4141)
        data = build(probe, pad)
        if data is None or data.count(probe) != 1:
            return None
        at = data.index(probe)
        need = len(data) - (at + field_at + 2)
        lo, hi = need & 0xFF, need >> 8
        if not (0 < need < 0x8000 and lo < 0x80 and hi < 0x80) or (no_nul and 0 in (lo, hi)):
            continue
        value = body_of(need)
        data = build(value, pad)
        return data if data is not None and data.find(value) == at else None
    return None


def end_records(exe, work):
    """Values that look like ZIP records, written by convert and meta --set."""
    d = os.path.join(work, "records")
    os.makedirs(d)
    base = onnx.load(SAMPLE)

    # Protobuf strings are UTF-8, so the records are made of ASCII bytes: numbers from
    # 0x21 (no NUL, for argv) or small ones.
    def eocd(n, fill=0x2121):  # an end record whose comment length n reaches the end
        return struct.pack("<IHHHHIIH", 0x06054B50, fill, fill, fill, fill,
                           fill * 0x10001, fill * 0x10001, n)

    def z64(n):  # a zip64 end record, its locator, and an end record reaching the end
        rec = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, 1, 1, 46, 0)
        loc = struct.pack("<IIQI", 0x07064B50, 0, 0, 1)
        return rec + loc + eocd(n, 0)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, 1, 0) + b"x"
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0, 0, 0, 1,
                          0, 0, 0, 0, 0, 0) + b"x"
    bodies = {"end record": (eocd, 20), "zip64 records + end record": (z64, 56 + 20 + 20),
              "local+central headers + end record":
                  (lambda n: local + central + eocd(n, 0), len(local + central) + 20)}
    n = 0
    for key, (body_of, field_at) in bodies.items():
        wheres = ("metadata", "doc_string", "graph name", "meta --set")
        if os.environ.get("ONNXZ_TEST_REDUCED") == "1":  # valgrind: one way in each way of writing
            wheres = ("metadata", "meta --set")
        for where in wheres:
            n += 1
            out = f"a{n}.onnxz"
            path = os.path.join(d, out)
            what = f"{key} in {where}"

            def build(raw, pad):
                val = raw.decode("ascii")
                if where == "meta --set":
                    if b"\0" in raw:
                        return None
                    r = run(exe, ["-q", "convert", "-f", SAMPLE, out], d)
                    if r.returncode == 0:
                        r = run(exe, ["-q", "meta", out, "--set", "pad=" + "p" * pad,
                                      "--set", "k=" + val], d)
                else:
                    m = onnx.ModelProto()
                    m.CopyFrom(base)
                    helper.set_model_props(m, {"pad": "p" * pad})
                    if where == "metadata":
                        helper.set_model_props(m, {"pad": "p" * pad, "k": val})
                    elif where == "doc_string":
                        m.doc_string = val
                    else:
                        m.graph.name = val
                    onnx.save(m, os.path.join(d, "src.onnx"))
                    r = run(exe, ["-q", "convert", "-f", "src.onnx", out], d)
                if r.returncode != 0:
                    print(f"     {what}: writing failed: {r.stderr.decode().strip()}")
                    return None
                return open(path, "rb").read()
            if where == "meta --set" and b"\0" in body_of(0x4141):
                continue  # argv holds no NUL: records with zero fields go the other ways
            placed = reaching(body_of, field_at, build, where == "meta --set")
            if check(placed is not None, f"{what}: an archive whose value reaches its end"):
                archive_checks(exe, d, out, what)


def anchored_in_tensor(exe, work):
    """A tensor's bytes holding an end record that ends the file and whose central
    directory (offset + size) ends where it stands: every field a reader checks first
    agrees with it. Ours is still the last record, so the archive reads as the writer
    meant (and as the oracles read it)."""
    d = os.path.join(work, "anchored")
    os.makedirs(d)
    base = onnx.load(SAMPLE)

    def build(raw):
        m = onnx.ModelProto()
        m.CopyFrom(base)
        t = numpy_helper.from_array(np.frombuffer(raw, dtype=np.uint8).copy(), "zz_last")
        m.graph.initializer.append(t)
        onnx.save(m, os.path.join(d, "src.onnx"))
        r = run(exe, ["-q", "convert", "-f", "src.onnx", "a.onnxz"], d)
        return open(os.path.join(d, "a.onnxz"), "rb").read() if r.returncode == 0 else None

    def record(at, size):
        rec = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, 16, at - 16, size - (at + 22))
        return (b"\x11" * 16 + rec).ljust(128, b"\x22")
    probe = record(1 << 20, (1 << 20) + 1000)
    data = build(probe)
    if not check(data is not None and data.count(probe) == 1, "anchored record: probe placed"):
        return
    at = data.index(probe) + 16
    value = record(at, len(data))
    data = build(value)
    if check(data is not None and data.find(value) == at - 16, "anchored record: placed"):
        archive_checks(exe, d, "a.onnxz", "anchored end record in a tensor")


def archive_checks(exe, d, out, what):
    path = os.path.join(d, out)
    r = run(exe, ["verify", out], d)
    check(r.returncode == 0, f"{what}: onnxz verify accepts its own archive "
                             f"({r.stderr.decode().strip()})")
    r = subprocess.run(["unzip", "-tqq", path], capture_output=True)
    check(r.returncode == 0, f"{what}: unzip -t ({r.stdout.decode().strip()})")
    with zipfile.ZipFile(path) as z:
        check(z.testzip() is None, f"{what}: python zipfile")
        names_py = sorted(z.namelist())
    ls = run(exe, ["ls", "--json", out], d)
    if ls.returncode == 0:
        import json
        ours = sorted(e["name"] for e in json.loads(ls.stdout)["entries"])
        check(ours == names_py, f"{what}: same entries as python zipfile ({ours} / {names_py})")
    sz = shutil.which("7z")
    if sz:
        r = subprocess.run([sz, "t", path], capture_output=True)
        check(r.returncode == 0 and b"Everything is Ok" in r.stdout, f"{what}: 7z t")


def oracles_read(path):
    """What python zipfile and unzip -l read in path: (zipfile names or an error text,
    unzip -l exit status and output)."""
    try:
        with zipfile.ZipFile(path) as z:
            py = sorted(z.namelist())
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        py = f"error: {e}"
    r = subprocess.run(["unzip", "-l", path], capture_output=True)
    return py, r.returncode, r.stdout.decode(errors="replace").strip()


def comment_signature(exe, work):
    """Z-61: an end record signature inside the end record's comment. Python's zipfile
    and unzip take the last signature in the file, so with one in the comment they read
    another archive (none, or an error), while the end record ending the file names
    ours (unzip only when a whole record fits after the signature). onnxz must refuse every such archive (naming the signature's offset) and accept
    the same comment without it. The archives onnxz writes carry no comment at all."""
    d = os.path.join(work, "comment")
    os.makedirs(d)
    shutil.copy(SAMPLE, os.path.join(d, "m.onnx"))
    r = run(exe, ["-q", "convert", "m.onnx", "a.onnxz"], d)
    data = open(os.path.join(d, "a.onnxz"), "rb").read() if r.returncode == 0 else b""
    if not check(data[-22:-18] == b"PK\x05\x06" and data[-2:] == b"\0\0",
                 "comment: onnxz writes an end record with no comment"):
        return
    with zipfile.ZipFile(os.path.join(d, "a.onnxz")) as z:
        names_py = sorted(z.namelist())
    sig = b"PK\x05\x06"
    variants = [("a whole empty end record", sig + b"\0" * 18 + b"X" * 10),
                ("a signature in text", b"xx " + sig + b" not an end"),
                ("a signature in the last bytes", b"abc" + sig)]
    for what, comment in variants:
        path = os.path.join(d, "c.onnxz")
        with open(path, "wb") as f:
            f.write(data[:-2] + struct.pack("<H", len(comment)) + comment)
        py, urc, uout = oracles_read(path)
        # The whole record: both read no entries. The others: zipfile fails, unzip
        # (which wants a whole record) finds ours.
        check(py != names_py and (urc != 0 or "zipfile is empty" in uout
                                  or len(comment) < 22),
              f"comment with {what}: zipfile reads another archive ({py}), "
              f"unzip too when the record is whole ({urc})")
        at = len(data) + comment.rindex(sig)
        r = run(exe, ["ls", "c.onnxz"], d)
        err = r.stderr.decode(errors="replace")
        check(r.returncode == 1 and "(Z-61)" in err and f"(at offset {at})" in err,
              f"comment with {what}: onnxz refuses it at offset {at} ({err.strip()})")
    with open(os.path.join(d, "c.onnxz"), "wb") as f:
        f.write(data[:-2] + struct.pack("<H", 12) + b"just a note.")
    archive_checks(exe, d, "c.onnxz", "comment without a signature")


def cry1_wrong_key(exe, work):
    if os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "0":
        print("skip ONNXCRY1: built without OpenSSL")
        return
    sys.path.insert(0, os.path.join(HERE, "..", "crypto"))
    try:
        import refcrypt as rc
    except ImportError as e:
        print(f"skip ONNXCRY1: refcrypt needs python3-cryptography ({e})")
        return
    d = os.path.join(work, "cry1")
    os.makedirs(d)
    plain = open(SAMPLE, "rb").read()
    right, wrong = b"the right passphrase", b"a wrong passphrase"
    salt = bytes(range(16))
    k1, k2 = rc.cry1_key(right, salt), rc.cry1_key(wrong, salt)
    found = None
    for attempt in range(20000):  # ~1 in 256 IVs makes the wrong key's padding valid
        iv = struct.pack("<QQ", attempt, 0x5EED)
        blob = rc.cry1_encrypt(plain, right, salt=salt, iv=iv, key=k1)
        try:
            garbage = rc.cry1_decrypt(blob, wrong, key=k2)
        except rc.ZecError:
            continue
        found = (blob, garbage)
        break
    if not check(found is not None, "ONNXCRY1: an IV where the wrong key passes PKCS#7"):
        return
    blob, garbage = found
    print(f"     found after {attempt + 1} IVs ({len(garbage)} bytes of garbage)")
    with open(os.path.join(d, "m.onnxc"), "wb") as f:
        f.write(blob)
    before = snapshot(d)
    env = dict(os.environ, ONNXZ_KEY=wrong.decode())
    r = run(exe, ["decrypt", "m.onnxc", "out.onnx"], d, env)
    err = r.stderr.decode().strip()
    check(r.returncode == 1 and re.match(r"^onnxz: error: m\.onnxc: wrong passphrase", err) is not None,
          f"ONNXCRY1: decrypt with the lucky wrong key is refused ({r.returncode}: {err})")
    after = snapshot(d)
    check(before == after, f"ONNXCRY1: nothing written [{diff(before, after)}]")
    for argv in (["info", "m.onnxc"], ["convert", "m.onnxc", "x.onnx"]):
        r = run(exe, argv, d, env)
        check(r.returncode == 1 and b"wrong passphrase" in r.stderr,
              f"ONNXCRY1: {argv[0]} refuses it too ({r.stderr.decode().strip()})")
    env = dict(os.environ, ONNXZ_KEY=right.decode())
    r = run(exe, ["-q", "decrypt", "m.onnxc", "out.onnx"], d, env)
    ok = r.returncode == 0 and open(os.path.join(d, "out.onnx"), "rb").read() == plain
    check(ok, f"ONNXCRY1: the right passphrase gives the model back ({r.stderr.decode().strip()})")


def main():
    global SAMPLE
    exe, SAMPLE, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if onnx is None:
        print("skip names and records: python3-onnx missing")
    else:
        names(exe, work)
        end_records(exe, work)
        anchored_in_tensor(exe, work)
    comment_signature(exe, work)
    cry1_wrong_key(exe, work)
    finish()


if __name__ == "__main__":
    main()
