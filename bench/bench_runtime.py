#!/usr/bin/python3
"""Runtime benchmark: ONNX Runtime's session creation time and peak memory for one ~500 MB
model in the forms onnxz writes, with ORT's weight prepacking on and off.

The model (built once in WORKDIR with python3-onnx): two MatMul weights of 64 MiB each
(float32 4096 x 4096: ORT prepacks them) and a 384 MiB Gather table (used in place), 512 MiB
of tensors. Forms:
  single   model.onnx, every tensor inside the protobuf
  two-file onnxz convert model.onnx two.onnx --external-data two.data (default threshold)
  stub     onnxz convert model.onnx model.onnxz, then onnxz stub model.onnxz stub.onnx
Each round starts a fresh node process (onnxruntime-node, CPU EP, one intra-op thread)
that creates one session and reports the creation time (wall) and VmHWM, its peak
resident memory, read from /proc/self/status after creation; the node process's own
VmRSS before loading is printed too. Contenders alternate round by round so that machine
noise hits all alike; the page cache is warm (one untimed round first). Printed: medians
and the ratios of each form to `single` with the same prepacking setting.

usage: bench_runtime.py ONNXZ_EXE ORT_DIR [--work DIR] [--rounds N] [--json FILE]
  ORT_DIR: a folder with node_modules/onnxruntime-node (a build tree's `ort/`, which
  `ctest -L runtime` installs).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

PROBE = r"""
const ort = require(require('path').join(process.argv[2], 'node_modules', 'onnxruntime-node'));
const fs = require('fs');
const kb = (k) => Number(fs.readFileSync('/proc/self/status', 'utf8').match(new RegExp(k + ':\\s+(\\d+)'))[1]);
(async () => {
  const base = kb('VmRSS');
  const opts = {executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1};
  if (process.argv[4] === 'off') opts.extra = {session: {disable_prepacking: '1'}};
  const t0 = process.hrtime.bigint();
  const s = await ort.InferenceSession.create(process.argv[3], opts);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(JSON.stringify({ms, hwm_kb: kb('VmHWM'), rss_kb: kb('VmRSS'), base_kb: base}));
  await s.release();
})();
"""


def build(onnxz, work):
    model = os.path.join(work, "model.onnx")
    if not os.path.exists(model):
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        r = np.random.default_rng(1)
        inits = [numpy_helper.from_array(r.standard_normal((4096, 4096), dtype=np.float32), n)
                 for n in ("w1", "w2")]
        inits.append(numpy_helper.from_array(
            r.standard_normal((24576, 4096), dtype=np.float32), "table"))
        nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
                 helper.make_node("MatMul", ["e", "w1"], ["h"]),
                 helper.make_node("MatMul", ["h", "w2"], ["y"])]
        g = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info("ids", TensorProto.INT64, [8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 4096])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 8
        onnx.save(m, model + ".tmp")
        os.rename(model + ".tmp", model)
    forms = {"single": model, "two-file": os.path.join(work, "two.onnx"),
             "stub": os.path.join(work, "stub.onnx")}
    if not os.path.exists(forms["two-file"]):
        subprocess.run([onnxz, "-q", "convert", model, forms["two-file"], "--external-data", "two.data"], check=True)
    if not os.path.exists(forms["stub"]):
        subprocess.run([onnxz, "-q", "convert", model, os.path.join(work, "model.onnxz")], check=True)
        subprocess.run([onnxz, "-q", "stub", os.path.join(work, "model.onnxz"), forms["stub"]], check=True)
    return forms


def probe(ort_dir, path, prepack):
    r = subprocess.run(["node", "-e", PROBE, "x", ort_dir, path, prepack], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench_runtime: node failed on {path}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
    osname = next((l.split("=", 1)[1].strip().strip('"') for l in open("/etc/os-release")
                   if l.startswith("PRETTY_NAME=")), platform.platform())
    return f"{cpu}, {os.cpu_count()} cores, {mem / (1 << 20):.0f} GiB, {osname}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("onnxz")
    ap.add_argument("ort_dir")
    ap.add_argument("--work", default="/tmp/onnxz-bench-runtime")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    a.ort_dir = os.path.abspath(a.ort_dir)
    forms = build(os.path.abspath(a.onnxz), a.work)
    runs = [(f, p) for p in ("on", "off") for f in forms]
    for f, p in runs:  # warm the page cache and the node/ORT files
        probe(a.ort_dir, forms[f], p)
    got = {k: [] for k in runs}
    for _ in range(a.rounds):
        for f, p in runs:
            got[(f, p)].append(probe(a.ort_dir, forms[f], p))
    med = {k: {m: statistics.median(x[m] for x in v) for m in ("ms", "hwm_kb", "rss_kb", "base_kb")}
           for k, v in got.items()}
    size = sum(os.path.getsize(os.path.join(a.work, n)) for n in ("model.onnx",))
    print(f"machine: {machine()}")
    print(f"model: {size / 1e6:.0f} MB ({size / (1 << 20):.0f} MiB), {a.rounds} rounds, medians; "
          f"node before loading: {med[runs[0]]['base_kb'] / 1024:.0f} MiB resident")
    print(f"{'form':10} {'prepack':8} {'create ms':>10} {'peak RSS MiB':>13} {'RSS after MiB':>14} "
          f"{'time ratio':>11} {'peak ratio':>11}")
    for f, p in runs:
        m, b = med[(f, p)], med[("single", p)]
        print(f"{f:10} {p:8} {m['ms']:10.0f} {m['hwm_kb'] / 1024:13.0f} {m['rss_kb'] / 1024:14.0f} "
              f"{m['ms'] / b['ms']:11.2f} {m['hwm_kb'] / b['hwm_kb']:11.2f}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"machine": machine(), "rounds": a.rounds,
                       "results": {f"{f}/{p}": v for (f, p), v in med.items()}}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
