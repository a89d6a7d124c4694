#!/usr/bin/python3
"""tests/zip/zip_driver.py - libonnxz's ZIP layer against real ZIP clients and hostile input.

Run by ctest (tests/zip/CMakeLists.txt) with Debian's /usr/bin/python3:

    zip_driver.py clients|interop|hostile|many|large --ozip PATH --work DIR

  clients  archives written by libonnxz (alignments 64 and 4096; STORED, DEFLATED and
           streamed entries) pass `unzip -t`, `7z t` (no warnings), `python3 -m zipfile -t`,
           `bsdtar` (list and extract), `zipalign -c -v <alignment>` and `zipcmp -t` against
           the source directory, and an independent parse of every header here (layout,
           padding bytes, alignment, version fields: spec Z-1..Z-42).
  interop  archives written by python's zipfile, Info-ZIP zip, 7-Zip and bsdtar (stored,
           deflated, comments, directories, data descriptors, zip64 records) open and read
           correctly through every reader source.
  hostile  broken archives, each refused with its own status and rule id (Z-60..Z-78).
  many     70,000 entries: zip64 end records (Z-23, Z-24), checked by the clients; and a
           70,000-entry archive from python's zipfile, read by us.
  large    a 4.1 GiB entry streamed from a pattern plus one after it: zip64 sizes in the
           local header, zip64 sizes and offset in the central one (Z-20..Z-22); checked by
           our reader, python's zipfile, unzip and 7z. (ctest label `large`.)

Only the standard library; the clients are Debian packages (unzip, p7zip-full,
libarchive-tools, zipalign, zipcmp).
"""
import argparse
import io
import os
import random
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib

MAX16, MAX32 = 0xFFFF, 0xFFFFFFFF
SIG_LOCAL, SIG_CENTRAL, SIG_EOCD = 0x04034B50, 0x02014B50, 0x06054B50
SIG_Z64_EOCD, SIG_Z64_LOC, SIG_DESC = 0x06064B50, 0x07064B50, 0x08074B50
ALIGN_ID = 0xD935
MADE_BY = 0x033F
EXT_ATTR = 0x81A40000

# oc_status numbers (libonnxcore/include/onnxcore/status.h)
ST = {"truncated": 3, "malformed": 4, "limit": 6, "not_found": 8, "unsupported": 9,
      "unsafe_path": 10, "checksum": 11, "inconsistent": 15}
MODES = ("map", "pread", "fd", "memory")
# Under valgrind (tests/CMakeLists.txt: ONNXZ_TEST_REDUCED=1 with ONNXZ_TEST_WRAPPER) every
# ozip run costs about a second: hostile and interop check each archive in one reader mode,
# in turn (every mode still sees a quarter of the cases), instead of all four (and hostile
# without its summary line).
REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return cond


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", **kw)


def client(cmd, ok_if):
    """Runs a ZIP client, logs its verdict, and records a failure unless ok_if(result)."""
    r = run(cmd)
    ok = ok_if(r)
    print("  %-3s %s" % ("ok" if ok else "BAD", " ".join(
        os.path.basename(c) if os.path.isabs(c) else c for c in cmd)), flush=True)
    check(ok, "%s:\n%s" % (" ".join(cmd), r.stdout[-2000:]))
    return r


class Ctx:
    def __init__(self, ozip, work):
        self.ozip = ozip
        self.work = work

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def oz(self, *args):
        return run([self.ozip] + [str(a) for a in args])


# ---------------------------------------------------------------------------------------
# An independent reading of the layout rules (spec/onnxz-zip.md), over a seekable file.
# ---------------------------------------------------------------------------------------

def read_at(f, off, n):
    f.seek(off)
    b = f.read(n)
    if len(b) != n:
        raise AssertionError("short read at %d" % off)
    return b


def split_extra(extra):
    """The records of an extra field; they must cover it exactly."""
    recs, i = [], 0
    while i < len(extra):
        assert len(extra) - i >= 4, "stray bytes at the end of an extra field"
        hid, ln = struct.unpack_from("<HH", extra, i)
        assert i + 4 + ln <= len(extra), "extra record 0x%04x overruns" % hid
        recs.append((hid, extra[i + 4:i + 4 + ln]))
        i += 4 + ln
    return recs


