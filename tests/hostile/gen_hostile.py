#!/usr/bin/python3
"""Generates the hostile-input suite (spec/security.md): one case per defect.

    gen_hostile.py [--onnxz PATH] OUTDIR

Writes one file per defect, OUTDIR/files/<family>/<case id>.<ext>, or for the cases
that need several files, links or FIFOs one small directory, OUTDIR/dirs/<case id>/;
OUTDIR/dirs/sentinel/ (files beside every case that no case may touch), OUTDIR/keys/
(the passphrase files) and OUTDIR/manifest.json, which run_hostile.py reads. OUTDIR is
wiped first.

The base model is built with python3-onnx (onnx.helper); the base archives and encrypted
files with the onnxz tool itself; every defect is then written with struct, from the
layouts of spec/onnx-wire.md, spec/onnxz-zip.md (PKWARE APPNOTE), spec/external-data.md
and spec/encryption.md. A case that the tool gets wrong stays here with the message it
should give, marked "known_bug" until the library is fixed.

Manifest entry keys (see README.md):
  id, family, desc     the case's name, its family, what is wrong with the input
  files                name in the case directory -> path in OUTDIR (copied there)
  dir                  path in OUTDIR of a directory copied as the case directory
  cmd                  onnxz arguments, run in the (scratch) case directory
  exit                 the expected exit status (1; 0 for the few controls)
  expect               a regex searched in the error message (after "onnxz: error: FILE: ")
  file                 the FILE the error line must name
  offset               true: the line must end with "(at offset N)"
  stdout               exit-0 cases: a regex for stdout
  needs                ["openssl"]: skipped when ONNXZ_HAVE_OPENSSL=0
  hardlinks            [[path in the case dir, target relative to the link's directory]]
  fifos                [path in the case dir]   (links and FIFOs are made at run time)
  must_not_exist       absolute paths a case must not create
  writes               exit-0 controls: paths in the case directory the command may write
  known_bug            why the tool fails this case today (reported as XFAIL)
"""

import argparse
import hashlib
import hmac
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None

try:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
except ImportError:
    AESGCM = None

SKIP = 77
PASSPHRASE = b"correct horse"
WRONG_PASSPHRASE = b"wrong horse"
KEY_FILES = {"k.txt": PASSPHRASE + b"\n", "wrong.txt": WRONG_PASSPHRASE + b"\n"}
SENTINEL_FILES = {"secret.bin": b"SENTINEL-" + bytes(range(256)) * 2,
                  "notes.txt": b"this directory must not change\n"}

# Regexes shared by many cases.
NEST = r"nested (too deeply|deeper than \d+ levels)"
TRUNC_WIRE = r"(input ends inside|runs past the end|truncated)"

# ----------------------------------------------------------------------------------------
# protobuf wire helpers (spec/onnx-wire.md)


def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire):
    return varint((field << 3) | wire)


def ld(field, payload):
    return tag(field, 2) + varint(len(payload)) + payload


def vint(field, value):
    return tag(field, 0) + varint(value)


def read_varint(data, pos):
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def top_level_fields(data):
    """(field, wire, start, end) of each top-level field of a well-formed message."""
    pos, out = 0, []
    while pos < len(data):
        start = pos
        key, pos = read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            n, pos = read_varint(data, pos)
            pos += n
        else:
            raise ValueError("groups are not expected in the base model")
        out.append((field, wire, start, pos))
    return out


# ----------------------------------------------------------------------------------------
# ZIP (PKWARE APPNOTE 6.3; spec/onnxz-zip.md). Written from the layout, field by field.

LOCAL_SIG, CENTRAL_SIG, EOCD_SIG = 0x04034B50, 0x02014B50, 0x06054B50
Z64_EOCD_SIG, Z64_LOC_SIG = 0x06064B50, 0x07064B50
LOCAL_FMT = "<IHHHHHIIIHH"          # 30 bytes
CENTRAL_FMT = "<IHHHHHHIIIHHHHHII"  # 46 bytes
EOCD_FMT = "<IHHHHIIH"              # 22 bytes
Z64_EOCD_FMT = "<IQHHIIQQQQ"        # 56 bytes
Z64_LOC_FMT = "<IIQI"               # 20 bytes
# Byte offsets of the fields inside each record, for in-place patches.
LH = dict(sig=0, ver=4, flags=6, method=8, time=10, date=12, crc=14, csize=18, usize=22,
          nlen=26, xlen=28, name=30)
CH = dict(sig=0, made=4, ver=6, flags=8, method=10, time=12, date=14, crc=16, csize=20,
          usize=24, nlen=28, xlen=30, clen=32, disk=34, iattr=36, eattr=38, off=42, name=46)
EO = dict(sig=0, disk=4, cd_disk=6, n_disk=8, n_total=10, cd_size=12, cd_off=16, clen=20)
Z64E = dict(sig=0, size=4, made=12, ver=14, disk=16, cd_disk=20, n_disk=24, n_total=32,
            cd_size=40, cd_off=48)
Z64L = dict(sig=0, disk=4, off=8, disks=16)


def deflate_raw(data, level=9):
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


class Entry:
    """One entry to write. data is the bytes as stored (compressed for method 8);
    plain the uncompressed bytes (for the CRC and the uncompressed size)."""

    def __init__(self, name, plain, method=0, data=None, align=True, flags=0x0800,
                 local=None, central=None, zip64_local=False, zip64_central=None,
                 local_extra=b"", central_extra=b""):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.plain = plain
        self.method = method
        self.data = data if data is not None else (deflate_raw(plain) if method == 8 else plain)
        self.align = align and method == 0
        self.flags = flags
        self.local = local or {}        # overrides of local header fields
        self.central = central or {}    # overrides of central header fields
        self.zip64_local = zip64_local  # write both sizes in a local zip64 record
        self.zip64_central = zip64_central or []  # fields moved to the central zip64 record
        self.local_extra = local_extra
        self.central_extra = central_extra


def padding_record(length, alignment):
    """Android's alignment record (0xD935) of `length` bytes in total (Z-11)."""
    return struct.pack("<HHH", 0xD935, length - 4, alignment) + b"\0" * (length - 6)


def build_zip(entries, alignment=64, comment=b"", zip64_end=False, end=None, z64_end=None,
              z64_loc=None, between_cd_and_end=b""):
    """Writes entries the way onnxz does (Z-1..Z-42) unless overrides say otherwise.
    Returns (bytes, layout) with the offsets of every record."""
    out = bytearray()
    lay = {"local": [], "data": [], "central": []}
    for e in entries:
        h = len(out)
        z64 = struct.pack("<HHQQ", 1, 16, len(e.plain), len(e.data)) if e.zip64_local else b""
        extra = z64 + e.local_extra
        if e.align:
            p = (-(h + 30 + len(e.name) + len(extra))) % alignment
            if 0 < p < 6:
                p += alignment
            if p:
                extra += padding_record(p, alignment)
        ver = 45 if (e.zip64_local or e.zip64_central) else (20 if e.method == 8 else 10)
        f = dict(sig=LOCAL_SIG, ver=ver, flags=e.flags, method=e.method, time=0, date=0x21,
                 crc=zlib.crc32(e.plain), csize=len(e.data), usize=len(e.plain),
                 nlen=len(e.name), xlen=len(extra), name=e.name, extra=extra)
        if e.zip64_local:
            f["csize"] = f["usize"] = 0xFFFFFFFF
        f.update(e.local)
        out += struct.pack(LOCAL_FMT, f["sig"], f["ver"], f["flags"], f["method"], f["time"],
                           f["date"], f["crc"], f["csize"], f["usize"], f["nlen"], f["xlen"])
        out += f["name"] + f["extra"]
        lay["local"].append(h)
        lay["data"].append(len(out))
        out += e.data
    cd_off = len(out)
    for e, h in zip(entries, lay["local"]):
        vals = dict(usize=len(e.plain), csize=len(e.data), off=h)
        z64 = b""
        for k in e.zip64_central:  # order of Z-22: usize, csize, offset
            z64 += struct.pack("<Q", vals[k])
            vals[k] = 0xFFFFFFFF
        extra = (struct.pack("<HH", 1, len(z64)) + z64 if z64 else b"") + e.central_extra
        ver = 45 if (e.zip64_local or e.zip64_central) else (20 if e.method == 8 else 10)
        f = dict(sig=CENTRAL_SIG, made=0x033F, ver=ver, flags=e.flags, method=e.method,
                 time=0, date=0x21, crc=zlib.crc32(e.plain), csize=vals["csize"],
                 usize=vals["usize"], nlen=len(e.name), xlen=len(extra), clen=0, disk=0,
                 iattr=0, eattr=0x81A40000, off=vals["off"], name=e.name, extra=extra,
                 comment=b"")
        f.update(e.central)
        lay["central"].append(len(out))
        out += struct.pack(CENTRAL_FMT, f["sig"], f["made"], f["ver"], f["flags"], f["method"],
                           f["time"], f["date"], f["crc"], f["csize"], f["usize"], f["nlen"],
                           f["xlen"], f["clen"], f["disk"], f["iattr"], f["eattr"], f["off"])
        out += f["name"] + f["extra"] + f["comment"]
    cd_size = len(out) - cd_off
    lay["cd_off"], lay["cd_size"] = cd_off, cd_size
    n = len(entries)
    if zip64_end:
        z = dict(sig=Z64_EOCD_SIG, size=44, made=0x033F, ver=45, disk=0, cd_disk=0, n_disk=n,
                 n_total=n, cd_size=cd_size, cd_off=cd_off)
        z.update(z64_end or {})
        lay["z64_end"] = len(out)
        out += struct.pack(Z64_EOCD_FMT, z["sig"], z["size"], z["made"], z["ver"], z["disk"],
                           z["cd_disk"], z["n_disk"], z["n_total"], z["cd_size"], z["cd_off"])
        loc = dict(sig=Z64_LOC_SIG, disk=0, off=lay["z64_end"], disks=1)
        loc.update(z64_loc or {})
        lay["z64_loc"] = len(out)
        out += struct.pack(Z64_LOC_FMT, loc["sig"], loc["disk"], loc["off"], loc["disks"])
    out += between_cd_and_end
    f = dict(sig=EOCD_SIG, disk=0, cd_disk=0, n_disk=n, n_total=n, cd_size=cd_size,
             cd_off=cd_off, clen=len(comment), comment=comment)
    if zip64_end:
        f.update(n_disk=0xFFFF, n_total=0xFFFF, cd_size=0xFFFFFFFF, cd_off=0xFFFFFFFF)
    f.update(end or {})
    lay["end"] = len(out)
    out += struct.pack(EOCD_FMT, f["sig"], f["disk"], f["cd_disk"], f["n_disk"], f["n_total"],
                       f["cd_size"], f["cd_off"], f["clen"]) + f["comment"]
    return bytes(out), lay


def parse_zip(data):
    """Reads an archive written by onnxz: (entries as dicts, layout). Used on the tool's
    own output only (no zip64, no comment)."""
    end = len(data) - 22
    sig, _, _, n, _, cd_size, cd_off, _ = struct.unpack_from(EOCD_FMT, data, end)
    assert sig == EOCD_SIG
    entries, pos = [], cd_off
    for _ in range(n):
        (sig, _, _, flags, method, _, _, crc, csize, usize, nlen, xlen, clen, _, _, _,
         off) = struct.unpack_from(CENTRAL_FMT, data, pos)
        name = data[pos + 46:pos + 46 + nlen]
        lnlen, lxlen = struct.unpack_from("<HH", data, off + 26)
        doff = off + 30 + lnlen + lxlen
        entries.append(dict(name=name, method=method, crc=crc, csize=csize, usize=usize,
                            local=off, central=pos, data_off=doff,
                            data=data[doff:doff + csize]))
        pos += 46 + nlen + xlen + clen
    return entries, dict(cd_off=cd_off, cd_size=cd_size, end=end)


