#!/usr/bin/python3
"""Conversion benchmark: packing and unpacking against `cp` of the same bytes, with peak memory.

Generates (once, cached in WORKDIR) a two-file model: two.onnx and two.data, SIZE GiB of
tensors in 64 MiB initializers (random bytes; a STORED copy does not care what they are),
written directly rather than through onnx.save, which would need the model in memory.
Then, alternating the contenders round by round so that machine noise hits all alike:
  cp            cp two.data (coreutils: copy_file_range, no fsync)
  cp+sync       cp, then fsync the copy (`sync FILE`): the durability onnxz gives
  pack          onnxz convert two.onnx two.onnxz      (writes, fsyncs, renames)
  unpack        onnxz convert two.onnxz back.onnx --external-data back.data
  to-one-file   onnxz convert two.onnxz one.onnx       (only with --single; > 2 GiB .onnx)
For each: median wall seconds, the ratio to cp and to cp+sync, and peak RSS (measured by a
small fresh interpreter that forks the command: Linux counts a child's pre-exec memory in
its peak, so the parent must be small). The page cache is warm for every contender (the
input is dropped from it, then read once sequentially, before the first round); outputs
are deleted between runs.

usage: bench_convert.py ONNXZ_EXE [--work DIR] [--size-gib N] [--rounds N] [--json FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

PY = "/usr/bin/python3"
TENSOR = 64 << 20

PROBE = """
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage.ru_maxrss)
"""


def generate(work, size_gib):
    os.makedirs(work, exist_ok=True)
    model, data = os.path.join(work, "two.onnx"), os.path.join(work, "two.data")
    n = size_gib * (1 << 30) // TENSOR
    if os.path.exists(model) and os.path.getsize(data) == n * TENSOR:
        return model, data
    script = f"""
import os, numpy as np, onnx
from onnx import helper, TensorProto
rng = np.random.default_rng(0)
block = rng.bytes({TENSOR})
inits = []
with open({data!r}, 'wb') as f:
    for i in range({n}):
        f.write(i.to_bytes(8, 'little') + block[8:])  # distinct tensors, cheaply
        t = TensorProto(name='w%d' % i, data_type=TensorProto.FLOAT, dims=[{TENSOR // 4}])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (('location', 'two.data'), ('offset', str(i * {TENSOR})), ('length', str({TENSOR}))):
            e = t.external_data.add(); e.key = k; e.value = v
        inits.append(t)
vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [{TENSOR // 4}])
nodes = [helper.make_node('Add', ['x' if i == 0 else 'y%d' % (i - 1), 'w%d' % i], ['y%d' % i]) for i in range({n})]
m = helper.make_model(helper.make_graph(nodes, 'two', [vi('x')], [vi('y%d' % ({n} - 1))], inits))
open({model!r}, 'wb').write(m.SerializeToString())
"""
    subprocess.run([PY, "-c", script], check=True)
    return model, data


def probe(cmd):
    """(seconds, peak RSS bytes) of cmd, which must succeed."""
    p = subprocess.run([PY, "-S", "-c", PROBE, *cmd], capture_output=True, text=True)
    fields = p.stdout.split()
    if p.returncode != 0 or len(fields) < 3 or fields[-3] != "0":
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return float(fields[-2]), int(fields[-1]) * 1024


def machine(work):
    cpu = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    fs = subprocess.run(["df", "-T", work], capture_output=True, text=True).stdout.split("\n")[1].split()
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.platform()}, "
            f"{fs[1] if len(fs) > 1 else '?'} filesystem")


def remove(*paths):
    for p in paths:
        if os.path.exists(p):
            os.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz")
    ap.add_argument("--work", default="/tmp/onnxz-bench")
    ap.add_argument("--size-gib", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--single", action="store_true", help="also time archive -> one .onnx")
    ap.add_argument("--json")
    a = ap.parse_args()
    z = os.path.abspath(a.onnxz)
    model, data = generate(a.work, a.size_gib)
    w = lambda name: os.path.join(a.work, name)
    size = os.path.getsize(data)
    # The page cache filled the same way on every run (dropped, then read once sequentially),
    # as bench_load.py does: how it was filled decides whether it holds large pages.
    with open(data, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    subprocess.run(["cat", data], stdout=subprocess.DEVNULL, check=True)
    remove(w("two.onnxz"))
    probe([z, "convert", "-q", model, w("two.onnxz")])  # unpack needs an archive
    steps = {
        "cp": (lambda: probe(["cp", data, w("copy.data")]), [w("copy.data")]),
        "cp+sync": (lambda: tuple(map(sum, zip(probe(["cp", data, w("copy.data")]),
                                               (probe(["sync", w("copy.data")])[0], 0)))),
                    [w("copy.data")]),
        "pack": (lambda: probe([z, "convert", "-q", "-f", model, w("pack.onnxz")]), [w("pack.onnxz")]),
        "unpack": (lambda: probe([z, "convert", "-q", w("two.onnxz"), w("back.onnx"),
                                  "--external-data", "back.data"]),
                   [w("back.onnx"), w("back.data")]),
    }
    if a.single:
        steps["to-one-file"] = (lambda: probe([z, "convert", "-q", w("two.onnxz"), w("one.onnx")]),
                                [w("one.onnx")])
    times = {k: [] for k in steps}
    peaks = {k: [] for k in steps}
    for r in range(a.rounds):
        for name, (run, outputs) in steps.items():
            remove(*outputs)
            s, rss = run()
            times[name].append(s)
            peaks[name].append(rss)
            remove(*outputs)
        print(f"round {r + 1}/{a.rounds}: " +
              ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()), flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    graph = os.path.getsize(model)
    print(f"\nmachine: {machine(a.work)}")
    print(f"model: {size / 2**30:.1f} GiB of tensors in {size // TENSOR} initializers, "
          f"graph {graph} bytes; {a.rounds} rounds, medians, page cache warm\n")
    print(f"{'contender':<12} {'seconds':>8} {'GiB/s':>7} {'x cp':>6} {'x cp+sync':>10} {'peak RSS':>10}")
    for k in steps:
        print(f"{k:<12} {med[k]:8.2f} {size / 2**30 / med[k]:7.2f} {med[k] / med['cp']:6.2f} "
              f"{med[k] / med['cp+sync']:10.2f} {max(peaks[k]) / 2**20:8.1f} MiB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine(a.work), "bytes": size, "rounds": a.rounds,
                       "median_s": med, "peak_rss": {k: max(v) for k, v in peaks.items()},
                       "times": times}, f, indent=1)


if __name__ == "__main__":
    main()
