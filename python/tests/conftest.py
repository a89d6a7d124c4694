"""Fixtures of the onnxz package's tests: the onnxz tool (the oracle for byte-identical
output), python3-onnx's backend test corpus, and small models built with python3-onnx.

Environment (set by the ctest driver, tests/python/run_pytest.sh):
  ONNXZ_TOOL    the onnxz executable (default: onnxz on PATH)
  ONNXZ_CORPUS  a directory holding python3-onnx's generated backend test models
                (tests/oracle/gen_corpus.py's output); default: generated here once
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

# Under ASan (run_pytest.sh asan) the runtime is preloaded into this interpreter; the
# processes the tests start (the onnxz tool, linked with its own copy) must not get it.
PRELOAD = os.environ.pop("LD_PRELOAD", None)  # for a Python the tests start


@pytest.fixture(scope="session")
def tool():
    path = os.environ.get("ONNXZ_TOOL") or shutil.which("onnxz")
    assert path, "the onnxz tool is needed (ONNXZ_TOOL or PATH)"
    return path


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    d = os.environ.get("ONNXZ_CORPUS")
    if not d:
        d = str(tmp_path_factory.mktemp("corpus"))
        subprocess.run([sys.executable, "-m", "onnx.backend.test.cmd_tools", "generate-data",
                        "-o", d], check=True, stdout=subprocess.DEVNULL)
    models = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs
                    if f.endswith(".onnx"))
    assert len(models) > 900, f"{d}: {len(models)} models, expected python3-onnx's ~945"
    return models


def make_model(n_weights=4, size=256, seed=0, extra_types=False):
    """A small MatMul chain with float32 weights of size x size (and, with extra_types,
    one initializer of each type numpy has), deterministic."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    prev = "x"
    for i in range(n_weights):
        w = rng.standard_normal((size, size)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"]))
        prev = f"h{i}"
    if extra_types:
        for dt in (np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                   np.uint32, np.int64, np.uint64, np.bool_, np.complex64, np.complex128):
            a = (rng.standard_normal((3, 50)) * 10).astype(dt)
            inits.append(numpy_helper.from_array(a, f"t_{np.dtype(dt).name}"))
        bf = helper.make_tensor("t_bfloat16", TensorProto.BFLOAT16, [4, 100],
                                vals=rng.integers(0, 65535, 400, dtype=np.uint16).tobytes(),
                                raw=True)
        inits.append(bf)
        # float8 (17) and int4 (22), built by hand: python3-onnx 1.13 predates them.
        for name, dt, dims, n in (("t_float8", 17, [2, 600], 1200), ("t_int4", 22, [3000], 1500)):
            t = TensorProto(name=name, data_type=dt, dims=dims)
            t.raw_data = rng.integers(0, 255, n, dtype=np.uint8).tobytes()
            inits.append(t)
        inits.append(helper.make_tensor("t_typed", TensorProto.FLOAT, [2, 3],
                                        vals=[1, 2, 3, 4, 5, 6]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, size])], inits)
    return helper.make_model(graph, producer_name="onnxz-tests",
                             opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def model():
    return make_model()


@pytest.fixture
def typed_model():
    return make_model(n_weights=2, size=64, extra_types=True)