def patch(data, offset, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


# ----------------------------------------------------------------------------------------
# Encryption (spec/encryption.md), written from the spec to craft what the tool never
# writes: authentic chunks that break writer rules, bad padding, edited headers.


def ec1_header(salt, nonce_prefix, iterations, chunk_size, passphrase, version=1, cipher=1,
               kdf=1, reserved=0):
    master = hashlib.pbkdf2_hmac("sha256", passphrase, salt, iterations, 32)
    chunk_key = hmac.new(master, b"ONNXZEC1 chunk key", hashlib.sha256).digest()
    key_check = hmac.new(master, b"ONNXZEC1 key check", hashlib.sha256).digest()[:16]
    head = (b"ONNXZEC1" + bytes([version, cipher, kdf, reserved]) +
            struct.pack("<II", iterations, chunk_size) + nonce_prefix + salt + key_check)
    head += hashlib.sha256(head).digest()[:16]
    return head, chunk_key


def ec1_chunk(header, chunk_key, nonce_prefix, index, plain, flags, reserved=b"\0\0\0",
              length=None):
    frame = struct.pack("<QIB", index, len(plain) if length is None else length, flags) + reserved
    nonce = nonce_prefix + struct.pack("<Q", index)
    return frame + AESGCM(chunk_key).encrypt(nonce, plain, header + frame)


def ec1_file(payload, chunk_size=64, iterations=1000, passphrase=PASSPHRASE, chunks=None,
             **hdr):
    """chunks: list of (index, plaintext, flags[, reserved]) overriding C-35's split."""
    salt, prefix = bytes(range(16)), b"\xA0\xA1\xA2\xA3"
    header, key = ec1_header(salt, prefix, iterations, chunk_size, passphrase, **hdr)
    if chunks is None:
        chunks = numbered(split(payload, chunk_size), 0)
    out = header
    for c in chunks:
        out += ec1_chunk(header, key, prefix, c[0], c[1], c[2], *(c[3:]))
    return out


def split(payload, size=64):
    """C-35's chunks of payload (one empty chunk for an empty payload)."""
    return [payload[i:i + size] for i in range(0, len(payload), size)] or [b""]


def numbered(parts, first):
    """(index, plaintext, flags) for ec1_file: indices from first, the last part final."""
    return [(first + i, q, 1 if i == len(parts) - 1 else 0) for i, q in enumerate(parts)]


def cry1_file(payload, passphrase=PASSPHRASE, pad=None):
    """ONNXCRY1 (C-50): pad(payload) may replace PKCS#7."""
    salt, iv = bytes(range(32, 48)), bytes(range(48, 64))
    key = hashlib.pbkdf2_hmac("sha256", passphrase, salt, 100000, 32)
    if pad is None:
        n = 16 - len(payload) % 16
        padded = payload + bytes([n]) * n
    else:
        padded = pad(payload)
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return b"ONNXCRY1" + salt + iv + enc.update(padded) + enc.finalize()


# ----------------------------------------------------------------------------------------
# The generator


class Gen:
    def __init__(self, out, onnxz):
        self.out = out
        self.onnxz = onnxz
        self.cases = []
        self.ids = set()
        self.have_openssl = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "1"
        self.tmp = os.path.join(out, "_build")
        os.makedirs(self.tmp)
        self.shared = dict(KEY_FILES)   # files many cases use, stored once in keys/

    def tool(self, *argv, cwd=None):
        env = {k: v for k, v in os.environ.items() if k != "ONNXZ_KEY"}
        p = subprocess.run([self.onnxz, "-q", *argv], cwd=cwd or self.tmp, env=env,
                           capture_output=True, stdin=subprocess.DEVNULL,
                           start_new_session=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError("onnxz %s failed: %s" % (" ".join(argv), p.stderr.decode()))

    def case(self, cid, family, desc, files, cmd, expect, exit=1, file=None, offset=False,
             stdout=None, needs=None, symlinks=None, hardlinks=None, fifos=None, dirs=None,
             known_bug=None, must_not_exist=None, writes=None):
        """files: name in the case directory -> bytes. A case of one file (plus the shared
        key files) is stored as files/FAMILY/ID.EXT; a case that needs more (several files,
        subdirectories, symbolic or hard links, FIFOs) as the directory dirs/ID, beside
        dirs/sentinel, so that its relative links work in OUTDIR as in the scratch copy."""
        assert cid not in self.ids and "/" not in cid and cid != "sentinel", cid
        self.ids.add(cid)
        c = dict(id=cid, family=family, desc=desc, cmd=cmd, exit=exit, expect=expect)
        own = {n: v for n, v in files.items() if self.shared.get(n) != v}
        shared = {n: "keys/" + n for n in files if n not in own}
        if len(own) == 1 and not (symlinks or hardlinks or fifos or dirs):
            (name, content), = own.items()
            rel = "files/%s/%s%s" % (family, cid, os.path.splitext(name)[1])
            os.makedirs(os.path.join(self.out, "files", family), exist_ok=True)
            with open(os.path.join(self.out, rel), "wb") as f:
                f.write(content)
            c["files"] = dict(shared, **{name: rel})
        else:
            rel = "dirs/" + cid
            d = os.path.join(self.out, rel)
            os.makedirs(d)
            for sub in dirs or []:
                os.makedirs(os.path.join(d, sub), exist_ok=True)
            for name, content in own.items():
                p = os.path.join(d, name)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(p, "wb") as f:
                    f.write(content)
            for name, target in (symlinks or {}).items():
                os.symlink(target, os.path.join(d, name))
            # Hard links and FIFOs are also made here, so that a case can be rerun by hand
            # in OUTDIR; run_hostile.py makes them afresh in its scratch copy.
            for name, target in hardlinks or []:
                os.link(os.path.normpath(os.path.join(d, os.path.dirname(name), target)),
                        os.path.join(d, name))
            for name in fifos or []:
                os.mkfifo(os.path.join(d, name))
            c["dir"] = rel
            if shared:
                c["files"] = shared
        if file is None:
            file = next(a for a in cmd[1:] if not a.startswith("-") and a not in shared)
        c["file"] = file
        c["offset"] = offset
        if stdout is not None:
            c["stdout"] = stdout
        for k, v in (("needs", needs), ("hardlinks", hardlinks), ("fifos", fifos),
                     ("known_bug", known_bug), ("must_not_exist", must_not_exist),
                     ("writes", writes)):
            if v:
                c[k] = v
        self.cases.append(c)

    def write_shared(self):
        d = os.path.join(self.out, "dirs", "sentinel")
        os.makedirs(d)
        for name, content in SENTINEL_FILES.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(content)
        os.makedirs(os.path.join(self.out, "keys"))
        for name, content in self.shared.items():
            with open(os.path.join(self.out, "keys", name), "wb") as f:
                f.write(content)

    def write_manifest(self):
        with open(os.path.join(self.out, "manifest.json"), "w") as f:
            json.dump({"version": 1, "sentinel": "dirs/sentinel",
                       "sentinel_files": sorted(SENTINEL_FILES), "cases": self.cases},
                      f, indent=1)
            f.write("\n")


def base_model():
    """A small MLP (MatMul + Add): W float[4,8] (128 bytes, goes to an archive entry) and
    B float[8] (32 bytes, stays in the model). About 290 bytes."""
    W = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8), "W")
    B = numpy_helper.from_array(np.arange(8, dtype=np.float32), "B")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["Y0"]), helper.make_node("Add", ["Y0", "B"], ["Y"])],
        "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8])], [W, B])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="hostile")
    m.ir_version = 8
    return m


def model_with_tensor(t):
    g = helper.make_graph([], "g", [], [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, None)], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


# ----------------------------------------------------------------------------------------
# Families


def fam_truncated_model(g, model):
    """Every prefix of the model. Cuts at a top-level field boundary leave a valid, shorter
    ModelProto (protobuf has no end marker; W-10: even the empty input is valid): those are
    controls that must succeed."""
    fields = top_level_fields(model)
    bounds = {0} | {end for _, _, _, end in fields}
    graph_end = next(end for field, _, _, end in fields if field == 7)
    for n in range(len(model)):
        cid = "trunc_model_%04d" % n
        if n == 0:
            g.case(cid, "trunc_model", "m.onnx cut to 0 bytes: an empty file is no model",
                   {"t.onnx": b""}, ["verify", "t.onnx"], r"^empty file, not an ONNX model$")
        elif n in bounds and n < graph_end:
            g.case(cid, "trunc_model", "m.onnx cut to %d bytes: a top-level field boundary, "
                   "a valid shorter model without a graph (W-41)" % n, {"t.onnx": model[:n]},
                   ["verify", "t.onnx"], r"no graph \(W-41\)")
        elif n in bounds:
            g.case(cid, "trunc_model", "m.onnx cut to %d bytes: a top-level field boundary, "
                   "a valid shorter model" % n, {"t.onnx": model[:n]}, ["verify", "t.onnx"],
                   None, exit=0, stdout=r"^OK t\.onnx: onnx model")
        else:
            g.case(cid, "trunc_model", "m.onnx (%d bytes) cut to %d bytes" % (len(model), n),
                   {"t.onnx": model[:n]}, ["verify", "t.onnx"], TRUNC_WIRE, offset=True)


def fam_truncated_archive(g, arch, deflated):
    """Every prefix of the archive (the end record is lost, Z-60). Then, so that the reader
    gets past the end record and meets the rest cut short: the entries cut at every byte
    with the central directory and end record appended (its offset fixed: local headers
    and data then run into the central directory, Z-73/Z-75); the central directory cut at
    every byte with the end record kept (Z-65/Z-67/Z-68); and the deflated model's data cut
    at every byte with its compressed size fixed in both headers (the deflate stream ends
    early, Z-77)."""
    for n in range(1, len(arch)):
        cid = "trunc_archive_%04d" % n
        # 1 to 3 bytes ('P', 'PK', 'PK\\x03') are a cut signature, not a model ('PK' would
        # decode as a model of one unknown field).
        exp = r"(cut short|truncated|input ends inside)"
        g.case(cid, "trunc_archive", "m.onnxz (%d bytes) cut to %d bytes" % (len(arch), n),
               {"t.onnxz": arch[:n]}, ["verify", "t.onnxz"], exp)
    entries, lay = parse_zip(arch)
    cd = arch[lay["cd_off"]:lay["end"]]
    end = arch[lay["end"]:]
    for n in range(4, lay["cd_off"]):
        cid = "trunc_entries_%04d" % n
        g.case(cid, "trunc_entries", "m.onnxz's entries cut to %d bytes, then its central "
               "directory and end record (offset fixed)" % n,
               {"t.onnxz": arch[:n] + cd + patch(end, EO["cd_off"], "<I", n)},
               ["verify", "t.onnxz"],
               r"(past the end|overlaps the central directory|cut short|truncated|"
               r"no local header signature).*\(Z-7[35]\)", offset=True)
    for n in range(lay["cd_off"], lay["end"]):
        cid = "trunc_central_%04d" % n
        g.case(cid, "trunc_central", "m.onnxz cut to %d bytes (inside the central directory), "
               "its end record appended" % n, {"t.onnxz": arch[:n] + end}, ["verify", "t.onnxz"],
               r"(central directory|central header).*\(Z-6[5-8]\)", offset=True)
    # The deflated model entry: its compressed data cut at every byte, sizes fixed.
    de, dlay = parse_zip(deflated)
    model = de[-1]
    dend = deflated[dlay["end"]:]
    dcd = deflated[dlay["cd_off"]:dlay["end"]]
    mc = model["central"] - dlay["cd_off"]
    for n in range(0, model["csize"]):
        cut = model["data_off"] + n
        body = patch(deflated[:cut], model["local"] + LH["csize"], "<I", n)
        cd2 = patch(dcd, mc + CH["csize"], "<I", n)
        cid = "trunc_deflate_%04d" % n
        g.case(cid, "trunc_deflate", "deflated __MODEL_PROTO (%d compressed bytes) cut to %d, "
               "its compressed size fixed in both headers" % (model["csize"], n),
               {"t.onnxz": body + cd2 + patch(dend, EO["cd_off"], "<I", cut)},
               ["verify", "t.onnxz"],
               r"(deflate data of '__MODEL_PROTO' ends before its stream|corrupt deflate|"
               r"more than deflate can produce).*\(Z-77\)", offset=True)


def fam_wire(g, model):
    fields = top_level_fields(model)
    graph = next(model[s:e] for f, w, s, e in fields if f == 7)
    _, p = read_varint(graph, 0)
    _, p = read_varint(graph, p)
    graph_body = graph[p:]
    head = vint(1, 8)
    opset = ld(8, vint(2, 17))

    def m(name, data, desc, expect, bug=None):
        g.case(name, "wire", desc, {"x.onnx": data}, ["verify", "x.onnx"], expect, offset=True,
               known_bug=bug)

    # W-17: a varint longer than 10 bytes.
    eleven = b"\x80" * 10 + b"\x01"
    m("varint11_value", tag(1, 0) + eleven + opset,
      "ir_version's varint is 11 bytes", r"varint.*(longer than|more than|11|10 bytes)")
    m("varint11_tag", b"\x88" + b"\x80" * 9 + b"\x00" + opset,
      "a tag varint of 11 bytes", r"varint.*(longer than|more than|11|10 bytes)")
    m("varint11_length", head + tag(7, 2) + eleven + graph_body,
      "the graph's length varint is 11 bytes", r"varint.*(longer than|more than|11|10 bytes)")
    dims = ld(7, ld(5, tag(1, 0) + eleven + vint(2, 1) + ld(8, b"T")))
    m("varint11_nested", head + dims + opset,
      "a tensor's dims varint, 3 levels down, is 11 bytes",
      r"varint.*(longer than|more than|11|10 bytes)")
    m("varint_unterminated", head + tag(3, 0) + b"\xff" * 5,
      "the input ends inside a varint (continuation bit on the last byte)", TRUNC_WIRE)
    # Lengths past the end.
    for n, name, desc in ((len(graph_body) + 1, "plus1", "one byte more than is left"),
                          (1 << 31, "2p31", "2^31"), (1 << 32, "2p32", "2^32"),
                          ((1 << 63) - 1, "2p63m1", "2^63 - 1"), (1 << 63, "2p63", "2^63"),
                          ((1 << 64) - 1, "2p64m1", "2^64 - 1")):
        m("len_past_end_graph_" + name, head + tag(7, 2) + varint(n) + graph_body,
          "the graph's length is %s (%d bytes follow)" % (desc, len(graph_body)),
          r"graph.*(runs past the end|truncated)")
    # A node inside the graph declaring more than the graph holds (graph length correct).
    inner = ld(1, tag(1, 2) + varint(200) + b"X" * 10)
    m("len_past_end_nested", head + ld(7, inner) + opset,
      "a NodeProto's input string declares 200 bytes inside a 14-byte node",
      r"input.*(runs past the end|truncated)")
    raw = ld(7, ld(5, vint(1, 4) + vint(2, 1) + ld(8, b"T") + tag(9, 2) + varint(1 << 40) + b"\0" * 16))
    m("len_past_end_raw_data", head + raw + opset,
      "a tensor's raw_data declares 2^40 bytes, 16 follow", r"raw_data.*(runs past the end|truncated)")
    m("fixed32_cut", head + ld(7, ld(5, vint(2, 1) + tag(5, 5) + b"\0\0")),
      "a float (fixed32) value cut after 2 bytes inside its message", TRUNC_WIRE)
    m("packed_float_odd", head + ld(7, ld(5, vint(2, 1) + ld(4, b"\0" * 6))) + opset,
      "a packed float_data run of 6 bytes (not a multiple of 4)", r"float_data.*multiple of 4")
    m("bad_wire_type", head + tag(2, 7) + b"\0" + opset,
      "wire type 7", r"wire type 7")
    m("field_zero", head + b"\x00\x00" + opset, "field number 0", r"field 0\b")
    m("stray_end_group", head + tag(9, 4) + opset, "an end-group with no group open",
      r"(wire type 4|end-group)")
    m("group_unclosed", head + tag(9, 3) + vint(1, 1),
      "a group that is never closed", r"group 9.*(not closed|unclosed|ends)")
    m("group_wrong_close", head + tag(9, 3) + tag(10, 4) + opset,
      "a group opened as field 9 and closed as field 10", r"group 9.*(closed by|end-group 10)")


