"""The jobs of the tool that are one library call each, from Python: stub (oz_stub_file).
The tool is the oracle: the package writes the bytes it writes."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import onnxz
from conftest import make_model


def tensors(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


@pytest.fixture
def archive(tmp_path):
    path = str(tmp_path / "m.onnxz")
    onnxz.save(make_model(n_weights=3, size=64), path)
    return path


def test_stub_reads_the_archive_in_place(tmp_path, archive, tool):
    out = str(tmp_path / "m.onnx")
    assert onnxz.stub(archive, out) is None
    got, want = tensors(onnx.load(out)), tensors(onnxz.load(archive))
    assert got.keys() == want.keys()
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value)
    refs = [{e.key: e.value for e in t.external_data} for t in onnx.load(
        out, load_external_data=False).graph.initializer]
    assert refs and all(r["location"] == "m.onnxz" for r in refs)
    subprocess.run([tool, "-q", "stub", archive, str(tmp_path / "t.onnx")], check=True)
    with open(out, "rb") as a, open(tmp_path / "t.onnx", "rb") as b:
        assert a.read() == b.read()
    with onnxz.open(out) as f:
        f.verify()


def test_stub_of_a_rebuilt_archive_fails_verify(tmp_path, archive):
    out = str(tmp_path / "m.onnx")
    onnxz.stub(archive, out)
    onnxz.save(make_model(n_weights=3, size=64), archive, align=4096)
    with onnxz.open(out) as f, pytest.raises(onnxz.Error) as e:
        f.verify()
    assert e.value.rule == "A-62" and "rebuilt" in str(e.value)
    onnxz.stub(archive, out, force=True)
    with onnxz.open(out) as f:
        f.verify()


def test_stub_refusals(tmp_path, archive):
    out = str(tmp_path / "m.onnx")
    onnxz.stub(archive, out, sync=True)
    with pytest.raises(onnxz.Error, match="already exists"):
        onnxz.stub(archive, out)
    with pytest.raises(onnxz.Error, match="a stub is a .onnx model"):
        onnxz.stub(archive, str(tmp_path / "x.onnxz"))
    os.mkdir(tmp_path / "sub")
    with pytest.raises(onnxz.Error, match="same directory") as e:
        onnxz.stub(archive, str(tmp_path / "sub" / "x.onnx"))
    assert e.value.file == str(tmp_path / "sub" / "x.onnx")
    with pytest.raises(onnxz.Error, match="not an .onnxz archive") as e:
        onnxz.stub(out, str(tmp_path / "y.onnx"))
    assert e.value.file == out
    with pytest.raises(onnxz.Error, match="URL"):
        onnxz.stub(archive, "https://example.com/x.onnx")
    assert not os.path.exists(tmp_path / "y.onnx")