def parse_layout(f, size, align):
    """Walks an archive written by libonnxz from its first byte and asserts every rule of
    the layout. Returns (entries, info); raises AssertionError on the first violation."""
    entries, pos = [], 0
    while struct.unpack("<I", read_at(f, pos, 4))[0] == SIG_LOCAL:   # Z-1: back to back
        (ver, flags, method, tm, dt, crc, cs32, us32, nlen, xlen) = struct.unpack(
            "<HHHHHIIIHH", read_at(f, pos + 4, 26))
        name = read_at(f, pos + 30, nlen)
        extra = read_at(f, pos + 30 + nlen, xlen)
        assert flags == 0x0800, "Z-4/Z-6: flags 0x%04x" % flags
        assert (tm, dt) == (0, 0x21), "Z-4: time/date"
        assert method in (0, 8), "Z-7: method %d" % method
        recs = split_extra(extra)
        ids = [r[0] for r in recs]
        z64 = cs32 == MAX32 or us32 == MAX32
        if z64:                                                       # Z-21
            assert cs32 == us32 == MAX32, "Z-21: both sizes deferred"
            assert ids[0] == 1 and len(recs[0][1]) == 16, "Z-21: zip64 record first, 16 bytes"
            us, cs = struct.unpack("<QQ", recs[0][1])
            assert us >= MAX32 or cs >= MAX32, "Z-20: zip64 only when needed"
        else:
            assert 1 not in ids, "Z-20: zip64 record without need"
            us, cs = us32, cs32
        data_off = pos + 30 + nlen + xlen
        if method == 0:
            assert cs == us, "Z-7: stored sizes"
            base = pos + 30 + nlen + (20 if z64 else 0)
            pad = (-base) % align
            if 0 < pad < 6:
                pad += align                                          # Z-12
            if pad:
                assert ids[-1] == ALIGN_ID, "Z-11: padding record last"
                data = recs[-1][1]
                assert len(data) + 4 == pad, "Z-12: padding of %d, expected %d" % (len(data) + 4, pad)
                assert data == struct.pack("<H", align) + bytes(pad - 6), "Z-11: record bytes"
            assert ids == ([1] if z64 else []) + ([ALIGN_ID] if pad else []), "Z-5: %r" % ids
            assert data_off % align == 0, "Z-10: %s data at %d" % (name, data_off)
        else:
            assert ids == ([1] if z64 else []), "Z-5/Z-10: deflated entries carry no padding"
        want_ver = 45 if (z64 or pos >= MAX32) else (20 if method == 8 else 10)
        assert ver == want_ver, "Z-40: version needed %d, expected %d" % (ver, want_ver)
        entries.append(dict(name=name.decode("utf-8"), method=method, crc=crc, csize=cs,
                            usize=us, lho=pos, data_off=data_off, ver=ver))
        pos = data_off + cs
    cd_off = pos
    for e in entries:                                                 # Z-13, Z-22, Z-41
        hdr = read_at(f, pos, 46)
        (sig, made, ver, flags, method, tm, dt, crc, cs32, us32, nlen, xlen, clen, disk,
         iattr, eattr, lho32) = struct.unpack("<IHHHHHHIIIHHHHHII", hdr)
        assert sig == SIG_CENTRAL, "Z-1: central header expected at %d" % pos
        assert (made, ver, flags, method) == (MADE_BY, e["ver"], 0x0800, e["method"]), "Z-41"
        assert (tm, dt, crc, clen, disk, iattr, eattr) == (0, 0x21, e["crc"], 0, 0, 0, EXT_ATTR)
        assert read_at(f, pos + 46, nlen).decode("utf-8") == e["name"]
        extra = read_at(f, pos + 46 + nlen, xlen)
        want = [v for v in (e["usize"], e["csize"], e["lho"]) if v >= MAX32]
        if want:
            assert split_extra(extra) == [(1, struct.pack("<%dQ" % len(want), *want))], \
                "Z-22: central zip64 record holds exactly the overflowing fields, in order"
        else:
            assert xlen == 0, "Z-13: central extra must be empty"
        for v32, v in ((us32, e["usize"]), (cs32, e["csize"]), (lho32, e["lho"])):
            assert v32 == (MAX32 if v >= MAX32 else v), "Z-22: 32-bit field"
        pos += 46 + nlen + xlen
    cd_size, n = pos - cd_off, len(entries)
    z64 = n >= MAX16 or cd_size >= MAX32 or cd_off >= MAX32             # Z-23
    if z64:
        rec = struct.unpack("<IQHHIIQQQQ", read_at(f, pos, 56))
        assert rec == (SIG_Z64_EOCD, 44, MADE_BY, 45, 0, 0, n, n, cd_size, cd_off), "Z-24: %r" % (rec,)
        loc = struct.unpack("<IIQI", read_at(f, pos + 56, 20))
        assert loc == (SIG_Z64_LOC, 0, pos, 1), "Z-24: locator %r" % (loc,)
        pos += 76
    eocd = struct.unpack("<IHHHHIIH", read_at(f, pos, 22))
    n16 = MAX16 if n >= MAX16 else n
    want = (SIG_EOCD, 0, 0, n16, n16, MAX32 if cd_size >= MAX32 else cd_size,
            MAX32 if cd_off >= MAX32 else cd_off, 0)
    assert eocd == want, "Z-24: end record %r, expected %r" % (eocd, want)
    assert pos + 22 == size, "Z-1: %d bytes after the end record" % (size - pos - 22)
    return entries, dict(cd_off=cd_off, cd_size=cd_size, zip64=z64)


def check_layout(path, align, printed=None):
    with open(path, "rb") as f:
        try:
            entries, info = parse_layout(f, os.path.getsize(path), align)
        except AssertionError as e:
            check(False, "%s: layout: %s" % (path, e))
            return None, None
    if printed is not None:  # the offsets the writer reported are the real ones
        got = [(e["data_off"], e["name"]) for e in entries]
        check(got == printed, "%s: writer-reported offsets differ from the file" % path)
    print("  ok  independent layout parse of %s (alignment %d): %d entries, zip64 %s" % (
        os.path.basename(path), align, len(entries), info["zip64"]), flush=True)
    return entries, info


# ---------------------------------------------------------------------------------------
# The clients
# ---------------------------------------------------------------------------------------