def fam_nesting(g, model):
    """Messages nested 10,000 deep (W-17: default limit 100, hard cap 1,000)."""
    head = vint(1, 8)
    opset = ld(8, vint(2, 17))
    # ModelProto.graph(7) -> GraphProto.node(1) -> NodeProto.attribute(5) -> AttributeProto.g(6)
    # -> GraphProto ... : 3 messages per round; ModelProto is level 1.
    # Plain loop, innermost first; each step wraps the current contents into the field
    # that holds them in the parent message.
    def nested_model(levels):
        kinds = [("graph", "node", "attr")[(lvl - 2) % 3] for lvl in range(2, levels + 1)]
        contents = b""
        for i in range(len(kinds) - 1, 0, -1):
            kind = kinds[i]
            if kind == "graph":      # parent is an AttributeProto: field g (6), type GRAPH
                contents = ld(1, b"a") + vint(20, 5) + ld(6, contents)
            elif kind == "node":     # parent is a GraphProto: field node (1)
                contents = ld(1, contents)
            else:                    # parent is a NodeProto: field attribute (5)
                contents = ld(5, contents)
        return head + ld(7, contents) + opset

    for levels in (101, 1001, 10000):
        g.case("nest_graph_%d" % levels, "nesting",
               "graph -> node -> attribute -> graph ... %d messages deep" % levels,
               {"x.onnx": nested_model(levels)}, ["verify", "x.onnx"],
               NEST, offset=True)
    g.case("nest_graph_100_ok", "nesting", "the same chain exactly 100 messages deep (the "
           "default limit): a control that must load", {"x.onnx": nested_model(100)},
           ["verify", "x.onnx"], None, exit=0, stdout=r"^OK x\.onnx")
    # TypeProto.sequence_type(4) -> Sequence.elem_type(1) -> TypeProto ...
    t = b""
    for _ in range(5000):
        t = ld(4, ld(1, t))
    vi = ld(1, b"x") + ld(2, t)
    g.case("nest_type_10000", "nesting", "a value_info type nested 10,000 messages deep "
           "(sequence of sequence of ...)", {"x.onnx": head + ld(7, ld(11, vi)) + opset},
           ["verify", "x.onnx"], NEST, offset=True)
    # Groups of an unknown field (W-14 counts them against the depth limit).
    grp = tag(99, 3) * 10000 + tag(99, 4) * 10000
    g.case("nest_groups_10000", "nesting", "an unknown field: 10,000 nested groups",
           {"x.onnx": head + grp + opset}, ["verify", "x.onnx"],
           NEST, offset=True)
    g.case("nest_groups_10000_unclosed", "nesting", "10,000 nested groups, never closed",
           {"x.onnx": head + tag(99, 3) * 10000}, ["verify", "x.onnx"],
           NEST, offset=True)
    # In an archive: the deep model as __MODEL_PROTO.
    deep = nested_model(10000)
    arch, _ = build_zip([Entry("__MODEL_PROTO", deep)])
    g.case("nest_archive_10000", "nesting", "an archive whose __MODEL_PROTO nests 10,000 deep",
           {"x.onnxz": arch}, ["verify", "x.onnxz"], NEST)
    g.case("nest_convert_10000", "nesting", "convert of the 10,000-deep model",
           {"x.onnx": deep}, ["convert", "x.onnx", "out.onnxz"], NEST,
           offset=True)


def fam_tensor(g):
    """Tensors whose dims and raw_data contradict each other. Loading accepts them (as
    onnx.load does); verify ("every structural check") refuses them (W-40)."""
    def t(dims, raw, dtype=TensorProto.FLOAT):
        x = TensorProto()
        x.name = "W"
        x.data_type = dtype
        x.dims.extend(dims)
        x.raw_data = raw
        return x
    cases = [
        ("dims_overflow", [1 << 32, 1 << 32, 1 << 32], b"\0" * 4, "dims 2^32 x 2^32 x 2^32 "
         "(the element count overflows 64 bits), 4 bytes of raw_data"),
        ("dims_overflow_bytes", [1 << 62], b"\0" * 4, "dims [2^62] float: 2^64 bytes, "
         "4 bytes of raw_data"),
        ("dims_negative", [-3, 5], b"\0" * 60, "dims [-3, 5]"),
        ("raw_data_short", [3, 5], b"\0" * 7, "float[3,5] (60 bytes) with 7 bytes of raw_data"),
        ("raw_data_long", [2], b"\0" * 12, "float[2] (8 bytes) with 12 bytes of raw_data"),
    ]
    for cid, dims, raw, desc in cases:
        g.case(cid, "tensor", desc, {"x.onnx": model_with_tensor(t(dims, raw))},
               ["verify", "x.onnx"], r"tensor 'W'.*(dims|raw_data|elements|size)")
    # In an archive: the tensor's entry holds 64 bytes, its dims say 2^96 elements. Built
    # by hand: `onnxz convert` refuses to pack such a tensor.
    m = onnx.ModelProto()
    m.ParseFromString(model_with_tensor(t([1 << 32, 1 << 32, 1 << 32], b"")))
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "W"), ("length", "64")):
        e = w.external_data.add()
        e.key, e.value = k, v
    arch, _ = build_zip([Entry("W", b"\0" * 64), Entry("__MODEL_PROTO", m.SerializeToString())])
    g.case("dims_overflow_archive", "tensor", "an archive whose tensor W has dims "
           "2^32 x 2^32 x 2^32 and a 64-byte entry", {"x.onnxz": arch}, ["verify", "x.onnxz"],
           r"tensor 'W'.*(dims|raw_data|elements|size)")


def external_model(model_bytes, keys, name="W"):
    """The base model with tensor W moved out: EXTERNAL with the given key/value pairs."""
    m = onnx.ModelProto()
    m.ParseFromString(model_bytes)
    for t in m.graph.initializer:
        if t.name == name:
            t.ClearField("raw_data")
            t.data_location = TensorProto.EXTERNAL
            for k, v in keys:
                e = t.external_data.add()
                e.key = k
                e.value = v
    return m.SerializeToString()


def fam_external(g, model):
    data = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8)).raw_data

    def ext(cid, desc, keys, expect, files=None, cmd=None, **kw):
        """Every message about an external tensor names it."""
        if expect is not None:
            expect = r"tensor 'W'.*(?:%s)" % expect
        fs = {"e.onnx": external_model(model, keys)}
        fs.update({"e.data": data} if files is None else files)
        g.case(cid, "external", desc, fs, cmd or ["verify", "e.onnx"], expect, **kw)

    ok = [("location", "e.data"), ("offset", "0"), ("length", "128")]
    ext("ext_control", "a valid two-file model: a control", ok, None, exit=0,
        stdout=r"^OK e\.onnx")
    # E-12: offset and length: 1 to 19 decimal digits, at most 2^63 - 1.
    bad_numbers = [("negative", "-1"), ("minus_zero", "-0"), ("plus", "+1"), ("hex", "0x10"),
                   ("space", " 1"), ("trailing_space", "1 "), ("exp", "1e3"), ("alpha", "abc"),
                   ("empty", ""), ("float", "1.0"), ("digits20", "0" * 20),
                   ("two_pow_63", "9223372036854775808"), ("two_pow_64", "18446744073709551616"),
                   ("huge", "9" * 30), ("arabic_digit", "\u0661"), ("nul", "1\x002")]
    for key in ("offset", "length"):
        for tagname, value in bad_numbers:
            keys = [("location", "e.data"), ("offset", "0"), ("length", "128")]
            keys = [(k, value if k == key else v) for k, v in keys]
            if tagname == "nul":
                # The value must be shown as it is (escaped, as entry names are), not cut.
                ext("ext_%s_%s" % (key, tagname), "external %s = %r" % (key, value), keys,
                    key + r" '1\\x002' is not")
                continue
            ext("ext_%s_%s" % (key, tagname), "external %s = %r" % (key, value), keys,
                key + r" '.*' is not a non-negative integer|" + key +
                r".*(decimal|digit|number|not a|invalid|malformed|range|large)")
    # Past the end (E-12: truncated), with and without overflow of offset + length.
    for cid, off, ln, desc in (
            ("ext_length_past_end", "0", "129", "length 129 of a 128-byte file"),
            ("ext_offset_past_end", "129", "0", "offset 129 of a 128-byte file"),
            ("ext_offset_plus_length", "64", "65", "offset 64 + length 65 of 128 bytes"),
            ("ext_offset_max", "9223372036854775807", "1", "offset 2^63 - 1, length 1"),
            ("ext_sum_overflow", "9223372036854775807", "9223372036854775807",
             "offset and length both 2^63 - 1 (their sum overflows 63 bits)"),
            ("ext_length_max", "0", "9223372036854775807", "length 2^63 - 1")):
        ext(cid, desc, [("location", "e.data"), ("offset", off), ("length", ln)],
            r"(past the end|truncated|beyond|exceeds|outside)")
    # E-10: locations.
    leaves = r"(leaves the model directory|outside|unsafe).*\.\.|\.\..*(leaves|outside|unsafe)"
    for cid, loc, desc, exp in (
            ("ext_loc_absolute", "/etc/passwd", "an absolute location", r"absolute"),
            ("ext_loc_absolute_sentinel", "/../sentinel/secret.bin", "an absolute location with ..",
             r"absolute"),
            ("ext_loc_dotdot", "../sentinel/secret.bin", "a location with a leading ..", leaves),
            ("ext_loc_dotdot_middle", "sub/../e.data", "a location with a .. component inside", leaves),
            ("ext_loc_dotdot_only", "..", "the location '..'", leaves),
            ("ext_loc_empty", "", "an empty location", r"location.*empty|empty location"),
            ("ext_loc_nul", "e.data\x00x", "a location with a NUL byte", r"NUL")):
        ext(cid, desc, [("location", loc), ("offset", "0"), ("length", "128")], exp, dirs=["sub"])
    ext("ext_loc_trailing_slash", "a location ending in /",
        [("location", "e.data/"), ("offset", "0"), ("length", "128")],
        r"location (names a directory|ends in /)|unsafe")
    # A long location is shortened in the message ('a/a/...'), so the reason always fits.
    for n, name in ((100, "201"), (3000, "6001")):
        ext("ext_loc_long_%s" % name, "a missing data file whose location is %s bytes (a/a/.../x)"
            % name, [("location", "a/" * n + "x"), ("offset", "0"), ("length", "128")],
            r"(No such file or directory|not found|too long)$")
    ext("ext_loc_escape", "a missing data file whose location holds ESC sequences and a newline",
        [("location", "x\x1b[31m\nonnxz: error: fake"), ("offset", "0"), ("length", "128")],
        r"x\\x1b\[31m\\x0aonnxz: error: fake")
    ext("ext_loc_missing", "the data file does not exist", ok,
        r"e\.data.*(not found|No such file|does not exist)", files={})
    # E-11: no symbolic links, on the way or at the end; one link; regular files only.
    ext("ext_symlink_out", "the data file is a symbolic link to a file outside the directory",
        ok, r"(symbolic link|symlink|unsafe)", files={},
        symlinks={"e.data": "../sentinel/secret.bin"})
    ext("ext_symlink_in", "the data file is a symbolic link to a file beside it", ok,
        r"(symbolic link|symlink|unsafe)", files={"real.data": data},
        symlinks={"e.data": "real.data"})
    ext("ext_symlink_dir", "the location goes through a symlinked directory (sub -> "
        "../sentinel)", [("location", "sub/secret.bin"), ("offset", "0"), ("length", "128")],
        r"(symbolic link|symlink|unsafe)", files={}, symlinks={"sub": "../sentinel"})
    ext("ext_symlink_dev", "the data file is a symbolic link to /dev/zero", ok,
        r"(symbolic link|symlink|unsafe)", files={}, symlinks={"e.data": "/dev/zero"})
    ext("ext_hardlink_out", "the data file is a hard link to a file outside the directory",
        ok, r"hard links?", files={}, hardlinks=[["e.data", "../sentinel/secret.bin"]])
    ext("ext_hardlink_in", "the data file has a second hard link beside it", ok,
        r"hard links?", files={"e.data": data},
        hardlinks=[["e2.data", "e.data"]])
    ext("ext_fifo", "the data file is a FIFO (must be refused without blocking)", ok,
        r"e\.data.*(not a regular file|FIFO|fifo)", files={}, fifos=["e.data"])
    ext("ext_directory", "the location names a directory", ok,
        r"e\.data.*(not a regular file|directory)", files={}, dirs=["e.data"])
    # The same through convert: nothing may be written.
    ext("ext_convert_dotdot", "convert of a model whose location is ../sentinel/secret.bin",
        [("location", "../sentinel/secret.bin"), ("offset", "0"), ("length", "128")],
        r"(unsafe|outside|\.\.|leave)", cmd=["convert", "e.onnx", "out.onnxz"])
    ext("ext_convert_symlink", "convert of a model whose data file is a symlink out", ok,
        r"(symbolic link|symlink|unsafe)", files={}, symlinks={"e.data": "../sentinel/secret.bin"},
        cmd=["convert", "e.onnx", "out.onnx"])
    ext("ext_convert_offset_negative", "convert with offset -1",
        [("location", "e.data"), ("offset", "-1"), ("length", "128")],
        r"offset.*(decimal|digit|number|not a|invalid|malformed)",
        cmd=["convert", "e.onnx", "out.onnx"])


