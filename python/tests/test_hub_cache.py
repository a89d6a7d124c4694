"""Models in the Hugging Face hub's on-disk cache (spec/external-data.md E-28): a snapshot
is symbolic links into the repository's content-addressed blobs/ folder, as the hub's own
tools write it. Every client reads such a model (onnxz.load, onnxz.open, onnxz.convert and
the tool's info, verify, convert, get), equal to what python3-onnx's onnx.load reads there;
a link that leaves the repository's folder (an absolute one, to another repository, by
`..` out and back, through a chain, a snapshots folder that is itself a link) is still
refused with the one-line error of E-11."""
import hashlib
import os
import subprocess

import numpy as np
import onnx
import pytest

import onnxz
from conftest import make_model

REV = "0123456789abcdef0123456789abcdef01234567"


def _blob(repo, data):
    sha = hashlib.sha256(data).hexdigest()
    with open(os.path.join(repo, "blobs", sha), "wb") as f:
        f.write(data)
    return sha


def make_cache(home, src, name="models--org--name", files=("model.onnx", "model.onnx_data"),
               sub=""):
    """HF_HOME/hub/<name>/{blobs/SHA..., refs/main, snapshots/REV/<sub>/<file> ->
    ../../blobs/SHA}: the layout huggingface_hub's downloads leave. Returns the snapshot
    folder of the files."""
    repo = os.path.join(home, "hub", name)
    snap = os.path.join(repo, "snapshots", REV, sub).rstrip("/")
    os.makedirs(os.path.join(repo, "blobs"), exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    os.makedirs(snap, exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(REV)
    for fn in files:
        with open(os.path.join(src, fn), "rb") as f:
            sha = _blob(repo, f.read())
        link = os.path.join(snap, fn)
        os.symlink(os.path.relpath(os.path.join(repo, "blobs", sha), os.path.dirname(link)),
                   link)
    return snap


@pytest.fixture
def cache(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    model = make_model(n_weights=3, size=64)
    onnx.save(model, str(src / "model.onnx"), save_as_external_data=True,
              location="model.onnx_data", size_threshold=0)
    snap = make_cache(str(tmp_path / "hf"), str(src))
    return tmp_path, snap


def _tool(tool, *argv):
    return subprocess.run([tool, *argv], capture_output=True, text=True)


def test_every_client_reads_the_cache_layout(cache, tool):
    tmp, snap = cache
    m = os.path.join(snap, "model.onnx")
    assert os.path.islink(m) and os.path.islink(os.path.join(snap, "model.onnx_data"))
    want = onnx.load(m)  # the oracle follows the cache's links
    assert onnxz.load(m).SerializeToString() == want.SerializeToString()
    with onnxz.open(m) as f:
        for t in want.graph.initializer:
            assert np.array_equal(f[t.name], onnx.numpy_helper.to_array(t))
    onnxz.convert(m, str(tmp / "py.onnxz"))
    with onnxz.open(str(tmp / "py.onnxz")) as f:
        for t in want.graph.initializer:
            assert np.array_equal(f[t.name], onnx.numpy_helper.to_array(t))
    for argv in (["verify", m], ["info", m], ["convert", m, str(tmp / "cli.onnxz")],
                 ["get", m, "w0", "-o", str(tmp / "w0.bin")]):
        r = _tool(tool, *argv)
        assert r.returncode == 0 and r.stderr == "", (argv, r.stderr)
    assert open(tmp / "cli.onnxz", "rb").read() == open(tmp / "py.onnxz", "rb").read()
    w0 = onnx.numpy_helper.to_array(want.graph.initializer[0])
    assert open(tmp / "w0.bin", "rb").read() == w0.tobytes()


def test_a_model_in_a_subfolder_of_the_snapshot(tmp_path, tool):
    src = tmp_path / "src"
    src.mkdir()
    onnx.save(make_model(n_weights=2, size=32), str(src / "model.onnx"),
              save_as_external_data=True, location="model.onnx_data", size_threshold=0)
    snap = make_cache(str(tmp_path / "hf"), str(src), sub="onnx")
    m = os.path.join(snap, "model.onnx")
    assert onnxz.load(m).SerializeToString() == onnx.load(m).SerializeToString()
    assert _tool(tool, "verify", m).returncode == 0


def _relink(link, target):
    os.unlink(link)
    os.symlink(target, link)


LINK = "is or passes through a symbolic link"


@pytest.mark.parametrize("how", ["absolute", "etc_passwd", "other_repo", "out_and_back",
                                 "chain_out", "absolute_into_repo", "snapshots_dir_link"])
def test_a_link_out_of_the_repository_is_refused(cache, tool, how):
    tmp, snap = cache
    hub = os.path.join(str(tmp), "hf", "hub")
    repo = os.path.join(hub, "models--org--name")
    data = os.path.join(snap, "model.onnx_data")
    blob = os.path.basename(os.readlink(data))
    m = os.path.join(snap, "model.onnx")
    # a copy of the data elsewhere: a read that got through would succeed, not fail
    outside = tmp / "outside.bin"
    outside.write_bytes(open(data, "rb").read())
    other = os.path.join(hub, "models--evil--x", "blobs")
    os.makedirs(other)
    with open(os.path.join(other, blob), "wb") as f:
        f.write(open(data, "rb").read())
    if how == "absolute":
        _relink(data, str(outside))
    elif how == "etc_passwd":
        _relink(data, "/etc/passwd")
    elif how == "other_repo":
        _relink(data, f"../../../models--evil--x/blobs/{blob}")
    elif how == "out_and_back":  # leaves the repository's folder, then comes back in
        _relink(data, f"../../../../hub/models--org--name/blobs/{blob}")
    elif how == "chain_out":  # a link to a link (inside) to a file outside
        os.symlink(os.path.relpath(str(outside), os.path.join(repo, "blobs")),
                   os.path.join(repo, "blobs", "hop"))
        _relink(data, "../../blobs/hop")
    elif how == "absolute_into_repo":  # the right file, but by an absolute link
        _relink(data, os.path.join(repo, "blobs", blob))
    elif how == "snapshots_dir_link":  # the repository's snapshots folder is a link
        elsewhere = tmp / "elsewhere"  # to a folder of the same layout, not a repository's
        elsewhere.mkdir()
        os.rename(os.path.join(repo, "snapshots"), str(elsewhere / "snapshots"))
        os.symlink(os.path.join(repo, "blobs"), str(elsewhere / "blobs"))
        os.symlink(str(elsewhere / "snapshots"), os.path.join(repo, "snapshots"))
    with pytest.raises(onnxz.Error, match=LINK):
        onnxz.load(m)
    with pytest.raises(onnxz.Error, match=LINK):
        onnxz.open(m)
    with pytest.raises(onnxz.Error, match=LINK):
        onnxz.convert(m, str(tmp / "x.onnxz"))
    assert not os.path.exists(tmp / "x.onnxz")
    for argv in (["verify", m], ["convert", m, str(tmp / "y.onnxz")]):
        r = _tool(tool, *argv)
        lines = r.stderr.splitlines()
        assert r.returncode == 1 and len(lines) == 1 and LINK in lines[0], (argv, r.stderr)
    assert not os.path.exists(tmp / "y.onnxz")


def test_a_loop_of_links_is_named_a_loop(cache, tool):
    """A loop inside the repository never leaves it: the message says what it is."""
    tmp, snap = cache
    data = os.path.join(snap, "model.onnx_data")
    repo = os.path.dirname(os.path.dirname(snap))
    os.symlink("loop2", os.path.join(repo, "blobs", "loop1"))
    os.symlink("loop1", os.path.join(repo, "blobs", "loop2"))
    _relink(data, "../../blobs/loop1")
    m = os.path.join(snap, "model.onnx")
    with pytest.raises(onnxz.Error, match="passes through a loop of symbolic links") as e:
        onnxz.load(m)
    assert "leaves" not in str(e.value)
    for argv in (["verify", m], ["convert", m, str(tmp / "s.onnxz")]):
        r = _tool(tool, *argv)
        assert r.returncode == 1 and "a loop of symbolic links" in r.stderr, (argv, r.stderr)
        assert "leaves" not in r.stderr


def test_a_link_chain_inside_the_repository_is_followed(cache):
    tmp, snap = cache
    data = os.path.join(snap, "model.onnx_data")
    blob = os.path.basename(os.readlink(data))
    repo = os.path.dirname(os.path.dirname(snap))
    os.symlink(blob, os.path.join(repo, "blobs", "alias"))
    _relink(data, "../../blobs/alias")
    m = os.path.join(snap, "model.onnx")
    assert onnxz.load(m).SerializeToString() == onnx.load(m).SerializeToString()


def test_outside_a_cache_links_stay_refused(tmp_path):
    """The same links in a folder not laid out as the cache: E-11 unchanged."""
    src = tmp_path / "src"
    src.mkdir()
    onnx.save(make_model(n_weights=2, size=32), str(src / "model.onnx"),
              save_as_external_data=True, location="model.onnx_data", size_threshold=0)
    # snapshots/REV/ but under a folder that is no repository's (no "models--")
    snap = make_cache(str(tmp_path / "hf"), str(src), name="org--name")
    with pytest.raises(onnxz.Error, match=LINK):
        onnxz.load(os.path.join(snap, "model.onnx"))
