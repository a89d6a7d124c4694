#!/usr/bin/python3
"""Graph decoding benchmark: onnxz against protobuf's own parser, side by side.

Generates (once, cached in WORKDIR) with python3-onnx:
  heavy.onnx  a graph-only model of 100,000 nodes shaped as exporters write them: a decoder
              stack whose nodes are named `/model/layers.N/mlp/act/LeakyRelu` and the like
              (LayerNormalization, MatMul, Transpose, Mul, Softmax, Add, LeakyRelu), inputs
              and outputs named the same way (`..._output_0`, `model.layers.N....weight`),
              float (epsilon, alpha), int and ints attributes, a doc_string on every tenth
              node and a value_info with type and shape for every node output
  graph.onnx  bench_load.py's lighter graph: 100,000 Add nodes with short names
then, alternating the contenders round by round so that machine noise hits all alike,
measures for each file:
  floor.copy      copy the file's bytes, already in memory, into memory already faulted in,
                  then read every byte (onnxz bench copy): what touching the input costs
  onnxz.decode    onnxz bench decode: the file's bytes read into memory first (not timed),
                  decoded into a ModelProto (copying); the first decode of a fresh process
                  and the median of in-process repeats (each model freed before the next)
  onnxz.load      onnxz bench load: the same from the file (mapped), as the tool loads
  protobuf.parse  ModelProto.ParseFromString on bytes already in memory, in python3-onnx's
                  protobuf (its C++ implementation on Debian: printed), first and repeats
Prints medians, the ratios protobuf.parse / onnxz.decode (in-process repeats and first
parse), and the memory the decoded model holds: the growth of the resident set during the
first decode (/proc/self/status, peak reset just before), for onnxz and protobuf alike.

--fresh N measures stalls instead: N fresh processes per contender, each timing its first
decode (onnxz bench decode --repeat 1) of the heavy graph, contenders interleaved; every
ONNXZ_EXE given is one contender (e.g. two builds), protobuf's first parse and two floors
are measured alongside as the machine's noise: floor.read (read the file into fresh
memory) and floor.touch (first touch, in a fresh process, of as much fresh memory as the
decode's arena, advised for huge pages as the arena's blocks are). Prints median, p90
and max.

--cpp measures against protobuf's C++ generated code instead, in one process:
graph_vs_protobuf.cc is built (protoc --cpp_out over python3-onnx's onnx.proto, g++, Debian's
libprotobuf-dev) against the libonnxcore of each --lib DIR (default: the build tree of the
first ONNXZ_EXE), then run --runs times per graph (heavy, light and each --graph FILE), libraries
alternating run by run; each run is one process alternating oc_model_load_memory and
ModelProto::ParseFromString for --rounds rounds. Prints per run the first decode's ratio
protobuf / onnxz and the in-process ratio (medians of the rounds after the first), by the
wall clock and by the thread's CPU time, and onnxz's page faults in those rounds.

usage: bench_graph.py ONNXZ_EXE [ONNXZ_EXE ...] [--work DIR] [--rounds N] [--repeat N]
                      [--fresh N] [--json FILE]
       bench_graph.py ONNXZ_EXE --cpp [--lib DIR ...] [--graph FILE ...] [--runs N]
                      [--rounds N]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_load import PY, generate, machine, timed, warm  # noqa: E402


def generate_heavy(work):
    os.makedirs(work, exist_ok=True)
    h = os.path.join(work, "heavy.onnx")
    script = f"""