# --- ZIP structure ---------------------------------------------------------------------


def archive_parts(arch):
    entries, _ = parse_zip(arch)
    w = next(e for e in entries if e["name"] == b"W")
    mp = next(e for e in entries if e["name"] == b"__MODEL_PROTO")
    return w["data"], mp["data"]


def model_pointing_to(model_proto, location, length="128", extra_keys=()):
    m = onnx.ModelProto()
    m.ParseFromString(model_proto)
    for t in m.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            del t.external_data[:]
            for k, v in (("location", location), ("length", length)) + tuple(extra_keys):
                if v is None:
                    continue
                e = t.external_data.add()
                e.key, e.value = k, v
    return m.SerializeToString()


def fam_zip(g, arch, wdata, mp):
    Z = r"\(Z-%s\)"

    def z(cid, desc, data, expect, cmd="verify", **kw):
        argv = [cmd, "a.onnxz"] + (["out"] if cmd == "unpack" else [])
        g.case(cid, "zip", desc, {"a.onnxz": data}, argv, expect, **kw)

    def std(**over):
        return [Entry("W", wdata, **over.get("w", {})), Entry("__MODEL_PROTO", mp, **over.get("m", {}))]

    base, lay = build_zip(std())
    if base != arch:
        print("note: the suite's ZIP writer does not reproduce onnxz's archive byte for byte",
              file=sys.stderr)
    z("zip_control", "the archive rebuilt by the suite's own ZIP writer: a control", base, None,
      exit=0, stdout=r"^OK a\.onnxz")
    wl, ml = lay["local"]
    wc, mc = lay["central"]
    wd = lay["data"][0]

    # Z-74: local and central headers disagree, one field at a time.
    for cid, off, fmt, val, what, word in (
            ("zip_lc_crc", wl + LH["crc"], "<I", zlib.crc32(wdata) ^ 1, "CRC", "CRC"),
            ("zip_lc_csize", wl + LH["csize"], "<I", 127, "compressed size", "(?<!un)compressed size"),
            ("zip_lc_usize", wl + LH["usize"], "<I", 127, "uncompressed size", "uncompressed size"),
            ("zip_lc_method", wl + LH["method"], "<H", 8, "method", "method"),
            ("zip_lc_flag0", wl + LH["flags"], "<H", 0x0801, "encryption flag (bit 0)", "flag"),
            ("zip_lc_flag3", wl + LH["flags"], "<H", 0x0808, "data-descriptor flag (bit 3)", "flag"),
            ("zip_lc_flag6", wl + LH["flags"], "<H", 0x0840, "strong-encryption flag (bit 6)", "flag"),
            ("zip_lc_name", wl + LH["name"], "<B", ord("V"), "name ('V' vs 'W')", "(?=.*'V')(?=.*'W')"),
            ("zip_cl_crc", wc + CH["crc"], "<I", zlib.crc32(wdata) ^ 1, "CRC (central changed)", "CRC")):
        z(cid, "local and central headers of an entry disagree on the %s" % what,
          patch(base, off, fmt, val), word + r".*local header.*central directory.*" + Z % "74")
    dfl, dlay = build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", mp, method=8)])
    for cid, off, val, what, word in (
            ("zip_cl_usize_deflated", dlay["central"][1] + CH["usize"], len(mp) + 1,
             "uncompressed size of the deflated __MODEL_PROTO (central changed)", "uncompressed size"),
            ("zip_lc_usize_deflated", dlay["local"][1] + LH["usize"], len(mp) - 1,
             "uncompressed size of the deflated __MODEL_PROTO (local changed)", "uncompressed size"),
            ("zip_lc_csize_deflated", dlay["local"][1] + LH["csize"], 5,
             "compressed size of the deflated __MODEL_PROTO (local changed)", "(?<!un)compressed size")):
        z(cid, "local and central headers of an entry disagree on the %s" % what,
          patch(dfl, off, "<I", val), word + r".*local header.*central directory.*" + Z % "74")
    # Z-73: the local header offset.
    for cid, val, desc, exp in (
            ("zip_lho_past_end", len(base) + 100, "past the end of the file",
             "local header of 'W'.*(past the end|outside|truncated)"),
            ("zip_lho_in_cd", lay["cd_off"], "at the central directory",
             "local header of 'W'.*central directory"),
            ("zip_lho_no_sig", wl + 8, "at bytes without a local header signature",
             "no local header signature.*'W'"),
            ("zip_lho_max", 0xFFFFFFFE, "0xFFFFFFFE",
             "local header of 'W'.*(past the end|outside|truncated)")):
        z(cid, "W's local header offset points %s" % desc, patch(base, wc + CH["off"], "<I", val),
          exp + ".*" + Z % "7[03]")
    # Z-75: data past the end / into the central directory; STORED sizes differ.
    big = len(base) + 1000
    d = patch(patch(base, wl + LH["csize"], "<I", big), wc + CH["csize"], "<I", big)
    d = patch(patch(d, wl + LH["usize"], "<I", big), wc + CH["usize"], "<I", big)
    z("zip_data_past_end", "W declares %d bytes (both headers): past the end of the file" % big,
      d, r"data of 'W'.*(past the end|truncated|outside).*" + Z % "75")
    d = patch(patch(base, ml + LH["csize"], "<I", len(mp) + 8), mc + CH["csize"], "<I", len(mp) + 8)
    d = patch(patch(d, ml + LH["usize"], "<I", len(mp) + 8), mc + CH["usize"], "<I", len(mp) + 8)
    z("zip_data_into_cd", "__MODEL_PROTO's data runs 8 bytes into the central directory", d,
      r"data of '__MODEL_PROTO'.*(central directory|overlap).*" + Z % "75")
    d = patch(patch(base, wl + LH["usize"], "<I", 64), wc + CH["usize"], "<I", 64)
    z("zip_stored_sizes_differ", "a STORED entry whose compressed (128) and uncompressed (64) "
      "sizes differ", d, r"STORED entry 'W'.*128.*64.*" + Z % "75")
    # Z-76: overlapping entries.
    span = ml + 30 + 13 + 21 - wd  # W's data grows over __MODEL_PROTO's local header
    grown = base[wd:wd + span]
    d = base
    for hdr, tbl in ((wl, LH), (wc, CH)):
        d = patch(d, hdr + tbl["csize"], "<I", span)
        d = patch(d, hdr + tbl["usize"], "<I", span)
        d = patch(d, hdr + tbl["crc"], "<I", zlib.crc32(grown))
    z("zip_overlap_header", "W's data (sizes and CRC consistent) covers __MODEL_PROTO's local "
      "header", d, r"'W' and '__MODEL_PROTO' overlap.*" + Z % "76")
    # Two central headers sharing one local header (the 'overlapping files' zip bomb): a
    # third central header 'w' points at W's local header (whose name is 'W').
    entries = [Entry("W", wdata), Entry("__MODEL_PROTO", mp)]
    d, l2 = build_zip(entries + [Entry("w", wdata, central={"off": 0})])
    z("zip_overlap_same_local", "a third central entry 'w' points at W's local header (the "
      "overlapping-files bomb)", d,
      r"('W' and 'w' overlap.*" + Z % "76" + r"|names 'W' where the central directory names 'w'.*"
      + Z % "74" + ")")
    # The classic overlap: entry X's local header lies inside W's data.
    inner = struct.pack(LOCAL_FMT, LOCAL_SIG, 10, 0x0800, 0, 0, 0x21, zlib.crc32(b"hidden"), 6,
                        6, 1, 0) + b"X" + b"hidden"
    wfake = inner + wdata[len(inner):]
    ents = [Entry("W", wfake), Entry("__MODEL_PROTO", mp)]
    d, l3 = build_zip(ents)
    xoff = l3["data"][0]
    # Add a central header for X at xoff by rebuilding the central directory by hand.
    cd = d[l3["cd_off"]:l3["end"]]
    xc = struct.pack(CENTRAL_FMT, CENTRAL_SIG, 0x033F, 10, 0x0800, 0, 0, 0x21,
                     zlib.crc32(b"hidden"), 6, 6, 1, 0, 0, 0, 0, 0x81A40000, xoff) + b"X"
    cd2 = cd + xc
    d = d[:l3["cd_off"]] + cd2 + struct.pack(EOCD_FMT, EOCD_SIG, 0, 0, 3, 3, len(cd2),
                                             l3["cd_off"], 0)
    z("zip_overlap_inside_data", "entry X's local header and data lie inside W's data", d,
      r"'W' and 'X' overlap.*" + Z % "76")

    # Z-60..Z-65: end records.
    end = base[lay["end"]:]
    z("end_missing", "the end record removed (the central directory kept)", base[:lay["end"]],
      r"(no end of central directory|cut short).*" + Z % "60")
    z("end_zeroed", "the end record's signature zeroed", patch(base, lay["end"], "<I", 0),
      r"(no end of central directory|cut short).*" + Z % "60")
    z("end_duplicated", "the end record written twice", base + end,
      r"(end record|central directory).*" + Z % "6[1-5]")
    hidden = base[:lay["end"]] + patch(end, EO["clen"], "<H", 22) + end
    z("end_in_comment", "an end record whose 22-byte comment is another valid end record: two "
      "candidates reach the end", hidden, r"(end record|two|ambiguous|candidates).*" + Z % "61")
    z("end_comment_past_eof", "the end record's comment length is 100, 10 bytes follow",
      base[:lay["end"]] + patch(end, EO["clen"], "<H", 100) + b"c" * 10,
      r"(comment|past the end|cut short|truncated).*" + Z % "62")
    z("end_bytes_after", "10 bytes after the end record (comment length 0)", base + b"x" * 10,
      r"(after|follow|trailing).*" + Z % "62")
    z("end_comment_then_bytes", "comment length 5 but 10 bytes follow the end record",
      base[:lay["end"]] + patch(end, EO["clen"], "<H", 5) + b"c" * 10,
      r"(after|follow|trailing).*" + Z % "62")
    z("end_comment_ok", "a valid 12-byte archive comment: a control",
      base[:lay["end"]] + patch(end, EO["clen"], "<H", 12) + b"hello, world", None,
      exit=0, stdout=r"^OK a\.onnxz")
    for cid, field, val, desc, exp in (
            ("end_disk", "disk", 1, "disk number 1", r"(disk|unsupported).*" + Z % "63"),
            ("end_cd_disk", "cd_disk", 2, "central directory on disk 2", r"multi-disk.*\b2\b.*" + Z % "63"),
            ("end_counts_differ", "n_disk", 1, "entries on this disk 1, in total 2",
             r"(entries|count).*" + Z % "6[37]"),
            ("end_count_high", "n_total", 3, "entry count 3 (2 central headers)",
             r"3 entries.*" + Z % "6[37]"),
            ("end_count_low", "n_total", 1, "entry count 1 (2 central headers)",
             r"(bytes follow the last|entries).*" + Z % "6[37]"),
            ("end_count_huge", "n_total", 0xFFFE, "entry count 65534 (2 central headers)",
             r"(entries|count|central).*" + Z % "6[37]"),
            ("end_cd_size_big", "cd_size", lay["cd_size"] + 1, "central directory size one too big",
             r"(central directory).*" + Z % "6[5-8]"),
            ("end_cd_size_small", "cd_size", lay["cd_size"] - 1, "central directory size one too small",
             r"(central directory).*" + Z % "6[5-8]"),
            ("end_cd_off_past", "cd_off", len(base) + 10, "central directory offset past the end",
             r"(central directory|past the end|truncated).*" + Z % "6[45]"),
            ("end_cd_off_ones", "cd_off", 0xFFFFFFFF, "central directory offset 0xFFFFFFFF with "
             "no zip64 locator", r"(zip64|locator).*" + Z % "64"),
            ("end_cd_size_ones", "cd_size", 0xFFFFFFFF, "central directory size 0xFFFFFFFF with "
             "no zip64 locator", r"(zip64|locator).*" + Z % "64")):
        if field in ("n_disk",):
            d = patch(base, lay["end"] + EO[field], "<H", val)
        elif field in ("n_total",):
            d = patch(patch(base, lay["end"] + EO["n_total"], "<H", val), lay["end"] + EO["n_disk"], "<H", val)
        elif field in ("disk", "cd_disk"):
            d = patch(base, lay["end"] + EO[field], "<H", val)
        else:
            d = patch(base, lay["end"] + EO[field], "<I", val)
        z(cid, "end record: " + desc, d, exp)
    z("end_only", "a 22-byte file holding only an end record that names 1 entry",
      struct.pack(EOCD_FMT, EOCD_SIG, 0, 0, 1, 1, 46, 0, 0),
      r"(central directory|entries|past the end|truncated).*" + Z % "6[5-7]")
    z("end_empty_archive", "an empty ZIP (only an end record): no __MODEL_PROTO",
      struct.pack(EOCD_FMT, EOCD_SIG, 0, 0, 0, 0, 0, 0, 0), r"__MODEL_PROTO.*A-1")
    # Central directory.
    z("cd_no_sig", "the second central header's signature broken",
      patch(base, mc, "<I", 0x02014B51), r"signature.*" + Z % "68")
    z("cd_name_past_cd", "the last central header's name length runs past the central directory",
      patch(base, mc + CH["nlen"], "<H", 40), r"(past|central directory).*" + Z % "6[78]")
    z("cd_extra_past_cd", "the last central header's extra length runs past the central directory",
      patch(base, mc + CH["xlen"], "<H", 40), r"(past|central directory).*" + Z % "6[78]")
    z("cd_comment_past_cd", "the last central header's comment length runs past the central directory",
      patch(base, mc + CH["clen"], "<H", 40), r"(past|central directory).*" + Z % "6[78]")
    # Z-69: extra records.
    z("extra_record_past_field", "W's central extra field is one record whose length runs past "
      "the field", build_zip(std(w=dict(central_extra=struct.pack("<HH", 0xCAFE, 100) + b"x" * 8)))[0],
      r"extra field record.*" + Z % "69")
    z("extra_local_record_past_field", "W's local extra field holds a record running past the "
      "field", build_zip(std(w=dict(local_extra=struct.pack("<HH", 0xCAFE, 200) + b"x" * 8)))[0],
      r"extra field record.*" + Z % "69")
    # Z-72: unsupported method / encryption.
    d = patch(patch(base, wl + LH["method"], "<H", 12), wc + CH["method"], "<H", 12)
    z("method_bzip2", "W stored with method 12 (bzip2) in both headers", d,
      r"'W'.*method 12.*" + Z % "72")
    d = patch(patch(base, wl + LH["flags"], "<H", 0x0801), wc + CH["flags"], "<H", 0x0801)
    z("entry_encrypted", "W flagged encrypted (bit 0) in both headers", d,
      r"'W'.*encrypted.*" + Z % "72")
    d = patch(base, wc + CH["flags"], "<H", 0x2800)
    d = patch(d, mc + CH["flags"], "<H", 0x2800)
    z("cd_encrypted", "central directory flagged encrypted (bit 13)", d,
      r"encrypted central director.*" + Z % "72")
    # Z-78: CRC.
    z("crc_stored_wrong", "W's CRC wrong in both headers",
      patch(patch(base, wl + LH["crc"], "<I", 0x12345678), wc + CH["crc"], "<I", 0x12345678),
      r"CRC-32 of 'W'.*" + Z % "78")
    bad = bytearray(base)
    bad[wd + 5] ^= 0x40
    z("crc_data_flipped", "one bit of W's data flipped", bytes(bad), r"CRC-32 of 'W'.*" + Z % "78")
    z("unpack_crc_data_flipped", "unpack of an archive with a flipped bit in W's data", bytes(bad),
      r"CRC-32 of 'W'.*" + Z % "78", cmd="unpack")
    d = bytearray(base)
    d[wd + 5] ^= 0x40
    g.case("unpack_crc_into", "zip", "unpack of a damaged archive into an existing empty DIR "
           "(nothing may be written)", {"a.onnxz": bytes(d)}, ["unpack", "-f", "a.onnxz", "out"],
           r"CRC-32 of 'W'.*\(Z-78\)", dirs=["out"])


