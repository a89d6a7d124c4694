#!/usr/bin/python3
"""Write seed corpora for the libonnxcore fuzz targets.

Usage: /usr/bin/python3 make_seeds.py OUT [--no-backend] [--onnxz TOOL]

Writes OUT/<target>/ for fuzz_decode_model, fuzz_decode_any, fuzz_external,
fuzz_consolidate, fuzz_decrypt, fuzz_archive and fuzz_archive_roundtrip:
  h-*   hand-made inputs, built here byte by byte (no protobuf library): every message
        type with every field set, nesting at and past the depth limit, each decoding
        fault of spec/onnx-wire.md W-17, and for fuzz_external one model per rule of
        spec/external-data.md (pointing at the fixture files the harness creates); for
        fuzz_decrypt, ONNXZEC1 / ONNXCRY1 files under the harness's passphrase (built
        with hashlib and python3-cryptography) and damaged headers; for fuzz_archive,
        .onnxz archives written here to the byte as libonnxz writes them (spec/onnxz.md,
        spec/onnxz-zip.md: A-10 names, aligned STORED entries with 0xD935 padding, the
        model last, STORED or DEFLATED), archives of other ZIP writers' shapes (zip64
        records, data descriptors, comments, directory entries, deflated tensors) and
        one archive per refusal of Z-60..Z-77 and A-1, A-21, A-40; for
        fuzz_archive_roundtrip, an option byte and a model with tensors of many sizes
        and names;
  t-*   fuzz_archive: archives the onnxz tool wrote (--onnxz TOOL, the build's tool);
  b-*   models and test-data files of python3-onnx's backend tests
        (`onnx.backend.test.cmd_tools generate-data`), when python3-onnx is importable,
        at most MAX_SEED bytes each.
        (fuzz_archive: each model packed into an archive here)
Input prefixes follow each target's format: fuzz_decode_any takes one byte for the
message type (its index in ONNX_MESSAGES of schema.def), fuzz_consolidate and
fuzz_archive_roundtrip one byte of options. OUT/<target>/ is emptied first; the backend data is cached in OUT/.backend.
"""
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "..", "libonnxcore", "include", "onnxcore", "schema.def")
TARGETS = ("fuzz_decode_model", "fuzz_decode_any", "fuzz_external", "fuzz_consolidate",
           "fuzz_decrypt", "fuzz_archive", "fuzz_archive_roundtrip")
MAX_SEED = 32 * 1024

# ---- the schema, from schema.def ----


def read_schema():
    text = open(SCHEMA).read()
    block = text[text.index("#define ONNX_MESSAGES(M)"):]
    block = block[:block.index("\n\n")]
    order = re.findall(r'M\((\w+), "([^"]+)"\)', block)
    fields = {}
    for m, name, num, typ, label, sub in re.findall(
            r"F\((\w+), (\w+), (\d+), (\w+), (\w+), (\w+)\)", text):
        fields.setdefault(m, []).append((name, int(num), typ, label, sub))
    return [c for c, _ in order], {c: n for c, n in order}, fields


ORDER, PROTO_NAME, FIELDS = read_schema()
INDEX = {c: i for i, c in enumerate(ORDER)}

# ---- a protobuf writer ----

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(num, wt):
    return varint(num << 3 | wt)


def f_varint(num, v):
    return key(num, VARINT) + varint(v)


