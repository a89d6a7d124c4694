"""spec/onnx-wire.md W-42, spec/security.md S-43: tensors in typed fields through
f[name] (issue 28, item 8). Before: a count that differs raised numpy's ValueError, an
unknown data_type KeyError: 99, a tensor without data a ValueError, a name that is not
UTF-8 (listed by .names) could not be looked up, and verify() passed all four."""
import numpy as np
import onnx
import pytest
from conftest import run
from onnx import helper

import onnxz

CASES = {
    "count": (r"tensor 'count': dims \[3\] of FLOAT make 3 values in float_data, but it "
              r"holds 2 \(W-42\)"),
    "type99": r"tensor 'type99' has data_type 99, which ONNX does not define \(W-42\)",
    "nodata": r"tensor 'nodata': dims \[2\] of FLOAT make 2 elements, but it has no data",
    "int4": (r"tensor 'int4': dims \[5\] of INT4 make 3 values in int32_data, but it holds 5"),
}


def tensor(name, data_type, dims, **fields):
    t = onnx.TensorProto(name=name, data_type=data_type, dims=dims)
    for k, v in fields.items():
        getattr(t, k).extend(v)
    return t


def write(path, tensors):
    """A model of these initializers, with the bytes of the name "ok" turned into \\xff\\xfe
    (a name that is not UTF-8)."""
    data = bytearray(helper.make_model(helper.make_graph([], "g", [], [], tensors))
                     .SerializeToString())
    i = data.find(b"\x42\x02ok")  # TensorProto.name (field 8), 2 bytes
    if i >= 0:
        data[i + 2:i + 4] = b"\xff\xfe"
    path.write_bytes(bytes(data))