def fam_zip64(g, wdata, mp):
    Z = r"\(Z-%s\)"

    def z(cid, desc, data, expect, **kw):
        g.case(cid, "zip64", desc, {"a.onnxz": data}, ["verify", "a.onnxz"], expect, **kw)

    std = lambda **kw: [Entry("W", wdata, **kw), Entry("__MODEL_PROTO", mp)]
    ok, lay = build_zip(std(), zip64_end=True)
    z("z64_control", "zip64 end records although not needed (all-ones end record fields): "
      "a control", ok, None, exit=0, stdout=r"^OK a\.onnxz")
    ze, zl = lay["z64_end"], lay["z64_loc"]
    L, E = (lambda f: zl + Z64L[f]), (lambda f: ze + Z64E[f])
    for cid, off, fmt, val, desc, exp in (
            ("z64_loc_past_end", L("off"), "<Q", len(ok) + 100, "locator points past the file",
             r"locator.*" + Z % "64"),
            ("z64_loc_huge", L("off"), "<Q", (1 << 64) - 1, "locator offset 2^64 - 1",
             r"locator.*" + Z % "64"),
            ("z64_loc_at_cd", L("off"), "<Q", lay["cd_off"], "locator points at the central "
             "directory (no zip64 signature)", r"no zip64 end record.*" + Z % "64"),
            ("z64_loc_disks", L("disks"), "<I", 2, "locator says 2 disks",
             r"multi-disk.*2 disks.*" + Z % "6[34]"),
            ("z64_loc_disk", L("disk"), "<I", 1, "locator's zip64 end record is on disk 1",
             r"multi-disk.*disk 1\b.*" + Z % "6[34]"),
            ("z64_end_size", E("size"), "<Q", 60, "zip64 end record size 60 (not reaching the "
             "locator)", r"size \(60\).*locator.*" + Z % "64"),
            ("z64_end_size_huge", E("size"), "<Q", (1 << 63), "zip64 end record size 2^63",
             r"size.*locator.*" + Z % "64"),
            ("z64_end_count", E("n_total"), "<Q", 3, "zip64 total entries 3, this disk 2",
             r"entries.*" + Z % "6[37]"),
            ("z64_end_counts_huge", E("n_total"), "<Q", (1 << 64) - 1, "zip64 total entries "
             "2^64 - 1", r"(entries|limit).*" + Z % "6[367]"),
            ("z64_end_cd_off", E("cd_off"), "<Q", lay["cd_off"] + 1, "zip64 central directory "
             "offset one too far", r"central directory.*" + Z % "6[5-8]"),
            ("z64_end_cd_off_huge", E("cd_off"), "<Q", 1 << 62, "zip64 central directory "
             "offset 2^62", r"central directory.*(past the end|truncated).*" + Z % "65"),
            ("z64_end_cd_size", E("cd_size"), "<Q", 1 << 40, "zip64 central directory size "
             "2^40", r"central directory.*(past the end|limit).*" + Z % "6[56]"),
            ("z64_end_disk", E("disk"), "<I", 3, "zip64 end record on disk 3",
             r"multi-disk.*" + Z % "63"),
            ("z64_end_sig", ze, "<I", 0x06064B51, "zip64 end record signature broken",
             r"no zip64 end record.*" + Z % "64")):
        z(cid, desc, patch(ok, off, fmt, val), exp)
    # The end record's non-all-ones fields must equal the zip64 values.
    for cid, field, fmt, val in (("z64_eocd_count_differs", "n_total", "<H", 1),
                                 ("z64_eocd_cd_off_differs", "cd_off", "<I", lay["cd_off"] - 1),
                                 ("z64_eocd_cd_size_differs", "cd_size", "<I", 5)):
        d = patch(ok, lay["end"] + EO[field], fmt, val)
        if field == "n_total":
            d = patch(d, lay["end"] + EO["n_disk"], "<H", val)
        z(cid, "end record %s is neither all ones nor the zip64 value" % field, d,
          r"(zip64|differ|disagree).*" + Z % "64")
    # Z-70: 0xFFFFFFFF without its zip64 value.
    d, l2 = build_zip(std())
    wc = l2["central"][0]
    z("z64_central_missing", "W's central compressed size is 0xFFFFFFFF and there is no zip64 "
      "extra record", patch(d, wc + CH["csize"], "<I", 0xFFFFFFFF), r"(zip64).*" + Z % "70")
    z("z64_central_offset_missing", "W's central local header offset is 0xFFFFFFFF, no zip64 "
      "record", patch(d, wc + CH["off"], "<I", 0xFFFFFFFF), r"(zip64).*" + Z % "70")
    short = struct.pack("<HHI", 1, 4, 128)
    d, _ = build_zip([Entry("W", wdata, central={"csize": 0xFFFFFFFF, "usize": 0xFFFFFFFF},
                            central_extra=short), Entry("__MODEL_PROTO", mp)])
    z("z64_central_short", "W's central sizes are both 0xFFFFFFFF, its zip64 record holds 4 bytes",
      d, r"(zip64).*" + Z % "70")
    d, _ = build_zip([Entry("W", wdata, zip64_central=["usize", "csize"]), Entry("__MODEL_PROTO", mp)])
    z("z64_central_ok", "W's central sizes in a zip64 record (not needed, allowed): a control",
      d, None, exit=0, stdout=r"^OK a\.onnxz")
    d, l3 = build_zip([Entry("W", wdata, zip64_local=True, zip64_central=["usize", "csize"]),
                       Entry("__MODEL_PROTO", mp)])
    # The local zip64 record says 64 bytes, the central one 128.
    wl = l3["local"][0]
    lz = wl + 30 + 1  # the local zip64 record comes first in the extra field
    z("z64_local_disagrees", "W's local zip64 record says 64 bytes, the central one 128",
      patch(patch(d, lz + 4, "<Q", 64), lz + 12, "<Q", 64),
      r"size 64 in the local header.*128 in the central directory.*" + Z % "74")
    z("z64_local_missing", "W's local sizes are 0xFFFFFFFF and its local extra field has no zip64 "
      "record", build_zip([Entry("W", wdata, local={"csize": 0xFFFFFFFF, "usize": 0xFFFFFFFF}),
                           Entry("__MODEL_PROTO", mp)])[0], r"(zip64).*" + Z % "70")
    # The zip64 local header offset points far past the file.
    d2, l4 = build_zip([Entry("W", wdata, zip64_central=["off"]), Entry("__MODEL_PROTO", mp)])
    wc = l4["central"][0]
    z("z64_offset_huge", "W's zip64 local header offset is 2^63", patch(d2, wc + 46 + 1 + 4, "<Q", 1 << 63),
      r"(past the end|outside|truncated).*" + Z % "7[03]")


