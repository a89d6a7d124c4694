#!/usr/bin/python3
"""Prefetch of an archive: the time from opening a ~1 GB .onnxz not in the page cache to
having read every byte of its tensors (`onnxz bench load --no-copy`: the tensors are spans
of the archive's mapping, each read once after the load), without and with
oc_parse_options.prefetch (--prefetch: the kernel told of the tensor entries' ranges of
the mapping).

The archive is bench_load.py's weights.onnx (200 float32 initializers of 1.25 M
elements) converted by the onnxz given, cached in WORKDIR. Before every run the page
cache is emptied (`sync; echo 3 > /proc/sys/vm/drop_caches`, which needs root; without
it, the file's pages alone are dropped with POSIX_FADV_DONTNEED); each run is a fresh
process, the contenders rotating round by round so that machine noise hits all alike.
Contenders: "none" (ONNXZ_EXE without --prefetch), "prefetch" (ONNXZ_EXE with it), and
each --variant NAME=EXE (another build's onnxz with --prefetch, e.g. one whose prefetch
mechanism was changed, to compare mechanisms; NAME=EXE: ends with a colon-free
"nopf" suffix, as in map_populate=/tmp/onnxz_mp:nopf, to run it without --prefetch).
Prints each contender's median, min and max, and its ratio to "none".

usage: bench_prefetch_archive.py ONNXZ_EXE [--work DIR] [--rounds N]
           [--variant NAME=EXE[:nopf]]... [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_load import generate, machine, timed  # noqa: E402


def cold(path):
    """Empties the page cache (root), else drops the file's pages."""
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz")
    ap.add_argument("--work", default="/tmp/onnxz-bench")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--json")
    a = ap.parse_args()
    weights, _ = generate(a.work)
    archive = os.path.join(a.work, "weights.onnxz")
    if not os.path.exists(archive):
        subprocess.run([a.onnxz, "convert", "-q", weights, archive], check=True)
    size = os.path.getsize(archive)
    load = ["bench", "load", "--no-copy", "--repeat", "1", "--json"]
    contenders = {"none": [a.onnxz, *load], "prefetch": [a.onnxz, *load, "--prefetch"]}
    for v in a.variant:
        name, exe = v.split("=", 1)
        nopf = exe.endswith(":nopf")
        exe = exe[:-5] if nopf else exe
        contenders[name] = [exe, *load] + ([] if nopf else ["--prefetch"])
    names = list(contenders)
    times = {n: [] for n in names}
    load_before = os.getloadavg()
    for r in range(a.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            cold(archive)
            out, wall = timed(contenders[name] + [archive])
            times[name].append(out["first_s"] if out else wall)
        print(f"round {r + 1}/{a.rounds}: " +
              ", ".join(f"{n} {t[-1]:.3f}s" for n, t in times.items()), flush=True)
    load_after = os.getloadavg()
    med = {n: statistics.median(t) for n, t in times.items()}
    print(f"\n{archive}: {size} bytes, cold page cache each run, {a.rounds} rounds")
    for n, m in med.items():
        print(f"  {n:14s} median {m:.3f} s  min {min(times[n]):.3f} max {max(times[n]):.3f}"
              f"  vs none {m / med['none']:.2f}x")
    mach = machine()
    print(f"machine: {mach}; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"file_bytes": size, "rounds": a.rounds, "times_s": times,
                       "median_s": med, "machine": mach,
                       "loadavg": [load_before[0], load_after[0]]}, f, indent=1)


if __name__ == "__main__":
    main()
