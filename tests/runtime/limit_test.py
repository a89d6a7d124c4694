#!/usr/bin/env python3
"""limit_test.py ONNXZ ORT_DIR WORK - a single .onnx over 2 GiB (label `large`).

convert writes it (we read it back), but protobuf-based readers cannot: convert must say
so on stderr (not with -q), naming --external-data and .onnxz; ONNX Runtime is asked to
load the file to show the warning is true. The input is a sparse file (a model whose one
uint8 tensor of 2 GiB + 64 bytes is zeros at the end of the file), so only OUT is written.
"""
import json
import os
import subprocess
import sys

from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
N = (1 << 31) + 64


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def write_sparse_model(path):
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [N])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    head = model.SerializeToString(), graph.SerializeToString()
    model.ClearField("graph")
    # TensorProto: dims (1), data_type (2), name (8), raw_data (9) last: its zeros end the file.
    tensor = b"\x08" + varint(N) + b"\x10" + varint(TensorProto.UINT8) + b"\x42\x01w"
    tensor_head = tensor + b"\x4a" + varint(N)
    tensor_len = len(tensor_head) + N
    graph_head = head[1] + b"\x2a" + varint(tensor_len)  # initializer (5)
    graph_len = len(graph_head) + len(tensor_head) + N
    prefix = model.SerializeToString() + b"\x3a" + varint(graph_len)  # graph (7) last
    with open(path, "wb") as f:
        f.write(prefix + graph_head + tensor_head)
        f.truncate(len(prefix) + graph_len)


def run(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True)


def main():
    onnxz, ort_dir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    src, out = os.path.join(work, "big.onnx"), os.path.join(work, "out.onnx")
    failures = []
    try:
        write_sparse_model(src)
        r = run(onnxz, "convert", "-f", src, out)
        if r.returncode != 0:
            failures.append(f"convert: exit {r.returncode}: {r.stderr}")
        elif not ("warning" in r.stderr and "--external-data" in r.stderr and ".onnxz" in r.stderr):
            failures.append(f"convert to a {os.path.getsize(out)}-byte .onnx: no warning naming "
                            f"--external-data and .onnxz on stderr: {r.stderr!r}")
        else:
            print("ok warning: " + r.stderr.strip())
        # The warning is true: ONNX Runtime refuses the file.
        jobs = os.path.join(work, "jobs.json")
        with open(jobs, "w") as f:
            json.dump([{"id": "big", "model": out, "feeds": {}}], f)
        r = run("node", os.path.join(HERE, "runner.js"), ort_dir, jobs)
        res = json.loads(r.stdout.splitlines()[0]) if r.stdout else {}
        if "error" not in res:
            failures.append(f"ORT loaded the {os.path.getsize(out)}-byte .onnx: {r.stdout}{r.stderr}")
        else:
            print("ok ORT refuses it: " + res["error"][:200])
        r = run(onnxz, "-q", "convert", "-f", src, out)
        if r.returncode != 0 or r.stderr:
            failures.append(f"convert -q: exit {r.returncode}, stderr {r.stderr!r} (want 0, nothing)")
        os.unlink(out)
        r = run(onnxz, "convert", src, os.path.join(work, "two.onnx"), "--external-data", "two.data")
        if r.returncode != 0 or "warning" in r.stderr:
            failures.append(f"two-file: exit {r.returncode}, stderr {r.stderr!r} (want 0, no warning)")
    finally:
        for f in ("big.onnx", "out.onnx", "two.onnx", "two.data"):
            if os.path.exists(os.path.join(work, f)):
                os.unlink(os.path.join(work, f))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