def fam_names(g, wdata, mp):
    """Entry names (Z-30..Z-35, A-30) for unpack: refused before anything is written."""
    evil_abs = "/tmp/h1_onnxz_hostile_pwned_abs"
    names = [
        ("dotdot", "../evil", r"'\.\.'.*\(Z-34\)"),
        ("dotdot_deep", "../../sentinel/pwned", r"'\.\.'.*\(Z-34\)"),
        ("dotdot_middle", "a/../../evil", r"'\.\.'.*\(Z-34\)"),
        ("absolute", evil_abs, r"absolute.*\(Z-33\)"),
        ("drive", "C:evil", r"drive.*\(Z-33\)"),
        ("backslash", "..\\evil", r"backslash.*\(Z-32\)"),
        ("empty_component", "a//evil", r"empty component.*\(Z-34\)"),
        ("dot_component", "./evil", r"'\.' component.*\(Z-34\)"),
        ("nul", "ev\0il", r"NUL.*\(Z-31\)"),
        ("bad_utf8", b"ev\xffil", r"UTF-8.*\(Z-31\)"),
        ("overlong_utf8", b"\xc0\xae\xc0\xae/evil", r"UTF-8.*\(Z-31\)"),
        ("surrogate_utf8", b"\xed\xa0\x80evil", r"UTF-8.*\(Z-31\)"),
        ("empty", b"", r"empty.*\(Z-30\)"),
        ("too_long", "a" * 5000, r"(long|limit).*\(Z-(30|66)\)"),
    ]
    for tagname, name, exp in names:
        bname = name if isinstance(name, bytes) else name.encode()
        loc = bname.decode("utf-8", "replace") if b"\0" not in bname else "x"
        # The tensor points at the evil entry (as a writer of such an archive would do).
        m = model_pointing_to(mp, loc) if b"\0" not in bname else mp
        arch, _ = build_zip([Entry(bname, wdata), Entry("__MODEL_PROTO", m)])
        must = [evil_abs] if tagname == "absolute" else None
        g.case("name_%s_unpack" % tagname, "names", "unpack of an archive with an entry named %r"
               % bname, {"a.onnxz": arch}, ["unpack", "a.onnxz", "out"], exp,
               must_not_exist=must)
        # A stray entry no tensor names is still refused by the reader.
        arch2, _ = build_zip([Entry("W", wdata), Entry(bname, b"evil"), Entry("__MODEL_PROTO", mp)])
        g.case("name_%s_extra_verify" % tagname, "names", "verify of an archive with an extra "
               "entry named %r" % bname, {"a.onnxz": arch2}, ["verify", "a.onnxz"], exp,
               must_not_exist=must)
    arch, _ = build_zip([Entry("W", wdata), Entry("W", wdata), Entry("__MODEL_PROTO", mp)])
    g.case("name_duplicate", "names", "two entries named W", {"a.onnxz": arch},
           ["unpack", "a.onnxz", "out"], r"(duplicate|repeated|twice|more than once).*(Z-35|Z-71)")
    arch, _ = build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", mp), Entry("__MODEL_PROTO", mp)])
    g.case("name_two_models", "names", "two entries named __MODEL_PROTO", {"a.onnxz": arch},
           ["verify", "a.onnxz"], r"(duplicate|repeated|twice|more than once).*(Z-35|Z-71|A-1)")
    arch, _ = build_zip([Entry("W", wdata), Entry("model.onnx", b"x"), Entry("__MODEL_PROTO", mp)])
    g.case("name_model_onnx", "names", "unpack of an archive with an entry named model.onnx",
           {"a.onnxz": arch}, ["unpack", "a.onnxz", "out"], r"entry named model\.onnx")
    # Strings from the file in error messages: printed escaped, never raw (terminal escape
    # sequences), and on one line (a newline must not forge a second error line).
    for cid, loc, exp in (
            ("ref_location_escape", "V\x1b[2J\x1b]0;pwned\x07", r"'V\\x1b\[2J\\x1b\]0;pwned\\x07'"),
            ("ref_location_newline", "V\nonnxz: error: fake", r"'V\\x0aonnxz: error: fake'")):
        arch, _ = build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", model_pointing_to(mp, loc))])
        g.case(cid, "names", "a tensor's location (no such entry) is %r" % loc, {"a.onnxz": arch},
               ["verify", "a.onnxz"], exp)
    g.case("name_escape_extra", "names", "an extra entry named 'a\\x1b[2J\\x0a/..' (refused "
           "for its '..'; the name must be printed escaped)", {"a.onnxz": build_zip(
               [Entry("W", wdata), Entry("a\x1b[2J\n/..", b"x"), Entry("__MODEL_PROTO", mp)])[0]},
           ["verify", "a.onnxz"], r"'a\\x1b\[2J\\x0a/\.\.'.*\(Z-34\)")
    # Names that are a file and a directory at once (Z-36): unpack must find the conflict
    # before it writes anything (the help: "Nothing is written unless they all pass").
    m = model_pointing_to(mp, "a/b")
    for cid, ents, exp in (
            ("unpack_conflict_file_dir", [Entry("a", b"x"), Entry("a/b", wdata)], r"'a'.*'a/b'|'a/b'.*'a'"),
            ("unpack_conflict_dir_file", [Entry("a/b", wdata), Entry("a", b"x")], r"'a'.*'a/b'|'a/b'.*'a'")):
        g.case(cid, "names", "unpack of an archive with entries %s" % " and ".join(
               repr(e.name.decode()) for e in ents), {"a.onnxz": build_zip(ents + [Entry("__MODEL_PROTO", m)])[0]},
               ["unpack", "a.onnxz", "out"], exp)
        g.case(cid.replace("unpack_", "verify_"), "names", "verify of an archive with entries "
               "%s" % " and ".join(repr(e.name.decode()) for e in ents),
               {"a.onnxz": build_zip(ents + [Entry("__MODEL_PROTO", m)])[0]},
               ["verify", "a.onnxz"], r"(%s).*\(Z-36\)" % exp)
    arch, _ = build_zip([Entry("W", wdata), Entry("model.onnx/x", b"x"), Entry("__MODEL_PROTO", mp)])
    g.case("name_model_onnx_dir", "names", "unpack of an archive with an entry model.onnx/x "
           "(model.onnx, the model's file when unpacked, would be a directory)",
           {"a.onnxz": arch}, ["unpack", "a.onnxz", "out"], r"entry named model\.onnx/x")
    arch, _ = build_zip([Entry("W", wdata), Entry("W/", b""), Entry("__MODEL_PROTO", mp)])
    g.case("unpack_conflict_dir_entry", "names", "unpack of an archive with a file entry 'W' and "
           "a directory entry 'W/'", {"a.onnxz": arch}, ["unpack", "a.onnxz", "out"],
           r"'W/?'.*'W/?'")
    # A tensor whose entry is a directory entry ('W/', holding its 128 bytes): A-21.
    arch, _ = build_zip([Entry("W/", wdata), Entry("__MODEL_PROTO", model_pointing_to(mp, "W/"))])
    for cmd, argv in (("verify", ["verify", "a.onnxz"]), ("unpack", ["unpack", "a.onnxz", "out"])):
        g.case("tensor_dir_entry_%s" % cmd, "names", "%s of an archive whose tensor W points at "
               "a directory entry 'W/' of 128 bytes" % cmd, {"a.onnxz": arch}, argv,
               r"'W/'.*(directory|ends in /)|(directory|ends in /).*'W/'")
    # A tensor in a subdirectory, unpacked with -f into a DIR whose 'sub' is a symlink out.
    m = model_pointing_to(mp, "sub/w")
    arch, _ = build_zip([Entry("sub/w", wdata), Entry("__MODEL_PROTO", m)])
    g.case("unpack_sub_ok", "names", "unpack of an archive with entry sub/w: a control",
           {"a.onnxz": arch}, ["unpack", "a.onnxz", "out"], None, exit=0, stdout=r"", writes=["out"])
    g.case("unpack_through_symlink", "names", "unpack -f into DIR whose 'sub' is a symlink to "
           "../../sentinel; the archive has entry sub/w", {"a.onnxz": arch},
           ["unpack", "-f", "a.onnxz", "out"], r"out/sub.*(symbolic link|symlink|not a directory)",
           file="out", dirs=["out"], symlinks={"out/sub": "../../sentinel"})
    g.case("unpack_over_symlink_model", "names", "unpack -f into DIR whose model.onnx is a "
           "symlink to ../../sentinel/secret.bin (must replace the link, never write through)",
           {"a.onnxz": arch}, ["unpack", "-f", "a.onnxz", "out"], None, exit=0, stdout=r"",
           dirs=["out"], writes=["out"], symlinks={"out/model.onnx": "../../sentinel/secret.bin"})