def f_len(num, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(num, LEN) + varint(len(payload)) + payload


def f_fixed32(num, v):
    return key(num, I32) + struct.pack("<I", v & 0xFFFFFFFF)


def f_float(num, x):
    return key(num, I32) + struct.pack("<f", x)


def f_double(num, x):
    return key(num, I64) + struct.pack("<d", x)


def packed_varints(num, values):
    return f_len(num, b"".join(varint(v) for v in values))


# ---- every field of every message ----

SCALARS = {"INT64": [(1, -1), (2, 1 << 40)], "INT32": [(1, -5), (2, 7)],
           "UINT64": [(1, (1 << 64) - 1)], "ENUM": [(1, 1)]}


def all_fields(msg, depth, budget):
    """A message of type msg with every field set (oneof: every member, the last wins)."""
    out = bytearray()
    for name, num, typ, label, sub in FIELDS[msg]:
        reps = 2 if label in ("REP", "PACKED") else 1
        for r in range(reps):
            if typ in ("INT64", "INT32", "UINT64", "ENUM"):
                v = {"INT64": -1 - r, "INT32": -7 + r, "UINT64": (1 << 63) + r, "ENUM": 1}[typ]
                if label == "PACKED" and r == 0:
                    out += packed_varints(num, [v, 0, 300])
                elif label != "PACKED":
                    out += f_varint(num, v)
            elif typ == "FLOAT":
                if label == "PACKED" and r == 0:
                    out += f_len(num, struct.pack("<3f", 1.5, -0.0, float("nan")))
                elif label != "PACKED":
                    out += f_float(num, 0.25 + r)
            elif typ == "DOUBLE":
                if label == "PACKED" and r == 0:
                    out += f_len(num, struct.pack("<2d", 1e300, -2.5))
                elif label != "PACKED":
                    out += f_double(num, 3.0)
            elif typ in ("STRING", "BYTES"):
                out += f_len(num, f"{name}{r}")
            elif typ == "SPAN":
                out += f_len(num, bytes(range(16 + 48 * r)))
            elif typ == "MSG":
                if depth < 3 and budget[0] > 0:
                    budget[0] -= 1
                    out += f_len(num, all_fields(sub, depth + 1, budget))
                else:
                    out += f_len(num, b"")
    return bytes(out)


# ---- ModelProto building blocks ----


def tensor(name=None, raw=None, dims=(), data_type=1, ext=None, location=None, extra=b""):
    t = b"".join(f_varint(1, d) for d in dims) + f_varint(2, data_type)
    if name is not None:
        t += f_len(8, name)
    if raw is not None:
        t += f_len(9, raw)
    for k, v in ext or []:
        t += f_len(13, f_len(1, k) + f_len(2, v))
    if location is not None:
        t += f_varint(14, location)
    return t + extra


def model(graph=b"", extra=b""):
    return (f_varint(1, 8) + f_len(2, "fuzz-seed") + f_len(7, graph) +
            f_len(8, f_len(1, "") + f_varint(2, 17)) + extra)


def graph(initializers=(), nodes=(), sparse=(), extra=b""):
    g = b"".join(f_len(1, n) for n in nodes) + f_len(2, "g")
    g += b"".join(f_len(5, t) for t in initializers)
    g += b"".join(f_len(15, s) for s in sparse)
    return g + extra


def node(op="Identity", attrs=()):
    return f_len(1, "x") + f_len(2, "y") + f_len(4, op) + b"".join(f_len(5, a) for a in attrs)


def attr_tensor(name, t):
    return f_len(1, name) + f_len(5, t) + f_varint(20, 4)


def attr_graph(name, g):
    return f_len(1, name) + f_len(6, g) + f_varint(20, 5)


def nested_types(levels):
    """A ModelProto whose deepest message is at nesting level `levels` (root = 1, levels >= 4):
    Model(1) > Graph(2) > ValueInfo(3) > TypeProto(4) > Sequence(5) > TypeProto(6) > ..."""
    msg = b""  # the deepest message: empty
    for level in range(levels, 4, -1):  # wrap the message at `level` into its parent
        parent = level - 1
        msg = f_len(4 if parent % 2 == 0 else 1, msg)  # TypeProto.sequence_type / Sequence.elem_type
    vi = f_len(1, "deep") + f_len(2, msg)
    return model(graph(extra=f_len(11, vi)))


# ---- hand-made inputs per target ----


def hostile_decode():
    """Model-level inputs for fuzz_decode_model (and fuzz_decode_any as ModelProto)."""
    s = {}
    s["empty"] = b""
    t_small = tensor("w", raw=bytes(range(8)), dims=(2,))
    s["minimal"] = model(graph([t_small], [node()]))
    s["allfields"] = all_fields("ModelProto", 0, [200])
    for d in (99, 100, 101, 1001):
        s[f"nest-{d}"] = nested_types(d)
    g = f_len(1, "")
    for _ in range(150):
        g = key(999, SGROUP) + g + key(999, EGROUP)
    s["groups-150-deep"] = model(extra=g)
    s["group-ok"] = model(extra=key(1000, SGROUP) + f_varint(1, 5) + f_len(2, "x") + key(1000, EGROUP))
    s["group-wrong-end"] = model(extra=key(1000, SGROUP) + key(1001, EGROUP))
    s["group-unclosed"] = model(extra=key(1000, SGROUP) + f_varint(1, 1))
    s["end-group-alone"] = model(extra=key(5, EGROUP))
    s["varint-10"] = f_varint(1, (1 << 64) - 1)
    s["varint-11"] = key(1, VARINT) + b"\xff" * 10 + b"\x01"
    s["tag-varint-11"] = b"\x80" * 10 + b"\x01"
    s["field-zero"] = key(0, VARINT) + b"\x00"
    s["field-max"] = model(extra=f_varint((1 << 29) - 1, 1))
    s["field-too-big"] = f_varint(1 << 29, 1)
    s["wire-6"] = key(3, 6) + b"\x00"
    s["wire-7"] = key(3, 7) + b"\x00"
    s["len-past-end"] = key(7, LEN) + varint(100) + b"\x00" * 10
    s["len-huge"] = key(7, LEN) + varint((1 << 64) - 1)
    s["truncated-fixed32"] = model(graph([tensor("f", extra=key(4, I32) + b"\x00\x00")]))
    bad_packed = tensor("p", extra=f_len(4, b"\x00" * 7))  # float_data not a multiple of 4
    s["packed-float-7"] = model(graph([bad_packed]))
    s["packed-varint-crossing"] = model(graph([tensor("p", extra=f_len(7, b"\x01\x80"))]))
    mixed = tensor("m", dims=(2,), extra=(f_float(4, 1.0) + f_len(4, struct.pack("<2f", 2, 3)) +
                                          packed_varints(1, [3, 4]) + packed_varints(5, [-1, 2]) +
                                          f_varint(5, (1 << 40) + 5)))
    s["packed-unpacked-mixed"] = model(graph([mixed]))
    oneofs = (f_len(1, "v") + f_len(2, f_len(1, f_varint(1, 1)) + f_len(4, f_len(1, b"")) +
                                     f_len(1, f_varint(1, 2) + f_len(2, f_len(1, f_varint(1, 3) +
                                                                               f_len(2, "N") +
                                                                               f_varint(1, 4))))))
    s["oneof-switching"] = model(graph(extra=f_len(11, oneofs)))
    enums = (f_len(1, "a") + f_varint(20, 15) + f_varint(20, -1) + f_varint(20, 1 << 33 | 2) +
             f_varint(20, 2))
    s["enum-out-of-range"] = model(graph(nodes=[node(attrs=[enums])]))
    s["data-location-2"] = model(graph([tensor("d", raw=b"xy", extra=f_varint(14, 2) + f_varint(14, -7))]))
    s["int32-wide"] = model(graph([tensor("i", data_type=(1 << 40) | 1)]))
    s["merge-graph-twice"] = (model(graph([t_small])) + f_len(7, graph([tensor("v", raw=b"abc")])) +
                              f_len(7, f_len(2, "renamed")))
    s["raw-data-twice"] = model(graph([tensor("r", raw=b"first", extra=f_len(9, b"second!"))]))
    s["wrong-wire-types"] = model(graph([tensor("w", extra=f_varint(9, 5) + f_fixed32(8, 1) +
                                                f_double(13, 1.0) + f_len(2, b"\x01"))]),
                                  extra=f_fixed32(1, 7) + f_len(5, b"\x01"))
    s["unknown-everywhere"] = model(graph([tensor("u", extra=f_len(15, "x") + f_varint(99, 1))],
                                          [node() + f_double(77, 1.0)], extra=f_fixed32(30, 9)),
                                    extra=f_varint(9, 1) + f_len(100, "unknown"))
    s["many-varints"] = model(graph([tensor("n", extra=f_len(7, b"\x01" * 4000))]))
    s["many-nodes"] = model(graph(nodes=[node()] * 300))
    sub = graph([tensor("inner", raw=bytes(40))], [node()])
    s["subgraphs"] = model(graph(nodes=[node("If", [attr_graph("then_branch", sub),
                                                     attr_graph("else_branch", sub)])]))
    fn = f_len(1, "f") + f_len(7, node(attrs=[attr_tensor("value", tensor("c", raw=b"1234"))]))
    s["function-tensor"] = model(graph(), extra=f_len(25, fn))
    ti = f_len(1, graph([tensor("t", raw=b"training")]))
    s["training-info"] = model(graph(), extra=f_len(20, ti))
    return s


def hostile_any():
    """(type, body) inputs for fuzz_decode_any."""
    s = {}
    for c in ORDER:
        s[f"{c}-empty"] = (c, b"")
        s[f"{c}-allfields"] = (c, all_fields(c, 0, [40]))
        s[f"{c}-unknown"] = (c, f_varint(29, 1) + f_len(28, "u") + f_fixed32(27, 2) +
                             f_double(26, 1.0) + key(25, SGROUP) + key(25, EGROUP))
    seq = f_len(1, "s") + f_varint(2, 1) + f_len(3, tensor("t", raw=b"abcd"))
    for _ in range(98):
        seq = f_len(5, seq)
    s["SequenceProto-deep"] = ("SequenceProto", seq)
    opt = b""
    for _ in range(101):
        opt = f_len(7, opt)
    s["OptionalProto-too-deep"] = ("OptionalProto", opt)
    s["TensorProto-strings"] = ("TensorProto", tensor("s", data_type=8, extra=f_len(6, "a") + f_len(6, b"\x00\xff")))
    return s


FIXTURE_DATA = bytes((i * 31 + 7) & 0xFF for i in range(4096))  # the harness's data.bin
FIXTURE_INNER = bytes((i ^ 0x5A) & 0xFF for i in range(256))    # sub/inner.bin


def ext_model(*tensors, where="initializer"):
    if where == "initializer":
        return model(graph(list(tensors)))
    if where == "attribute":
        sub = graph(list(tensors))
        return model(graph(nodes=[node("If", [attr_graph("then_branch", sub)] +
                                     [attr_tensor(f"t{i}", t) for i, t in enumerate(tensors)])]))
    if where == "sparse":
        return model(graph(sparse=[f_len(1, t) + f_len(2, tensor("idx", raw=bytes(8), data_type=7)) +
                                   f_varint(3, 4) for t in tensors]))
    raise ValueError(where)


def ext(location, offset=None, length=None, checksum=None, name="e", keys=()):
    pairs = list(keys)
    if location is not None:
        pairs.append(("location", location))
    if offset is not None:
        pairs.append(("offset", str(offset)))
    if length is not None:
        pairs.append(("length", str(length)))
    if checksum is not None:
        pairs.append(("checksum", checksum))
    return tensor(name, dims=(4,), ext=pairs, location=1)


def hostile_external():
    s = {}
    sha = lambda b: hashlib.sha1(b).hexdigest()
    s["ok-data"] = ext_model(ext("data.bin", 0, 16, name="a"), ext("data.bin", 64, 128, name="b"),
                             ext("data.bin", 4000, name="c"))
    s["ok-inner-and-dot"] = ext_model(ext("sub/inner.bin", 16, 32), ext("./data.bin", 8, 8),
                                      ext("sub//inner.bin", 0, 1), ext("sub/./inner.bin", 1, 1))
    s["ok-empty-file"] = ext_model(ext("empty.bin"), ext("empty.bin", 0, 0))
    s["ok-model-itself"] = ext_model(ext("model.onnx", 0, 4))
    s["ok-checksums"] = ext_model(ext("data.bin", 0, 16, sha(FIXTURE_DATA[:16])),
                                  ext("data.bin", 16, 16, sha(FIXTURE_DATA[16:32]).upper()))
    s["checksum-wrong"] = ext_model(ext("data.bin", 0, 16, "0" * 40))
    s["checksum-short"] = ext_model(ext("data.bin", 0, 16, "abc"))
    s["checksum-32"] = ext_model(ext("data.bin", 0, 16, "0123456789abcdef0123456789abcdef"))
    s["ok-nested"] = ext_model(ext("data.bin", 128, 64, name="n1"), ext("sub/inner.bin", name="n2"),
                               where="attribute")
    s["ok-sparse"] = ext_model(ext("data.bin", 256, 16), where="sparse")
    s["ok-keys-repeated"] = ext_model(ext("data.bin", 0, 16, keys=[("location", "nope.bin"),
                                                                   ("offset", "x"),
                                                                   ("basepath", "/etc"),
                                                                   ("custom", "kept")]))
    s["ok-aligned"] = ext_model(ext("data.bin", 0, 64), ext("data.bin", 64, 64), ext("data.bin", 4096, 0))
    s["misaligned"] = ext_model(ext("data.bin", 1, 64), ext("data.bin", 17, 3))
    for tag, loc in [("dotdot", "../outside.bin"), ("absolute", "/etc/passwd"),
                     ("symlink-out", "link.bin"), ("symlink-abs", "abslink.bin"),
                     ("symlink-in", "inlink.bin"), ("dirlink", "dirlink/inner.bin"),
                     ("outlink", "outlink/secret.bin"), ("hardlink", "hard.bin"),
                     ("fifo", "fifo"), ("directory", "sub"), ("dot", "."), ("sub-dot", "sub/."),
                     ("trailing-slash", "data.bin/"), ("empty", ""), ("nul", "data.bin\0x"),
                     ("missing", "nonexistent.bin"), ("notdir", "data.bin/x"),
                     ("inner-dotdot", "sub/../data.bin"), ("long-name", "a" * 300),
                     ("long-path", "sub/" * 1100 + "x")]:
        s["loc-" + tag] = ext_model(ext(loc, 0, 4))
    for tag, off, length in [("neg", "-1", 4), ("plus", "+1", 4), ("space", " 1", 4), ("hex", "0x10", 4),
                             ("exp", "1e3", 4), ("20digits", "1" * 20, 4),
                             ("2pow63", "9223372036854775808", None), ("max", "9223372036854775807", None),
                             ("empty", "", 4), ("len-abc", 0, "abc")]:
        s["num-" + tag] = ext_model(ext("data.bin", off, length))
    s["no-location"] = ext_model(ext(None, 0, 4))
    s["past-end-offset"] = ext_model(ext("data.bin", 4097))
    s["past-end-length"] = ext_model(ext("data.bin", 4000, 97))
    s["length-huge"] = ext_model(ext("data.bin", 1, 9223372036854775807))
    s["external-no-entries"] = model(graph([tensor("x", location=1)]))
    s["entries-not-external"] = model(graph([tensor("x", raw=b"kept", ext=[("location", "../x")])]))
    s["second-tensor-bad"] = ext_model(ext("data.bin", 0, 4, name="good"), ext("link.bin", name="bad"))
    s["many-same-file"] = ext_model(*[ext("data.bin", i * 16, 16, name=f"t{i}") for i in range(40)])
    return s


def hostile_consolidate(sized=False):
    """sized: every raw tensor a UINT8 vector of its length (W-40 holds), as the tool needs
    to pack it (A-13); else FLOAT scalars whatever their bytes."""
    def rt(name, data):
        return tensor(name, raw=data, dims=(len(data),), data_type=2) if sized else tensor(name, raw=data)
    sizes = [0, 1, 15, 16, 63, 64, 100, 1024, 2000]
    inits = [rt(f"t{n}", bytes((i * 7) & 0xFF for i in range(n))) for n in sizes]
    inits.append(tensor("noraw", dims=(1,), extra=f_float(4, 1.0)))
    sub = graph([rt("sub", bytes(300))], [node()])
    nested = model(graph(inits, [node("If", [attr_graph("g", sub),
                                             attr_tensor("t", rt("at", bytes(70)))])],
                         sparse=[f_len(1, rt("sv", bytes(24))) + f_len(2, rt("si", bytes(8)))]))
    s = {}
    for sel in (0x00, 0x07, 0x0A, 0x0B, 0x0C, 0x0F, 0x17, 0x25, 0x33, 0x40, 0x47, 0x87, 0xC9, 0xFF):
        s[f"sel-{sel:02x}"] = bytes([sel]) + nested
    s["sel-07-none"] = b"\x07" + model(graph([tensor("small", raw=b"x")]))
    s["sel-00-empty"] = b"\x00"
    s["sel-37-raw-twice"] = b"\x37" + model(graph([tensor("r", raw=b"a" * 40, extra=f_len(9, b"b" * 80))]))
    return s


# ---- encrypted inputs (fuzz_decrypt) ----

FUZZ_KEY = b"fuzz passphrase"  # the harness's passphrase


def zec1_header(iterations=1, chunk_size=64, version=1, cipher=1, kdf=1, reserved=0,
                salt=bytes(range(16)), prefix=b"\x01\x02\x03\x04", key_check=None):
    """An ONNXZEC1 header (72 bytes, layout of crypto.c) with a valid digest."""
    import hmac
    master = hashlib.pbkdf2_hmac("sha256", FUZZ_KEY, salt, max(iterations, 1), 32)
    if key_check is None:
        key_check = hmac.new(master, b"ONNXZEC1 key check", "sha256").digest()[:16]
    h = (b"ONNXZEC1" + bytes([version, cipher, kdf, reserved]) + struct.pack("<II", iterations, chunk_size) +
         prefix + salt + key_check)
    return h + hashlib.sha256(h).digest()[:16], master


def zec1_encrypt(plain, iterations=1, chunk_size=64):
    """ONNXZEC1 of plain under FUZZ_KEY (needs python3-cryptography), or None."""
    try:
        import hmac
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        return None
    header, master = zec1_header(iterations, chunk_size)
    aes = AESGCM(hmac.new(master, b"ONNXZEC1 chunk key", "sha256").digest())
    pieces = [plain[i:i + chunk_size] for i in range(0, len(plain), chunk_size)] or [b""]
    out = bytearray(header)
    for i, piece in enumerate(pieces):
        frame = struct.pack("<QIB3x", i, len(piece), 1 if i == len(pieces) - 1 else 0)
        nonce = header[20:24] + struct.pack("<Q", i)
        out += frame + aes.encrypt(nonce, piece, header + frame)
    return bytes(out)


def cry1_encrypt(plain):
    try:
        from cryptography.hazmat.primitives import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        return None
    salt, iv = bytes(range(16)), bytes(range(16, 32))
    key = hashlib.pbkdf2_hmac("sha256", FUZZ_KEY, salt, 100000, 32)
    padder = padding.PKCS7(128).padder()
    data = padder.update(plain) + padder.finalize()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return b"ONNXCRY1" + salt + iv + enc.update(data) + enc.finalize()


def hostile_decrypt():
    """Inputs of fuzz_decrypt: byte 0 is the mode (see the harness)."""
    s = {}
    plain = model(graph([tensor("w", raw=bytes(range(100)))]))
    for n, it, cs in [(0, 1, 64), (10, 1, 64), (64, 1, 64), (130, 64, 64), (len(plain), 1, 100)]:
        ct = zec1_encrypt(plain[:n], it, cs)
        if ct is not None:
            s[f"raw-zec1-{n}-it{it}-cs{cs}"] = b"\x00" + ct
    ct = cry1_encrypt(plain[:40])
    if ct is not None:
        s["raw-cry1-40"] = b"\x02" + ct
    for tag, kw in [("iter-0", {"iterations": 0}), ("iter-65", {"iterations": 65}),
                    ("chunk-63", {"chunk_size": 63}), ("chunk-huge", {"chunk_size": (64 << 20) + 1}),
                    ("version-2", {"version": 2}), ("cipher-2", {"cipher": 2}), ("kdf-2", {"kdf": 2}),
                    ("reserved-1", {"reserved": 1}), ("wrong-key", {"key_check": bytes(16)})]:
        s["raw-header-" + tag] = b"\x00" + zec1_header(**kw)[0]
    s["raw-magic-only"] = b"\x00ONNXZEC1"
    s["raw-magic-prefix"] = b"\x00ONNX"
    s["raw-cry1-header-only"] = b"\x02ONNXCRY1" + bytes(32)
    s["raw-not-encrypted"] = b"\x00" + plain
    for edit in range(7):
        for cs_sel in (0, 1):
            s[f"edit-{edit}-cs{cs_sel}"] = bytes([1, cs_sel, edit, 5, 1, 0, 3]) + plain
    s["edit-0-empty"] = bytes([1, 0, 0, 0, 0, 0, 0])
    return s


# ---- .onnxz archives (fuzz_archive) ----

SIG_LOCAL, SIG_CENTRAL, SIG_END = 0x04034B50, 0x02014B50, 0x06054B50
SIG_Z64_END, SIG_Z64_LOC, SIG_DESC = 0x06064B50, 0x07064B50, 0x08074B50
MODEL_ENTRY = "__MODEL_PROTO"


def deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def zip_archive(entries, align=64, comment=b"", zip64_end=False, end=None):
    """A ZIP laid out as onnxz-zip.md says (Z-1..Z-42) unless an entry asks otherwise.
    Each entry is a dict: name (str or bytes), data; optional: method (0, 8 or another),
    comp (the stored bytes instead of data's), crc, usize (declared), flags, align (False:
    no padding), extra / cextra (more local / central extra records), zip64_local (a local
    zip64 record), zip64_central (the fields "u", "c", "o" that go to a central zip64
    record), descriptor (bit 3: zeros in the local header, a data descriptor after the
    data), local (overrides of local fields: name, method, flags, crc, csize, usize),
    lho (the central directory's local header offset). end: overrides of the end record's
    fields (disk, cd_disk, n_disk, n, cd_size, cd_off)."""
    out = bytearray()
    central = []
    for e in entries:
        name = e["name"].encode() if isinstance(e["name"], str) else e["name"]
        raw = e.get("data", b"")
        method = e.get("method", 0)
        comp = e.get("comp", deflate(raw) if method == 8 else raw)
        crc = e.get("crc", zlib.crc32(raw) & 0xFFFFFFFF)
        flags = e.get("flags", 0x0800)
        usize, csize = e.get("usize", len(raw) if method in (0, 8) else len(comp)), len(comp)
        if method == 0 and "usize" not in e:
            usize = csize
        h = len(out)
        loc = e.get("local", {})
        lname = loc.get("name", name)
        z64l = e.get("zip64_local", False)
        lx = struct.pack("<HHQQ", 1, 16, usize, csize) if z64l else b""
        lx += e.get("extra", b"")
        if method == 0 and e.get("align", True) and align:
            pad = -(h + 30 + len(lname) + len(lx)) % align
            if 0 < pad < 6:
                pad += align
            if pad:
                lx += struct.pack("<HHH", 0xD935, pad - 4, align) + bytes(pad - 6)
        z64c = e.get("zip64_central", ())
        version = 45 if z64l or z64c else (20 if method == 8 else 10)
        desc = e.get("descriptor", False)
        l_crc, l_cs, l_us = (0, 0, 0) if desc else (crc, csize, usize)
        if z64l:
            l_cs = l_us = 0xFFFFFFFF
        out += struct.pack("<IHHHHHIIIHH", SIG_LOCAL, version, loc.get("flags", flags),
                           loc.get("method", method), 0, 0x21, loc.get("crc", l_crc),
                           loc.get("csize", l_cs), loc.get("usize", l_us), len(lname), len(lx))
        out += lname + lx + comp
        if desc:
            out += struct.pack("<IIII", SIG_DESC, crc, csize, usize)
        central.append((name, method, flags, crc, csize, usize, e.get("lho", h), version, e))
    cd_off = len(out)
    for name, method, flags, crc, csize, usize, h, version, e in central:
        z = e.get("zip64_central", ())
        vals = {"u": usize, "c": csize, "o": h}
        rec = b"".join(struct.pack("<Q", vals[k]) for k in "uco" if k in z)
        cx = (struct.pack("<HH", 1, len(rec)) + rec if z else b"") + e.get("cextra", b"")
        big = lambda k, v: 0xFFFFFFFF if k in z else v
        out += struct.pack("<IHHHHHHIIIHHHHHII", SIG_CENTRAL, 0x033F, version, flags, method, 0,
                           0x21, crc, big("c", csize), big("u", usize), len(name), len(cx), 0, 0,
                           0, 0x81A40000, big("o", h))
        out += name + cx
    cd_size = len(out) - cd_off
    n = len(entries)
    f = {"disk": 0, "cd_disk": 0, "n_disk": n, "n": n, "cd_size": cd_size, "cd_off": cd_off}
    if zip64_end:
        z_at = len(out)
        out += struct.pack("<IQHHIIQQQQ", SIG_Z64_END, 44, 0x033F, 45, 0, 0, n, n, cd_size, cd_off)
        out += struct.pack("<IIQI", SIG_Z64_LOC, 0, z_at, 1)
        f.update(n_disk=0xFFFF, n=0xFFFF, cd_size=0xFFFFFFFF, cd_off=0xFFFFFFFF)
    f.update(end or {})
    out += struct.pack("<IHHHHIIH", SIG_END, f["disk"], f["cd_disk"], f["n_disk"], f["n"],
                       f["cd_size"], f["cd_off"], len(comment)) + comment
    return bytes(out)


def entry_names(names):
    """spec/onnxz.md A-10: entry names for tensor names (bytes), in writing order."""
    taken, out = {MODEL_ENTRY.lower()}, []
    for n in names:
        mapped = "".join(chr(c) if chr(c).isascii() and chr(c).isalnum() else "_" for c in n)
        base = mapped if n else "tensor"
        if n and (base[0].isdigit() or base.startswith("__")):
            base = "t" + base
        base = base[:120]
        k, name = 1, base
        while name.lower() in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name.lower())
        out.append(name)
    return out


