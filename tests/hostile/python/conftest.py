"""Fixtures of the hostile Python cases (issue 28): the onnxz tool and small models.

Run by tests/python/run_pytest.sh with ONNXZ_PYTEST_DIR set to this directory (ctest
hostile_python): the package as a user installs it. ONNXZ_TOOL names the onnxz tool.
"""
import hashlib
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper


@pytest.fixture(scope="session")
def tool():
    path = os.environ.get("ONNXZ_TOOL") or shutil.which("onnxz")
    assert path, "the onnxz tool is needed (ONNXZ_TOOL or PATH)"
    return path


def make_model(n=4, size=256):
    """Identity of W0 with n float32 initializers of size x size, each W{i} full of i."""
    inits = [numpy_helper.from_array(np.full((size, size), i + 0.5, np.float32), f"W{i}")
             for i in range(n)]
    out = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [size, size])
    graph = helper.make_graph([helper.make_node("Identity", ["W0"], ["y"])], "g", [], [out],
                              inits)
    return helper.make_model(graph)


def run(argv, timeout=120, **kw):
    return subprocess.run(argv, capture_output=True, timeout=timeout, **kw)


def snapshot(d):
    """Each entry of d: its type and, for a file, a digest of its bytes."""
    out = {}
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        st = os.lstat(p)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                out[name] = ("file", hashlib.sha256(f.read()).hexdigest())
        else:
            out[name] = (st.st_mode, st.st_rdev, os.readlink(p) if os.path.islink(p) else None)
    return out


@pytest.fixture
def archive(tmp_path, tool):
    """m.onnxz (four 256 KiB tensors) made by the tool from src.onnx, in tmp_path."""
    onnx.save(make_model(), str(tmp_path / "src.onnx"))
    run([tool, "-q", "convert", "src.onnx", "m.onnxz"], cwd=tmp_path, check=True)
    os.unlink(tmp_path / "src.onnx")
    return tmp_path / "m.onnxz"
