#!/usr/bin/env python3
"""The Python package against python3-onnx (docs/performance.md, "In Python"): medians of rounds with the
files in the page cache, and the ratio of each pair.

Generates (once, cached in --work) with python3-onnx:
  weights.onnx   --mb MB (default 1024) of float32 in 200 initializers
  graph.onnx     a graph-only model of --nodes (default 100,000) Add nodes
and measures, each operation in a fresh process, contenders alternating:
  views    onnxz.open + every tensor as a numpy array, touching every page
           vs onnx.load + numpy_helper.to_array of every initializer   (target >= 50x),
           on the archive onnxz.convert packed from weights.onnx, in the page cache as a
           served model's file is: read from disk (see settle)
  views.written  the same on a second archive from onnxz.convert, in the page cache as
           its writer left it
  views.saved    the same on the same bytes as onnxz.save wrote them from the loaded
           model, as its writer left them
  floor / floor.written / floor.saved   the machine's floor for views: numpy over a plain
           mmap of the same archive file, one value per page, no onnxz (a mapped file's
           pages cost what the page cache's folios make them cost, see settle and README)
  load     onnxz.load vs onnx.load, the same ModelProto               (target >= 1.5x)
  load.onnxz     onnxz.load of the archive vs onnx.load of weights.onnx (the same model)
  load.external  onnxz.load vs onnx.load of weights.onnx saved by python3-onnx with its
           tensors in one data file (two-file)
  save     onnxz.save(model, "m.onnxz") vs onnx.save(model, "m.onnx")  (target >= 1x)
           to a new file (neither waits for the disk; onnxz.save renames its file into
           place)
  save.replace  the same over an existing file of the same size: onnx.save truncates it
           and writes into the pages it freed, onnxz.save holds both until its rename
  save+sync  onnxz.save(..., sync=True) against onnx.save followed by fsync of the file
           and its directory: both durable
  graph    onnxz.load vs onnx.load on graph.onnx                       (target >= 2x)
Beside the times: each side's peak private memory (RssAnon) above what its process held
when the operation began (the model, for the saves), sampled every millisecond in the
untimed first round; a mapped file's pages are page cache and do not count.

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


def settle(path):
    """Leaves path in the page cache as a model's file is once it has been read from disk:
    its dirty pages written back, its cached pages dropped, then the file read whole.

    Without this, a file the benchmark has just written keeps the page cache folios its
    writer's pieces left, and mapping costs what those folios make it cost: an archive
    onnxz.convert packed through its 256 KiB buffer maps 4-9x slower than the same bytes
    read back from disk, whose readahead fills large folios. A runtime serving a model
    maps a file read from disk; views.written and views.saved keep the writers' state."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 24):
            pass
    finally:
        os.close(fd)


def paths(work, mb, nodes):
    """The benchmark's files in work, by role."""
    return {
        "weights": os.path.join(work, f"weights-{mb}.onnx"),
        "external": os.path.join(work, f"weights-{mb}-external.onnx"),  # + its .data
        "graph": os.path.join(work, f"graph-{nodes}.onnx"),
        "archive": os.path.join(work, f"weights-{mb}.onnxz"),  # packed by onnxz.convert
        "written": os.path.join(work, f"weights-{mb}-written.onnxz"),  # the same, not settled
        "saved": os.path.join(work, f"weights-{mb}-saved.onnxz"),  # written by onnxz.save
        "out_z": os.path.join(work, "out.onnxz"),
        "out_o": os.path.join(work, "out.onnx"),
    }


def contenders(work, mb, nodes):
    """name -> (onnxz's operation, python3-onnx's (for a floor, the name of the row whose
    onnx side it is compared with), target ratio, needs the model loaded, files used)."""
    p = paths(work, mb, nodes)

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
        m = onnx.load(p["weights"])
        for t in m.graph.initializer:
            touch(numpy_helper.to_array(t))

    def save(**kw):
        return lambda m: onnxz.save(m, p["out_z"], **kw)

    return {
        "views": (views_of(p["archive"]), onnx_arrays, 50.0, False, ["archive"]),
        "floor": (floor_of(p["archive"]), "views", None, False, ["archive"]),
        "views.written": (views_of(p["written"]), onnx_arrays, 50.0, False, ["written"]),
        "floor.written": (floor_of(p["written"]), "views.written", None, False, ["written"]),
        "views.saved": (views_of(p["saved"]), onnx_arrays, 50.0, False, ["saved"]),
        "floor.saved": (floor_of(p["saved"]), "views.saved", None, False, ["saved"]),
        "load": (lambda _: onnxz.load(p["weights"]), lambda _: onnx.load(p["weights"]), 1.5,
                 False, []),
        "load.onnxz": (lambda _: onnxz.load(p["archive"]), lambda _: onnx.load(p["weights"]),
                       None, False, ["archive"]),
        "load.external": (lambda _: onnxz.load(p["external"]),
                          lambda _: onnx.load(p["external"]), None, False, ["external"]),
        "save": (save(), lambda m: onnx.save(m, p["out_o"]), 1.0, True, []),
        "save.replace": (save(), lambda m: onnx.save(m, p["out_o"]), 1.0, True, []),
        # both durable: sync=True fsyncs before and after the rename, onnx's gets fsyncs added
        "save+sync": (save(sync=True), lambda m: durable_save(m, p["out_o"]), 1.0, True, []),
        "graph": (lambda _: onnxz.load(p["graph"]), lambda _: onnx.load(p["graph"]), 2.0,
                  False, []),
    }