def onnxz(tensors, threshold=64, align=64, deflate_model=False, refs=None, extra=(),
          model_first=False):
    """An archive as libonnxz writes a model whose initializers are tensors [(name, raw)]:
    those of at least threshold bytes become entries (A-10..A-12, A-20). refs: {tensor
    index: [(key, value), ...]} replaces a tensor's references (hostile ones); extra: more
    entries (before the model)."""
    tensors = [(n.encode() if isinstance(n, str) else n, raw) for n, raw in tensors]
    moved = [i for i, (n, raw) in enumerate(tensors) if len(raw) >= threshold]
    names = dict(zip(moved, entry_names([tensors[i][0] for i in moved])))
    inits, entries = [], []
    for i, (n, raw) in enumerate(tensors):
        if i in names:
            entries.append({"name": names[i], "data": raw})
            keys = [("location", names[i]), ("length", str(len(raw)))]
            inits.append(tensor(n, dims=(len(raw),), data_type=2,
                                ext=(refs or {}).get(i, keys), location=1))
        else:
            inits.append(tensor(n, raw=raw, dims=(len(raw),), data_type=2))
    m = {"name": MODEL_ENTRY, "data": model(graph(inits, [node()])),
         "method": 8 if deflate_model else 0}
    entries += list(extra)
    entries = [m] + entries if model_first else entries + [m]
    return zip_archive(entries, align)


