#!/usr/bin/python3
"""Loading benchmark: onnxz against python3-onnx and the machine's own floors, side by side.

Generates (once, cached in WORKDIR) with python3-onnx:
  weights.onnx  ~1 GB: 200 float32 initializers of 1.25 M elements
  graph.onnx    a graph-only model of 100,000 Add nodes
then, alternating the contenders round by round so that machine noise hits all alike,
measures for each file:
  floor.read     read the file into freshly allocated memory (onnxz bench read)
  floor.map      map the file and touch every page (onnxz bench map)
  floor.map.bytes  map the file and read every byte (onnxz bench map --every-byte)
  floor.copy.tN  copy the file's bytes, already in memory, into memory already faulted in
                 with N threads, then read every byte (onnxz bench copy): the floor of a
                 repeated copying load into pooled storage
  onnxz.copy     onnxz bench load (copying every tensor; touches every byte)
  onnxz.copy.tN  the same with N threads
  onnxz.copy.pool[.tN]  copying, with tensor storage from a pool kept across the
                 in-process repeats (so repeats copy into memory already faulted in)
  onnxz.nocopy   onnxz bench load --no-copy (tensors share the mapping; every byte touched)
  onnxz.nocopy.pages  the same touching one byte per page, as floor.map does
  onnx.load      python3-onnx's onnx.load (a fresh process per round; three loads in it,
                 so it has a first and an in-process repeat figure like onnxz's)
  protobuf.parse ModelProto.ParseFromString on bytes already in memory (C++ protobuf)
The page cache is filled the same way before each file's rounds (dropped, then read once
sequentially; see warm()). Each contender runs in a fresh process per round (first load, cold process); onnxz also
reports the median of in-process repeats. Prints medians, each onnxz contender's ratio to
the floor that does the same work (copy: floor.read; no-copy touching pages: floor.map;
no-copy reading every byte: floor.map.bytes) and to onnx.load, then each speed goal set
for loading as the ratio it names, and the machine; --json FILE writes the figures too.

usage: bench_load.py ONNXZ_EXE [--work DIR] [--rounds N] [--threads N] [--json FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import time

PY = "/usr/bin/python3"


def warm(path):
    """Puts the file in the page cache the same way on every run: dropped, then read once
    sequentially, so the cache holds what readahead makes (on Linux 6.x, large pages
    where the filesystem allows). How the cache was filled changes the map floor 15x
    (a file whose pages came in 4 KiB at a time: one fault per 64 KiB), so leaving it
    to the file's history made runs incomparable. Every contender then reads memory."""
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)


def generate(work):
    os.makedirs(work, exist_ok=True)
    w, g = os.path.join(work, "weights.onnx"), os.path.join(work, "graph.onnx")
    script = f"""
import os, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
if not os.path.exists({w!r}):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.random(1250000, dtype=np.float32), 'w%d' % i) for i in range(200)]
    m = helper.make_model(helper.make_graph([], 'weights', [], [], inits))
    open({w!r} + '.tmp', 'wb').write(m.SerializeToString()); os.replace({w!r} + '.tmp', {w!r})
if not os.path.exists({g!r}):
    nodes = [helper.make_node('Add', ['x%d' % i, 'c'], ['x%d' % (i + 1)], name='n%d' % i) for i in range(100000)]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1])
    m = helper.make_model(helper.make_graph(nodes, 'graph', [vi('x0')], [vi('x100000')],
                          [numpy_helper.from_array(np.ones(1, np.float32), 'c')]))
    onnx.save(m, {g!r})
"""
    subprocess.run([PY, "-c", script], check=True)
    return w, g


