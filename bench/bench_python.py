#!/usr/bin/env python3
"""The Python package against python3-onnx (issue 14, "Speed"): medians of rounds with the
files in the page cache, and the ratio of each pair.

Generates (once, cached in --work) with python3-onnx:
  weights.onnx   --mb MB (default 1024) of float32 in 200 initializers
  graph.onnx     a graph-only model of --nodes (default 100,000) Add nodes
and measures, each operation in a fresh process, contenders alternating:
  views    onnxz.open + every tensor as a numpy array, touching every page
           vs onnx.load + numpy_helper.to_array of every initializer   (target >= 50x),
           on the archive onnxz.convert packed from weights.onnx
  views.saved   the same on the same bytes as onnxz.save wrote them from the loaded model
  floor / floor.saved   the machine's floor for views: numpy over a plain mmap of the
           same archive file, one value per page, no onnxz (a mapped file's pages cost
           what the page cache's folios make them cost: a file written in large pieces
           maps faster, see README)
  load     onnxz.load vs onnx.load, the same ModelProto               (target >= 1.5x)
  save     onnxz.save(model, "m.onnxz") vs onnx.save(model, "m.onnx")  (target >= 1x)
           to a new file (neither waits for the disk; onnxz.save renames its file into
           place)
  save.replace  the same over an existing file of the same size: onnx.save truncates it
           and writes into the pages it freed, onnxz.save holds both until its rename
  save+sync  onnxz.save(..., sync=True) against onnx.save followed by fsync of the file
           and its directory: both durable
  graph    onnxz.load vs onnx.load on graph.onnx                       (target >= 2x)

Run it with a Python that has onnxz installed (a venv with --system-site-packages):
  ~/venv/bin/python bench/bench_python.py [--work DIR] [--mb MB] [--nodes N] [--rounds N]
                                           [--only NAME]...
"""
import argparse
import filecmp
import mmap
import os
import statistics
import subprocess
import sys
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


def durable_save(model, path):
    """onnx.save, then the file's bytes and its directory entry on disk, as
    onnxz.save(sync=True) leaves them (it writes a temporary file, fsyncs it, renames it
    into place, fsyncs the directory)."""
    onnx.save(model, path)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def contenders(work, mb, nodes):
    """name -> (onnxz's operation, python3-onnx's, target ratio, needs the model loaded)."""
    weights = os.path.join(work, f"weights-{mb}.onnx")
    graph = os.path.join(work, f"graph-{nodes}.onnx")
    archive = os.path.join(work, f"weights-{mb}.onnxz")
    saved = os.path.join(work, f"weights-{mb}-saved.onnxz")
    out_z = os.path.join(work, "out.onnxz")
    out_o = os.path.join(work, "out.onnx")

    def views_of(path):
        def views(_):
            with onnxz.open(path) as f:
                for n in f.names:
                    touch(f[n])
        return views

    def floor_of(path):
        def floor(_):
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                a = np.frombuffer(m, np.uint8)
                touch(a)
                del a  # the mapping closes only once no array uses it
        return floor

    def onnx_arrays(_):
        m = onnx.load(weights)
        for t in m.graph.initializer:
            touch(numpy_helper.to_array(t))

    return {
        "views": (views_of(archive), onnx_arrays, 50.0, False),
        "views.saved": (views_of(saved), onnx_arrays, 50.0, False),
        "floor": (floor_of(archive), onnx_arrays, None, False),
        "floor.saved": (floor_of(saved), onnx_arrays, None, False),
        "load": (lambda _: onnxz.load(weights), lambda _: onnx.load(weights), 1.5, False),
        "save": (lambda m: onnxz.save(m, out_z), lambda m: onnx.save(m, out_o), 1.0, True),
        "save.replace": (lambda m: onnxz.save(m, out_z), lambda m: onnx.save(m, out_o), 1.0,
                         True),
        # both durable: sync=True fsyncs before and after the rename, onnx's gets fsyncs added
        "save+sync": (lambda m: onnxz.save(m, out_z, sync=True),
                      lambda m: durable_save(m, out_o), 1.0, True),
        "graph": (lambda _: onnxz.load(graph), lambda _: onnx.load(graph), 2.0, False),
    }


def run_one(a):
    """In a fresh process: the one operation --one names, timed; prints the seconds."""
    name, side = a.one
    ours, theirs, _, needs_model = contenders(a.work, a.mb, a.nodes)[name]
    model = onnx.load(os.path.join(a.work, f"weights-{a.mb}.onnx")) if needs_model else None
    fn = ours if side == "onnxz" else theirs
    if name != "save.replace":  # every save but this one writes a new file
        for out in ("out.onnxz", "out.onnx"):
            if os.path.exists(os.path.join(a.work, out)):
                os.unlink(os.path.join(a.work, out))
    t0 = time.perf_counter()
    fn(model)
    print(time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/onnxz-bench-python")
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", action="append", help="run only this operation (repeatable)")
    ap.add_argument("--one", nargs=2, metavar=("NAME", "SIDE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return run_one(a)
    os.makedirs(a.work, exist_ok=True)
    weights = os.path.join(a.work, f"weights-{a.mb}.onnx")
    graph = os.path.join(a.work, f"graph-{a.nodes}.onnx")
    if not os.path.exists(weights):
        make_weights(weights, a.mb)
    if not os.path.exists(graph):
        make_graph(graph, a.nodes)
    archive = os.path.join(a.work, f"weights-{a.mb}.onnxz")
    saved = os.path.join(a.work, f"weights-{a.mb}-saved.onnxz")
    onnxz.convert(weights, archive)
    onnxz.save(onnx.load(weights), saved)  # the same bytes, written from memory
    if not filecmp.cmp(archive, saved, shallow=False):
        sys.exit(f"{saved} differs from {archive}: onnxz.save and onnxz.convert disagree")
    for p in (weights, graph, archive, saved):  # page cache
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass
    # Each operation in a fresh process (a process that has freed a model earlier reuses
    # its memory, which makes whatever runs later look faster), contenders alternating.
    def once(name, side):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--work", a.work,
                              "--mb", str(a.mb), "--nodes", str(a.nodes), "--one", name, side],
                             check=True, capture_output=True, text=True).stdout
        return float(out.split()[-1])

    load_before = os.getloadavg()[0]
    print(f"{'':12} {'onnxz s':>10} {'onnx s':>10} {'ratio':>8}  target")
    for name, (_, _, target, _) in contenders(a.work, a.mb, a.nodes).items():
        if a.only and name not in a.only:
            continue
        t_ours, t_theirs = [], []
        # One untimed round: a file left alone for a while maps slowly the first time again
        # (here, after 45 s idle: 0.17 s against 0.013 s to touch a cached 1 GiB archive).
        once(name, "onnxz")
        once(name, "onnx")
        for _ in range(a.rounds):
            t_ours.append(once(name, "onnxz"))
            t_theirs.append(once(name, "onnx"))
        mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
        ratio = mt / mo if mo else float("inf")
        verdict = ("(no onnxz: the machine's floor)" if target is None else
                   f">= {target}x {'met' if ratio >= target else 'NOT met'}")
        print(f"{name:12} {mo:10.4f} {mt:10.4f} {ratio:7.1f}x  {verdict}", flush=True)
    print(f"weights: {a.mb} MB in 200 float32 tensors; graph: {a.nodes} nodes; medians of "
          f"{a.rounds} rounds, each operation in a fresh process, files in the page cache; "
          f"{os.cpu_count()} cpus, load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