def raw(n, seed=1):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


def hostile_archive():
    s = {}
    three = [("w0", raw(64)), ("w1", raw(100, 2)), ("big", raw(4096, 3)), ("tiny", raw(8, 4))]
    s["ok-three"] = onnxz(three)
    for a in (128, 4096):
        s[f"ok-align-{a}"] = onnxz(three[:2], align=a)
    s["ok-threshold-0"] = onnxz(three + [("empty", b"")], threshold=0)
    s["ok-deflated-model"] = onnxz(three, deflate_model=True)
    s["ok-names"] = onnxz([("W", raw(64)), ("w", raw(64, 5)), ("w_2", raw(64, 6)), ("", raw(64, 7)),
                           ("1st", raw(64, 8)), ("__x", raw(64, 9)), ("a/b c", raw(64, 10)),
                           ("\u00e9t\u00e9", raw(64, 11)), ("n" * 130, raw(64, 12))])
    s["ok-no-tensors"] = onnxz([])
    s["ok-empty-model"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}])
    s["ok-model-first"] = onnxz(three, model_first=True)
    s["ok-unaligned"] = zip_archive([{"name": "w0", "data": raw(64), "align": False},
                                     {"name": MODEL_ENTRY, "data": model(graph([tensor(
                                         "w0", dims=(64,), data_type=2,
                                         ext=[("location", "w0"), ("length", "64")], location=1)]))}])
    ref = lambda loc, n: [("location", loc), ("length", str(n))]
    s["ok-shared-entry"] = onnxz(three[:2], refs={1: ref("w0", 64)})
    s["shared-entry-short"] = onnxz(three[:2], refs={1: ref("w0", 10)})
    s["shared-entry-offset"] = onnxz(three[:2], refs={1: [("location", "w0"), ("offset", "4"),
                                                          ("length", "60")]})
    s["ok-offset-0"] = onnxz(three[:1], refs={0: [("location", "w0"), ("offset", "0")]})
    s["ok-custom-keys"] = onnxz(three[:1], refs={0: [("custom", "kept")] + ref("w0", 64) +
                                                 [("basepath", "x")]})
    for tag, keys in [("no-location", [("length", "64")]), ("missing-entry", ref("nope", 64)),
                      ("model-entry", ref(MODEL_ENTRY, 64)), ("offset-1", [("location", "w0"), ("offset", "1")]),
                      ("length-wrong", ref("w0", 63)), ("length-abc", ref("w0", "abc")),
                      ("offset-neg", [("location", "w0"), ("offset", "-1")]),
                      ("location-nul", ref("w0\0x", 64)), ("location-empty", ref("", 64))]:
        s["ref-" + tag] = onnxz(three[:1], refs={0: keys})
    s["ref-location-no-value"] = zip_archive([{"name": "w0", "data": raw(64)}, {
        "name": MODEL_ENTRY, "data": model(graph([tensor("w0", dims=(64,), data_type=2,
                                                         extra=f_len(13, f_len(1, "location")) +
                                                         f_varint(14, 1))]))}])
    s["ref-directory"] = onnxz(three[:1], refs={0: ref("d/", 0)}, extra=[{"name": "d/", "data": b""}])
    s["version-1"] = onnxz(three[:1], extra=[{"name": "__ONNXZ_VERSION", "data": b"1"}])
    s["version-2"] = onnxz(three[:1], extra=[{"name": "__ONNXZ_VERSION", "data": b"2"}])
    s["version-junk"] = onnxz(three[:1], extra=[{"name": "__ONNXZ_VERSION", "data": b"1.0"}])
    s["version-deflated"] = onnxz(three[:1], extra=[{"name": "__ONNXZ_VERSION", "data": b"0001",
                                                     "method": 8}])
    s["no-model"] = zip_archive([{"name": "w0", "data": raw(64)}])
    s["empty-archive"] = zip_archive([])
    # tensor entries as other ZIP tools leave them
    m1 = model(graph([tensor("w", dims=(300,), data_type=2, ext=[("location", "w"), ("length", "300")],
                             location=1)]))
    w = raw(300)
    s["ok-deflated-tensor"] = zip_archive([{"name": "w", "data": w, "method": 8},
                                           {"name": MODEL_ENTRY, "data": m1}])
    s["deflated-tensor-corrupt"] = zip_archive([{"name": "w", "data": w, "method": 8,
                                                 "comp": b"\xff" + deflate(w)[1:]},
                                                {"name": MODEL_ENTRY, "data": m1}])
    s["deflated-tensor-trailing"] = zip_archive([{"name": "w", "data": w, "method": 8,
                                                  "comp": deflate(w) + b"xx"},
                                                 {"name": MODEL_ENTRY, "data": m1}])
    s["deflated-tensor-short"] = zip_archive([{"name": "w", "data": w, "method": 8,
                                               "comp": deflate(w)[:-3]},
                                              {"name": MODEL_ENTRY, "data": m1}])
    s["deflated-tensor-bomb"] = zip_archive([{"name": "w", "data": w, "method": 8, "usize": 299},
                                             {"name": MODEL_ENTRY, "data": m1}])
    s["deflated-ratio"] = zip_archive([{"name": "w", "data": bytes(20000), "method": 8,
                                        "usize": 2000000}, {"name": MODEL_ENTRY, "data": m1}])
    s["deflated-crc"] = zip_archive([{"name": "w", "data": w, "method": 8, "crc": 1},
                                     {"name": MODEL_ENTRY, "data": m1}])
    s["stored-crc"] = zip_archive([{"name": "w", "data": w, "crc": 1}, {"name": MODEL_ENTRY, "data": m1}])
    s["encrypted-entry"] = zip_archive([{"name": "w", "data": w, "flags": 0x0801},
                                        {"name": MODEL_ENTRY, "data": m1}])
    s["method-12"] = zip_archive([{"name": "w", "data": w, "method": 12}, {"name": MODEL_ENTRY, "data": m1}])
    s["masked-central"] = zip_archive([{"name": "w", "data": w, "flags": 0x2800},
                                       {"name": MODEL_ENTRY, "data": m1}])
    # other writers' layouts
    s["ok-zip64-end"] = zip_archive([{"name": "w", "data": w}, {"name": MODEL_ENTRY, "data": m1}],
                                    zip64_end=True)
    s["ok-zip64-records"] = zip_archive([{"name": "w", "data": w, "zip64_local": True,
                                          "zip64_central": "uco"},
                                         {"name": MODEL_ENTRY, "data": m1, "zip64_central": "o"}])
    s["ok-descriptor"] = zip_archive([{"name": "w", "data": w, "descriptor": True, "flags": 0x0808},
                                      {"name": MODEL_ENTRY, "data": m1, "method": 8,
                                       "descriptor": True, "flags": 0x0808}])
    s["ok-comment"] = zip_archive([{"name": "w", "data": w}, {"name": MODEL_ENTRY, "data": m1}],
                                  comment=b"PK\x05\x06 a comment")
    s["ok-extra-records"] = zip_archive([{"name": "w", "data": w, "extra": struct.pack("<HH", 0x5455, 5) + b"\x01abcd" +
                                          struct.pack("<HH", 0x7075, 6) + b"\x01\0\0\0\0x",
                                          "cextra": struct.pack("<HH", 0xCAFE, 0) + b"\0\0"},
                                         {"name": MODEL_ENTRY, "data": m1}])
    s["ok-directories"] = zip_archive([{"name": "d/", "data": b""}, {"name": "d/w", "data": w},
                                       {"name": MODEL_ENTRY, "data": model(graph([tensor(
                                           "w", dims=(300,), data_type=2,
                                           ext=[("location", "d/w")], location=1)]))}])
    s["path-clash"] = zip_archive([{"name": "a", "data": b"x"}, {"name": "a/b", "data": b"y"},
                                   {"name": "W/", "data": b""}, {"name": "W", "data": b""},
                                   {"name": MODEL_ENTRY, "data": b""}])
    # Z-60..Z-76 refusals
    base = s["ok-three"]
    for cut in (1, 3, 4, 21, 30, 100, len(base) // 2, len(base) - 23, len(base) - 1):
        s[f"cut-{cut}"] = base[:cut]
    s["trailing-bytes"] = base + b"x"
    s["prefix-bytes"] = b"MZ" + base
    s["two-ends"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}],
                                comment=struct.pack("<IHHHHIIH", SIG_END, 0, 0, 0, 0, 0, 0, 0))
    s["comment-past-end"] = base[:-2] + b"\x10\x00"
    s["multi-disk"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}], end={"disk": 1})
    s["count-mismatch"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}], end={"n_disk": 2})
    s["too-many-entries"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}], end={"n_disk": 9, "n": 9})
    s["cd-past-end"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}], end={"cd_off": 5000})
    s["cd-short"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}], end={"cd_off": 1})
    s["defers-no-locator"] = zip_archive([{"name": MODEL_ENTRY, "data": b""}], end={"cd_off": 0xFFFFFFFF})
    z = bytearray(s["ok-zip64-end"])
    loc_at = len(z) - 22 - 20
    s["zip64-locator-wrong"] = bytes(z[:loc_at + 8]) + struct.pack("<Q", 3) + bytes(z[loc_at + 16:])
    s["zip64-record-size"] = bytes(z[:loc_at - 56 + 4]) + struct.pack("<Q", 45) + bytes(z[loc_at - 56 + 12:])
    s["zip64-missing-extra"] = zip_archive([{"name": "w", "data": w, "zip64_central": "u"},
                                            {"name": MODEL_ENTRY, "data": m1}]).replace(
        struct.pack("<HHQ", 1, 8, 300), struct.pack("<HHQ", 9, 8, 300), 1)
    s["zip64-short-extra"] = zip_archive([{"name": "w", "data": w, "zip64_central": "u"},
                                          {"name": MODEL_ENTRY, "data": m1}]).replace(
        struct.pack("<HH", 1, 8), struct.pack("<HH", 1, 4), 1)
    s["extra-overrun"] = zip_archive([{"name": "w", "data": w, "cextra": struct.pack("<HH", 0x1234, 40)},
                                      {"name": MODEL_ENTRY, "data": m1}])
    for tag, name in [("absolute", "/w"), ("dotdot", "a/../w"), ("dot", "./w"), ("backslash", "a\\w"),
                      ("drive", "c:w"), ("empty-component", "a//w"), ("nul", b"w\0"), ("not-utf8", b"w\xff"),
                      ("overlong", b"\xc0\xafw"), ("surrogate", b"\xed\xa0\x80"), ("empty", b""),
                      ("long", "n" * 4097)]:
        s["name-" + tag] = zip_archive([{"name": name, "data": b""}, {"name": MODEL_ENTRY, "data": b""}])
    s["name-twice"] = zip_archive([{"name": "w", "data": b"1"}, {"name": "w", "data": b"2"},
                                   {"name": MODEL_ENTRY, "data": b""}])
    s["local-name-differs"] = zip_archive([{"name": "w", "data": w, "local": {"name": b"v"}},
                                           {"name": MODEL_ENTRY, "data": m1}])
    s["local-method-differs"] = zip_archive([{"name": "w", "data": w, "local": {"method": 8}},
                                             {"name": MODEL_ENTRY, "data": m1}])
    s["local-flags-differ"] = zip_archive([{"name": "w", "data": w, "local": {"flags": 0x0808}},
                                           {"name": MODEL_ENTRY, "data": m1}])
    s["local-crc-differs"] = zip_archive([{"name": "w", "data": w, "local": {"crc": 5}},
                                          {"name": MODEL_ENTRY, "data": m1}])
    s["local-size-differs"] = zip_archive([{"name": "w", "data": w, "local": {"csize": 299}},
                                           {"name": MODEL_ENTRY, "data": m1}])
    s["stored-sizes-differ"] = zip_archive([{"name": "w", "data": w, "usize": 301},
                                            {"name": MODEL_ENTRY, "data": m1}])
    s["local-past-cd"] = zip_archive([{"name": "w", "data": w, "lho": 100000},
                                      {"name": MODEL_ENTRY, "data": m1}])
    s["local-no-signature"] = zip_archive([{"name": "w", "data": w, "lho": 1},
                                           {"name": MODEL_ENTRY, "data": m1}])
    s["overlap"] = zip_archive([{"name": "w", "data": w}, {"name": MODEL_ENTRY, "data": m1, "lho": 0,
                                                           "local": {"name": b"w"}}])
    s["data-into-cd"] = zip_archive([{"name": "w", "data": w, "comp": w[:10], "usize": 10},
                                     {"name": MODEL_ENTRY, "data": m1}]).replace(
        struct.pack("<II", 10, 10), struct.pack("<II", 400, 400))
    s["central-no-signature"] = base.replace(struct.pack("<I", SIG_CENTRAL), b"PK\x01\x03", 1)
    s["bare-local-signature"] = b"PK\x03\x04"
    s["bare-end"] = struct.pack("<IHHHHIIH", SIG_END, 0, 0, 0, 0, 0, 0, 0)
    return s


