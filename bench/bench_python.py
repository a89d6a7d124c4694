#!/usr/bin/env python3
"""The Python package against python3-onnx (issue 14, "Speed"): medians of in-process
rounds with the files in the page cache, and the ratio of each pair.

Generates (once, cached in --work) with python3-onnx:
  weights.onnx   --mb MB (default 1024) of float32 in 200 initializers
  graph.onnx     a graph-only model of --nodes (default 100,000) Add nodes
and measures:
  views    onnxz.open + every tensor as a numpy array, touching every page
           vs onnx.load + numpy_helper.to_array of every initializer   (target >= 50x)
  load     onnxz.load vs onnx.load, the same ModelProto               (target >= 1.5x)
  save     onnxz.save(model, "m.onnxz") vs onnx.save(model, "m.onnx")  (target >= 1x)
  graph    onnxz.load vs onnx.load on graph.onnx                       (target >= 2x)

Run it with a Python that has onnxz installed (a venv with --system-site-packages):
  ~/venv/bin/python bench/bench_python.py [--work DIR] [--mb MB] [--nodes N] [--rounds N]
"""
import argparse
import os
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnxz

PAGE = os.sysconf("SC_PAGE_SIZE")


def make_weights(path, mb):
    n_tensors = 200
    elems = mb * (1 << 20) // 4 // n_tensors
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(elems).astype(np.float32), f"w{i}")
             for i in range(n_tensors)]
    nodes = [helper.make_node("Identity", [f"w{i}"], [f"y{i}"]) for i in range(n_tensors)]
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [elems])
            for i in range(n_tensors)]
    onnx.save(helper.make_model(helper.make_graph(nodes, "weights", [], outs, inits)), path)


def make_graph(path, n):
    nodes = [helper.make_node("Add", [f"v{i}", "one"], [f"v{i + 1}"], name=f"add{i}")
             for i in range(n)]
    g = helper.make_graph(nodes, "graph",
                          [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, [1])],
                          [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    onnx.save(helper.make_model(g), path)


def touch(a):
    """Reads one value per page of the array's bytes."""
    flat = a.reshape(-1).view(np.uint8)
    return int(flat[::PAGE].sum()) if flat.size else 0


def median_time(fn, rounds):
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/onnxz-bench-python")
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    weights = os.path.join(a.work, f"weights-{a.mb}.onnx")
    graph = os.path.join(a.work, f"graph-{a.nodes}.onnx")
    if not os.path.exists(weights):
        make_weights(weights, a.mb)
    if not os.path.exists(graph):
        make_graph(graph, a.nodes)
    archive = os.path.join(a.work, f"weights-{a.mb}.onnxz")
    onnxz.convert(weights, archive)
    for p in (weights, archive, graph):  # into the page cache
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass

    def views():
        with onnxz.open(archive) as f:
            for n in f.names:
                touch(f[n])

    def onnx_arrays():
        m = onnx.load(weights)
        for t in m.graph.initializer:
            touch(numpy_helper.to_array(t))

    model = onnx.load(weights)
    out_z = os.path.join(a.work, "out.onnxz")
    out_o = os.path.join(a.work, "out.onnx")
    pairs = [
        ("views", views, onnx_arrays, 50.0),
        ("load", lambda: onnxz.load(weights), lambda: onnx.load(weights), 1.5),
        ("save", lambda: onnxz.save(model, out_z), lambda: onnx.save(model, out_o), 1.0),
        ("graph", lambda: onnxz.load(graph), lambda: onnx.load(graph), 2.0),
    ]
    print(f"{'':8} {'onnxz s':>10} {'onnx s':>10} {'ratio':>8}  target")
    for name, ours, theirs, target in pairs:
        t_ours, t_theirs = [], []
        for _ in range(a.rounds):  # alternate, so that noise hits both alike
            t_ours.append(median_time(ours, 1))
            t_theirs.append(median_time(theirs, 1))
        mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
        ratio = mt / mo if mo else float("inf")
        print(f"{name:8} {mo:10.4f} {mt:10.4f} {ratio:7.1f}x  >= {target}x "
              f"{'met' if ratio >= target else 'NOT met'}")
    print(f"weights: {a.mb} MB in 200 float32 tensors; graph: {a.nodes} nodes; "
          f"medians of {a.rounds} rounds, files in the page cache; {os.cpu_count()} cpus")


if __name__ == "__main__":
    main()
