#!/usr/bin/python3
"""What ONNX Runtime maps (spec/onnxz.md A-71, A-72): for each external tensor of a small
model, the mmap ORT makes and whether it was unmapped again before the session existed
(strace of mmap and munmap, in order; the process exits without releasing the session),
in three forms (two-file at alignment 64 and 4096, a
stub into the .onnxz) and with prepacking on and off.

The model: Gather (a 4 MiB table), MatMul (256 KiB weight), Add (a 1 KiB constant),
Gemm (128 KiB weight), Conv (2304-byte weight), built with python3-onnx; and, when a
PyTorch LSTM export is given (tests/runtime/export_torch.py writes lstm.onnx), that too.

usage: ort_maps.py ONNXZ_EXE ORT_DIR [--work DIR] [--lstm lstm.onnx]   (needs strace)
"""
import argparse
import os
import re
import subprocess
import sys

PROBE = r"""
const ort = require(require('path').resolve(process.argv[2], 'node_modules', 'onnxruntime-node'));
const fs = require('fs');
(async () => {
  const opts = {executionProviders: ['cpu'], intraOpNumThreads: 1};
  if (process.argv[4] === 'off') opts.extra = {session: {disable_prepacking: '1'}};
  const s = await ort.InferenceSession.create(process.argv[3], opts);
  process.stdout.write('created\n', () => process.exit(0));  // no release: no munmap after this
})();
"""


def build_ops(path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    r = np.random.default_rng(0)
    w = lambda n, s: numpy_helper.from_array(r.standard_normal(s).astype(np.float32), n)
    inits = [w("table", (4096, 256)), w("mm", (256, 256)), w("addc", (1, 256)),
             w("gemm_b", (256, 128)), w("conv_w", (64, 1, 3, 3))]
    nodes = [helper.make_node("Gather", ["table", "ids"], ["g"], axis=0),
             helper.make_node("MatMul", ["g", "mm"], ["m"]),
             helper.make_node("Add", ["m", "addc"], ["a"]),
             helper.make_node("Gemm", ["a", "gemm_b"], ["y"]),
             helper.make_node("Conv", ["img", "conv_w"], ["c"])]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "ops", [vi("ids", TensorProto.INT64, [4]),
                                         vi("img", TensorProto.FLOAT, [1, 1, 8, 8])],
                          [vi("y", TensorProto.FLOAT, [4, 128]),
                           vi("c", TensorProto.FLOAT, [1, 64, 6, 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.save(m, path)


def refs(model):
    import onnx
    m = onnx.load(model, load_external_data=False)
    out = []
    for t in onnx.external_data_helper._get_all_tensors(m):
        kv = {e.key: e.value for e in t.external_data}
        if kv:
            out.append((t.name, kv["location"], int(kv.get("offset", 0)), int(kv["length"])))
    return out


def observe(ort_dir, model, prepack, work):
    trace = os.path.join(work, "strace.txt")
    r = subprocess.run(["strace", "-f", "-e", "trace=openat,mmap,munmap", "-o", trace, "node",
                        "-e", PROBE, "x", ort_dir, model, prepack], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout != "created\n":
        raise SystemExit(f"ort_maps: {model}: {r.stderr.strip()}")
    # In order: a data file opened, then mapped (fd, offset, length) -> address; a munmap
    # of exactly that address and length ends the mapping.
    data_fds, maps = set(), []  # maps: [offset, length, address, still mapped]
    for line in open(trace):
        m = re.search(r'openat\(AT_FDCWD, "([^"]+)", O_RDONLY[^)]*\) = (\d+)', line)
        if m:
            if m.group(1).startswith(work) and not m.group(1).endswith(".onnx"):
                data_fds.add(int(m.group(2)))
            continue
        m = re.search(r"mmap\(NULL, (\d+), PROT_READ\|PROT_WRITE, MAP_PRIVATE, (\d+), "
                      r"(0x[0-9a-f]+|0)\) = (0x[0-9a-f]+)", line)
        if m and int(m.group(2)) in data_fds:
            maps.append([int(m.group(3), 16), int(m.group(1)), int(m.group(4), 16), True])
            data_fds.discard(int(m.group(2)))
            continue
        m = re.search(r"munmap\((0x[0-9a-f]+), (\d+)\)", line)
        if m:
            for mp in maps:
                if mp[3] and mp[2] == int(m.group(1), 16) and mp[1] == int(m.group(2)):
                    mp[3] = False
    rows = []
    for name, loc, off, length in refs(model):
        mp = next((mp for mp in maps if mp[0] == off & ~4095 and mp[1] == off - mp[0] + length), None)
        if mp is None:
            rows.append((name, off, length, "not mapped", ""))
        else:
            maps.remove(mp)
            rows.append((name, off, length, f"mmap offset {mp[0]:#x}, {mp[1]} bytes",
                         "kept" if mp[3] else "unmapped (copied)"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("onnxz")
    ap.add_argument("ort_dir")
    ap.add_argument("--work", default="/tmp/onnxz-ort-maps")
    ap.add_argument("--lstm")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    onnxz, ort_dir = os.path.abspath(a.onnxz), os.path.abspath(a.ort_dir)
    models = {"ops": os.path.join(work, "ops.onnx")}
    build_ops(models["ops"])
    if a.lstm:
        models["lstm"] = os.path.abspath(a.lstm)
    for name, src in models.items():
        forms = {}
        for form, args in (("two-file align 64", ["--external-data", name + ".d64"]),
                           ("two-file align 4096", ["--external-data", name + ".d4k", "--align", "4096"])):
            out = os.path.join(work, f"{name}.{len(forms)}.onnx")
            subprocess.run([onnxz, "-q", "convert", "-f", src, out, *args], check=True)
            forms[form] = out
        arc = os.path.join(work, name + ".onnxz")
        subprocess.run([onnxz, "-q", "convert", "-f", src, arc], check=True)
        subprocess.run([onnxz, "-q", "stub", "-f", arc, os.path.join(work, name + ".stub.onnx")], check=True)
        forms["stub into .onnxz"] = os.path.join(work, name + ".stub.onnx")
        for form, path in forms.items():
            for prepack in ("on", "off"):
                print(f"== {name}, {form}, prepacking {prepack}")
                for tname, off, length, how, kept in observe(ort_dir, path, prepack, work):
                    print(f"  {tname:16} offset {off:>8} length {length:>8}  {how:34} {kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