import os, onnx
from onnx import helper, TensorProto
H = 4096
def layer(n, x):
    p, w, out = f"/model/layers.{{n}}", f"model.layers.{{n}}", []
    def node(op, name, ins, shape, **attrs):
        o = f"{{p}}/{{name}}_output_0"
        out.append((helper.make_node(op, ins, [o], name=f"{{p}}/{{name}}", **attrs), o, shape))
        return o
    bs = ["batch", "seq"]
    h = node("LayerNormalization", "input_layernorm/LayerNormalization",
             [x, f"{{w}}.input_layernorm.weight"], bs + [H], epsilon=1e-5, axis=-1)
    q = node("MatMul", "self_attn/q_proj/MatMul", [h, f"{{w}}.self_attn.q_proj.weight"], bs + [H])
    k = node("MatMul", "self_attn/k_proj/MatMul", [h, f"{{w}}.self_attn.k_proj.weight"], bs + [H])
    v = node("MatMul", "self_attn/v_proj/MatMul", [h, f"{{w}}.self_attn.v_proj.weight"], bs + [H])
    q = node("Transpose", "self_attn/Transpose", [q], ["batch", 32, "seq", 128], perm=[0, 2, 1, 3])
    k = node("Transpose", "self_attn/Transpose_1", [k], ["batch", 32, 128, "seq"], perm=[0, 2, 3, 1])
    s = node("MatMul", "self_attn/MatMul", [q, k], ["batch", 32, "seq", "seq"])
    s = node("Mul", "self_attn/Mul", [s, "/model/constants/scale"], ["batch", 32, "seq", "seq"])
    s = node("Softmax", "self_attn/Softmax", [s], ["batch", 32, "seq", "seq"], axis=-1)
    a = node("MatMul", "self_attn/MatMul_1", [s, v], ["batch", 32, "seq", 128])
    a = node("Transpose", "self_attn/Transpose_2", [a], ["batch", "seq", 32, 128], perm=[0, 2, 1, 3])
    a = node("MatMul", "self_attn/o_proj/MatMul", [a, f"{{w}}.self_attn.o_proj.weight"], bs + [H])
    x = node("Add", "Add", [x, a], bs + [H])
    h = node("LayerNormalization", "post_attention_layernorm/LayerNormalization",
             [x, f"{{w}}.post_attention_layernorm.weight"], bs + [H], epsilon=1e-5, axis=-1)
    h = node("MatMul", "mlp/fc1/MatMul", [h, f"{{w}}.mlp.fc1.weight"], bs + [4 * H])
    h = node("Add", "mlp/fc1/Add", [f"{{w}}.mlp.fc1.bias", h], bs + [4 * H])
    h = node("LeakyRelu", "mlp/act/LeakyRelu", [h], bs + [4 * H], alpha=0.01)
    h = node("MatMul", "mlp/fc2/MatMul", [h, f"{{w}}.mlp.fc2.weight"], bs + [H])
    h = node("Add", "mlp/fc2/Add", [f"{{w}}.mlp.fc2.bias", h], bs + [H])
    x = node("Add", "Add_1", [x, h], bs + [H])
    return out, x
if not os.path.exists({h!r}):
    nodes, vis, x, n = [], [], "input_embeds", 0
    while len(nodes) < 100000:
        out, x = layer(n, x)
        for nd, o, shape in out[:100000 - len(nodes)]:
            if len(nodes) % 10 == 0:
                nd.doc_string = f"{{nd.op_type}} exported from torch (modeling_decoder.py, layer {{n}})"
            nodes.append(nd)
            vis.append(helper.make_tensor_value_info(o, TensorProto.FLOAT, shape))
        n += 1
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", "seq", H])
    g = helper.make_graph(nodes, "decoder", [vi("input_embeds")], [vi(nodes[-1].output[0])],
                          value_info=vis)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    open({h!r} + '.tmp', 'wb').write(m.SerializeToString()); os.replace({h!r} + '.tmp', {h!r})
"""
    subprocess.run([PY, "-c", script], check=True)
    return h


def generate_conv(work):
    """conv.onnx: 100,000 nodes of a convolutional backbone, unlike heavy.onnx's decoder (Conv
    with kernel_shape, pads, strides, dilations and group, BatchNormalization with two
    floats, Relu, MaxPool, Concat, Reshape, Gemm), numeric shapes, no doc strings."""
    c = os.path.join(work, "conv.onnx")
    script = f"""
import os, onnx
from onnx import helper, TensorProto
nodes, vis, x, n = [], [], "images", 0
while len(nodes) < 100000:
    p, w = f"/backbone/stage{{n % 5}}/block{{n}}", f"backbone.block{{n}}"
    def node(op, name, ins, shape, **attrs):
        o = f"{{p}}/{{name}}/{{op}}_output_0"
        nodes.append(helper.make_node(op, ins, [o], name=f"{{p}}/{{name}}/{{op}}", **attrs))
        vis.append(helper.make_tensor_value_info(o, TensorProto.FLOAT, shape))
        return o
    ch = 64 * (1 + n % 8)
    s = [1, ch, 56, 56]
    y = node("Conv", "conv1", [x, f"{{w}}.conv1.weight", f"{{w}}.conv1.bias"], s,
             kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1)
    y = node("BatchNormalization", "bn1", [y, f"{{w}}.bn1.weight", f"{{w}}.bn1.bias",
             f"{{w}}.bn1.running_mean", f"{{w}}.bn1.running_var"], s, epsilon=1e-5, momentum=0.9)
    y = node("Relu", "relu1", [y], s)
    z = node("Conv", "conv2", [y, f"{{w}}.conv2.weight"], s, kernel_shape=[1, 1],
             pads=[0, 0, 0, 0], strides=[1, 1], group=1)
    z = node("MaxPool", "pool", [z], [1, ch, 28, 28], kernel_shape=[2, 2], strides=[2, 2])
    z = node("Concat", "cat", [z, z], [1, 2 * ch, 28, 28], axis=1)
    z = node("Reshape", "flat", [z, "/backbone/constants/shape"], [1, 2 * ch * 784])
    x = node("Gemm", "fc", [z, f"{{w}}.fc.weight", f"{{w}}.fc.bias"], [1, 1000],
             alpha=1.0, beta=1.0, transB=1)
    n += 1
