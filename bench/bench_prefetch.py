#!/usr/bin/python3
"""Prefetch benchmark: the time from opening a ~1 GB model not in the page cache to having
touched every byte of it, with and without asking the kernel to read the mapping ahead.

Uses bench_load.py's weights.onnx (generated once, cached in WORKDIR: 200 float32
initializers of 1.25 M elements inside the .onnx). Before every run the file's pages are
dropped from the page cache (posix_fadvise POSIX_FADV_DONTNEED, as the library's save
does), so each run reads it from the disk; each run is a fresh process
(`onnxz bench ... --repeat 1`), the contenders alternating, each round starting one
later, so that machine noise hits all alike and none always runs after the same one:
  map               mmap the file and read every byte: the pages come in by page faults
                    and the kernel's fault-driven readahead
  map.willneed      the same after madvise(MADV_WILLNEED) on the whole mapping
  map.populate      the same with the file mapped MAP_POPULATE (read before mmap returns)
  load              onnxz bench load --no-copy (tensors are spans of the mapping), then
                    every tensor byte read
  load.prefetch     the same with oc_parse_options.prefetch (--prefetch)
Prints each contender's median and the ratio of the prefetching ones to the one without,
and the machine with its load average (a shared machine: the disk and the cores are
other people's too); --json FILE writes the figures.

usage: bench_prefetch.py ONNXZ_EXE [--work DIR] [--rounds N] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_load import generate, machine, timed  # noqa: E402

CONTENDERS = {
    "map": ["map", "--every-byte"],
    "map.willneed": ["map", "--every-byte", "--prefetch"],
    "map.populate": ["map", "--every-byte", "--populate"],
    "load": ["load", "--no-copy"],
    "load.prefetch": ["load", "--no-copy", "--prefetch"],
}
RATIOS = [("map.willneed", "map"), ("map.populate", "map"), ("load.prefetch", "load")]


def drop(path):
    """Drops the file's pages from the page cache (none is dirty: it was written long
    before), so that the run that follows reads it from the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz")
    ap.add_argument("--work", default="/tmp/onnxz-bench")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    weights, _ = generate(a.work)
    size = os.path.getsize(weights)
    times = {name: [] for name in CONTENDERS}
    load_before = os.getloadavg()
    names = list(CONTENDERS)
    for r in range(a.rounds):
        # each round starts one contender later: none always follows the same one
        for name in names[r % len(names):] + names[:r % len(names)]:
            args = CONTENDERS[name]
            drop(weights)
            out, wall = timed([a.onnxz, "bench", *args, "--repeat", "1", "--json", weights])
            times[name].append(out["first_s"] if out else wall)
        print(f"round {r + 1}/{a.rounds}: " +
              ", ".join(f"{n} {t[-1]:.3f}s" for n, t in times.items()), flush=True)
    load_after = os.getloadavg()
    med = {n: statistics.median(t) for n, t in times.items()}
    print(f"\n{weights}: {size} bytes, cold page cache each run, {a.rounds} rounds")
    for n, m in med.items():
        print(f"  {n:14s} median {m:.3f} s  ({size / m / 1e9:.2f} GB/s)  "
              f"min {min(times[n]):.3f} max {max(times[n]):.3f}")
    for n, base in RATIOS:
        print(f"  {n} / {base}: {med[n] / med[base]:.2f}")
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