def client_checks(ctx, archive, srcdir, names, align, zipalign=True, zipcmp=True):
    """Every client must accept the archive without complaint."""
    client(["unzip", "-t", archive], lambda r: r.returncode == 0 and
           "No errors detected" in r.stdout and "warning" not in r.stdout.lower())
    client(["7z", "t", archive], lambda r: r.returncode == 0 and "Everything is Ok" in r.stdout
           and "warning" not in r.stdout.lower() and "error" not in r.stdout.lower())
    client(["/usr/bin/python3", "-W", "error", "-m", "zipfile", "-t", archive],
           lambda r: r.returncode == 0 and "Done testing" in r.stdout and "corrupt" not in r.stdout)
    client(["bsdtar", "-tf", archive],
           lambda r: r.returncode == 0 and r.stdout.splitlines() == names)
    if zipalign:
        client(["zipalign", "-c", "-v", str(align), archive], lambda r: r.returncode == 0 and
               "Verification successful" in r.stdout and "BAD" not in r.stdout)
    if zipcmp and srcdir:
        client(["zipcmp", "-t", archive, srcdir], lambda r: r.returncode == 0)


def ours_ok(ctx, archive, count, zip64=None, modes=MODES):
    print("  ..  ozip check %s (open, read all, verify all) via %s" % (
        os.path.basename(archive), ", ".join(modes)), flush=True)
    for mode in modes:
        r = ctx.oz("check", archive, mode)
        ok = r.returncode == 0 and r.stdout.startswith("ok %d " % count)
        if zip64 is not None:
            ok = ok and ("zip64=%d" % zip64) in r.stdout
        check(ok, "ozip check %s %s: %s" % (archive, mode, r.stdout.strip()))


def make_tree(root, rng):
    """Source files: (relative name, bytes, method)."""
    files = []
    sizes = [0, 1, 63, 64, 65, 1000, 4095, 4096, 4097, 100000, 262147]
    for i, n in enumerate(sizes):
        files.append(("tensors/t%02d.bin" % i, rng.randbytes(n), ("stored", "stream")[i % 2]))
    text = b"".join(b"line %d of a very repetitive text\n" % (i % 50) for i in range(3000))
    files.append(("__MODEL_PROTO", text, "deflated"))
    files.append(("meta/empty-deflated", b"", "deflated"))
    files.append(("unicode/\u03bb-\u00e9t\u00e9 \u6f22\u5b57.bin", rng.randbytes(333), "stored"))
    files.append(("a/b/c/d/deep.bin", rng.randbytes(5000), "stream"))
    files.append(("mixed.txt", text[:7000] + rng.randbytes(3000), "deflated"))
    for name, data, _ in files:
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    return files


def test_clients(ctx):
    rng = random.Random(20240611)
    for align in (64, 4096):
        src = ctx.path("src%d" % align)
        shutil.rmtree(src, ignore_errors=True)
        files = make_tree(src, rng)
        manifest = ctx.path("manifest%d" % align)
        with open(manifest, "w", encoding="utf-8") as m:
            for name, _, method in files:
                m.write("%s\t%s\t%s\n" % (method, os.path.join(src, name), name))
        archive = ctx.path("ours%d.zip" % align)
        r = ctx.oz("write", archive, align, manifest)
        if not check(r.returncode == 0, "ozip write: %s" % r.stdout):
            continue
        printed = []
        for line in r.stdout.splitlines():
            off, name = line.split(" ", 1)
            printed.append((int(off), name))
        entries, info = check_layout(archive, align, printed)
        if entries:
            check(not info["zip64"], "a small archive has no zip64 records (Z-23)")
            stored = [e for e in entries if e["method"] == 0]
            want = sum(1 for f in files if f[2] != "deflated")
            check(len(stored) == want and all(e["data_off"] % align == 0 for e in stored),
                  "Z-10: every STORED entry aligned to %d" % align)
        names = [f[0] for f in files]
        client_checks(ctx, archive, src, names, align)
        # python's zipfile reads back every byte
        with zipfile.ZipFile(archive) as z:
            check([i.filename for i in z.infolist()] == names, "zipfile: names in order")
            for name, data, method in files:
                info = z.getinfo(name)
                check(z.read(name) == data, "zipfile: content of %s" % name)
                check(info.compress_type == (8 if method == "deflated" else 0),
                      "zipfile: method of %s" % name)
        # bsdtar extracts the same bytes
        out = ctx.path("bsdtar%d" % align)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        client(["bsdtar", "-xf", archive, "-C", out], lambda r: r.returncode == 0)
        for name, data, _ in files:
            p = os.path.join(out, name)
            check(os.path.exists(p) and open(p, "rb").read() == data, "bsdtar: content of %s" % name)
        ours_ok(ctx, archive, len(files), 0)
        # 7-Zip's technical listing shows the padding record as an ordinary extra field
        client(["7z", "l", "-slt", archive], lambda r: r.returncode == 0 and
               "warning" not in r.stdout.lower() and "error" not in r.stdout.lower())
    # a page-aligned archive is also 64-aligned: zipalign agrees
    client(["zipalign", "-c", "-v", "64", ctx.path("ours4096.zip")], lambda r: r.returncode == 0)
    # Control (Z-14): padding made of raw zero bytes, as Debian's zipalign writes it, is
    # what 7-Zip complains about; the 7z check above would catch it.
    raw_in, raw_out = ctx.path("control-in.zip"), ctx.path("control-zipalign.zip")
    with zipfile.ZipFile(raw_in, "w") as z:
        z.writestr("a.bin", b"x" * 1000)
        z.writestr("b.bin", b"y" * 100)
    client(["zipalign", "-f", "64", raw_in, raw_out], lambda r: r.returncode == 0)
    client(["7z", "t", raw_out], lambda r: "Minor_Extra_ERROR" in r.stdout)
    # Control: the independent parser is strict enough to refuse that archive.
    with open(raw_out, "rb") as f:
        try:
            parse_layout(f, os.path.getsize(raw_out), 64)
            check(False, "the layout parser accepted zipalign's raw padding")
        except AssertionError as e:
            print("  ok  independent layout parse refuses control-zipalign.zip: %s" % e)


