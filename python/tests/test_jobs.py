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


def tree(root):
    """Every file under root, by relative path, with its bytes."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                out[os.path.relpath(os.path.join(d, f), root)] = fh.read()
    return out


def test_unpack_writes_what_the_tool_writes(tmp_path, archive, tool):
    out = tmp_path / "out"
    assert onnxz.unpack(archive, out) is None
    subprocess.run([tool, "-q", "unpack", archive, str(tmp_path / "ref")], check=True)
    got = tree(out)
    assert got == tree(tmp_path / "ref") and "model.onnx" in got and len(got) == 4
    loaded, want = tensors(onnx.load(str(out / "model.onnx"))), tensors(onnxz.load(archive))
    for name, value in want.items():
        np.testing.assert_array_equal(loaded[name], value)


def test_unpack_refusals(tmp_path, archive):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_bytes(b"mine")
    with pytest.raises(onnxz.Error, match="not empty") as e:
        onnxz.unpack(archive, busy)
    assert e.value.file == str(busy)
    onnxz.unpack(archive, busy, force=True, sync=False)
    assert (busy / "mine.txt").read_bytes() == b"mine" and (busy / "model.onnx").exists()
    bad = tmp_path / "bad.onnxz"
    bad.write_bytes(b"PK\x03\x04 and then nothing that makes an archive")
    with pytest.raises(onnxz.Error) as e:
        onnxz.unpack(bad, tmp_path / "bad.dir")
    assert e.value.file == str(bad)
    assert not (tmp_path / "bad.dir").exists()
    with pytest.raises(onnxz.Error, match="URL"):
        onnxz.unpack(archive, "https://example.com/d")


def test_unpack_interrupted_leaves_all_or_nothing(tmp_path):
    """Ctrl-C at any moment: KeyboardInterrupt and nothing of the unpack left, or the
    whole of it."""
    import signal
    arc = str(tmp_path / "many.onnxz")
    onnxz.save(make_model(n_weights=64, size=32), arc)

    def interrupt(*_):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        for i, delay in enumerate([0.0005, 0.002, 0.005, 0.02]):
            d = tmp_path / f"d{i}"
            try:
                signal.setitimer(signal.ITIMER_REAL, delay)
                onnxz.unpack(arc, d)
                signal.setitimer(signal.ITIMER_REAL, 0)
                assert len(tree(d)) == 65
            except KeyboardInterrupt:  # in the unpack, or just before or after it
                signal.setitimer(signal.ITIMER_REAL, 0)
                assert not d.exists() or len(tree(d)) == 65
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_meta_edits_as_the_tool_does(tmp_path, archive, tool):
    import json
    got = onnxz.meta(archive, producer="me", doc_string="doc", set={"a": "1", "b": "2"},
                     remove=["b"])
    want = json.loads(subprocess.run([tool, "meta", "--json", archive], check=True,
                                     capture_output=True, text=True).stdout)
    assert got == want
    assert got["format"] == "onnxz" and got["producer_name"] == "me"
    assert got["metadata_props"] == [{"key": "a", "value": "1"}]
    assert onnxz.meta(archive) == want  # no edits: a read
    np.testing.assert_array_equal(onnxz.load(archive).graph.initializer[0].raw_data,
                                  make_model(n_weights=3, size=64).graph.initializer[0].raw_data)


def test_meta_of_a_onnx_file_and_its_lock(tmp_path):
    import fcntl
    path = str(tmp_path / "m.onnx")
    onnxz.save(make_model(n_weights=2, size=8), path)
    got = onnxz.meta(path, set={"k": "v"}, producer_version="2")
    assert got["format"] == "onnx" and got["producer_version"] == "2"
    m = onnx.load(path)
    assert [(p.key, p.value) for p in m.metadata_props] == [("k", "v")]
    with open(path, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # another editor
        with pytest.raises(onnxz.Error, match="busy") as e:
            onnxz.meta(path, remove="k")
        assert e.value.status == "busy" and e.value.rule == "A-58"
    assert onnxz.meta(path, remove="k")["metadata_props"] == []
    with pytest.raises(ValueError):
        onnxz.meta(path, set={"": "x"})
    with pytest.raises(onnxz.Error, match="URL"):
        onnxz.meta("https://example.com/m.onnx", producer="x")
