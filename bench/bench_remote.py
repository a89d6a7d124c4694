#!/usr/bin/python3
"""Remote conversion benchmark: `onnxz convert URL local` against `curl -o` of the same
archive from the same nginx, with peak memory.

Makes (once, cached in WORKDIR) the two-file model of bench_convert.py (SIZE GiB in 64 MiB
tensors) and packs it into an archive, then serves it with Debian's nginx on 127.0.0.1
(tests/remote/nginx_env.py: HTTP, and HTTPS with a CA made by the openssl CLI). Then,
alternating the contenders round by round so that machine noise hits all alike:
  curl          curl -o copy.onnxz URL                (no fsync)
  curl+sync     the same, then fsync the copy         (the durability onnxz gives)
  to-onnxz      onnxz convert URL out.onnxz           (each tensor streamed from its entry
                                                       into the output; fsync, rename;
                                                       ONNXZ_HTTP_PARALLEL=4, R-13)
  to-onnxz/1    the same over one connection          (ONNXZ_HTTP_PARALLEL=1)
  no-sync       to-onnxz with --no-sync               (renamed into place, no fsync: the
                                                       durability curl -o gives)
  to-onnx       onnxz convert URL out.onnx --external-data out.data
For each: median wall seconds, the ratio to curl and to curl+sync, and peak RSS. The file
is in the page cache for nginx on every run; outputs are deleted between runs.

usage: bench_remote.py ONNXZ_EXE [--work DIR] [--size-gib N] [--rounds N] [--https]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "remote"))
from bench_convert import generate, machine, probe, remove  # noqa: E402
import nginx_env  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz")
    ap.add_argument("--work", default="/tmp/onnxz-bench")
    ap.add_argument("--size-gib", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--https", action="store_true")
    a = ap.parse_args()
    z = os.path.abspath(a.onnxz)
    model, _ = generate(a.work, a.size_gib)
    w = lambda name: os.path.join(a.work, name)
    www = w("www")
    os.makedirs(www, exist_ok=True)
    arc = os.path.join(www, "two.onnxz")
    if not os.path.exists(arc):
        probe([z, "convert", "-q", model, arc])
    subprocess.run(["cat", arc], stdout=subprocess.DEVNULL, check=True)  # nginx's page cache
    size = os.path.getsize(arc)
    with nginx_env.Nginx(www, w("nginx")) as ng:
        url = ng.url("two.onnxz", https=a.https)
        env = dict(os.environ, ONNXZ_CA_FILE=ng.ca_file or "")
        os.environ.update(env)
        tls = ["--cacert", ng.ca_file] if a.https else []
        copy, outz, outx, outd = w("copy.onnxz"), w("out.onnxz"), w("out.onnx"), w("out.data")
        steps = {
            "curl": (["curl", "-sS", *tls, "-o", copy, url], [copy]),
            "curl+sync": (["sh", "-c", 'curl -sS "$@" && sync "$2"', "sh", *tls, "-o", copy, url], [copy]),
            "to-onnxz": (["env", "ONNXZ_HTTP_PARALLEL=4", z, "convert", "-q", url, outz], [outz]),
            "to-onnxz/1": (["env", "ONNXZ_HTTP_PARALLEL=1", z, "convert", "-q", url, outz], [outz]),
            "no-sync": (["env", "ONNXZ_HTTP_PARALLEL=4", z, "convert", "-q", "--no-sync", url, outz],
                        [outz]),
            "to-onnx": ([z, "convert", "-q", url, outx, "--external-data", "out.data"], [outx, outd]),
        }
        times = {k: [] for k in steps}
        rss = {k: 0 for k in steps}
        for _ in range(a.rounds):
            for name, (cmd, outs) in steps.items():
                remove(*outs)
                t, r = probe(cmd)
                times[name].append(t)
                rss[name] = max(rss[name], r)
                remove(*outs)
    print(f"machine: {machine(a.work)}")
    print(f"archive: {size / 2**30:.2f} GiB, {a.size_gib * 16} tensors of 64 MiB, over "
          f"{'HTTPS' if a.https else 'HTTP'} from nginx on 127.0.0.1; medians of {a.rounds}")
    base, based = statistics.median(times["curl"]), statistics.median(times["curl+sync"])
    for name in steps:
        m = statistics.median(times[name])
        print(f"  {name:10s} {m:7.2f} s  {size / m / 2**20:7.0f} MiB/s  x{m / base:5.2f} curl  "
              f"x{m / based:5.2f} curl+sync  peak RSS {rss[name] / 2**20:6.1f} MiB")
    print(f"  to-onnxz (4 connections) / to-onnxz/1 (one): "
          f"x{statistics.median(times['to-onnxz']) / statistics.median(times['to-onnxz/1']):.2f}")


if __name__ == "__main__":
    main()
