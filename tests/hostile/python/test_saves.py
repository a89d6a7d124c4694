"""spec/security.md S-40: a save never writes a reference it cannot vouch for (issue 28,
item 1). Before: `onnxz.save(onnxz.open(p).model, p)` replaced an 8 MB archive with a
607-byte one holding only __MODEL_PROTO; every form of output lost the weights alike.
M-5: what writing an archive, or a model with its data files, holds counts against the
memory budget, as in the tool."""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper
from conftest import make_model, run, snapshot

import onnxz

S40 = r"tensor 'W0' is a reference to external data \('%s'\) that this save has nothing " \
      r"to read from.*\(S-40\)"
OUTPUTS = [("m.onnxz", {}), ("new.onnxz", {}), ("x.onnx", {}), ("x.onnxc", {"key": "pw"}),
           ("y.onnx", {"external_data": "y.bin"}), ("z.onnxz", {"deflate_model": True})]


def refused_everywhere(model, d, location):
    before = snapshot(d)
    for name, kw in OUTPUTS:
        with pytest.raises(onnxz.Error, match=S40 % location):
            onnxz.save(model, str(d / name), **kw)
        with pytest.raises(onnxz.Error, match=S40 % location):  # serialized, the same
            onnxz.save(model.SerializeToString(), str(d / name), **kw)
    assert snapshot(d) == before, "nothing written, nothing replaced"


def test_archive_model_saved_over_its_archive(archive):
    with onnxz.open(str(archive)) as f:
        m = f.model
    refused_everywhere(m, archive.parent, "W0")
    loaded = onnxz.load(str(archive))  # every weight still there
    assert [float(onnx.numpy_helper.to_array(t)[0, 0]) for t in loaded.graph.initializer] == \
        [0.5, 1.5, 2.5, 3.5]