def test_each_refused_with_the_tools_message(tmp_path, tool):
    p = tmp_path / "typed.onnx"
    good = [tensor("ok", 1, [2], float_data=[1.0, 2.0]),
            tensor("s", 8, [2], string_data=[b"a", b"b"]),
            tensor("i4", 22, [3], int32_data=[0x21, 0x3]),
            tensor("c", 14, [1], float_data=[1.0, 2.0])]
    bad = [tensor("count", 1, [3], float_data=[1.0, 2.0]),
           tensor("type99", 99, [2], int32_data=[1, 2]),
           tensor("nodata", 1, [2]),
           tensor("int4", 22, [5], int32_data=[1, 2, 3, 4, 5])]
    for b in bad:
        write(p, good + [b])
        f = onnxz.open(str(p))
        with pytest.raises(onnxz.Error, match=CASES[b.name]) as e:
            f[b.name]
        assert str(e.value).startswith(f"{p}: ")
        with pytest.raises(onnxz.Error, match=CASES[b.name]):
            f.verify()
        v = run([tool, "verify", str(p)])
        assert v.returncode == 1 and v.stderr.decode().strip() == f"onnxz: error: {e.value}"
    write(p, good)
    f = onnxz.open(str(p))
    f.verify()
    name = b"\xff\xfe".decode("utf-8", "surrogateescape")
    assert f.names == [name, "s", "i4", "c"]
    np.testing.assert_array_equal(f[name], np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(f[b"\xff\xfe"], np.array([1.0, 2.0], np.float32))
    assert name in f and list(f[b"s"]) == list(onnx.numpy_helper.to_array(good[1]))
    assert f["c"].dtype == np.complex64 and f["c"][0] == 1 + 2j


def typed_and_raw(k):
    """(typed fields, raw bytes, dims) of one tensor of data_type k holding the same values."""
    if k in (1, 11):
        v = [1.5, -2.0, 0.25]
        return {"float_data" if k == 1 else "double_data": v}, \
            np.array(v, np.float32 if k == 1 else np.float64).tobytes(), [3]
    if k in (14, 15):
        v = [1.0, 2.0, -3.0, 4.5]
        return {"float_data" if k == 14 else "double_data": v}, \
            np.array(v, np.float32 if k == 14 else np.float64).tobytes(), [2]
    if k in (7, 12, 13):
        v = [1, 2, 2**31 + 5]
        dtype = {7: np.int64, 12: np.uint32, 13: np.uint64}[k]
        return {"int64_data" if k == 7 else "uint64_data": v}, np.array(v, dtype).tobytes(), [3]
    if k == 10:  # FLOAT16: bit patterns
        h = np.array([1.5, -2.0, 65504.0], np.float16)
        return {"int32_data": [int(b) for b in h.view(np.uint16)]}, h.tobytes(), [3]
    if k in (21, 22, 23, 25, 26):  # packed: one byte a value
        return {"int32_data": [0x21, 0xf3]}, bytes([0x21, 0xf3]), [3 if k < 25 else 5]
    dtype = {2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 9: np.bool_,
             16: np.uint16}.get(k, np.uint8)  # BFLOAT16: bits; the float8 types: bytes
    v = [1, 0, 1] if k == 9 else [3, 0, 100] if k in (2, 3) or k >= 17 else [3, 0, 30000]
    if k in (3, 5, 6):
        v = [-3, 0, 100]
    return {"int32_data": v}, np.array(v, dtype).tobytes(), [3]


def test_every_type_onnx_defines_in_typed_fields(tmp_path, tool):
    """S-43: typed fields of every type ONNX defines (FLOAT8, INT4, FLOAT4, the 2-bit
    types...) give the array the same values give in raw_data, with no table of the
    installed onnx (python3-onnx 1.12 lacks the types from 17 on: KeyError: 17 before)."""
    types = [k for k in range(1, 27) if k != 8]
    tensors = []
    for k in types:
        fields, raw, dims = typed_and_raw(k)
        tensors.append(tensor(f"t{k}", k, dims, **fields))
        tensors.append(onnx.TensorProto(name=f"r{k}", data_type=k, dims=dims, raw_data=raw))
    p = tmp_path / "types.onnx"
    write(p, tensors)
    f = onnxz.open(str(p))
    f.verify()
    assert run([tool, "verify", str(p)]).returncode == 0
    for k in types:
        got, want = f[f"t{k}"], f[f"r{k}"]
        assert got.dtype == want.dtype and got.shape == want.shape, (k, got, want)
        np.testing.assert_array_equal(got, want, err_msg=f"data_type {k}")


def test_segment_refused_everywhere_alike(tmp_path, tool):
    """A tensor with `segment` (a part of a larger tensor, deprecated by ONNX): f[name],
    verify() and the tool refuse it with one message naming it (W-40). Before: verify()
    and the tool passed it, and f[name] raised numpy's ValueError."""
    t = onnx.TensorProto(name="part", data_type=1, dims=[4], raw_data=bytes(8))
    t.segment.begin, t.segment.end = 0, 2
    p = tmp_path / "segment.onnx"
    write(p, [tensor("ok", 1, [2], float_data=[1.0, 2.0]), t])
    f = onnxz.open(str(p))
    want = r"tensor 'part' is a segment of a larger tensor .* \(W-40\)"
    with pytest.raises(onnxz.Error, match=want) as e:
        f["part"]
    with pytest.raises(onnxz.Error, match=want):
        f.verify()
    v = run([tool, "verify", str(p)])
    assert v.returncode == 1 and v.stderr.decode().strip() == f"onnxz: error: {e.value}"


F16 = [int(b) for b in np.array([1.5, -2.0, 65504.0, 0.0, -0.0, np.inf], np.float16)
       .view(np.uint16)]
VALUES = {  # six elements of each type in its typed field (two values a complex one)
    1: ("float_data", [1.5, -2.0, 0.25, 3e38, -0.0, float("inf")]),
    2: ("int32_data", [3, 0, 255, 128, 1, 7]),
    3: ("int32_data", [-3, 0, 100, 127, -128, 7]),
    4: ("int32_data", [3, 0, 65535, 40000, 1, 7]),
    5: ("int32_data", [-3, 0, 30000, -32768, 32767, 5]),
    6: ("int32_data", [-3, 0, 100, 2**31 - 1, -2**31, 7]),
    7: ("int64_data", [-3, 0, 2**40, -2**63, 2**63 - 1, 7]),
    8: ("string_data", [b"a", b"", "\u00e9".encode(), b"dd", b"e", b"f"]),
    9: ("int32_data", [1, 0, 2, 1, 0, 0]),  # 2: true, as onnx casts it
    10: ("int32_data", F16),
    11: ("double_data", [1.5, -2.0, 1e300, 0.1, -0.0, 3.0]),
    12: ("uint64_data", [3, 0, 2**32 - 1, 2**31, 1, 7]),
    13: ("uint64_data", [3, 0, 2**64 - 1, 2**63, 1, 7]),
    14: ("float_data", [1.0, 2.0, -3.0, 4.5, 0.0, -1.0, 7.0, 8.0, 1e-3, 2e-3, 5.0, 6.0]),
    15: ("double_data", [1.0, 2.0, -3.0, 4.5, 0.0, -1.0, 7.0, 8.0, 1e-3, 2e-3, 5.0, 6.0]),
    16: ("int32_data", [0x3fc0, 0xc000, 0x7f80, 0, 0x8000, 0x4049]),
    **{k: ("int32_data", [0x38, 0, 0xff, 0x80, 1, 0x7f]) for k in (17, 18, 19, 20, 24)},
    **{k: ("int32_data", [0x21, 0xf3, 0x80]) for k in (21, 22, 23)},  # two 4-bit a value
    **{k: ("int32_data", [0xe4, 0x1b]) for k in (25, 26)},  # four 2-bit a value
}
# The types python3-onnx 1.12 does not know (17 on): f[name] as the package's own table
# gave it before the library converted typed fields ({name: (dtype, shape, bytes)}).
BEFORE = {
    **{f"{p}{k}": v for k in (17, 18, 19, 20, 24) for p, v in (
        ("t", ("uint8", (2, 3), "3800ff80017f")), ("s", ("uint8", (), "38")),
        ("e", ("uint8", (2, 0), "")))},
    **{f"{p}{k}": v for k in (21, 22, 23) for p, v in (
        ("t", ("uint8", (3,), "21f380")), ("s", ("uint8", (1,), "07")),
        ("e", ("uint8", (0,), "")))},
    **{f"{p}{k}": v for k in (25, 26) for p, v in (
        ("t", ("uint8", (2,), "e41b")), ("s", ("uint8", (1,), "03")),
        ("e", ("uint8", (0,), "")))},
}


def every_typed():
    """Each type in typed fields as a [2, 3] tensor (t), a 0-d one (s: one element) and
    one without elements (e)."""
    out = []
    for k, (field, v) in VALUES.items():
        per = 2 if k in (14, 15) else 1
        one = [0x07] if k in (21, 22, 23) else [0x03] if k in (25, 26) else v[:per]
        out += [tensor(f"t{k}", k, [2, 3], **{field: v}), tensor(f"s{k}", k, [], **{field: one}),
                tensor(f"e{k}", k, [2, 0])]
    return out


def forms(tmp_path, tool, typed):
    """The typed tensors in a .onnx, in a .onnx beside a data file (a raw tensor there),
    and in an .onnxz archive; each keeps them in typed fields."""
    big = onnx.numpy_helper.from_array(np.arange(4096, dtype=np.float32), "big")
    p = tmp_path / "typed.onnx"
    onnx.save(helper.make_model(helper.make_graph([], "g", [], [], typed + [big])), str(p))
    out = {"onnx": p, "external": tmp_path / "x.onnx", "archive": tmp_path / "a.onnxz"}
    for form, flags in (("external", ["--external-data", "x.data"]), ("archive", [])):
        assert run([tool, "convert", str(p), str(out[form]), *flags]).returncode == 0
    assert (tmp_path / "x.data").stat().st_size == 4096 * 4
    return out


def to_array(t):
    """numpy_helper.to_array, whose 1.12 fails on typed COMPLEX64 and COMPLEX128 (it casts
    the complex values its combine_pairs_to_complex made to float): those from their pairs
    by that same helper."""
    if t.data_type not in (14, 15):
        return onnx.numpy_helper.to_array(t)
    values = t.float_data if t.data_type == 14 else t.double_data
    return np.array(onnx.numpy_helper.combine_pairs_to_complex(values),
                    np.complex64 if t.data_type == 14 else np.complex128).reshape(t.dims)


def test_typed_bytes_as_onnx_reads_them(tmp_path, tool):
    """Every type ONNX defines, in typed fields, with and without dims, in every form:
    `onnxz get` writes the bytes raw_data would hold, and f[name] is the array those bytes
    make. The oracle: python3-onnx's numpy_helper.to_array of the typed tensor equals its
    to_array of a raw_data tensor of those bytes (to_array below) (1.12 knows the types up to 16); for the
    types from 17 on, what the package's own table gave before (BEFORE). STRING: the
    strings to_array gives; `onnxz get` refuses it."""
    typed = every_typed()
    for form, path in forms(tmp_path, tool, typed).items():
        f = onnxz.open(str(path))
        f.verify()
        for t in typed:
            a, k = f[t.name], t.data_type
            assert not a.flags.writeable, (form, t.name)
            got = run([tool, "get", str(path), t.name])
            if k == 8:
                assert a.dtype == object and a.shape == tuple(t.dims)
                assert a.tolist() == onnx.numpy_helper.to_array(t).tolist(), (form, t.name)
                assert got.returncode == 1 and b"holds STRING values" in got.stderr
                continue
            assert got.returncode == 0, (form, t.name, got.stderr)
            assert got.stdout == a.tobytes(), (form, t.name)
            if k >= 17:
                assert (str(a.dtype), a.shape, a.tobytes().hex()) == BEFORE[t.name], t.name
                continue
            raw = onnx.TensorProto(name=t.name, data_type=k, dims=t.dims, raw_data=got.stdout)
            want = to_array(t)
            assert onnx.numpy_helper.to_array(raw).tobytes() == want.tobytes(), (form, t.name)
            assert a.shape == want.shape, (form, t.name)
            if k != 16:  # BFLOAT16: onnx gives float32, f[name] the bits (uint16)
                assert a.dtype == want.dtype, (form, t.name)


def test_more_dims_than_numpy_holds(tmp_path):
    """A tensor of 70 dims of 1 (numpy holds 32, or 64 in numpy 2) is valid ONNX; each path
    that shapes it as an array (raw bytes, typed fields, STRING; f[name] and get_slice)
    raises onnxz.Error naming it, never numpy's ValueError. read_into and load build no
    numpy array of its shape: they read it."""
    dims = [1] * 70
    p = tmp_path / "manydims.onnx"
    write(p, [onnx.TensorProto(name="raw", data_type=1, dims=dims,
                               raw_data=np.float32(1.0).tobytes()),
              tensor("typed", 1, dims, float_data=[2.0]),
              tensor("s", 8, dims, string_data=[b"x"])])
    f = onnxz.open(str(p))
    for name in ("raw", "typed", "s"):
        with pytest.raises(onnxz.Error, match=f"tensor '{name}': numpy cannot represent its "
                                              f"70 dims \\(maximum supported dimension") as e:
            f[name]
        assert str(e.value).startswith(f"{p}: ")
    for name in ("raw", "typed"):
        with pytest.raises(onnxz.Error, match=f"tensor '{name}': numpy cannot"):
            f.get_slice(name)[...]
        out = np.zeros(1, np.float32)
        assert f.read_into(name, out) == 4 and out[0] in (1.0, 2.0)
    m = onnxz.load(str(p))
    assert list(m.graph.initializer[0].dims) == dims


def test_int4_of_odd_count_sliced_to_its_end(tmp_path, tool):
    """INT4 [3] is 2 bytes, the last half padding (W-40): a slice that ends at the
    tensor's end ends on that byte and is read, by get_slice, read_into and the tool; one
    that starts inside a byte is refused."""
    p = tmp_path / "int4.onnx"
    write(p, [onnx.TensorProto(name="q", data_type=22, dims=[3], raw_data=b"\x21\x03")])
    f = onnxz.open(str(p))
    assert bytes(f["q"]) == b"\x21\x03"
    for index in ((), slice(0, 3), slice(None), Ellipsis):
        assert bytes(f.get_slice("q")[index]) == b"\x21\x03"
    assert bytes(f.get_slice("q")[2:]) == b"\x03"
    out = bytearray(2)
    assert f.read_into("q", out, slice(0, 3)) == 2 and bytes(out) == b"\x21\x03"
    with pytest.raises(onnxz.Error, match="splits bytes"):
        f.get_slice("q")[1:]
    g = run([tool, "get", str(p), "q", "--slice", "0:3"])
    assert g.returncode == 0 and g.stdout == b"\x21\x03", g.stderr
