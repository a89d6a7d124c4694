#!/usr/bin/env python3
"""gen_models.py OUTDIR [--reduced] - the python3-onnx half of the runtime corpus.

Each model is built with onnx.helper from fixed data and checked with onnx.checker; each
makes ONNX Runtime read its tensors (every output depends on the initializers), so a form
of it that loses, moves or misreads a byte gives other outputs or fails to load:
  dtypes       an initializer of every dtype ORT computes with (float, float16, double,
               int8, uint8, int16, int32, int64, bool, string), raw_data and typed
               fields, each reaching an output
  shapes       what ORT needs at graph-resolve time: Pad with int64[8] pads, Reshape to
               an 8-d shape, Slice starts/ends/axes/steps, Expand and Tile shape inputs
  empty        empty tensors ([0], [2,0,3]) and 0-d scalars, in raw_data and typed fields
  sparse       a sparse initializer (values and int64 indices) used by MatMul
  control      If and Loop whose subgraphs have their own initializers and Constant nodes
  many         160 initializers of odd sizes (1..4099 floats), summed
  big          one 72 MiB float initializer (more than 64 MiB), read through Gather
(The 100 MB embedding table is torch's: export_torch.py.)
--reduced (the sanitizer build) makes `big` 1 MiB.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 14)]


def rng(seed):
    return np.random.default_rng(seed)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def save(out, name, nodes, inputs, outputs, inits, sparse=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits,
                              sparse_initializer=list(sparse))
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="onnxz-runtime-corpus")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))


def dtypes(out):
    r = rng(1)
    inits, nodes, outs = [], [], []
    arrays = {
        "f32": r.standard_normal((3, 5)).astype(np.float32),
        "f16": r.standard_normal((7,)).astype(np.float16),
        "f64": r.standard_normal((4, 3)).astype(np.float64),
        "i8": r.integers(-128, 127, (33,), dtype=np.int8),
        "u8": r.integers(0, 255, (65,), dtype=np.uint8),
        "i16": r.integers(-3000, 3000, (9,), dtype=np.int16),
        "i32": r.integers(-10**6, 10**6, (5, 5), dtype=np.int32),
        "i64": r.integers(-10**12, 10**12, (17,), dtype=np.int64),
        "b": r.integers(0, 2, (19,)).astype(np.bool_),
    }
    for name, a in arrays.items():
        inits.append(numpy_helper.from_array(a, name))  # raw_data
        # The same values in typed fields (float_data, int32_data, ...): never moved out.
        typed = helper.make_tensor(name + "_typed", onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype],
                                   a.shape, a.flatten().tolist())
        inits.append(typed)
        elem = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype]
        for src in (name, name + "_typed"):
            nodes.append(helper.make_node("Identity", [src], [src + "_out"]))
            outs.append(vi(src + "_out", elem, list(a.shape)))
    # Computing with them, not only copying: ORT's kernels read the mapped bytes.
    nodes.append(helper.make_node("Cast", ["i8"], ["i8f"], to=TensorProto.FLOAT))
    nodes.append(helper.make_node("ReduceSum", ["i8f"], ["i8sum"], keepdims=0))
    outs.append(vi("i8sum", TensorProto.FLOAT, []))
    nodes.append(helper.make_node("Add", ["x", "f32"], ["xf"]))
    outs.append(vi("xf", TensorProto.FLOAT, [3, 5]))
    strings = helper.make_tensor("s", TensorProto.STRING, [4],
                                 [b"alpha", b"", b"\xce\xbb-lambda", b"x" * 300])
    inits.append(strings)
    nodes.append(helper.make_node("Identity", ["s"], ["s_out"]))
    outs.append(vi("s_out", TensorProto.STRING, [4]))
    save(out, "dtypes", nodes, [vi("x", TensorProto.FLOAT, [3, 5])], outs, inits)


def shapes(out):
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    inits = [
        i64("pads", [0, 0, 1, 2, 0, 0, 2, 1]),                  # int64[8]: 64 bytes
        i64("shape8", [1, 2, 1, 3, 1, 2, 1, 2]),                # an 8-d Reshape: 64 bytes
        i64("starts", [0, 1]), i64("ends", [2, 4]), i64("axes", [0, 1]), i64("steps", [1, 2]),
        i64("expand", [3, 2, 4]), i64("repeats", [2, 1, 3]),
        numpy_helper.from_array(np.array(0.25, dtype=np.float32), "padv"),
    ]
    x = vi("x", TensorProto.FLOAT, [2, 3, 4])
    nodes = [
        helper.make_node("Unsqueeze", ["x", "ax0"], ["x4"]),
        helper.make_node("Pad", ["x4", "pads", "padv"], ["padded"], mode="constant"),
        helper.make_node("Reshape", ["x", "shape8"], ["r8"]),
        helper.make_node("Reshape", ["x", "shape2"], ["x2"]),
        helper.make_node("Slice", ["x2", "starts", "ends", "axes", "steps"], ["sliced"]),
        helper.make_node("ReduceMean", ["x"], ["row"], axes=[0, 1], keepdims=1),
        helper.make_node("Expand", ["row", "expand"], ["expanded"]),
        helper.make_node("Tile", ["x", "repeats"], ["tiled"]),
    ]
    inits += [i64("ax0", [0]), i64("shape2", [2, 12])]
    outs = [vi("padded", TensorProto.FLOAT, [1, 2, 6, 7]),
            vi("r8", TensorProto.FLOAT, [1, 2, 1, 3, 1, 2, 1, 2]),
            vi("sliced", TensorProto.FLOAT, [2, 2]), vi("expanded", TensorProto.FLOAT, [3, 2, 4]),
            vi("tiled", TensorProto.FLOAT, [4, 3, 12])]
    save(out, "shapes", nodes, [x], outs, inits)


def empty(out):
    inits = [
        numpy_helper.from_array(np.zeros((0,), np.float32), "e0"),           # raw_data, 0 bytes
        numpy_helper.from_array(np.zeros((2, 0, 3), np.int64), "e203"),
        helper.make_tensor("e0_typed", TensorProto.FLOAT, [0], []),
        numpy_helper.from_array(np.array(3.5, np.float32), "scalar"),        # 0-d, 4 bytes
        numpy_helper.from_array(np.array(-7, np.int64), "scalar_i"),
        helper.make_tensor("scalar_typed", TensorProto.DOUBLE, [], [2.25]),
    ]
    x = vi("x", TensorProto.FLOAT, [0])
    nodes = [
        helper.make_node("Concat", ["e0", "x"], ["cat"], axis=0),
        helper.make_node("Identity", ["e203"], ["e203_out"]),
        helper.make_node("Identity", ["e0_typed"], ["e0t_out"]),
        helper.make_node("Mul", ["scalar", "scalar"], ["sq"]),
        helper.make_node("Neg", ["scalar_i"], ["neg"]),
        helper.make_node("Identity", ["scalar_typed"], ["st_out"]),
        helper.make_node("Shape", ["e203"], ["shape_out"]),
    ]
    outs = [vi("cat", TensorProto.FLOAT, [0]), vi("e203_out", TensorProto.INT64, [2, 0, 3]),
            vi("e0t_out", TensorProto.FLOAT, [0]), vi("sq", TensorProto.FLOAT, []),
            vi("neg", TensorProto.INT64, []), vi("st_out", TensorProto.DOUBLE, []),
            vi("shape_out", TensorProto.INT64, [3])]
    save(out, "empty", nodes, [x], outs, inits)


def sparse(out):
    r = rng(3)
    values = numpy_helper.from_array(r.standard_normal(40).astype(np.float32), "sp")
    indices = numpy_helper.from_array(np.sort(r.choice(64 * 32, 40, replace=False)).astype(np.int64),
                                      "sp_indices")
    sp = helper.make_sparse_tensor(values, indices, [64, 32])
    nodes = [helper.make_node("MatMul", ["x", "sp"], ["y"])]
    save(out, "sparse", nodes, [vi("x", TensorProto.FLOAT, [2, 64])],
         [vi("y", TensorProto.FLOAT, [2, 32])], [], sparse=[sp])


def control(out):
    r = rng(4)
    f = lambda name, shape: numpy_helper.from_array(r.standard_normal(shape).astype(np.float32), name)
    const = lambda out_name, arr: helper.make_node(
        "Constant", [], [out_name], value=numpy_helper.from_array(arr, out_name + "_v"))
    then_g = helper.make_graph(
        [const("tc", r.standard_normal(64).astype(np.float32)),
         helper.make_node("Mul", ["x", "then_w"], ["t1"]),
         helper.make_node("Add", ["t1", "tc"], ["then_out"])],
        "then", [], [vi("then_out", TensorProto.FLOAT, [64])], initializer=[f("then_w", [64])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["x", "else_w"], ["else_out"])],
        "else", [], [vi("else_out", TensorProto.FLOAT, [64])], initializer=[f("else_w", [64])])
    body = helper.make_graph(
        [const("bc", r.standard_normal(64).astype(np.float32)),
         helper.make_node("Mul", ["acc_in", "body_w"], ["m"]),
         helper.make_node("Add", ["m", "bc"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("acc_in", TensorProto.FLOAT, [64])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [64])],
        initializer=[numpy_helper.from_array((0.5 + r.random(64) / 2).astype(np.float32), "body_w")])
    inits = [numpy_helper.from_array(np.array(True), "yes"),
             numpy_helper.from_array(np.array(False), "no"),
             numpy_helper.from_array(np.array(3, np.int64), "trips")]
    nodes = [
        helper.make_node("If", ["yes"], ["if_then"], then_branch=then_g, else_branch=else_g),
        helper.make_node("If", ["no"], ["if_else"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["trips", "yes", "x"], ["loop_out"], body=body),
    ]
    save(out, "control", nodes, [vi("x", TensorProto.FLOAT, [64])],
         [vi("if_then", TensorProto.FLOAT, [64]), vi("if_else", TensorProto.FLOAT, [64]),
          vi("loop_out", TensorProto.FLOAT, [64])], inits)


def many(out):
    r = rng(5)
    inits, nodes = [], []
    for i in range(160):
        n = 1 + (i * 26 + 7) % 4099  # odd sizes, 1 to 4099 floats
        inits.append(numpy_helper.from_array(r.standard_normal(n).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("ReduceSum", [f"w{i}"], [f"s{i}"], keepdims=1))
    nodes.append(helper.make_node("Concat", [f"s{i}" for i in range(160)], ["all"], axis=0))
    nodes.append(helper.make_node("Add", ["all", "x"], ["y"]))
    save(out, "many", nodes, [vi("x", TensorProto.FLOAT, [160])],
         [vi("y", TensorProto.FLOAT, [160])], inits)


def gather_table(out, name, rows, cols, seed):
    # A float table read through Gather at fixed rows (the first, the last, in between):
    # random bytes from a fixed seed, so a misplaced window gives other outputs.
    table = rng(seed).standard_normal((rows, cols), dtype=np.float32)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["y"], axis=0),
             helper.make_node("ReduceSum", ["table"], ["total"], keepdims=0)]
    save(out, name, nodes, [vi("ids", TensorProto.INT64, [5])],
         [vi("y", TensorProto.FLOAT, [5, cols]), vi("total", TensorProto.FLOAT, [])],
         [numpy_helper.from_array(table, "table")])


def main():
    out = sys.argv[1]
    reduced = "--reduced" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    for gen in (dtypes, shapes, empty, sparse, control, many):
        gen(out)
    if reduced:
        gather_table(out, "big", 1024, 256, 6)            # 1 MiB
    else:
        gather_table(out, "big", 18 * 1024 + 5, 1024, 6)  # 72 MiB + 20 KiB: over 64 MiB


if __name__ == "__main__":
    main()