def archive_of(model_bytes, sel):
    """model_bytes packed as onnxz packs it, when python3-onnx can parse it (else as is)."""
    try:
        import onnx
        from onnx import external_data_helper as edh
        m = onnx.load_model_from_string(model_bytes)
        ts = [t for t in edh._get_all_tensors(m) if t.HasField("raw_data") and len(t.raw_data) >= 64]
    except Exception:  # noqa: BLE001 - not a model onnx reads: the model entry alone
        return zip_archive([{"name": MODEL_ENTRY, "data": model_bytes}])
    entries = []
    for t, name in zip(ts, entry_names([t.name.encode() for t in ts])):
        entries.append({"name": name, "data": t.raw_data})
        t.ClearField("raw_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", name), ("length", str(len(entries[-1]["data"])))):
            e = t.external_data.add()
            e.key, e.value = k, v
    entries.append({"name": MODEL_ENTRY, "data": m.SerializeToString(), "method": 8 if sel & 1 else 0})
    return zip_archive(entries, 4096 if sel & 2 else 64)


def tool_archives(tool):
    """t-* archives written by the onnxz tool from hand-made models, or {} without it."""
    s = {}
    if not tool:
        return s
    sizes = [("w0", raw(64)), ("W0", raw(200, 2)), ("t", raw(10, 3)), ("_.x", raw(70, 4))]
    src = {"three": model(graph([tensor(n, raw=r, dims=(len(r),), data_type=2) for n, r in sizes],
                                [node()])),
           "nested": hostile_consolidate(sized=True)["sel-00"][1:]}
    with tempfile.TemporaryDirectory() as d:
        for name, data in src.items():
            inp = os.path.join(d, name + ".onnx")
            with open(inp, "wb") as f:
                f.write(data)
            for tag, args in [("default", []), ("align-4096", ["--align", "4096"]),
                              ("threshold-0", ["--threshold", "0"]), ("deflated", ["--deflate-model"])]:
                out = os.path.join(d, f"{name}-{tag}.onnxz")
                r = subprocess.run([tool, "convert", "-f", *args, inp, out], capture_output=True)
                if r.returncode != 0:
                    raise SystemExit(f"make_seeds: {tool} convert failed: {r.stderr.decode()}")
                with open(out, "rb") as f:
                    s[f"{name}-{tag}"] = f.read()
    return s