def rss_anon(pid):
    """The private memory (RssAnon) of process pid, in bytes; 0 once it has ended."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_one(a):
    """In a fresh process: the one operation --one names, timed; prints the seconds. With
    --wait it first says "ready" and waits for a line on stdin (its parent samples its
    memory from there)."""
    name, side = a.one
    ours, theirs, _, needs_model, _ = contenders(a.work, a.mb, a.nodes)[name]
    model = onnx.load(paths(a.work, a.mb, a.nodes)["weights"]) if needs_model else None
    fn = ours if side == "onnxz" else theirs
    if name != "save.replace":  # every save but this one writes a new file
        for out in ("out.onnxz", "out.onnx"):
            if os.path.exists(os.path.join(a.work, out)):
                os.unlink(os.path.join(a.work, out))
    if a.wait:
        print("ready", flush=True)
        sys.stdin.readline()
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
    ap.add_argument("--wait", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return run_one(a)
    os.makedirs(a.work, exist_ok=True)
    p = paths(a.work, a.mb, a.nodes)
    rows = {name: row for name, row in contenders(a.work, a.mb, a.nodes).items()
            if not a.only or name in a.only}
    needed = {f for row in rows.values() for f in row[4]}
    if not os.path.exists(p["weights"]):
        make_weights(p["weights"], a.mb)
    if not os.path.exists(p["graph"]):
        make_graph(p["graph"], a.nodes)
    if "external" in needed and not os.path.exists(p["external"]):
        onnx.save(onnx.load(p["weights"]), p["external"], save_as_external_data=True,
                  location=os.path.basename(p["external"]) + ".data")
    onnxz.convert(p["weights"], p["archive"])  # packed anew each run, then settled
    for name in os.listdir(a.work):
        if os.path.join(a.work, name) not in (p["written"], p["saved"]):
            settle(os.path.join(a.work, name))
    # Last, so that nothing else the setup writes changes what the page cache holds of them.
    if "written" in needed:
        onnxz.convert(p["weights"], p["written"])
    if "saved" in needed:
        onnxz.save(onnx.load(p["weights"]), p["saved"])  # the same bytes, written from memory
    for f in needed & {"written", "saved"}:
        if not filecmp.cmp(p["archive"], p[f], shallow=False):
            sys.exit(f"{p[f]} differs from {p['archive']}: the writers disagree")

    # Each operation in a fresh process (a process that has freed a model earlier reuses
    # its memory, which makes whatever runs later look faster), contenders alternating.
    def once(name, side, memory=False):
        """Seconds; with memory, also the peak RssAnon above the start, sampled each ms."""
        args = [sys.executable, os.path.abspath(__file__), "--work", a.work, "--mb",
                str(a.mb), "--nodes", str(a.nodes), "--one", name, side]
        if not memory:
            out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
            return float(out.split()[-1])
        proc = subprocess.Popen(args + ["--wait"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        start = peak = rss_anon(proc.pid)
        proc.stdin.write("\n")
        proc.stdin.flush()
        while proc.poll() is None:
            peak = max(peak, rss_anon(proc.pid))
            time.sleep(0.001)
        out = proc.stdout.read()
        if proc.returncode:
            sys.exit(f"{name} {side} failed")
        return float(out.split()[-1]), (peak - start) / (1 << 20)

    load_before = os.getloadavg()[0]
    print(f"{'':14} {'onnxz s':>9} {'onnx s':>9} {'ratio':>7}  {'onnxz MiB':>9} "
          f"{'onnx MiB':>9}  target")
    theirs_median = {}
    for name, (_, theirs, target, _, _) in rows.items():
        t_ours, t_theirs = [], []
        # One untimed round, which samples the memory: a file left alone for a while maps
        # slowly the first time again (here, after 45 s idle: 0.17 s against 0.013 s to
        # touch a cached 1 GiB archive).
        floor = isinstance(theirs, str)
        _, mib_ours = once(name, "onnxz", memory=True)
        mib_theirs = float("nan") if floor else once(name, "onnx", memory=True)[1]
        for _ in range(a.rounds):
            t_ours.append(once(name, "onnxz"))
            if not floor:
                t_theirs.append(once(name, "onnx"))
        mo = statistics.median(t_ours)
        if floor:  # compared with the onnx side of the row it is the floor of
            mt = theirs_median.get(theirs, float("nan"))
        else:
            mt = theirs_median[name] = statistics.median(t_theirs)
        ratio = mt / mo if mo else float("inf")
        verdict = ("(no onnxz: the machine's floor)" if floor else "" if target is None else
                   f">= {target}x {'met' if ratio >= target else 'NOT met'}")
        print(f"{name:14} {mo:9.4f} {mt:9.4f} {ratio:6.1f}x  {mib_ours:9.0f} "
              f"{mib_theirs:9.0f}  {verdict}", flush=True)
    print(f"weights: {a.mb} MB in 200 float32 tensors; graph: {a.nodes} nodes; medians of "
          f"{a.rounds} rounds, each operation in a fresh process, files in the page cache "
          f"(read from disk, but for the .written and .saved archives); "
          f"{os.cpu_count()} cpus, load average {load_before:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