if not os.path.exists({c!r}):
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes[:100000], "backbone", [vi("images", TensorProto.FLOAT, [1, 3, 224, 224])],
                          [vi(nodes[99999].output[0], TensorProto.FLOAT, [1, 1000])],
                          value_info=vis[:100000])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    open({c!r} + '.tmp', 'wb').write(m.SerializeToString()); os.replace({c!r} + '.tmp', {c!r})
"""
    if not os.path.exists(c):
        subprocess.run([PY, "-c", script], check=True)
    return c


# REPEAT parses of bytes in memory, each ModelProto dropped before the next; the first
# parse's resident-set growth measured as onnxz bench decode measures it.
PROTOBUF_PARSE = r"""
import json, statistics, sys, time
from google.protobuf.internal import api_implementation
import onnx
def rss(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1])
    return 0
b = open(sys.argv[1], 'rb').read()
ts = []
for i in range(int(sys.argv[2])):
    if i == 0:
        try:
            open('/proc/self/clear_refs', 'w').write('5')
        except OSError:
            pass
        before = rss('VmRSS:')
    m = onnx.ModelProto()
    t = time.perf_counter(); m.ParseFromString(b); ts.append(time.perf_counter() - t)
    if i == 0:
        grown = rss('VmHWM:') - before
    del m
print(json.dumps({'first_s': ts[0], 'median_s': statistics.median(ts), 'rss_kib': grown,
                  'impl': api_implementation.Type()}))
"""


# A fresh process maps N bytes of anonymous memory, advised for huge pages as the arena's
# blocks are, and writes one byte per 4 KiB page: what first touching the decoded model's
# memory costs on this machine.
TOUCH = r"""
import json, mmap, sys, time
n = int(sys.argv[1])
t = time.perf_counter()
m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
if hasattr(mmap, "MADV_HUGEPAGE"):
    m.madvise(mmap.MADV_HUGEPAGE)
for i in range(0, n, 4096):
    m[i] = 1
print(json.dumps({"first_s": time.perf_counter() - t}))
"""


def pct(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def loadavg():
    try:
        return open("/proc/loadavg").read().split()[0]
    except OSError:
        return "?"


def fresh(exes, heavy, n):
    """n fresh processes per contender, interleaved; the first decode's seconds of each."""
    steps = {}
    for i, z in enumerate(exes):
        steps[f"onnxz.decode[{i}]" if len(exes) > 1 else "onnxz.decode"] = \
            [z, "bench", "decode", heavy, "--repeat", "1", "--json"]
    steps["protobuf.parse"] = [PY, "-c", PROTOBUF_PARSE, heavy, "1"]
    steps["floor.read"] = [exes[0], "bench", "read", heavy, "--repeat", "1", "--json"]
    # The machine's own first touch of as much fresh memory as the decode's arena, with the
    # same huge-page advice: a stall here is the machine's, not the decoder's.
    arena = timed([exes[0], "bench", "decode", heavy, "--repeat", "1", "--json"])[0]["arena_bytes"]
    steps["floor.touch"] = [PY, "-c", TOUCH, str(arena)]
    warm(heavy)
    got = {k: [] for k in steps}
    la = [loadavg()]
    for r in range(n):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for k in order:
            rep, wall = timed(steps[k])
            got[k].append(rep["first_s"])
    la.append(loadavg())
    print(f"\n== first decode in a fresh process, {os.path.basename(heavy)}: {n} processes each "
          f"(load average {la[0]} -> {la[1]})")
    if len(exes) > 1:
        for i, z in enumerate(exes):
            print(f"  [{i}] {z}")
    print(f"{'contender':18} {'median':>9} {'p90':>9} {'max':>9} {'> 2x median':>12}")
    out = {}
    for k, v in got.items():
        med = statistics.median(v)
        slow = sum(1 for x in v if x > 2 * med)
        print(f"{k:18} {med:8.4f}s {pct(v, 0.9):8.4f}s {max(v):8.4f}s {slow:>12}")
        out[k] = {"median_s": med, "p90_s": pct(v, 0.9), "max_s": max(v), "all_s": v}
    return out


