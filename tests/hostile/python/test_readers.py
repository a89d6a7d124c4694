"""Readers and resources of the Python package under hostile or unlucky conditions (issue
28, spec/security.md): each test names the rule it pins and fails on the code before it.
Run by ctest hostile_python under the package installed into a fresh venv."""
import os
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

import onnxz

TOOL = os.environ.get("ONNXZ_TOOL", "onnxz")


def small_model(n, prefix="w"):
    """A model of n one-element initializers named prefix0, prefix1, ..."""
    inits = [numpy_helper.from_array(np.array([i], np.float32), f"{prefix}{i}") for i in range(n)]
    return helper.make_model(helper.make_graph([], "g", [], [], initializer=inits))


def lookup_cost(path):
    """CPU seconds per name of `for n in f.names: f[n]` plus `n in f`, the best of three."""
    best = None
    with onnxz.open(path) as f:
        names = f.names
        for _ in range(3):
            t = time.process_time()
            for n in names:
                f[n]
                assert n in f
            dt = time.process_time() - t
            best = dt if best is None else min(best, dt)
    return best / len(names)


def test_k1_lookups_linear(tmp_path):
    """K-1: looking every tensor up by name is linear in the count: one name table per
    File (the library's keyed table). Per lookup, 40,000 tensors against 10,000: was
    3.9x (0.18 s -> 2.86 s for the whole loop), now about 1x; 4x would be quadratic."""
    costs = []
    for n in (10000, 40000):
        p = str(tmp_path / f"n{n}.onnxz")
        onnxz.save(small_model(n), p)
        costs.append(lookup_cost(p))
    assert costs[1] < 2.0 * costs[0], costs
