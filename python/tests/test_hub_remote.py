"""hf:// URLs through onnxz.load, onnxz.open and onnxz.convert, against a local emulation
of the Hugging Face hub in nginx (tests/remote/hub_env.py: the hub and the storage host it
redirects to), with python3-onnx's reading of the same files on disk as the oracle
(spec/remote.md, "The Hugging Face hub"): the settings from HF_ENDPOINT, HF_TOKEN and the
token file, the token never sent to the storage host, the revision pinned at open."""
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnxz
from onnxz import _onnxz

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "tests",
                                "remote"))
import nginx_env  # noqa: E402
import hub_env  # noqa: E402

_WHY_NOT = ("this onnxz was built without libcurl" if not _onnxz._http_supported()
            else nginx_env.available())
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=str(_WHY_NOT))

TOKEN = "hf_pythonTestToken42"
N, SIZE = 8, 64 << 10  # tensors past the first request's tail: each one its own range


def _model(d, value):
    os.makedirs(d)
    arrays = {f"w{i}": np.full(SIZE // 4, value + i, np.float32) for i in range(N)}
    graph = helper.make_graph([], "g", [], [], [numpy_helper.from_array(a, n)
                                                for n, a in arrays.items()])
    onnx.save(helper.make_model(graph), os.path.join(d, "model.onnx"),
              save_as_external_data=True, location="model.onnx_data", size_threshold=0)
    files = {}
    for f in ("model.onnx", "model.onnx_data"):
        with open(os.path.join(d, f), "rb") as fh:
            files[f] = fh.read()
    return files


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    work = tmp_path_factory.mktemp("hub")
    f1 = _model(str(work / "v1"), 1)
    f2 = _model(str(work / "v2"), 100)
    with hub_env.Hub(str(work / "hub"), TOKEN) as h:
        h.c1 = h.commit(f1, lfs={"model.onnx_data"})
        h.c2 = h.commit(f2, lfs={"model.onnx_data"})
        h.publish("org/private", h.c1, private=True)
        h.publish("org/public", h.c1)
        h.local = str(work / "v1" / "model.onnx")
        yield h


@pytest.fixture
def env(hub, monkeypatch, tmp_path):
    """The emulated hub, an empty HF_HOME and the token (the package reads the
    environment at each call)."""
    for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "XDG_CACHE_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return monkeypatch


def test_load_open_convert_equal_the_files_on_disk(hub, env, tmp_path):
    url = "hf://org/private/model.onnx"
    want = onnx.load(hub.local)
    mark = hub.mark()
    assert onnxz.load(url).SerializeToString() == want.SerializeToString()
    with onnxz.open(url) as f:
        for t in want.graph.initializer:
            assert np.array_equal(f[t.name], numpy_helper.to_array(t))
    onnxz.convert(url, str(tmp_path / "r.onnxz"))
    onnxz.convert(hub.local, str(tmp_path / "l.onnxz"))
    assert (tmp_path / "r.onnxz").read_bytes() == (tmp_path / "l.onnxz").read_bytes()
    hubs, stores = hub.hub_requests_since(mark), hub.storage_requests_since(mark)
    assert hubs and all(r["authorization"] == "Bearer " + TOKEN for r in hubs)
    assert stores and all(r["authorization"] == "" for r in stores), stores


def test_the_token_file_and_no_token(hub, env, tmp_path):
    url = "hf://org/private/model.onnx"
    env.delenv("HF_TOKEN")
    with pytest.raises(onnxz.Error, match=r"HTTP 401 \(GatedRepo\): the hub wants a token"):
        onnxz.load(url)
    home = tmp_path / "home"
    home.mkdir()
    (home / "token").write_text(TOKEN + "\n")
    assert len(onnxz.load(url).graph.initializer) == N
    env.setenv("HF_TOKEN", "hf_wrong")
    with pytest.raises(onnxz.Error, match="refused the token given"):
        onnxz.open(url)
    env.setenv("HF_TOKEN", "hf_bad token")
    with pytest.raises(onnxz.Error, match="HF_TOKEN: not a token"):
        onnxz.load(url)


def test_the_revision_is_pinned_at_open(hub, env):
    """main moves to another commit while a File reads: every later tensor, from the data
    file too, is of the commit the open saw; a new open sees the new one."""
    hub.publish("org/public", hub.c1)
    url = "hf://org/public/model.onnx"
    try:
        with onnxz.open(url) as f:
            assert f["w0"][0] == 1.0
            hub.publish("org/public", hub.c2)  # a push to main, mid-read
            mark = hub.mark()
            for i in range(1, N):
                assert f[f"w{i}"][0] == 1.0 + i
            asked = [r["request"].split()[1] for r in hub.hub_requests_since(mark)]
            assert asked and all(f"/resolve/{hub.c1}/" in a for a in asked), asked
        # a new open of main in this process within 10 s reuses the commit the last one
        # pinned (spec/remote.md R-4, H-4; the tool's test sees a new process read the new
        # commit); a commit named reads that commit
        with onnxz.open("hf://org/public@main/model.onnx") as f:
            assert f["w1"][0] == 2.0
        with onnxz.open(f"hf://org/public@{hub.c2}/model.onnx") as f:
            assert f["w1"][0] == 101.0
        with onnxz.open(f"hf://org/public@{hub.c1}/model.onnx") as f:
            assert f["w1"][0] == 2.0
    finally:
        hub.publish("org/public", hub.c1)


def test_a_hub_url_is_never_written(hub, env, tmp_path):
    m = onnx.load(hub.local)
    with pytest.raises(onnxz.Error, match="is a URL"):
        onnxz.save(m, "hf://org/public/out.onnxz")
    with pytest.raises(onnxz.Error, match="is a URL"):
        onnxz.convert(hub.local, "hf://org/public/out.onnxz")
