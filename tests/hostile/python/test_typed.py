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
