"""spec/security.md S-45: what onnxz hands protobuf stays under its 2 GiB limit whatever
the tensor sizes (issue 28, item 7; label `large`). 40,000 tensors of 60 KB (2.4 GB) as a
two-file model: onnx.load takes it; before, onnxz.load raised protobuf's DecodeError
(every tensor was below the 64 KiB split, so all stayed in the skeleton) and onnxz.save
of the loaded model, even to .onnxz, protobuf's "exceeds 2GB". Needs ~5 GB of disk and
~3 GB of memory."""
import os
import subprocess

import onnx
from onnx import helper

import onnxz

COUNT, SIZE = 40_000, 60_000


def pattern(i):
    return (i.to_bytes(4, "little") * (SIZE // 4 + 1))[:SIZE]


def test_two_file_and_archive_over_2gb(tmp_path):
    tool = os.environ["ONNXZ_TOOL"]
    inits = []
    with open(tmp_path / "two.bin", "wb") as data:
        for i in range(COUNT):
            t = onnx.TensorProto(name=f"t{i}", data_type=onnx.TensorProto.UINT8, dims=[SIZE])
            t.data_location = onnx.TensorProto.EXTERNAL
            for k, v in (("location", "two.bin"), ("offset", str(i * SIZE)),
                         ("length", str(SIZE))):
                t.external_data.add(key=k, value=v)
            inits.append(t)
            data.write(pattern(i))
    out = helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, [SIZE])
    graph = helper.make_graph([helper.make_node("Identity", ["t0"], ["y"])], "g", [], [out],
                              inits)
    onnx.save(helper.make_model(graph), str(tmp_path / "two.onnx"))
    del inits, graph

    m = onnxz.load(str(tmp_path / "two.onnx"))
    assert len(m.graph.initializer) == COUNT
    for i in (0, 1, COUNT // 2, COUNT - 1):
        assert m.graph.initializer[i].raw_data == pattern(i)
    onnxz.save(m, str(tmp_path / "big.onnxz"))
    del m
    subprocess.run([tool, "-q", "verify", str(tmp_path / "big.onnxz")], check=True)
    with onnxz.open(str(tmp_path / "big.onnxz")) as f:
        assert bytes(f[f"t{COUNT - 1}"]) == pattern(COUNT - 1)
    m = onnxz.load(str(tmp_path / "big.onnxz"))
    assert len(m.graph.initializer) == COUNT
    assert m.graph.initializer[COUNT - 7].raw_data == pattern(COUNT - 7)
