#!/usr/bin/python3
"""Write seed corpora for the libonnxcore fuzz targets.

Usage: /usr/bin/python3 make_seeds.py OUT [--no-backend]

Writes OUT/<target>/ for fuzz_decode_model, fuzz_decode_any, fuzz_external,
fuzz_consolidate and fuzz_decrypt:
  h-*   hand-made inputs, built here byte by byte (no protobuf library): every message
        type with every field set, nesting at and past the depth limit, each decoding
        fault of spec/onnx-wire.md W-17, and for fuzz_external one model per rule of
        spec/external-data.md (pointing at the fixture files the harness creates); for
        fuzz_decrypt, ONNXZEC1 / ONNXCRY1 files under the harness's passphrase (built
        with hashlib and python3-cryptography) and damaged headers;
  b-*   models and test-data files of python3-onnx's backend tests
        (`onnx.backend.test.cmd_tools generate-data`), when python3-onnx is importable,
        at most MAX_SEED bytes each.
Input prefixes follow each target's format: fuzz_decode_any takes one byte for the
message type (its index in ONNX_MESSAGES of schema.def), fuzz_consolidate one byte of
options. OUT/<target>/ is emptied first; the backend data is cached in OUT/.backend.
"""
import hashlib
import os
import re
import shutil
import struct
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "..", "libonnxcore", "include", "onnxcore", "schema.def")
TARGETS = ("fuzz_decode_model", "fuzz_decode_any", "fuzz_external", "fuzz_consolidate",
           "fuzz_decrypt")
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


def hostile_consolidate():
    sizes = [0, 1, 15, 16, 63, 64, 100, 1024, 2000]
    inits = [tensor(f"t{n}", raw=bytes((i * 7) & 0xFF for i in range(n))) for n in sizes]
    inits.append(tensor("noraw", dims=(1,), extra=f_float(4, 1.0)))
    sub = graph([tensor("sub", raw=bytes(300))], [node()])
    nested = model(graph(inits, [node("If", [attr_graph("g", sub),
                                             attr_tensor("t", tensor("at", raw=bytes(70)))])],
                         sparse=[f_len(1, tensor("sv", raw=bytes(24))) + f_len(2, tensor("si", raw=bytes(8)))]))
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
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
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
    backend = [] if "--no-backend" in sys.argv else backend_data(os.path.join(out, ".backend"))
    for kind, name, typ, data in backend:
        write(dirs["fuzz_decode_any"], f"b-{name}", bytes([INDEX[typ]]) + data)
        if kind != "model":
            continue
        write(dirs["fuzz_decode_model"], f"b-{name}", data)
        write(dirs["fuzz_external"], f"b-{name}", data)
        sel = hashlib.sha1(name.encode()).digest()[0] & 0x7F  # any options but the 2nd pass
        write(dirs["fuzz_consolidate"], f"b-{name}", bytes([sel]) + data)
    counts = ", ".join(f"{t}: {len(os.listdir(d))}" for t, d in dirs.items())
    print(f"make_seeds: wrote {counts} into {out}")


if __name__ == "__main__":
    main()