def build_cpp(work, onnxz_exe):
    """graph_vs_protobuf built in WORK/cpp; returns its path."""
    out = os.path.join(work, "cpp")
    os.makedirs(out, exist_ok=True)
    import onnx  # noqa: F401 (only to find its onnx.proto; run under /usr/bin/python3)
    proto = os.path.join(os.path.dirname(onnx.__file__), "onnx.proto")
    here = os.path.dirname(os.path.abspath(__file__))
    include = os.path.join(here, "..", "libonnxcore", "include")
    exe = os.path.join(out, "graph_vs_protobuf")
    subprocess.run(["cp", proto, out], check=True)
    subprocess.run(["protoc", f"--cpp_out={out}", f"--proto_path={out}", "onnx.proto"], check=True)
    lib = default_lib(onnxz_exe)
    subprocess.run(["g++", "-O2", "-o", exe, os.path.join(here, "graph_vs_protobuf.cc"),
                    os.path.join(out, "onnx.pb.cc"), f"-I{out}", f"-I{include}", f"-L{lib}",
                    "-lonnxcore", "-lprotobuf", "-lpthread"], check=True)
    return exe


def default_lib(onnxz_exe):
    """The directory of libonnxcore.so in the build tree of ONNXZ_EXE (BUILD/tools/onnxz)."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(onnxz_exe)))
    if os.path.exists(os.path.join(build, "libonnxcore", "libonnxcore.so")):
        return os.path.join(build, "libonnxcore")
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d != "testwork"]  # the tests' own installs
        if "libonnxcore.so" in files:
            return root
    raise SystemExit(f"no libonnxcore.so under {build}: pass --lib DIR")


def cpp(a, graphs):
    exe = build_cpp(a.work, a.onnxz[0])
    libs = a.lib or [default_lib(a.onnxz[0])]
    results = {}
    for path in graphs:
        warm(path)
        runs = {lib: [] for lib in libs}
        la = [loadavg()]
        for r in range(a.runs):
            for lib in (libs if r % 2 == 0 else list(reversed(libs))):
                env = dict(os.environ, LD_LIBRARY_PATH=lib)
                p = subprocess.run([exe, path, str(a.rounds)], capture_output=True, text=True,
                                   env=env, check=True)
                runs[lib].append(json.loads(p.stdout))
        la.append(loadavg())
        print(f"\n== {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.1f} MB): protobuf C++ "
              f"ParseFromString / onnxz decode, {a.runs} runs of {a.rounds} rounds in one process "
              f"(load average {la[0]} -> {la[1]})")
        for lib in libs:
            print(f"  libonnxcore of {lib}")
            print(f"  {'run':>4} {'first wall':>11} {'wall':>7} {'first cpu':>10} {'cpu':>7} "
                  f"{'onnxz cpu':>10} {'protobuf cpu':>13} {'onnxz faults':>13}")
            for i, j in enumerate(runs[lib]):
                oz, pb = j["onnxz"], j["protobuf"]
                print(f"  {i + 1:>4} {pb['first_wall_s'] / oz['first_wall_s']:10.2f}x "
                      f"{pb['wall_s'] / oz['wall_s']:6.2f}x "
                      f"{pb['first_cpu_s'] / oz['first_cpu_s']:9.2f}x {pb['cpu_s'] / oz['cpu_s']:6.2f}x "
                      f"{oz['cpu_s']:9.4f}s {pb['cpu_s']:12.4f}s {oz['faults']:>13}")
            worst = min(min(j["protobuf"]["wall_s"] / j["onnxz"]["wall_s"],
                            j["protobuf"]["cpu_s"] / j["onnxz"]["cpu_s"]) for j in runs[lib])
            print(f"  in-process ratio >= 2 in every run (wall and cpu): "
                  f"{'met' if worst >= 2 else 'NOT met'} (worst {worst:.2f}x)")
        results[os.path.basename(path)] = runs
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnxz", nargs="+")
    ap.add_argument("--work", default="/tmp/onnxz-bench")
    ap.add_argument("--rounds", type=int, help="default 5 (--cpp: 11)")
    ap.add_argument("--repeat", type=int, default=5, help="in-process parses per round")
    ap.add_argument("--fresh", type=int, default=0)
    ap.add_argument("--json")
    ap.add_argument("--cpp", action="store_true", help="against protobuf's C++ generated code")
    ap.add_argument("--lib", action="append", help="--cpp: a directory holding libonnxcore.so")
    ap.add_argument("--graph", action="append", help="--cpp: another graph to measure")
    ap.add_argument("--runs", type=int, default=5, help="--cpp: processes per graph and library")
    a = ap.parse_args()
    a.rounds = a.rounds or (11 if a.cpp else 5)
    heavy = generate_heavy(a.work)
    if a.cpp:
        graphs = [heavy, generate_conv(a.work), generate(a.work)[1]] + (a.graph or [])
        results = {"cpp": cpp(a, graphs)}
    elif a.fresh:
        results = {"fresh": fresh(a.onnxz, heavy, a.fresh)}
    else:
        _, graph = generate(a.work)
        z, rp = a.onnxz[0], str(a.repeat)
        results = {}
        for path, label in ((heavy, "heavy graph (100,000 named nodes, value_info)"),
                            (graph, "light graph (100,000 Add nodes)")):
            steps = {
                "floor.copy": [z, "bench", "copy", path, "--repeat", rp, "--json"],
                "onnxz.decode": [z, "bench", "decode", path, "--repeat", rp, "--json"],
                "onnxz.load": [z, "bench", "load", path, "--repeat", rp, "--json"],
                "protobuf.parse": [PY, "-c", PROTOBUF_PARSE, path, rp],
            }
            warm(path)
            first = {k: [] for k in steps}
            inproc = {k: [] for k in steps}
            mem = {k: [] for k in ("onnxz.decode", "protobuf.parse")}
            arena, impl, la = [], "?", [loadavg()]
            for r in range(a.rounds):
                order = list(steps) if r % 2 == 0 else list(reversed(steps))  # alternate
                for k in order:
                    rep, _ = timed(steps[k])
                    first[k].append(rep["first_s"])
                    inproc[k].append(rep["median_s"])
                    if k in mem:
                        mem[k].append(rep["rss_kib"] * 1024)
                    arena += [rep["arena_bytes"]] if "arena_bytes" in rep else []
                    impl = rep.get("impl", impl)
            la.append(loadavg())
            med = {k: statistics.median(v) for k, v in first.items()}
            rep_med = {k: statistics.median(v) for k, v in inproc.items()}
            mem_med = {k: statistics.median(v) for k, v in mem.items()}
            print(f"\n== {label}: {os.path.getsize(path) / 1e6:.1f} MB, median of {a.rounds} "
                  f"rounds of {a.repeat} (load average {la[0]} -> {la[1]})")
            print(f"{'contender':16} {'first':>10} {'repeat':>10} {'pb/this first':>14} "
                  f"{'pb/this repeat':>15}")
            for k in steps:
                print(f"{k:16} {med[k]:9.4f}s {rep_med[k]:9.4f}s "
                      f"{med['protobuf.parse'] / med[k]:13.2f}x "
                      f"{rep_med['protobuf.parse'] / rep_med[k]:14.2f}x")
            print(f"protobuf implementation: {impl}")
            print(f"memory held by the decoded model (resident set growth, first decode): "
                  f"onnxz {mem_med['onnxz.decode'] / 1e6:.1f} MB (arena "
                  f"{statistics.median(arena) / 1e6:.1f} MB), protobuf "
                  f"{mem_med['protobuf.parse'] / 1e6:.1f} MB")
            ratio = rep_med["protobuf.parse"] / rep_med["onnxz.decode"]
            print(f"target: protobuf.parse / onnxz.decode (in-process) {ratio:.2f}x "
                  f"(target >= 2: {'met' if ratio >= 2 else 'NOT met'})")
            results[label] = {"first_s": med, "in_process_s": rep_med, "rss_bytes": mem_med,
                              "arena_bytes": statistics.median(arena), "protobuf": impl,
                              "size": os.path.getsize(path)}
    print(f"\nmachine: {machine()}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