def roundtrip_models():
    """(option byte, model) inputs for fuzz_archive_roundtrip."""
    s = {}
    sizes = [0, 1, 15, 16, 63, 64, 65, 100, 999, 1000, 1001, 4096]
    inits = [tensor(f"t{n}", raw=raw(n), dims=(n,), data_type=2) for n in sizes]
    names = [b"W", b"w", b"w_2", b"", b"1st", b"__x", b"_.x", b"_.ONNXZ_VERSION", b"a/b c",
             "\u00e9t\u00e9".encode(), b"n" * 130, b"nul\0name", b"Tensor", b"tensor"]
    named = [tensor(n, raw=raw(70, i)) for i, n in enumerate(names)]
    kept = [tensor("keys", raw=raw(80), ext=[("custom", "kept"), ("location", "x"), ("offset", "3")]),
            tensor("dl0", raw=raw(80), extra=f_varint(14, 0)),
            tensor("dl2", raw=raw(80), extra=f_varint(14, 2)),
            tensor("ext", raw=raw(80), ext=[("location", "t64")], location=1),
            tensor("ext-noraw", dims=(4,), ext=[("location", "w")], location=1),
            tensor("typed", dims=(1,), extra=f_float(4, 1.0))]
    sub = graph([tensor("sub", raw=raw(300))], [node()])
    nested = model(graph(inits, [node("If", [attr_graph("then_branch", sub),
                                             attr_tensor("value", tensor("at", raw=raw(70)))])],
                         sparse=[f_len(1, tensor("sv", raw=raw(24))) + f_len(2, tensor("si", raw=raw(64)))]),
                   extra=f_len(25, f_len(1, "f") + f_len(7, node(attrs=[attr_tensor("c", tensor("fc", raw=raw(90)))]))) +
                   f_len(20, f_len(1, graph([tensor("train", raw=raw(128))]))))
    for sel in (0x00, 0x01, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x10, 0x18, 0x20, 0x40, 0x80, 0xC0,
                0x61, 0xFF):
        s[f"sel-{sel:02x}"] = bytes([sel]) + nested
    s["sel-00-names"] = b"\x00" + model(graph(named))
    s["sel-48-names"] = b"\x48" + model(graph(named))
    s["sel-00-keys"] = b"\x00" + model(graph(kept))
    s["sel-c0-keys"] = b"\xc0" + model(graph(kept))
    s["sel-00-empty"] = b"\x00"
    s["sel-08-many"] = b"\x08" + model(graph([tensor(f"m{i % 7}", raw=raw(i % 5)) for i in range(200)]))
    s["sel-00-bad"] = b"\x00" + key(7, LEN) + varint(100)
    return s


