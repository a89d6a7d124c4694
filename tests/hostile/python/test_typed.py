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