def timed(cmd):
    """Runs cmd; returns its own reported seconds (JSON on stdout) or wall time."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"benchmark step failed: {' '.join(cmd)}\n{p.stderr}")
    try:
        return json.loads(p.stdout.strip().splitlines()[-1]), wall
    except (ValueError, IndexError):
        return None, wall


def py_step(kind, path):
    code = {
        # three loads in one process, as `onnxz bench load --repeat 3` does: the first, and
        # the median of all three (each model freed before the next load)
        "onnx.load": "import onnx,time,json,sys,statistics\nts=[]\nfor i in range(3):\n"
                     " t=time.perf_counter(); m=onnx.load(sys.argv[1]); ts.append(time.perf_counter()-t); del m\n"
                     "print(json.dumps({'first_s': ts[0], 'median_s': statistics.median(ts)}))",
        "protobuf.parse": "import onnx,time,json,sys\nb=open(sys.argv[1],'rb').read(); m=onnx.ModelProto();"
                          "t=time.perf_counter(); m.ParseFromString(b);"
                          "print(json.dumps({'first_s': time.perf_counter()-t}))",
    }[kind]
    return [PY, "-c", code, path]


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.platform()}"


def like_floor(k):
    """The floor that does the same work as contender k (first loads)."""
    if k == "onnxz.nocopy":
        return "floor.map.bytes"
    return "floor.map" if "nocopy" in k else "floor.read"


def targets(label, med, rep, n):
    """Prints the speed goals for loading as measured here; returns them as records."""
    tn = f".t{n}"
    if label.startswith("weights"):
        rows = [
            ("copy first load / floor.read", med["onnxz.copy"] / med["floor.read"], "<=", 1.2),
            (f"copy{tn} first load / floor.read", med["onnxz.copy" + tn] / med["floor.read"], "<=", 1.2),
            ("onnx.load / copy first load", med["onnx.load"] / med["onnxz.copy"], ">", 1.0),
            (f"onnx.load repeat / copy.pool{tn} repeat",
             rep["onnx.load"] / rep["onnxz.copy.pool" + tn], ">=", 10.0),
            (f"  the floor's own: onnx.load repeat / floor.copy{tn}",
             rep["onnx.load"] / rep["floor.copy" + tn], None, None),
            (f"  copy.pool{tn} repeat / floor.copy{tn}",
             rep["onnxz.copy.pool" + tn] / rep["floor.copy" + tn], None, None),
            ("no-copy every byte / floor.map (pages)", med["onnxz.nocopy"] / med["floor.map"], "<=", 1.5),
            ("no-copy every byte / floor.map.bytes", med["onnxz.nocopy"] / med["floor.map.bytes"], "<=", 1.5),
            ("no-copy touching pages / floor.map", med["onnxz.nocopy.pages"] / med["floor.map"], "<=", 1.5),
            ("onnx.load / no-copy every byte", med["onnx.load"] / med["onnxz.nocopy"], ">=", 30.0),
            ("  the floor's own: onnx.load / floor.map.bytes",
             med["onnx.load"] / med["floor.map.bytes"], None, None),
            (f"copy / copy{tn} (threads buy)", med["onnxz.copy"] / med["onnxz.copy" + tn], ">=", 1.0),
        ]
    else:
        rows = [
            ("protobuf.parse / copy", med["protobuf.parse"] / med["onnxz.copy"], ">=", 1.5),
            ("onnx.load / copy", med["onnx.load"] / med["onnxz.copy"], ">=", 4.0),
            ("protobuf.parse / no-copy", med["protobuf.parse"] / med["onnxz.nocopy"], ">=", 1.5),
            (f"copy / copy{tn} (threads buy)", med["onnxz.copy"] / med["onnxz.copy" + tn], ">=", 1.0),
        ]
    met = {"<=": lambda x, t: x <= t, ">=": lambda x, t: x >= t, ">": lambda x, t: x > t}
    out = []
    print("targets:")
    for what, x, op, t in rows:
        if op is None:  # a floor's figure: the best any loader could reach here
            print(f"  {what:52} {x:7.2f}")
            out.append({"what": what.strip(), "ratio": x})
            continue
        ok = met[op](x, t)
        print(f"  {what:52} {x:7.2f}  (target {op} {t:g}: {'met' if ok else 'NOT met'})")
        out.append({"what": what, "ratio": x, "target": f"{op} {t:g}", "met": ok})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz")
    ap.add_argument("--work", default="/tmp/onnxz-bench")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json")
    a = ap.parse_args()
    weights, graph = generate(a.work)
    z = a.onnxz
    results = {}
    for path, label in ((weights, "weights (1 GB, 200 tensors)"), (graph, "graph (100,000 nodes)")):
        steps = {
            "floor.read": [z, "bench", "read", path, "--json"],
            "floor.map": [z, "bench", "map", path, "--json"],
            "floor.map.bytes": [z, "bench", "map", path, "--every-byte", "--json"],
            f"floor.copy.t{a.threads}": [z, "bench", "copy", path, "--threads", str(a.threads),
                                         "--repeat", "3", "--json"],
            "onnxz.copy": [z, "bench", "load", path, "--repeat", "3", "--json"],
            f"onnxz.copy.t{a.threads}": [z, "bench", "load", path, "--threads", str(a.threads),
                                         "--repeat", "3", "--json"],
            # storage from a pool kept across the in-process repeats (oc_storage_pool)
            "onnxz.copy.pool": [z, "bench", "load", path, "--pool", "--repeat", "3", "--json"],
            f"onnxz.copy.pool.t{a.threads}": [z, "bench", "load", path, "--pool", "--threads",
                                              str(a.threads), "--repeat", "3", "--json"],
            "onnxz.nocopy": [z, "bench", "load", path, "--no-copy", "--repeat", "3", "--json"],
            # the same work as floor.map (one byte per page), for a like-for-like ratio
            "onnxz.nocopy.pages": [z, "bench", "load", path, "--no-copy", "--touch-pages",
                                   "--repeat", "3", "--json"],
            "onnx.load": py_step("onnx.load", path),
            "protobuf.parse": py_step("protobuf.parse", path),
        }
        warm(path)
        first = {k: [] for k in steps}
        inproc = {k: [] for k in steps}
        for r in range(a.rounds):
            order = list(steps) if r % 2 == 0 else list(reversed(steps))  # alternate
            for k in order:
                rep, wall = timed(steps[k])
                first[k].append(rep["first_s"] if rep else wall)
                if rep and "median_s" in rep:
                    inproc[k].append(rep["median_s"])
        med = {k: statistics.median(v) for k, v in first.items()}
        rep_med = {k: statistics.median(v) for k, v in inproc.items() if v}
        results[label] = {"first_load_median_s": med, "in_process_median_s": rep_med}
        print(f"\n== {label}: {os.path.getsize(path) / 1e6:.1f} MB, median of {a.rounds} rounds")
        print(f"{'contender':22} {'first load':>11} {'vs floor':>9} {'vs onnx.load':>13} "
              f"{'repeat':>9} {'vs onnx.load repeat':>20}")
        for k, v in med.items():
            floor = med[like_floor(k)]
            vs_floor = f"{v / floor:8.2f}x" if k.startswith("onnxz") else ""
            vs_onnx = f"{med['onnx.load'] / v:11.1f}x" if k != "onnx.load" else ""
            rp = f"{rep_med[k]:8.4f}s" if k in rep_med else ""
            vs_rp = (f"{rep_med['onnx.load'] / rep_med[k]:18.1f}x"
                     if k in rep_med and k != "onnx.load" else "")
            print(f"{k:22} {v:10.4f}s {vs_floor:>9} {vs_onnx:>13} {rp:>9} {vs_rp:>20}")
        results[label]["targets"] = targets(label, med, rep_med, a.threads)
    print(f"\nmachine: {machine()}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
