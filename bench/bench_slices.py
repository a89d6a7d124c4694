#!/usr/bin/env python3
"""Shard-on-read (docs/performance.md, "Slices and read_into"): tensor-parallel ranks each
reading their part of every weight, and read_into a buffer of the caller's, against the
machine's floors and python3-onnx.

Generates (once, cached in --work) a model of --size-gib GiB (default 1): 2-D float32
weights of [2048, 2048] (16 MiB) and a 1-D float32 bias of [2048] beside each, written as
a .onnx with its tensors in one data file (model.onnx + model.data), then packed by
onnxz.convert into www/model.onnxz, which nginx serves (tests/remote/nginx_env.py). Then,
each contender in fresh processes, contenders alternating round by round:

Tensor parallel: --ranks (default 4) processes started together, each reading rows
[rank*R/N, (rank+1)*R/N) of every 2-D weight and the whole of every 1-D one, then touching
every byte it read (a sum over the bytes); a rank's time is from its first open to its
last byte touched, and a round's time is its slowest rank's.
  tp.onnxz         onnxz.open(archive).get_slice(name)[r0:r1]
  tp.onnxz.ext     the same on model.onnx + model.data
  tp.onnxz.url     the same on the archive's URL (nginx on 127.0.0.1)
  tp.many.url      the same parts of the URL in one f.read_into_many per rank, into
                   buffers the rank allocated and touched before the clock (the runs
                   fetched on parallel connections)
  tp.floor         numpy slicing of a plain np.memmap of model.data (no onnxz): the floor
  tp.onnx          onnx.load(model.onnx) + numpy_helper.to_array + numpy slicing
  whole.onnxz      one rank reading every tensor whole (onnxz.open(archive)[name]), each
                   byte touched: what a rank would do without slices
Bytes read by all ranks together, over the tensors' bytes (target <= 1.05x): on disk,
the sum of each rank's read_bytes (/proc/self/io) in an untimed round that starts with the
file dropped from the page cache (posix_fadvise DONTNEED); over HTTP, the body bytes
nginx's access log records for the round. Timed rounds run with the file in the page
cache, filled by one sequential read (as bench_load.py's warm()).

read_into: every tensor into one preallocated buffer, allocated and touched (one byte
per page written) before the clock starts, as a loader's pinned or staging buffer is
(on this VM a fresh buffer's first touch costs several times the read itself):
  read_into        f.read_into(name, buf[off:off + n]) for every tensor, one thread
  read_into.t2     the same, the tensors split between 2 threads (read_into releases
                   the GIL), a File each
  read_many        f.read_into_many({name: buf[off:off + n], ...}): one library call,
                   pread into the buffer (oz_reader_read_many), one thread
  read_many.t2     the same with num_threads=2 (the threads share each large tensor)
  floor.read       `onnxz bench read ARCHIVE`: read the file into fresh memory
  nocopy.pages     onnxz.open(archive)[name] for every tensor, one byte per page touched

Run it with a Python that has onnxz installed (a venv with --system-site-packages, as
tests/python/run_pytest.sh makes) and the tool for the read floor:
  VENV/bin/python bench/bench_slices.py build/tools/onnxz [--work DIR] [--size-gib G]
      [--rounds N] [--ranks N] [--quick] [--read-into-only] [--json FILE]
--quick: a 64 MiB model and one round, to check that the benchmark runs.
--read-into-only: the read_into contenders alone.
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "remote"))
from bench_load import machine, warm  # noqa: E402

ROWS = COLS = 2048
PAGE = os.sysconf("SC_PAGE_SIZE")


def paths(work):
    return {"onnx": os.path.join(work, "model.onnx"), "data": os.path.join(work, "model.data"),
            "archive": os.path.join(work, "www", "model.onnxz"),
            "layout": os.path.join(work, "layout.json")}


def generate(work, size_gib):
    """Writes model.onnx + model.data, the archive and layout.json (each tensor's name,
    shape and offset in model.data), unless a model of this size is there already."""
    p = paths(work)
    n = max(2, round(size_gib * (1 << 30) / (ROWS * COLS * 4)))
    if os.path.exists(p["layout"]):
        with open(p["layout"]) as f:
            if len(json.load(f)) == 2 * n and os.path.exists(p["archive"]):
                return
    import onnx
    from onnx import helper

    os.makedirs(os.path.dirname(p["archive"]), exist_ok=True)
    rng = np.random.default_rng(0)
    layout, inits, off = [], [], 0
    with open(p["data"], "wb") as data:
        for i in range(n):
            for name, shape in ((f"layer{i}.weight", [ROWS, COLS]), (f"layer{i}.bias", [COLS])):
                a = rng.random(shape, dtype=np.float32)
                data.write(a.tobytes())
                t = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT, dims=shape,
                                     data_location=onnx.TensorProto.EXTERNAL)
                for k, v in (("location", "model.data"), ("offset", str(off)),
                             ("length", str(a.nbytes))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
                inits.append(t)
                layout.append({"name": name, "shape": shape, "offset": off, "nbytes": a.nbytes})
                off += a.nbytes
    m = helper.make_model(helper.make_graph([], "slices", [], [], inits))
    with open(p["onnx"], "wb") as f:
        f.write(m.SerializeToString())
    import onnxz
    onnxz.convert(p["onnx"], p["archive"])
    with open(p["layout"], "w") as f:
        json.dump(layout, f)


def touch_all(a):
    """Reads every byte of a (C-contiguous): a sum of its words."""
    b = a.reshape(-1).view(np.uint8)
    whole = b.size // 8 * 8
    return int(b[:whole].view(np.uint64).sum(dtype=np.uint64)) + int(b[whole:].sum())


def touch_pages(a):
    """Reads one byte per page of a."""
    b = a.reshape(-1).view(np.uint8)
    return int(b[::PAGE].sum()) if b.size else 0


def rows_of(shape, rank, ranks):
    """The index of rank's part: its rows of a 2-D tensor, all of a 1-D one."""
    if len(shape) == 2:
        return slice(shape[0] * rank // ranks, shape[0] * (rank + 1) // ranks)
    return slice(None)


def read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def rank_buffers(work, rank, ranks):
    """(name, buffer, index) of each part of a rank, for read_into_many: its buffers
    allocated and written once per page before the clock, as a loader's staging buffers
    are (a fresh buffer's first touch costs more than its read on this VM)."""
    items = []
    for t in json.load(open(paths(work)["layout"])):
        idx = rows_of(t["shape"], rank, ranks)
        shape = (idx.stop - idx.start, t["shape"][1]) if len(t["shape"]) == 2 \
            else tuple(t["shape"])
        out = np.empty(shape, np.float32)
        out.reshape(-1).view(np.uint8)[::4096] = 1
        items.append((t["name"], out, (idx,)))
    return items


def run_rank(kind, src, work, rank, ranks, prepared=None):
    """One rank's reads; returns the bytes it touched."""
    layout = json.load(open(paths(work)["layout"]))
    total = 0
    if kind == "floor":
        m = np.memmap(src, dtype=np.uint8, mode="r")
        for t in layout:
            a = m[t["offset"]:t["offset"] + t["nbytes"]].view(np.float32).reshape(t["shape"])
            part = a[rows_of(t["shape"], rank, ranks)]
            touch_all(part)
            total += part.nbytes
        return total
    if kind == "onnx":
        import onnx
        from onnx import numpy_helper
        model = onnx.load(src)
        for t in model.graph.initializer:
            a = numpy_helper.to_array(t)
            part = a[rows_of(a.shape, rank, ranks)]
            touch_all(part)
            total += part.nbytes
        return total
    import onnxz
    if kind == "many":  # every part in one read_into_many, into the rank's buffers
        items = prepared
        with onnxz.open(src) as f:
            f.read_into_many(items, num_threads=2)
        for _, part, _ in items:
            touch_all(part)
            total += part.nbytes
        return total
    with onnxz.open(src) as f:
        for t in layout:
            if kind == "whole":
                part = f[t["name"]]
            else:
                part = f.get_slice(t["name"])[rows_of(t["shape"], rank, ranks)]
            touch_all(part)
            total += part.nbytes
    return total


def read_buffer(work):
    """(layout, buffer, offsets): one buffer for every tensor, each page written once so
    that the reads do not pay its first touch."""
    layout = json.load(open(paths(work)["layout"]))
    buf = np.empty(sum(t["nbytes"] for t in layout), np.uint8)
    buf[::4096] = 1
    return layout, buf, np.cumsum([0] + [t["nbytes"] for t in layout])


def run_read_into(src, prepared, threads):
    """Every tensor of src into one buffer of the caller's, split between threads."""
    import onnxz
    layout, buf, offs = prepared

    def part(k):
        with onnxz.open(src) as f:
            for i in range(k, len(layout), threads):
                f.read_into(layout[i]["name"], buf[offs[i]:offs[i + 1]])

    workers = [threading.Thread(target=part, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def run_read_many(src, prepared, threads):
    """Every tensor of src into one buffer of the caller's in one read_into_many."""
    import onnxz
    layout, buf, offs = prepared
    with onnxz.open(src) as f:
        f.read_into_many([(t["name"], buf[offs[i]:offs[i + 1]]) for i, t in enumerate(layout)],
                         num_threads=threads)


def run_nocopy(src):
    import onnxz
    with onnxz.open(src) as f:
        for name in f.names:
            touch_pages(f[name])


def one(a):
    """In a fresh process: one rank of --one (or a read_into or no-copy load, the last
    field then its threads); says "ready", waits for a line on stdin, then prints its
    seconds, the bytes it read from storage and the bytes it touched, as JSON."""
    kind, src, rank, ranks = a.one[0], a.one[1], int(a.one[2]), int(a.one[3])
    importlib.import_module("onnx" if kind == "onnx" else "onnxz")  # before the clock
    prepared = read_buffer(a.work) if kind in ("read_into", "read_many") else \
        rank_buffers(a.work, rank, ranks) if kind == "many" else None
    print("ready", flush=True)
    sys.stdin.readline()
    rb, t0 = read_bytes(), time.perf_counter()
    touched = 0
    if kind == "read_into":
        run_read_into(src, prepared, ranks)
    elif kind == "read_many":
        run_read_many(src, prepared, ranks)
    elif kind == "nocopy":
        run_nocopy(src)
    else:
        touched = run_rank(kind, src, a.work, rank, ranks, prepared)
    print(json.dumps({"s": time.perf_counter() - t0, "read_bytes": read_bytes() - rb,
                      "touched": touched}), flush=True)


def together(a, kind, src, ranks):
    """Starts ranks processes of kind, lets them go at once; their reports."""
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--work", a.work,
                               "--one", kind, src, str(r), str(ranks)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for r in range(ranks)]
    for p in procs:
        if p.stdout.readline().strip() != "ready":
            sys.exit(f"{kind} did not start")
    for p in procs:
        p.stdin.write("\n")
        p.stdin.flush()
    out = []
    for p in procs:
        line = p.stdout.read().strip().splitlines()
        if p.wait() or not line:
            sys.exit(f"{kind} {src} failed")
        out.append(json.loads(line[-1]))
    return out


def drop(path):
    """path's pages out of the page cache (written back first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def floor_read(z, path):
    out = subprocess.run([z, "bench", "read", path, "--json"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["first_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz", nargs="?", help="the tool, for `onnxz bench read`")
    ap.add_argument("--work", default="/tmp/onnxz-bench-slices")
    ap.add_argument("--size-gib", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="64 MiB, one round: does it run")
    ap.add_argument("--read-into-only", action="store_true",
                    help="the read_into contenders alone, not the tensor-parallel ones")
    ap.add_argument("--json")
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        return one(a)
    if not a.onnxz:
        ap.error("the onnxz tool is needed (for the read floor)")
    if a.quick:
        a.size_gib, a.rounds = 1 / 16, 1
        a.work = a.work.rstrip("/") + "-quick"
    os.makedirs(a.work, exist_ok=True)
    generate(a.work, a.size_gib)
    p = paths(a.work)
    layout = json.load(open(p["layout"]))
    model_bytes = sum(t["nbytes"] for t in layout)
    ranks = a.ranks
    import nginx_env
    why_not = nginx_env.available()
    ng = None if why_not else nginx_env.Nginx(os.path.dirname(p["archive"]),
                                              os.path.join(a.work, "nginx")).start()
    try:
        url = ng.url(os.path.basename(p["archive"])) if ng else None
        tp = {"tp.onnxz": ("onnxz", p["archive"], [p["archive"]], ranks),
              "tp.onnxz.ext": ("onnxz", p["onnx"], [p["data"]], ranks),
              "tp.floor": ("floor", p["data"], [p["data"]], ranks),
              "tp.onnx": ("onnx", p["onnx"], [p["data"]], ranks),
              "whole.onnxz": ("whole", p["archive"], [p["archive"]], 1)}
        if url:
            tp["tp.onnxz.url"] = ("onnxz", url, [], ranks)
            tp["tp.many.url"] = ("many", url, [], ranks)
        if a.read_into_only:
            tp = {}
        results = {"model_bytes": model_bytes, "ranks": ranks, "rounds": a.rounds,
                   "machine": machine(), "nginx": why_not or "used"}

        # Bytes read by all ranks: the files dropped from the page cache, untimed.
        ratio = {}
        for name, (kind, src, files, n) in tp.items():
            for f in files:
                drop(f)
            mark = ng.mark() if ng and src == url else None
            reps = together(a, kind, src, n)
            if mark is not None:
                got = sum(r["body_bytes_sent"] for r in ng.requests_since(mark))
            else:
                got = sum(r["read_bytes"] for r in reps)
            ratio[name] = got / model_bytes
            want = model_bytes if n == 1 else sum(
                t["nbytes"] * (1 if len(t["shape"]) == 2 else n) for t in layout)
            if sum(r["touched"] for r in reps) != want:
                sys.exit(f"{name}: the ranks touched {sum(r['touched'] for r in reps)} "
                         f"bytes, not {want}")
        results["bytes_read_over_model"] = ratio

        # Times, the files in the page cache.
        for f in (p["archive"], p["data"], p["onnx"]):
            warm(f)
        slowest = {k: [] for k in tp}
        per_rank = {k: [[] for _ in range(v[3])] for k, v in tp.items()}
        ri = {"read_into": [], "read_into.t2": [], "read_many": [], "read_many.t2": [],
              "floor.read": [], "nocopy.pages": []}
        for r in range(a.rounds):
            order = list(tp) if r % 2 == 0 else list(reversed(tp))
            for name in order:
                kind, src, _, n = tp[name]
                reps = together(a, kind, src, n)
                slowest[name].append(max(x["s"] for x in reps))
                for k, x in enumerate(reps):
                    per_rank[name][k].append(x["s"])
            for name in (list(ri) if r % 2 == 0 else list(reversed(ri))):
                if name == "floor.read":
                    ri[name].append(floor_read(a.onnxz, p["archive"]))
                else:
                    kind = "nocopy" if name == "nocopy.pages" else name.split(".")[0]
                    ri[name].append(single(a, kind, p["archive"],
                                           2 if name.endswith(".t2") else 1))
            print(f"round {r + 1}/{a.rounds} done", flush=True)
        med = {k: statistics.median(v) for k, v in slowest.items()}
        med_rank = {k: [statistics.median(x) for x in v] for k, v in per_rank.items()}
        med_ri = {k: statistics.median(v) for k, v in ri.items()}
        results.update({"tp_slowest_rank_median_s": med, "tp_rank_median_s": med_rank,
                        "read_into_median_s": med_ri, "read_into_s": ri})
        report(a, model_bytes, med, med_rank, ratio, med_ri, why_not)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        if ng:
            ng.stop()


def single(a, kind, src, threads):
    """kind (read_into, nocopy) in one fresh process on threads threads: its seconds."""
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--work", a.work,
                             "--one", kind, src, "0", str(threads)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if proc.stdout.readline().strip() != "ready":
        sys.exit(f"{kind} did not start")
    out, _ = proc.communicate("\n")
    if proc.returncode:
        sys.exit(f"{kind} {src} failed")
    return json.loads(out.strip().splitlines()[-1])["s"]


def report(a, model_bytes, med, med_rank, ratio, med_ri, why_not):
    print(f"\nmodel: {model_bytes / 2**30:.2f} GiB of float32 tensors; {a.ranks} ranks; "
          f"medians of {a.rounds} rounds, fresh processes, page cache warm for times")
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f}")
    if why_not:
        print(f"no URL contender: {why_not}")
    if med:
        report_tp(med, med_rank, ratio)
    print(f"\n{'read_into':14} {'s':>10} {'vs floor.read':>14} {'vs nocopy.pages':>16}")
    for k, v in med_ri.items():
        print(f"{k:14} {v:10.4f} {v / med_ri['floor.read']:13.2f}x "
              f"{v / med_ri['nocopy.pages']:15.2f}x")


def report_tp(med, med_rank, ratio):
    print(f"\n{'tensor parallel':14} {'slowest s':>10} {'ranks s':>28} {'vs whole':>9} "
          f"{'vs floor':>9} {'onnx.load/':>10} {'bytes/model':>12}")
    whole, floor, onnx_t = med["whole.onnxz"], med["tp.floor"], med["tp.onnx"]
    for k, v in med.items():
        ranks = " ".join(f"{x:.3f}" for x in med_rank[k])
        print(f"{k:14} {v:10.4f} {ranks:>28} {v / whole:8.2f}x {v / floor:8.2f}x "
              f"{onnx_t / v:9.1f}x {ratio[k]:11.3f}x"
              + ("  (target <= 1.05x: " + ("met)" if ratio[k] <= 1.05 else "NOT met)")
                 if k.startswith(("tp.onnxz", "tp.many")) else ""))


if __name__ == "__main__":
    main()