def test_archive_model_after_close_in_a_child(archive):
    """The issue's own two lines, in a process of their own: exit status and file size."""
    size = os.path.getsize(archive)
    code = ("import onnxz\nwith onnxz.open('m.onnxz') as f: m = f.model\n"
            "onnxz.save(m, 'm.onnxz')\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=archive.parent, capture_output=True)
    assert p.returncode == 1 and b"onnxz.Error" in p.stderr and b"S-40" in p.stderr, p.stderr
    assert os.path.getsize(archive) == size


def test_data_file_references(tmp_path):
    """A two-file model loaded with its references kept, saved elsewhere."""
    src = tmp_path / "src"
    src.mkdir()
    onnx.save(make_model(), str(src / "two.onnx"), save_as_external_data=True,
              location="two.bin")
    m = onnxz.load(str(src / "two.onnx"), load_external_data=False)
    out = tmp_path / "out"
    out.mkdir()
    refused_everywhere(m, out, "two.bin")


def test_reference_to_any_path(tmp_path):
    m = make_model(n=1, size=2)
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = onnx.TensorProto.EXTERNAL
    t.external_data.add(key="location", value="/etc/passwd")
    refused_everywhere(m, tmp_path, "/etc/passwd")


def test_tool_convert_same_rule(tmp_path, tool):
    """convert reads references in against the input's directory, or fails: a model whose
    references name nothing beside it is refused, nothing written."""
    m = make_model(n=1, size=2)
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = onnx.TensorProto.EXTERNAL
    t.external_data.add(key="location", value="W0")
    onnx.save(m, str(tmp_path / "refs.onnx"))
    before = snapshot(tmp_path)
    for out in ("o.onnxz", "o.onnx"):
        p = run([tool, "convert", "refs.onnx", out], cwd=tmp_path)
        assert p.returncode == 1 and b"W0" in p.stderr, p.stderr
    assert snapshot(tmp_path) == before


def test_resolved_models_still_save(archive, tmp_path):
    """What is loaded with its data saves as before, over its own file too."""
    m = onnxz.load(str(archive))
    onnxz.save(m, str(archive))
    onnxz.save(m, str(tmp_path / "x.onnx"))
    again = onnxz.load(str(archive))
    assert again.SerializeToString() == onnx.load(str(tmp_path / "x.onnx")).SerializeToString()
    np.testing.assert_array_equal(onnxz.open(str(archive))["W3"], np.full((256, 256), 3.5))


# ---- M-5: what writing an archive holds counts against the budget ------------------------

def many_tensors(n):
    """A model of n 4-byte initializers t0..t{n-1}: about 20 bytes each on the wire, each
    an entry of its own with threshold=0."""
    graph = helper.make_graph([], "many", [], [])
    for i in range(n):
        t = graph.initializer.add()
        t.name = f"t{i}"
        t.dims.append(1)
        t.data_type = onnx.TensorProto.FLOAT
        t.raw_data = b"\0\0\x80\x3f"
    return helper.make_model(graph).SerializeToString()


def test_m5_tool_and_python_refuse_alike(tmp_path, tool):
    """M-5: 100,000 tensors decode into some 43 MB and their entries need some 34 MB of
    writer tables: under a 64 MiB budget the decode passes and the writer is refused before
    it writes a byte, by the tool and by the package alike (OC_ERR_LIMIT naming max_memory
    and M-5, no file, no temporary); under 128 MiB both write the same archive. Before
    M-5, both wrote it under 64 MiB."""
    data = many_tensors(100_000)
    (tmp_path / "many.onnx").write_bytes(data)
    budget = 64 << 20
    r = run([tool, "convert", "--threshold", "0", "many.onnx", "out.onnxz", "--max-memory",
             str(budget)], cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert re.search(rb"writing 100000 tensors as entries needs about \d+ bytes of memory "
                     rb"beside the model's \d+, more than the budget of %d bytes "
                     rb"\(max_memory, M-5\); --max-memory raises the budget" % budget,
                     r.stderr), r.stderr
    calls = (lambda: onnxz.convert(tmp_path / "many.onnx", tmp_path / "out.onnxz",
                                   threshold=0, max_memory=budget),
             lambda: onnxz.save(data, tmp_path / "out.onnxz", threshold=0, max_memory=budget))
    for call in calls:
        with pytest.raises(onnxz.Error) as e:
            call()
        assert e.value.rule == "M-5" and "max_memory" in str(e.value), e.value
    assert os.listdir(tmp_path) == ["many.onnx"]
    run([tool, "-q", "convert", "--threshold", "0", "many.onnx", "tool.onnxz", "--max-memory",
         str(2 * budget)], cwd=tmp_path, check=True)
    onnxz.convert(tmp_path / "many.onnx", tmp_path / "py.onnxz", threshold=0,
                  max_memory=2 * budget)
    assert (tmp_path / "tool.onnxz").read_bytes() == (tmp_path / "py.onnxz").read_bytes()


def test_m5_external_data_budgeted(tmp_path, tool):
    """M-5 for a save with external data: 100,000 tensors decode into some 44 MB and the
    records the save keeps per tensor it moves to the data file need some 19 MB: under a
    56 MiB budget the decode passes and the save is refused before it writes a byte, by the
    tool and by the package alike (no model, no data file, no temporary); under 64 MiB both
    write the same pair. Before, both wrote it under 56 MiB, peaking past the budget."""
    data = many_tensors(100_000)
    (tmp_path / "many.onnx").write_bytes(data)
    budget = 56 << 20
    r = run([tool, "convert", "--threshold", "0", "many.onnx", "out.onnx", "--external-data",
             "out.data", "--max-memory", str(budget)], cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert re.search(rb"writing 100000 tensors to data files needs about \d+ bytes of memory "
                     rb"beside the model's \d+, more than the budget of %d bytes "
                     rb"\(max_memory, M-5\); --max-memory raises the budget" % budget,
                     r.stderr), r.stderr
    out = dict(external_data="out.data", threshold=0, max_memory=budget)
    calls = (lambda: onnxz.convert(tmp_path / "many.onnx", tmp_path / "out.onnx", **out),
             lambda: onnxz.save(data, tmp_path / "out.onnx", **out))
    for call in calls:
        with pytest.raises(onnxz.Error) as e:
            call()
        assert e.value.rule == "M-5" and "max_memory" in str(e.value), e.value
    assert os.listdir(tmp_path) == ["many.onnx"]
    (tmp_path / "tool").mkdir()
    (tmp_path / "py").mkdir()
    run([tool, "-q", "convert", "--threshold", "0", "../many.onnx", "out.onnx",
         "--external-data", "out.data", "--max-memory", str(64 << 20)], cwd=tmp_path / "tool",
        check=True)
    onnxz.save(data, tmp_path / "py" / "out.onnx", **dict(out, max_memory=64 << 20))
    for name in ("out.onnx", "out.data"):
        assert (tmp_path / "tool" / name).read_bytes() == (tmp_path / "py" / name).read_bytes()