def fam_archive(g, wdata, mp, arch):
    """The archive layer: A-1, A-21, A-40; deflate (Z-77)."""
    Z = r"\(Z-%s\)"

    def a(cid, desc, data, expect, cmd="verify", **kw):
        argv = {"unpack": ["unpack", "a.onnxz", "out"], "convert": ["convert", "a.onnxz", "out.onnx"],
                "stub": ["stub", "a.onnxz", "out.onnx"],
                "meta": ["meta", "a.onnxz", "--set", "k=v"]}.get(cmd, [cmd, "a.onnxz"])
        g.case(cid, "archive", desc, {"a.onnxz": data}, argv, expect, **kw)

    a("no_model_proto", "an archive without __MODEL_PROTO",
      build_zip([Entry("W", wdata)])[0], r"__MODEL_PROTO.*A-1")
    for cid, loc, ln, extra, desc, exp in (
            ("ref_missing", "V", "128", (), "W's location names no entry", r"tensor 'W'.*(not found|no entry).*'V'.*A-21"),
            ("ref_model_proto", "__MODEL_PROTO", "128", (), "W's location is __MODEL_PROTO",
             r"tensor 'W'.*__MODEL_PROTO.*(model|not a tensor|cannot|must not|reserved)"),
            ("ref_length_short", "W", "127", (), "W's length 127, entry 128", r"tensor 'W'.*(length|size).*A-21"),
            ("ref_length_long", "W", "129", (), "W's length 129, entry 128", r"tensor 'W'.*(length|size).*A-21"),
            ("ref_length_huge", "W", "9223372036854775807", (), "W's length 2^63 - 1", r"tensor 'W'.*(length|size).*A-21"),
            ("ref_length_neg", "W", "-128", (), "W's length -128", r"length '-128' is not"),
            ("ref_offset", "W", "64", (("offset", "64"),), "W's offset 64, length 64", r"tensor 'W'.*offset.*A-21"),
            ("ref_offset_abc", "W", "128", (("offset", "abc"),), "W's offset 'abc'", r"offset 'abc' is not"),
            ("ref_length_alpha", "W", "12x", (), "W's length '12x'", r"length '12x' is not"),
            ("ref_dotdot", "../sentinel/secret.bin", "128", (), "W's location ../sentinel/secret.bin (no such entry; must never reach the file system)",
             r"tensor 'W'.*(unsafe|not found|no entry).*'\.\./sentinel/secret\.bin'")):
        m = model_pointing_to(mp, loc, None if ln is None else ln, extra)
        a(cid, desc, build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", m)])[0], exp)
    a("version_2", "an __ONNXZ_VERSION entry holding 2",
      build_zip([Entry("W", wdata), Entry("__ONNXZ_VERSION", b"2"), Entry("__MODEL_PROTO", mp)])[0],
      r"version.*newer.*A-40")
    a("version_huge", "an __ONNXZ_VERSION entry holding 99999999999999999999",
      build_zip([Entry("W", wdata), Entry("__ONNXZ_VERSION", b"9" * 20), Entry("__MODEL_PROTO", mp)])[0],
      r"version.*newer.*A-40")
    bad = bytearray(mp)
    bad[0] = 0x0F   # field 1, wire type 7
    a("model_proto_garbage", "__MODEL_PROTO does not decode (wire type 7 at its first byte)",
      build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", bytes(bad))])[0],
      r"wire type 7")
    a("model_proto_truncated", "__MODEL_PROTO is the model cut in half (ZIP intact)",
      build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", mp[:len(mp) // 2])])[0], TRUNC_WIRE)

    # Deflate (Z-77): the model entry deflated, with lies.
    def dz(cid, desc, comp, usize, crc, exp, cmd="verify"):
        e = Entry("__MODEL_PROTO", mp, method=8, data=comp,
                  local={"usize": usize, "crc": crc}, central={"usize": usize, "crc": crc})
        a(cid, desc, build_zip([Entry("W", wdata), e])[0], exp, cmd=cmd)
    comp = deflate_raw(mp)
    BOMB = r"'__MODEL_PROTO' inflates past its declared size of 200 bytes.*" + Z % "77"
    a("deflate_control", "__MODEL_PROTO deflated, all sizes right: a control",
      build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", mp, method=8)])[0], None, exit=0,
      stdout=r"^OK a\.onnxz")
    # A bomb: the real model followed by a doc_string of 200,000 'a's, declared as 200 bytes.
    m = onnx.ModelProto()
    m.ParseFromString(mp)
    m.doc_string = "a" * 200000
    big = m.SerializeToString()
    bc = deflate_raw(big)
    dz("deflate_bomb", "__MODEL_PROTO inflates to %d bytes (%dx) but declares %d" %
       (len(big), len(big) // 200, 200), bc, 200, zlib.crc32(big[:200]),
       BOMB)
    dz("deflate_bomb_ls", "ls of the 1000x deflate bomb (ls decodes the model)", bc, 200,
       zlib.crc32(big[:200]), BOMB, cmd="ls")
    dz("deflate_bomb_unpack", "unpack of the 1000x deflate bomb", bc, 200,
       zlib.crc32(big[:200]), BOMB, cmd="unpack")
    dz("deflate_bomb_convert", "convert of the 1000x deflate bomb", bc, 200,
       zlib.crc32(big[:200]), BOMB, cmd="convert")
    dz("deflate_bomb_info", "info of the 1000x deflate bomb", bc, 200,
       zlib.crc32(big[:200]), BOMB, cmd="info")
    dz("deflate_bomb_meta", "meta --set of the 1000x deflate bomb (edits in place: the file must "
       "stay byte-identical)", bc, 200, zlib.crc32(big[:200]),
       BOMB, cmd="meta")
    dz("deflate_declared_impossible", "declared size 2^31 for %d compressed bytes (more than "
       "deflate can produce)" % len(comp), comp, 1 << 31, zlib.crc32(mp),
       r"declares 2147483648 bytes.*more than deflate can produce.*" + Z % "77")
    dz("deflate_declared_huge", "declared size 0xFFFFFFFE", comp, 0xFFFFFFFE, zlib.crc32(mp),
       r"declares 4294967294 bytes.*(more than deflate can produce|limit).*" + Z % "(66|77)")
    dz("deflate_short", "inflates to fewer bytes than declared", comp, len(mp) + 10, zlib.crc32(mp),
       r"inflates to 188 bytes but declares 198.*" + Z % "77")
    dz("deflate_corrupt", "the deflate data is garbage (block type 3)", b"\xff" * len(comp),
       len(mp), zlib.crc32(mp), r"'__MODEL_PROTO'.*corrupt deflate data.*" + Z % "77")
    dz("deflate_cut", "the compressed size ends before the deflate stream does", comp[:len(comp) // 2],
       len(mp), zlib.crc32(mp), r"deflate data of '__MODEL_PROTO' ends before its stream.*" + Z % "77")
    dz("deflate_trailing", "bytes after the end of the deflate stream within the compressed size",
       comp + b"JUNK", len(mp), zlib.crc32(mp), r"4 bytes of '__MODEL_PROTO' follow the end of its deflate stream.*" + Z % "77")
    dz("deflate_crc", "the deflated model's CRC is wrong", comp, len(mp), zlib.crc32(mp) ^ 0xFF,
       r"CRC-32 of '__MODEL_PROTO'.*" + Z % "7[78]")
    # The tensor entry deflated (A-3: tensors are STORED); verify says so.
    a("tensor_deflated", "W's entry is DEFLATED (A-3: tensor entries are stored)",
      build_zip([Entry("W", wdata, method=8), Entry("__MODEL_PROTO", mp)])[0],
      r"'W'.*deflated.*A-3")
    a("tensor_misaligned", "W's data at offset 31 (A-4: 64-byte aligned)",
      build_zip([Entry("W", wdata, align=False), Entry("__MODEL_PROTO", mp)])[0],
      r"'W'.*offset 31.*64-byte.*A-4")
    a("model_not_last", "__MODEL_PROTO is not the last entry (A-2)",
      build_zip([Entry("__MODEL_PROTO", mp), Entry("W", wdata)])[0], r"__MODEL_PROTO.*not the last.*A-2")


def fam_commands(g, model, arch, wdata, mp):
    """The same defects through the other commands: each must refuse with the same message
    and write nothing (meta edits archives in place: the file must stay byte-identical,
    with no journal left; convert, stub and unpack must leave no output)."""
    Z = r"\(Z-%s\)"
    _, lay = parse_zip(arch)
    cut = arch[:300] + arch[lay["cd_off"]:lay["end"]] + patch(arch[lay["end"]:], EO["cd_off"], "<I", 300)
    cut_exp = r"(past the end|overlaps the central directory|truncated).*" + Z % "7[35]"
    ents = [Entry("W", wdata), Entry("__MODEL_PROTO", mp)]
    base, bl = build_zip(ents)
    mismatch = patch(base, bl["local"][0] + LH["crc"], "<I", zlib.crc32(wdata) ^ 1)
    mm_exp = r"CRC-32.*local header.*central directory.*" + Z % "74"
    evil, _ = build_zip([Entry("W", wdata), Entry("../evil", b"x"), Entry("__MODEL_PROTO", mp)])
    evil_exp = r"'\.\./evil'.*'\.\.'.*" + Z % "34"
    argv = {"verify": ["verify", "a.onnxz"], "info": ["info", "a.onnxz"], "ls": ["ls", "a.onnxz"],
            "convert": ["convert", "a.onnxz", "out.onnx"],
            "convert_ext": ["convert", "a.onnxz", "out.onnx", "--external-data", "out.data"],
            "unpack": ["unpack", "a.onnxz", "out"], "stub": ["stub", "a.onnxz", "out.onnx"],
            "meta": ["meta", "a.onnxz", "--producer", "evil", "--set", "k=v"],
            "meta_show": ["meta", "a.onnxz"]}
    for name, data, exp in (("cut", cut, cut_exp), ("lc_crc", mismatch, mm_exp),
                            ("evil_name", evil, evil_exp)):
        for cmd in ("info", "ls", "convert", "convert_ext", "unpack", "stub", "meta", "meta_show"):
            g.case("cmd_%s_%s" % (cmd, name), "commands", "%s of an archive with a defect (%s)"
                   % (cmd, name), {"a.onnxz": data}, argv[cmd], exp)
    # meta on an archive whose model is not last: A-50 refuses the in-place edit.
    notlast, _ = build_zip([Entry("__MODEL_PROTO", mp), Entry("W", wdata)])
    g.case("cmd_meta_model_not_last", "commands", "meta --set on an archive whose __MODEL_PROTO "
           "is not the last entry (A-50: repack instead)", {"a.onnxz": notlast}, argv["meta"],
           r"(last|unsupported|repack).*A-50")
    # stub needs stored tensor entries.
    dfl, _ = build_zip([Entry("W", wdata, method=8), Entry("__MODEL_PROTO", mp)])
    g.case("cmd_stub_deflated_tensor", "commands", "stub of an archive whose tensor entry is "
           "deflated", {"a.onnxz": dfl}, argv["stub"], r"'W'.*deflated, not stored")
    # .onnx inputs: info, convert and meta of a truncated model.
    for n in (57, 150, 280):
        for cmd, av in (("info", ["info", "t.onnx"]), ("convert", ["convert", "t.onnx", "out.onnxz"]),
                        ("convert_ext", ["convert", "t.onnx", "out.onnx", "--external-data", "out.data"]),
                        ("meta", ["meta", "t.onnx", "--set", "k=v"])):
            g.case("cmd_%s_trunc_model_%d" % (cmd, n), "commands", "%s of the model cut to %d "
                   "bytes" % (cmd, n), {"t.onnx": model[:n]}, av, TRUNC_WIRE, offset=True)
    # unpack -f over links to the sentinel: the links are replaced, never written through.
    m2 = model_pointing_to(mp, "W")
    arch2, _ = build_zip([Entry("W", wdata), Entry("__MODEL_PROTO", m2)])
    g.case("unpack_over_symlink_data", "commands", "unpack -f into DIR whose W is a symlink to "
           "../../sentinel/secret.bin: a control (the sentinel must not change)",
           {"a.onnxz": arch2}, ["unpack", "-f", "a.onnxz", "out"], None, exit=0, stdout=r"",
           dirs=["out"], writes=["out"], symlinks={"out/W": "../../sentinel/secret.bin"})
    g.case("unpack_over_hardlink_data", "commands", "unpack -f into DIR whose W is a hard link to "
           "../../sentinel/secret.bin: a control (the sentinel must not change)",
           {"a.onnxz": arch2}, ["unpack", "-f", "a.onnxz", "out"], None, exit=0, stdout=r"",
           dirs=["out"], writes=["out"], hardlinks=[["out/W", "../../sentinel/secret.bin"]])
    # Many entries declared (Z-66 limit 1,048,576; Z-67 must fit the central directory).
    big, bl2 = build_zip(ents, zip64_end=True, z64_end={"n_disk": 2000000, "n_total": 2000000})
    g.case("z64_entries_2m", "zip64", "a zip64 end record declaring 2,000,000 entries (2 present)",
           {"a.onnxz": big}, ["verify", "a.onnxz"],
           r"(entries|limit).*" + Z % "6[67]")
    # E-15: checksums (SHA-1, needs OpenSSL).
    sha = hashlib.sha1(wdata).hexdigest()
    for cid, value, exp in (("ext_checksum_wrong", "0" * 40, r"W.*(checksum|SHA-1).*(mismatch|differ|does not match)"),
                            ("ext_checksum_short", sha[:39], r"W.*checksum (mismatch|.*(40|hex|malformed))"),
                            ("ext_checksum_nonhex", "z" * 40, r"W.*checksum (mismatch|.*(40|hex|malformed))")):
        g.case(cid, "external", "external data checksum %r" % value,
               {"e.onnx": external_model(model, [("location", "e.data"), ("offset", "0"),
                                                 ("length", "128"), ("checksum", value)]),
                "e.data": wdata}, ["verify", "e.onnx"], exp, needs=["openssl"])


# --- Encryption ---------------------------------------------------------------------------


def fam_crypto(g, model, arch):
    keyfiles = KEY_FILES
    C = r"\(C-%s\)"
    d = os.path.join(g.tmp, "crypto")
    os.makedirs(d)
    for n, c in keyfiles.items():
        with open(os.path.join(d, n), "wb") as f:
            f.write(c)
    with open(os.path.join(d, "m.onnx"), "wb") as f:
        f.write(model)
    with open(os.path.join(d, "m.onnxz"), "wb") as f:
        f.write(arch)
    try:
        g.tool("convert", "--key-file", "k.txt", "--iterations", "1000", "--chunk-size", "64",
               "m.onnx", "ec.onnxc", cwd=d)
        g.tool("convert", "--key-file", "k.txt", "--format", "onnxcry1", "m.onnx", "cry.onnxc", cwd=d)
        g.tool("encrypt", "--key-file", "k.txt", "--iterations", "1000", "--chunk-size", "64",
               "m.onnxz", "arch.onnxc", cwd=d)
        ec = open(os.path.join(d, "ec.onnxc"), "rb").read()
        cry = open(os.path.join(d, "cry.onnxc"), "rb").read()
        earch = open(os.path.join(d, "arch.onnxc"), "rb").read()
    except RuntimeError as e:
        if g.have_openssl:
            raise
        # A build without OpenSSL cannot encrypt: the cases are still listed (the runner
        # reports them as skipped), their files written by the suite's own implementation.
        if AESGCM is None:
            print("note: no encrypted files (%s); the crypto cases are left out" % e,
                  file=sys.stderr)
            return
        ec, cry, earch = ec1_file(model), cry1_file(model), ec1_file(arch)

    def c(cid, fam, desc, data, expect, cmd="verify", key="k.txt", **kw):
        files = dict(keyfiles)
        files["x.onnxc"] = data
        argv = {"verify": ["verify", "--key-file", key, "x.onnxc"],
                "info": ["info", "--key-file", key, "x.onnxc"],
                "convert": ["convert", "--key-file", key, "x.onnxc", "out.onnx"],
                "decrypt": ["decrypt", "--key-file", key, "x.onnxc", "out.bin"]}[cmd]
        g.case(cid, fam, desc, files, argv, expect, needs=["openssl"], **kw)

    c("ec1_control", "crypto_ec1", "the ONNXZEC1 file as written: a control", ec, None, exit=0,
      stdout=r"^OK x\.onnxc")
    # Truncation at every byte (C-41, C-10, C-1).
    for n in range(1, len(ec)):
        c("ec1_trunc_%04d" % n, "crypto_ec1_trunc", "ONNXZEC1 file (%d bytes) cut to %d" % (len(ec), n),
          ec[:n], r"(truncated|ends inside|ends after|before the (first|final) chunk).*" +
          C % "(1|10|41)")
    # Bit flips (the table after C-46).
    chunk0 = 72
    flips = [
        ("magic", 3, r"(not an encrypted file|malformed|magic|invalid tag)"),
        ("version", 8, r"(version|unsupported).*" + C % "11"),
        ("cipher", 9, r"(damaged|header).*" + C % "12"),
        ("iterations", 13, r"(damaged|header).*" + C % "12"),
        ("chunk_size", 17, r"(damaged|header).*" + C % "12"),
        ("nonce", 21, r"(damaged|header).*" + C % "12"),
        ("salt", 30, r"(damaged|header).*" + C % "12"),
        ("key_check", 45, r"(damaged|header).*" + C % "12"),
        ("digest", 60, r"(damaged|header).*" + C % "12"),
        ("frame_index", chunk0 + 0, r"(chunk|authentication|order|missing).*" + C % "4[23]"),
        ("frame_length", chunk0 + 8, r"(chunk|authentication|truncated|malformed|length).*" + C % "(31|41|43)"),
        ("frame_flags", chunk0 + 12, r"(chunk|authentication).*" + C % "4[34]"),
        ("frame_reserved", chunk0 + 13, r"(chunk|authentication).*" + C % "4[34]"),
        ("ciphertext", chunk0 + 16 + 10, r"chunk 0 fails authentication.*" + C % "43"),
        ("tag", chunk0 + 16 + 64 + 3, r"chunk 0 fails authentication.*" + C % "43"),
        ("last_chunk_ct", len(ec) - 20, r"fails authentication.*" + C % "43"),
    ]
    for name, pos, exp in flips:
        b = bytearray(ec)
        b[pos] ^= 0x01
        c("ec1_flip_%s" % name, "crypto_ec1", "one bit flipped at offset %d (%s)" % (pos, name),
          bytes(b), exp)
    for n in (40, 72, 100, 300, len(ec) - 1):
        c("ec1_decrypt_trunc_%04d" % n, "crypto_ec1", "decrypt of the ONNXZEC1 file cut to %d "
          "bytes (OUT must not appear)" % n, ec[:n],
          r"(truncated|ends inside|ends after|before the (first|final) chunk).*" + C % "(10|41)",
          cmd="decrypt")
    b = bytearray(ec)
    b[3] ^= 0x01
    c("ec1_decrypt_flip_magic", "crypto_ec1", "decrypt of an ONNXZEC1 file whose magic has a "
      "flipped bit", bytes(b), r"not an encrypted file.*(ONNXZEC1|C-1)", cmd="decrypt")
    c("ec1_wrong_key", "crypto_ec1", "the wrong passphrase", ec,
      r"wrong passphrase.*" + C % "22", key="wrong.txt")
    c("ec1_wrong_key_decrypt", "crypto_ec1", "decrypt with the wrong passphrase (OUT must not "
      "appear)", ec, r"wrong passphrase.*" + C % "22", key="wrong.txt", cmd="decrypt")
    c("ec1_flip_decrypt", "crypto_ec1", "decrypt of a file whose last chunk is damaged (no "
      "plaintext may be left behind)", bytes(bytearray(ec[:-5]) + bytes([ec[-5] ^ 0x80]) + ec[-4:]),
      r"fails authentication.*" + C % "43", cmd="decrypt")
    # Reordering (C-42), appending (C-45), dropping the final chunk (C-41).
    size = 64 + 32
    chunks = [ec[72 + i * size:72 + (i + 1) * size] for i in range((len(ec) - 72) // size)]
    last = ec[72 + len(chunks) * size:]
    allc = chunks + ([last] if last else [])
    hdr = ec[:72]
    c("ec1_swap", "crypto_ec1", "chunks 0 and 1 swapped", hdr + allc[1] + allc[0] + b"".join(allc[2:]),
      r"(out of order|missing).*" + C % "42")
    c("ec1_drop", "crypto_ec1", "chunk 1 dropped", hdr + allc[0] + b"".join(allc[2:]),
      r"(out of order|missing).*" + C % "42")
    c("ec1_dup", "crypto_ec1", "chunk 0 duplicated", hdr + allc[0] + allc[0] + b"".join(allc[1:]),
      r"(duplicated|again).*" + C % "42")
    c("ec1_drop_final", "crypto_ec1", "the final chunk dropped", hdr + b"".join(allc[:-1]),
      r"before the final chunk.*" + C % "41")
    c("ec1_append_byte", "crypto_ec1", "one byte appended", ec + b"\0",
      r"(appended|follow).*" + C % "45")
    c("ec1_append_chunk", "crypto_ec1", "a copy of the final chunk appended", ec + allc[-1],
      r"(appended|follow).*" + C % "45")
    if AESGCM is not None:
        p = model
        parts = split(p)

        def cc(cid, desc, data, exp, **kw):
            c(cid, "crypto_ec1_crafted", desc, data, exp, **kw)

        def header(**fields):
            """A bare header (no chunk needed: the header is checked first, C-40) with
            fields changed and its digest recomputed."""
            h = bytearray(ec1_header(bytes(16), bytes(4), 1, 64, PASSPHRASE)[0][:56])
            for off, value in fields.values():
                struct.pack_into("<I", h, off, value)
            return bytes(h) + hashlib.sha256(bytes(h)).digest()[:16]

        def edited(f, offset):
            """f with one header byte changed and the digest recomputed (C-12)."""
            h = bytearray(f[:56])
            h[offset] ^= 1
            return bytes(h) + hashlib.sha256(bytes(h)).digest()[:16] + f[72:]

        cc("ec1c_control", "an ONNXZEC1 file written by the suite from spec/encryption.md: a "
           "control", ec1_file(p), None, exit=0, stdout=r"^OK x\.onnxc")
        cc("ec1c_version2", "format version 2", ec1_file(p, version=2),
           r"version 2.*(not supported|unsupported).*" + C % "11")
        cc("ec1c_cipher2", "cipher 2 (digest recomputed)", ec1_file(p, cipher=2),
           r"cipher 2.*(not supported|unsupported).*" + C % "13")
        cc("ec1c_kdf7", "KDF 7 (digest recomputed)", ec1_file(p, kdf=7),
           r"(KDF|key derivation) 7.*(not supported|unsupported).*" + C % "13")
        cc("ec1c_reserved", "reserved header byte 1 (digest recomputed)", ec1_file(p, reserved=1),
           r"reserved.*" + C % "14")
        f = ec1_file(p, iterations=1)
        cc("ec1c_iter0", "0 iterations, digest not recomputed", f[:12] + struct.pack("<I", 0) + f[16:],
           r"damaged.*" + C % "12")
        cc("ec1c_iter0_digest", "0 iterations, digest recomputed", header(it=(12, 0)),
           r"iterations.*" + C % "15")
        cc("ec1c_iter_huge", "4,000,000,000 iterations (digest recomputed): refused before any "
           "PBKDF2 work", header(it=(12, 4000000000)), r"iterations.*limit.*" + C % "15")
        for cs, name in ((63, "63"), (0, "0"), (67108865, "64M_plus_1"), (0xFFFFFFFF, "4G")):
            cc("ec1c_chunk_size_%s" % name, "chunk size %d (digest recomputed)" % cs,
               header(cs=(16, cs)) + b"\0" * 64, r"chunk size %d.*" % cs + C % "16")
        cc("ec1c_salt_edited", "the salt edited and the digest recomputed (the key check fails)",
           edited(ec1_file(p), 24), r"wrong passphrase.*" + C % "22")
        cc("ec1c_nonce_edited", "the nonce prefix edited and the digest recomputed",
           edited(ec1_file(p), 20), r"chunk 0 fails authentication.*" + C % "43")
        cc("ec1c_flags_reserved", "an authentic chunk with flag bit 1 set",
           ec1_file(p, chunks=[(0, parts[0], 2)] + numbered(parts[1:], 1)),
           r"reserved.*" + C % "44")
        cc("ec1c_frame_reserved", "an authentic chunk with a non-zero reserved frame byte",
           ec1_file(p, chunks=[(0, parts[0], 0, b"\0\x01\0")] + numbered(parts[1:], 1)),
           r"reserved.*" + C % "44")
        cc("ec1c_short_nonfinal", "an authentic non-final chunk of 10 bytes (chunk size 64)",
           ec1_file(p, chunks=[(0, p[:10], 0)] + numbered(split(p[10:]), 1)),
           r"chunk 0 is not the final chunk but holds 10 bytes.*" + C % "44")
        cc("ec1c_empty_final_late", "an empty final chunk after full chunks",
           ec1_file(p[:128], chunks=[(0, p[:64], 0), (1, p[64:128], 0), (2, b"", 1)]),
           r"empty final chunk.*" + C % "44")
        cc("ec1c_no_final", "4 full chunks, none marked final (every chunk authentic)",
           ec1_file(p[:256], chunks=[(i, q, 0) for i, q in enumerate(split(p[:256]))]),
           r"before the final chunk.*" + C % "41")
        cc("ec1c_two_finals", "chunk 0 marked final, more chunks follow",
           ec1_file(p, chunks=[(0, parts[0], 1)] + numbered(parts[1:], 1)),
           r"(appended|follow).*" + C % "45")
        cc("ec1c_length_over_chunk", "a frame declaring 65 bytes with chunk size 64",
           ec1_file(p, chunks=[(0, p[:65], 0)] + numbered(split(p[65:]), 1)),
           r"65 bytes, more than the chunk size.*" + C % "31")
        cc("ec1c_length_huge", "a frame declaring 4 GiB - 1 bytes",
           ec1_file(p, chunks=[(0, parts[0], 1, b"\0\0\0", 0xFFFFFFFF)]),
           r"(more than the chunk size|truncated).*" + C % "(31|41)")
        cc("ec1c_index_huge", "chunk 0's frame says index 2^64 - 1",
           ec1_file(p, chunks=[((1 << 64) - 1, parts[0], 0)] + numbered(parts[1:], 1)),
           r"(missing or out of order|fails authentication).*" + C % "4[23]")
        cc("ec1c_wrong_payload", "an authentic file whose payload is not a model",
           ec1_file(bytes([0x0F]) + bytes(range(100))), r"(wire type 7|not a model)")
        cc("ec1c_payload_bad_archive", "an authentic file whose payload is an archive cut short",
           ec1_file(arch[:300]), r"(cut short|truncated).*Z-60")

    # ONNXCRY1.
    c("cry1_control", "crypto_cry1", "the ONNXCRY1 file as written: a control", cry, None, exit=0,
      stdout=r"^OK x\.onnxc")
    cuts = sorted(set([1, 4, 7, 8, 9, 20, 24, 39, 40, 41, 47, 55, 56, 57, 71, 72, 88, 100,
                       len(cry) - 17, len(cry) - 16, len(cry) - 15, len(cry) - 1]))
    for n in cuts:
        c("cry1_trunc_%04d" % n, "crypto_cry1", "ONNXCRY1 file (%d bytes) cut to %d" % (len(cry), n),
          cry[:n], r"(truncated|ends inside|no ciphertext|whole number of 16-byte|padding)" +
          r".*" + C % "(1|50|52|53)")
    c("cry1_wrong_key", "crypto_cry1", "the wrong passphrase", cry,
      r"wrong passphrase.*" + C % "53", key="wrong.txt")
    # The tool draws a new salt and IV on every run, so a flipped bit of its file garbles a
    # block into different bytes each time: mostly "not a model", but now and then bytes
    # that decode, or padding that happens to be valid. The two flips of a ciphertext block
    # start from the suite's own file (fixed salt and IV) so that every run checks the same
    # garbage.
    det = cry1_file(model) if AESGCM is not None else cry
    b = bytearray(det)
    b[-1] ^= 0x5A
    c("cry1_flip_last", "crypto_cry1", "a byte of the last block changed (padding garbled)", bytes(b),
      r"(wrong passphrase|padding).*" + C % "53")
    b = bytearray(cry)
    b[24] ^= 0x07   # the IV: plaintext byte 0 (0x08, ir_version's tag) becomes 0x0F
    c("cry1_flip_iv", "crypto_cry1", "the IV changed so that the payload's first byte becomes "
      "wire type 7", bytes(b), r"payload is not a model.*wire type 7.*" + C % "53")
    b = bytearray(det)
    b[40 + 3] ^= 0x80
    c("cry1_flip_block0", "crypto_cry1", "a bit of the first ciphertext block flipped (garbles "
      "the start of the payload)", bytes(b), r"payload is not a model.*" + C % "53")
    if AESGCM is not None:
        cc = lambda cid, desc, data, exp, **kw: c(cid, "crypto_cry1_crafted", desc, data, exp, **kw)
        cc("cry1c_control", "an ONNXCRY1 file written by the suite: a control", cry1_file(model),
           None, exit=0, stdout=r"^OK x\.onnxc")
        def mixed(p):
            """n padding bytes that end in n but are not all n (... n, n - 1, n)."""
            n = 16 - len(p) % 16
            n += 16 if n < 3 else 0
            return p + bytes([n]) * (n - 2) + bytes([n - 1, n])

        for cid, desc, pad in (
                ("cry1c_pad_zero", "padding byte 0x00",
                 lambda p: p + b"\0" * (16 - len(p) % 16)),
                ("cry1c_pad_17", "padding byte 0x11 (> 16)",
                 lambda p: p + bytes([0x11]) * (16 - len(p) % 16)),
                ("cry1c_pad_mixed", "padding bytes not all equal (... n, n - 1, n)", mixed),
                ("cry1c_no_pad", "the payload zero-filled to whole blocks, no PKCS#7 padding",
                 lambda p: p + b"\0" * (-len(p) % 16))):
            cc(cid, "ONNXCRY1 with the right key and bad PKCS#7 padding: " + desc,
               cry1_file(model, pad=pad), r"(wrong passphrase|padding).*" + C % "53")
        cc("cry1c_payload_garbage", "correct key and padding, the payload is not a model",
           cry1_file(bytes([0x0F]) + bytes(range(60))), r"payload is not a model.*" + C % "53")
    # An encrypted archive whose archive is damaged.
    c("earch_control", "crypto_archive", "an encrypted archive: a control", earch, None, exit=0,
      stdout=r"^OK x\.onnxc")
    if AESGCM is not None:
        entries, lay = parse_zip(arch)
        dz = arch[:lay["end"]] + patch(arch[lay["end"]:], EO["cd_off"], "<I", 3)
        c("earch_bad_cd", "crypto_archive", "an authentic ONNXZEC1 file holding an archive whose "
          "central directory offset is wrong", ec1_file(dz), r"(central directory|signature).*Z-6[5-8]")
        evil = build_zip([Entry("W", archive_parts(arch)[0]),
                          Entry("../evil", b"x"), Entry("__MODEL_PROTO", archive_parts(arch)[1])])[0]
        c("earch_evil_name", "crypto_archive", "an authentic ONNXZEC1 file holding an archive "
          "with an entry named ../evil", ec1_file(evil), r"'\.\.'.*\(Z-34\)")
        c("earch_bomb", "crypto_archive", "an authentic ONNXZEC1 file holding the 1000x "
          "deflate bomb", ec1_file(bomb_archive(arch)), r"(more|beyond|exceeds|larger|bomb|declared).*Z-77")


def bomb_archive(arch):
    wdata, mp = archive_parts(arch)
    m = onnx.ModelProto()
    m.ParseFromString(mp)
    m.doc_string = "a" * 200000
    big = m.SerializeToString()
    e = Entry("__MODEL_PROTO", big, method=8, local={"usize": 200, "crc": zlib.crc32(big[:200])},
              central={"usize": 200, "crc": zlib.crc32(big[:200])})
    return build_zip([Entry("W", wdata), e])[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnxz", default=os.environ.get("ONNXZ_EXE") or shutil.which("onnxz"),
                    help="the onnxz tool, which writes the base archives and encrypted files "
                    "(default: $ONNXZ_EXE, else onnxz on PATH)")
    ap.add_argument("outdir")
    args = ap.parse_args()
    if not args.onnxz:
        ap.error("no onnxz tool: give --onnxz PATH")
    if onnx is None:
        print("gen_hostile.py: python3-onnx is missing; nothing generated", file=sys.stderr)
        return SKIP
    out = os.path.abspath(args.outdir)
    if os.path.exists(out):
        if os.listdir(out) and not os.path.exists(os.path.join(out, "manifest.json")):
            print("gen_hostile.py: %s exists and is not a suite written before; not wiping it"
                  % out, file=sys.stderr)
            return 2
        shutil.rmtree(out)
    os.makedirs(out)
    g = Gen(out, os.path.abspath(args.onnxz))
    g.write_shared()
    model = base_model().SerializeToString()
    d = g.tmp
    with open(os.path.join(d, "m.onnx"), "wb") as f:
        f.write(model)
    # The base model's tensors are small: --threshold 64 makes W an entry to damage.
    g.tool("convert", "--threshold", "64", "m.onnx", "m.onnxz")
    g.tool("convert", "--threshold", "64", "--deflate-model", "m.onnx", "md.onnxz")
    arch = open(os.path.join(d, "m.onnxz"), "rb").read()
    deflated = open(os.path.join(d, "md.onnxz"), "rb").read()
    wdata, mp = archive_parts(arch)

    g.case("base_model", "control", "the base model: a control", {"m.onnx": model},
           ["verify", "m.onnx"], None, exit=0, stdout=r"^OK m\.onnx")
    g.case("base_archive", "control", "the base archive: a control", {"m.onnxz": arch},
           ["verify", "m.onnxz"], None, exit=0, stdout=r"^OK m\.onnxz")
    fam_truncated_model(g, model)
    fam_truncated_archive(g, arch, deflated)
    fam_wire(g, model)
    fam_nesting(g, model)
    fam_tensor(g)
    fam_external(g, model)
    fam_zip(g, arch, wdata, mp)
    fam_zip64(g, wdata, mp)
    fam_names(g, wdata, mp)
    fam_archive(g, wdata, mp, arch)
    fam_commands(g, model, arch, wdata, mp)
    fam_crypto(g, model, arch)
    shutil.rmtree(g.tmp)
    g.write_manifest()
    fams = {}
    for c in g.cases:
        fams[c["family"]] = fams.get(c["family"], 0) + 1
    print("gen_hostile.py: %d cases in %s (%s)" % (len(g.cases), out,
          ", ".join("%s %d" % kv for kv in sorted(fams.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