# ---------------------------------------------------------------------------------------
# Interop: archives from other writers
# ---------------------------------------------------------------------------------------

class Unseekable(io.RawIOBase):
    """A write-only stream: python's zipfile then writes data descriptors (bit 3)."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.buf += b
        return len(b)


def raw_name(info):
    """The name's bytes read as UTF-8: python decodes names without bit 11 as CP437, while
    our reader takes every name as UTF-8 (Z-31); Info-ZIP writes such names."""
    return info.filename if info.flag_bits & 0x800 else info.filename.encode("cp437").decode("utf-8")


def compare_with_zipfile(ctx, archive, label, modes=MODES):
    with zipfile.ZipFile(archive) as z:
        infos = z.infolist()
        contents = {raw_name(i): z.read(i) for i in infos if not i.filename.endswith("/")}
    for mode in modes:
        r = ctx.oz("list", archive, mode)
        if not check(r.returncode == 0, "%s: ozip list (%s): %s" % (label, mode, r.stdout)):
            return
        lines = r.stdout.splitlines()[1:]
        check(len(lines) == len(infos), "%s: entry count" % label)
        for line, info in zip(lines, infos):
            method, crc, cs, us, lho, doff, name = line.split(" ", 6)
            check((name, int(method), int(crc, 16), int(cs), int(us), int(lho)) ==
                  (raw_name(info), info.compress_type, info.CRC, info.compress_size,
                   info.file_size, info.header_offset),
                  "%s: entry %s as zipfile sees it: %s" % (label, info.filename, line))
        out = ctx.path("x-" + label + "-" + mode)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        r = ctx.oz("extract", archive, out, mode)
        check(r.returncode == 0, "%s: ozip extract (%s): %s" % (label, mode, r.stdout))
        for name, data in contents.items():
            p = os.path.join(out, name)
            check(os.path.exists(p) and open(p, "rb").read() == data,
                  "%s: content of %s (%s)" % (label, name, mode))
        shutil.rmtree(out, ignore_errors=True)
    ours_ok(ctx, archive, len(infos))
    print("  %-10s %d entries, methods %s, flag bits %s: read alike by zipfile and us (%s)" % (
        label, len(infos), sorted({i.compress_type for i in infos}),
        sorted({"0x%04x" % i.flag_bits for i in infos}), ", ".join(modes)), flush=True)


def test_interop(ctx):
    rng = random.Random(7)
    blobs = {"w/a.bin": rng.randbytes(5000), "w/b.bin": b"", "c.txt": b"hello world\n" * 500,
             "\u00fcml\u00e4ut/\u03c0.bin": rng.randbytes(100), "big.bin": rng.randbytes(300000)}
    cases = []

    def pyzip(label, compression, comment=b"", level=None, dirs=False, force64=False):
        p = ctx.path("py-%s.zip" % label)
        with zipfile.ZipFile(p, "w", compression, compresslevel=level) as z:
            if dirs:
                z.writestr("w/", b"")
            for name, data in blobs.items():
                if force64:
                    with z.open(name, "w", force_zip64=True) as f:
                        f.write(data)
                else:
                    z.writestr(name, data)
            z.comment = comment
        cases.append((label, p))

    pyzip("stored", zipfile.ZIP_STORED)
    pyzip("deflated", zipfile.ZIP_DEFLATED, level=9)
    pyzip("deflated1", zipfile.ZIP_DEFLATED, level=1, comment=b"a comment")
    pyzip("dirs", zipfile.ZIP_DEFLATED, dirs=True)
    pyzip("force64", zipfile.ZIP_STORED, force64=True)
    # data descriptors (bit 3), local sizes and CRC zero: the central directory decides
    s = Unseekable()
    with zipfile.ZipFile(s, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in blobs.items():
            with z.open(name, "w") as f:
                f.write(data)
    p = ctx.path("py-descriptor.zip")
    with open(p, "wb") as f:
        f.write(bytes(s.buf))
    with zipfile.ZipFile(p) as z:
        check(all(i.flag_bits & 8 for i in z.infolist()), "python wrote data descriptors")
    cases.append(("descriptor", p))
    # other writers, from a directory tree
    tree = ctx.path("interop-src")
    shutil.rmtree(tree, ignore_errors=True)
    for name, data in blobs.items():
        fp = os.path.join(tree, name)
        os.makedirs(os.path.dirname(fp), exist_ok=True)
        with open(fp, "wb") as f:
            f.write(data)
    names = sorted(blobs)
    for label, cmd in (("infozip", ["zip", "-q", "-X", "-r"]),
                       ("infozip0", ["zip", "-q", "-0", "-r"]),
                       ("7z", ["7z", "a", "-tzip", "-bd", "-bso0"]),
                       ("bsdtar", ["bsdtar", "--format", "zip", "-cf"])):
        p = ctx.path("other-%s.zip" % label)
        if os.path.exists(p):
            os.remove(p)
        r = run(cmd + [p] + names, cwd=tree)
        if check(r.returncode == 0, "%s could not write: %s" % (label, r.stdout)):
            cases.append((label, p))
    for i, (label, p) in enumerate(cases):
        compare_with_zipfile(ctx, p, label, (MODES[i % len(MODES)],) if REDUCED else MODES)


# ---------------------------------------------------------------------------------------
# Hostile archives
# ---------------------------------------------------------------------------------------

class Built:
    """A small ZIP made field by field, with the offsets of its records, so that tests can
    break exactly one thing. Entries: dict(name, data, method=0, flags=0x800,
    local_extra=b"", central_extra=b"", descriptor=False, raw=None (compressed bytes))."""

    def __init__(self, entries, comment=b"", zip64=False):
        b = bytearray()
        self.lho, self.cdh, self.data_off = [], [], []
        meta = []
        for e in entries:
            name = e["name"].encode("utf-8") if isinstance(e["name"], str) else e["name"]
            data, method = e["data"], e.get("method", 0)
            flags = e.get("flags", 0x800) | (8 if e.get("descriptor") else 0)
            raw = e.get("raw")
            if raw is None:
                if method == 8:
                    c = zlib.compressobj(9, zlib.DEFLATED, -15)
                    raw = c.compress(data) + c.flush()
                else:
                    raw = data
            crc = zlib.crc32(data)
            lx = e.get("local_extra", b"")
            self.lho.append(len(b))
            if e.get("descriptor"):
                b += struct.pack("<IHHHHHIIIHH", SIG_LOCAL, 20, flags, method, 0, 0x21, 0, 0, 0,
                                 len(name), len(lx))
            else:
                b += struct.pack("<IHHHHHIIIHH", SIG_LOCAL, 20, flags, method, 0, 0x21, crc,
                                 len(raw), len(data), len(name), len(lx))
            b += name + lx
            self.data_off.append(len(b))
            b += raw
            if e.get("descriptor"):
                b += struct.pack("<IIII", SIG_DESC, crc, len(raw), len(data))
            meta.append((name, flags, method, crc, len(raw), len(data), e.get("central_extra", b"")))
        self.cd_off = len(b)
        for i, (name, flags, method, crc, cs, us, cx) in enumerate(meta):
            self.cdh.append(len(b))
            b += struct.pack("<IHHHHHHIIIHHHHHII", SIG_CENTRAL, MADE_BY, 20, flags, method, 0,
                             0x21, crc, cs, us, len(name), len(cx), 0, 0, 0, EXT_ATTR, self.lho[i])
            b += name + cx
        self.cd_size = len(b) - self.cd_off
        n = len(entries)
        self.z64 = self.loc = None
        if zip64:
            self.z64 = len(b)
            b += struct.pack("<IQHHIIQQQQ", SIG_Z64_EOCD, 44, MADE_BY, 45, 0, 0, n, n,
                             self.cd_size, self.cd_off)
            self.loc = len(b)
            b += struct.pack("<IIQI", SIG_Z64_LOC, 0, self.z64, 1)
        self.eocd = len(b)
        if zip64:
            b += struct.pack("<IHHHHIIH", SIG_EOCD, 0, 0, MAX16, MAX16, MAX32, MAX32, len(comment))
        else:
            b += struct.pack("<IHHHHIIH", SIG_EOCD, 0, 0, n, n, self.cd_size, self.cd_off,
                             len(comment))
        b += comment
        self.b = b

    # field offsets within records
    LOCAL = {"sig": (0, "I"), "flags": (6, "H"), "method": (8, "H"), "crc": (14, "I"),
             "csize": (18, "I"), "usize": (22, "I"), "nlen": (26, "H"), "xlen": (28, "H")}
    CENTRAL = {"sig": (0, "I"), "flags": (8, "H"), "method": (10, "H"), "crc": (16, "I"),
               "csize": (20, "I"), "usize": (24, "I"), "nlen": (28, "H"), "xlen": (30, "H"),
               "disk": (34, "H"), "lho": (42, "I")}
    EOCD = {"disk": (4, "H"), "cd_disk": (6, "H"), "n_disk": (8, "H"), "n": (10, "H"),
            "cd_size": (12, "I"), "cd_off": (16, "I"), "clen": (20, "H")}
    Z64 = {"size": (4, "Q"), "disk": (16, "I"), "n_disk": (24, "Q"), "n": (32, "Q"),
           "cd_size": (40, "Q"), "cd_off": (48, "Q")}
    LOC = {"disk": (4, "I"), "off": (8, "Q"), "total": (16, "I")}

    def _put(self, base, table, field, value):
        off, fmt = table[field]
        struct.pack_into("<" + fmt, self.b, base + off, value)
        return self

    def _get(self, base, table, field):
        off, fmt = table[field]
        return struct.unpack_from("<" + fmt, self.b, base + off)[0]

    def local(self, i, field, value):
        return self._put(self.lho[i], self.LOCAL, field, value)

    def central(self, i, field, value):
        return self._put(self.cdh[i], self.CENTRAL, field, value)

    def both(self, i, field, value):
        self.local(i, field, value)
        return self.central(i, field, value)

    def end(self, field, value):
        return self._put(self.eocd, self.EOCD, field, value)

    def z64rec(self, field, value):
        return self._put(self.z64, self.Z64, field, value)

    def locator(self, field, value):
        return self._put(self.loc, self.LOC, field, value)

    def get_central(self, i, field):
        return self._get(self.cdh[i], self.CENTRAL, field)

    def bytes(self):
        return bytes(self.b)


def base_entries():
    rng = random.Random(99)
    return [dict(name="a.bin", data=rng.randbytes(300)),
            dict(name="b.txt", data=b"some text, repeated. " * 100, method=8),
            dict(name="c.bin", data=rng.randbytes(100))]


def base(**kw):
    return Built(base_entries(), **kw)


def with_entry(i, **changes):
    es = base_entries()
    es[i].update(changes)
    return Built(es)


def hostile_cases():
    """(label, bytes, expected status or "ok", rule id cited, spec note). Each case breaks
    one rule; the reader must answer with exactly that status and rule, whatever the
    source (mapping, pread, fd, memory)."""
    B = base()
    good = B.bytes()
    cases = []

    def add(label, data, status, rule):
        cases.append((label, bytes(data), status, rule))

    # accepted
    add("base", good, "ok", None)
    add("comment", base(comment=b"hello").bytes(), "ok", None)
    # Z-61: readers taking the last signature (python zipfile) would fail on it.
    add("comment holding a fake end signature", base(comment=b"xx PK\x05\x06 not an end").bytes(),
        "malformed", "Z-61")
    add("zip64 end records", base(zip64=True).bytes(), "ok", None)
    add("data descriptors", Built([dict(e, descriptor=True) for e in base_entries()]).bytes(), "ok", None)
    add("directory entry", Built(base_entries() + [dict(name="dir/", data=b"")]).bytes(), "ok", None)
    add("UTF-8 name without flag", with_entry(0, name="\u00e9.bin", flags=0).bytes(), "ok", None)
    add("unknown extra records", with_entry(0, local_extra=b"\x55\x54\x05\x00\x01\x00\x00\x00\x00",
                                            central_extra=b"\x99\x99\x00\x00").bytes(), "ok", None)
    # Z-60..Z-62: the end record
    add("empty file", b"", "malformed", "Z-60")
    add("not a zip", b"this is not a zip archive at all, just some text" * 3, "malformed", "Z-60")
    add("truncated to 10 bytes", good[:10], "truncated", "Z-60")
    add("truncated in the first entry's data", good[:100], "truncated", "Z-60")
    add("truncated in the second entry", good[:B.lho[1] + 40], "truncated", "Z-60")
    add("truncated in the central directory", good[:B.cd_off + 50], "truncated", "Z-60")
    add("truncated by one byte", good[:-1], "truncated", "Z-60")
    add("missing end record", good[:B.eocd], "truncated", "Z-60")
    add("comment length past the end", base().end("clen", 10).bytes(), "truncated", "Z-62")
    add("bytes after the end record", good + b"junk", "malformed", "Z-62")
    fake = struct.pack("<IHHHHIIH", SIG_EOCD, 0, 0, 3, 3, B.cd_size, B.cd_off, 0)
    add("two end records", base(comment=fake).bytes(), "malformed", "Z-61")
    # Z-63: disks and counts
    add("multi-disk end record", base().end("disk", 1).bytes(), "unsupported", "Z-63")
    add("entries on this disk differ", base().end("n_disk", 2).bytes(), "inconsistent", "Z-63")
    add("entry on another disk", base().central(1, "disk", 2).bytes(), "unsupported", "Z-63")
    # Z-64: zip64 end records
    add("end record defers to zip64, no locator", base().end("cd_off", MAX32).bytes(), "malformed", "Z-64")
    z = base(zip64=True)
    add("zip64 locator points at a local header", base(zip64=True).locator("off", 0).bytes(), "malformed", "Z-64")
    add("zip64 locator points past itself", base(zip64=True).locator("off", z.loc + 4).bytes(), "malformed", "Z-64")
    add("zip64 record size wrong", base(zip64=True).z64rec("size", 52).bytes(), "inconsistent", "Z-64")
    add("zip64 count disagrees with end record", base(zip64=True).end("n", 2).end("n_disk", 2).bytes(),
        "inconsistent", "Z-64")
    add("zip64 central size disagrees", base(zip64=True).end("cd_size", z.cd_size + 1).bytes(),
        "inconsistent", "Z-64")
    add("zip64 record's counts differ", base(zip64=True).z64rec("n_disk", 2).bytes(), "inconsistent", "Z-63")
    add("zip64 locator: two disks", base(zip64=True).locator("total", 2).bytes(), "unsupported", "Z-63")
    add("zip64 record: central directory moved", base(zip64=True).z64rec("cd_off", z.cd_off + 1).bytes(),
        "inconsistent", "Z-65")
    add("zip64 record: central directory past the end",
        base(zip64=True).z64rec("cd_off", 1 << 40).bytes(), "truncated", "Z-65")
    # Z-65..Z-67: the central directory's extent and count
    add("central directory past the end", base().end("cd_off", len(good)).bytes(), "truncated", "Z-65")
    add("central directory size past the end", base().end("cd_size", B.cd_size + 1000).bytes(),
        "truncated", "Z-65")
    add("central directory overlapping the end record", base().end("cd_size", B.cd_size + 10).bytes(),
        "inconsistent", "Z-65")
    add("central directory short of the end record", base().end("cd_size", B.cd_size - 10).bytes(),
        "inconsistent", "Z-65")
    add("count too large", base().end("n", 4).end("n_disk", 4).bytes(), "inconsistent", "Z-67")
    add("count too small", base().end("n", 2).end("n_disk", 2).bytes(), "inconsistent", "Z-67")
    add("count cannot fit", base().end("n", 9999).end("n_disk", 9999).bytes(), "inconsistent", "Z-67")
    add("name longer than the limit", with_entry(1, name="n" * 5000).bytes(), "limit", "Z-66")
    # Z-68..Z-70: central headers and extra fields
    add("bad central signature", base().central(1, "sig", 0x02014B51).bytes(), "malformed", "Z-68")
    add("central header runs past the directory", base().central(2, "nlen", 200).bytes(),
        "inconsistent", "Z-68")
    add("extra record overruns", with_entry(0, central_extra=b"\x99\x99\x10\x00abcd").bytes(),
        "malformed", "Z-69")
    add("local extra record overruns", with_entry(0, local_extra=b"\x99\x99\x10\x00abcd").bytes(),
        "malformed", "Z-69")
    add("zip64 size with no zip64 record", base().central(0, "csize", MAX32).central(0, "usize", MAX32).bytes(),
        "malformed", "Z-70")
    add("zip64 record too short", with_entry(0, central_extra=b"\x01\x00\x04\x00abcd")
        .central(0, "csize", MAX32).central(0, "usize", MAX32).bytes(), "malformed", "Z-70")
    add("local zip64 size with no zip64 record", base().local(2, "usize", MAX32).bytes(),
        "malformed", "Z-70")
    # Z-71, Z-30..Z-35: names
    for label, name, status, rule in (
            ("name with ../", "../evil.bin", "unsafe_path", "Z-34"),
            ("name with inner ..", "w/../../evil.bin", "unsafe_path", "Z-34"),
            ("absolute name", "/etc/evil", "unsafe_path", "Z-33"),
            ("drive letter", "C:/evil", "unsafe_path", "Z-33"),
            ("backslash", "w\\..\\evil", "unsafe_path", "Z-32"),
            ("NUL in name", b"a\x00.bin", "unsafe_path", "Z-31"),
            ("empty component", "w//a.bin", "unsafe_path", "Z-34"),
            ("dot component", "./a.bin", "unsafe_path", "Z-34"),
            ("invalid UTF-8", b"\xff\xfe.bin", "malformed", "Z-31"),
            ("empty name", b"", "malformed", "Z-30")):
        add(label, with_entry(1, name=name).bytes(), status, rule)
    add("duplicate names", Built(base_entries() + [dict(name="a.bin", data=b"again")]).bytes(),
        "inconsistent", "Z-71")
    add("encrypted central directory", base().central(0, "flags", 0x2800).bytes(), "unsupported", "Z-72")
    # Z-73..Z-75: local headers against central ones
    add("local header past the end", base().central(2, "lho", len(good) + 100).bytes(), "truncated", "Z-73")
    add("local header inside the central directory", base().central(2, "lho", B.cd_off).bytes(),
        "inconsistent", "Z-73")
    add("no local signature", base().central(1, "lho", B.lho[1] + 1).bytes(), "malformed", "Z-73")
    add("local name differs", base().local(1, "nlen", 4).bytes(), "inconsistent", "Z-74")
    add("local method differs", base().local(0, "method", 8).bytes(), "inconsistent", "Z-74")
    add("local flags differ", base().local(0, "flags", 0x808).bytes(), "inconsistent", "Z-74")
    add("local CRC differs", base().local(2, "crc", 12345).bytes(), "inconsistent", "Z-74")
    add("local compressed size differs", base().local(1, "csize", 17).bytes(), "inconsistent", "Z-74")
    add("local uncompressed size differs", base().local(1, "usize", 17).bytes(), "inconsistent", "Z-74")
    add("local sizes zero without bit 3", base().local(2, "csize", 0).local(2, "usize", 0).bytes(),
        "inconsistent", "Z-74")
    add("data past the end", base().both(2, "csize", 10 ** 6).both(2, "usize", 10 ** 6).bytes(),
        "truncated", "Z-75")
    add("data into the central directory", base().both(2, "csize", 110).both(2, "usize", 110).bytes(),
        "inconsistent", "Z-75")
    add("stored sizes differ", base().central(0, "usize", 301).bytes(), "inconsistent", "Z-75")
    # Z-76: overlapping entries (the first one's data swallows the second's header)
    span = B.lho[2] - B.data_off[0]
    add("overlapping entries", base().both(0, "csize", span).both(0, "usize", span).bytes(),
        "inconsistent", "Z-76")
    # Z-77: deflate, on read
    zeros = bytes(4 << 20)
    bomb = [dict(name="bomb.bin", data=zeros, method=8)]
    add("deflate bomb past its declared size", Built(bomb).both(0, "usize", 1000).bytes(),
        "inconsistent", "Z-77")
    add("deflate yields less than declared", base().both(1, "usize", 2100 + 500).bytes(),
        "inconsistent", "Z-77")
    add("declared size impossible for deflate", base().both(1, "usize", 0xFFFFFFF0).bytes(),
        "inconsistent", "Z-77")
    b2 = base()
    b2.b[b2.data_off[1]] = 0xFF  # block type 3: invalid
    add("corrupt deflate data", b2.bytes(), "malformed", "Z-77")
    half = base().get_central(1, "csize") // 2
    add("deflate data cut short", base().both(1, "csize", half).bytes(), "truncated", "Z-77")
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw = c.compress(b"x" * 1000) + c.flush()
    add("bytes after the deflate stream", Built([dict(name="t", data=b"x" * 1000, method=8,
                                                      raw=raw + b"junk")]).bytes(), "malformed", "Z-77")
    # Z-72: unreadable entries, on read
    add("encrypted entry", base().both(0, "flags", 0x801).bytes(), "unsupported", "Z-72")
    add("unknown method", base().both(0, "method", 12).bytes(), "unsupported", "Z-72")
    # Z-78: CRC, on verify
    b3 = base()
    b3.b[b3.data_off[2] + 5] ^= 0x40
    add("CRC mismatch", b3.bytes(), "checksum", "Z-78")
    return cases


def test_hostile(ctx):
    d = ctx.path("hostile")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cases = hostile_cases()
    print("%d hostile and edge-case archives" % len(cases))
    for i, (label, data, status, rule) in enumerate(cases):
        p = os.path.join(d, "%02d.zip" % i)
        with open(p, "wb") as f:
            f.write(data)
        for mode in (MODES[i % len(MODES)],) if REDUCED else MODES:
            r = ctx.oz("check", p, mode)
            out = r.stdout.strip()
            if status == "ok":
                check(r.returncode == 0 and out.startswith("ok "), "%s [%s]: %s" % (label, mode, out))
                continue
            want = "error %d " % ST[status]
            check(r.returncode == 1 and out.startswith(want) and ("(%s)" % rule) in out,
                  "%s [%s]: expected %s citing %s, got: %s" % (label, mode, status, rule, out))
        if status != "ok" and not REDUCED:
            print("  %-45s -> %s" % (label, ctx.oz("check", p).stdout.strip()[:150]))


# ---------------------------------------------------------------------------------------
# zip64
# ---------------------------------------------------------------------------------------

def test_many(ctx):
    n = 70000
    p = ctx.path("many.zip")
    r = ctx.oz("many", p, n)
    if not check(r.returncode == 0, "ozip many: %s" % r.stdout):
        return
    entries, info = check_layout(p, 64)
    check(entries is not None and len(entries) == n and info["zip64"], "Z-23: zip64 end records")
    names = ["e/%d.bin" % i for i in range(n)]
    client_checks(ctx, p, None, names, 64, zipalign=False, zipcmp=False)
    with zipfile.ZipFile(p) as z:
        check(len(z.infolist()) == n and z.read("e/69999.bin") == b"%d\n" % (69999 * 7919),
              "zipfile reads entry 69999")
    ours_ok(ctx, p, n, 1)
    # and the other way round: python's 70,000-entry archive read by us
    q = ctx.path("many-py.zip")
    with zipfile.ZipFile(q, "w") as z:
        for i in range(n):
            z.writestr("p/%d" % i, b"%d" % i)
    ours_ok(ctx, q, n, 1)
    r = ctx.oz("list", q)
    check(r.returncode == 0 and r.stdout.splitlines()[-1].endswith(" p/69999"), "ozip list of python's archive")


def test_large(ctx):
    size = 4 * (1 << 30) + (1 << 30) // 10  # 4.1 GiB
    p = ctx.path("large.zip")
    try:
        r = ctx.oz("big", p, size)
        if not check(r.returncode == 0, "ozip big: %s" % r.stdout):
            return
        entries, info = check_layout(p, 64)
        if entries:
            big, after = entries
            check(big["usize"] == size and big["data_off"] % 64 == 0, "Z-10/Z-21: the big entry")
            check(after["lho"] >= MAX32 and after["data_off"] % 64 == 0,
                  "Z-22: the entry after it has a zip64 offset")
            check(info["zip64"], "Z-23: zip64 end records")
        with zipfile.ZipFile(p) as z:
            infos = z.infolist()
            check([(i.filename, i.file_size) for i in infos] == [("big.bin", size), ("after.bin", 18)],
                  "zipfile sees both entries")
            with z.open("big.bin") as f:
                head = f.read(1 << 16)
            check(head == bytes(((x * 131) ^ (x >> 12) ^ (x >> 29)) & 0xFF for x in range(1 << 16)),
                  "zipfile reads the pattern")
            check(z.read("after.bin") == b"after the big one\n", "zipfile reads after.bin")
        ours_ok(ctx, p, 2, 1, modes=("map", "pread"))
        client_checks(ctx, p, None, ["big.bin", "after.bin"], 64, zipalign=False, zipcmp=False)
    finally:
        if os.path.exists(p):
            os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["clients", "interop", "hostile", "many", "large"])
    ap.add_argument("--ozip", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    work = os.path.join(a.work, a.what)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ctx = Ctx(a.ozip, work)
    {"clients": test_clients, "interop": test_interop, "hostile": test_hostile,
     "many": test_many, "large": test_large}[a.what](ctx)
    if FAILURES:
        print("zip_driver %s: %d FAILED" % (a.what, len(FAILURES)))
        return 1
    print("zip_driver %s: all passed" % a.what)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