# ---- python3-onnx's backend test data ----


def restore_numpy_aliases(np):
    """numpy 1.24 removed np.float & co.; onnx 1.12's test cases still use them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for name, value in (("float", float), ("int", int), ("bool", bool),
                            ("object", object), ("complex", complex), ("str", str)):
            if not hasattr(np, name):
                setattr(np, name, value)


def backend_data(cache):
    """[(kind, name, message type, bytes)] from the backend test data, or [] without onnx."""
    try:
        import numpy as np
        restore_numpy_aliases(np)
        import onnx
        from onnx.backend.test import cmd_tools
    except Exception as e:  # noqa: BLE001 - any import problem means: no backend seeds
        print(f"make_seeds: no backend seeds ({e})", file=sys.stderr)
        return []
    done = os.path.join(cache, ".complete")
    if not os.path.exists(done):
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        argv = sys.argv
        sys.argv = ["cmd_tools", "generate-data", "-o", cache]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cmd_tools.main()
        finally:
            sys.argv = argv
        open(done, "w").close()
    kinds = {"tensor_type": "TensorProto", "sequence_type": "SequenceProto",
             "map_type": "MapProto", "optional_type": "OptionalProto",
             "sparse_tensor_type": "SparseTensorProto"}
    out = []
    for dirpath, dirnames, filenames in os.walk(cache):
        dirnames.sort()
        if "model.onnx" not in filenames:
            continue
        case = os.path.relpath(dirpath, cache).replace(os.sep, "-")
        path = os.path.join(dirpath, "model.onnx")
        data = open(path, "rb").read()
        if len(data) <= MAX_SEED:
            out.append(("model", case, "ModelProto", data))
        try:
            m = onnx.load_model_from_string(data)
        except Exception:  # noqa: BLE001
            continue
        for sub in sorted(dirnames):
            if not sub.startswith("test_data_set"):
                continue
            for fn in sorted(os.listdir(os.path.join(dirpath, sub))):
                stem, _, ext_ = fn.rpartition(".")
                kind, _, idx = stem.rpartition("_")
                if ext_ != "pb" or kind not in ("input", "output") or not idx.isdigit():
                    continue
                values = m.graph.input if kind == "input" else m.graph.output
                if int(idx) >= len(values):
                    continue
                which = values[int(idx)].type.WhichOneof("value")
                if which not in kinds:
                    continue
                blob = open(os.path.join(dirpath, sub, fn), "rb").read()
                if len(blob) <= MAX_SEED // 2:
                    out.append(("data", f"{case}-{sub}-{stem}", kinds[which], blob))
    return out


# ---- main ----


def write(d, name, data):
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
    with open(os.path.join(d, safe), "wb") as f:
        f.write(data)


def main():
    argv, tool = sys.argv[1:], None
    if "--onnxz" in argv:
        i = argv.index("--onnxz")
        if i + 1 >= len(argv):
            raise SystemExit(__doc__)
        tool = argv[i + 1]
        del argv[i:i + 2]
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1:
        raise SystemExit(__doc__)
    out = os.path.abspath(args[0])
    dirs = {t: os.path.join(out, t) for t in TARGETS}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    dec = hostile_decode()
    for name, data in dec.items():
        write(dirs["fuzz_decode_model"], "h-" + name, data)
        write(dirs["fuzz_decode_any"], "h-ModelProto-" + name, bytes([INDEX["ModelProto"]]) + data)
    for name, (c, body) in hostile_any().items():
        write(dirs["fuzz_decode_any"], "h-" + name, bytes([INDEX[c]]) + body)
    for name, data in hostile_external().items():
        write(dirs["fuzz_external"], "h-" + name, data)
    for name, data in hostile_consolidate().items():
        write(dirs["fuzz_consolidate"], "h-" + name, data)
    for name, data in hostile_decrypt().items():
        write(dirs["fuzz_decrypt"], "h-" + name, data)
    for name, data in hostile_archive().items():
        write(dirs["fuzz_archive"], "h-" + name, data)
    for name, data in tool_archives(tool).items():
        write(dirs["fuzz_archive"], "t-" + name, data)
    for name, data in roundtrip_models().items():
        write(dirs["fuzz_archive_roundtrip"], "h-" + name, data)
    backend = [] if "--no-backend" in sys.argv else backend_data(os.path.join(out, ".backend"))
    for kind, name, typ, data in backend:
        write(dirs["fuzz_decode_any"], f"b-{name}", bytes([INDEX[typ]]) + data)
        if kind != "model":
            continue
        write(dirs["fuzz_decode_model"], f"b-{name}", data)
        write(dirs["fuzz_external"], f"b-{name}", data)
        sel = hashlib.sha1(name.encode()).digest()[0] & 0x7F  # any options but the 2nd pass
        write(dirs["fuzz_consolidate"], f"b-{name}", bytes([sel]) + data)
        sel = hashlib.sha1(name.encode()).digest()[1]
        sel = (sel & 0xF8) | (sel & 7) % 6  # an alignment saving accepts
        write(dirs["fuzz_archive_roundtrip"], f"b-{name}", bytes([sel]) + data)
        arc = archive_of(data, sel)
        if len(arc) <= MAX_SEED:
            write(dirs["fuzz_archive"], f"b-{name}", arc)
    counts = ", ".join(f"{t}: {len(os.listdir(d))}" for t, d in dirs.items())
    print(f"make_seeds: wrote {counts} into {out}")


if __name__ == "__main__":
    main()
