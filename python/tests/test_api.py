"""The package's surface: its version written once, File a real Mapping, dir() the API."""
import collections.abc
import importlib.metadata
import os
import re

import numpy as np
import pytest

import onnxz
from conftest import make_model

PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


def test_version_is_written_once():
    """onnxz/_version.py holds it; the wheel's metadata (written by onnxz_build.py) and
    onnxz.__version__ come from there, and pyproject.toml leaves it dynamic."""
    with open(os.path.join(PYTHON, "onnxz", "_version.py"), encoding="utf-8") as f:
        written = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M).group(1)
    assert onnxz.__version__ == written
    assert importlib.metadata.version("onnxz") == written
    with open(os.path.join(PYTHON, "pyproject.toml"), encoding="utf-8") as f:
        project = f.read().split("[project]", 1)[1]
    assert re.search(r"^version\s*=", project, re.M) is None
    assert re.search(r'^dynamic\s*=\s*\[\s*"version"\s*\]', project, re.M)


def test_dir_shows_the_api():
    names = set(dir(onnxz))
    assert names == set(onnxz.__all__) | {"__version__"}
    assert not names & {"os", "np", "mmap", "stat", "tempfile", "onnx", "collections"}
    for name in onnxz.__all__:
        assert getattr(onnxz, name) is not None


@pytest.mark.parametrize("suffix", [".onnxz", ".onnx"])
def test_file_is_a_mapping(tmp_path, suffix):
    path = str(tmp_path / ("m" + suffix))
    onnxz.save(make_model(n_weights=3, size=8), path)
    with onnxz.open(path) as f:
        assert isinstance(f, collections.abc.Mapping)
        names = f.names
        assert len(names) == 3 and len(f) == 3
        assert list(f) == names
        keys = f.keys()
        assert isinstance(keys, collections.abc.KeysView) and list(keys) == names
        assert "w0" in keys and "nope" not in keys
        values = list(f.values())
        assert len(values) == 3
        for name, value in zip(names, values):
            np.testing.assert_array_equal(value, f[name])
        items = dict(f.items())
        assert list(items) == names
        np.testing.assert_array_equal(items["w1"], f.tensor("w1"))
        assert "w2" in f and "nope" not in f and 2 not in f
        assert f.get("nope") is None and f.get("nope", 7) == 7 and f.get(2) is None
        np.testing.assert_array_equal(f.get("w0"), f["w0"])
        with pytest.raises(KeyError):
            f["nope"]
        assert set(dict(f)) == set(names)
        # Equality is identity: two views of the same file are two files.
        with onnxz.open(path) as g:
            assert f == f and f != g and len({f, g}) == 2
