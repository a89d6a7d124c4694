#!/usr/bin/python3
"""The reverse oracle: python3-onnx reads the model writemodel.c built with libonnxcore.

Loads it with onnx.load, runs the checker (full_check: with strict shape inference),
checks every field writemodel.c sets and every tensor's values via numpy_helper.to_array,
and checks that protobuf re-serializes the file to the very same bytes (what we write for a
message built from scratch is canonical).

Usage: /usr/bin/python3 check_written.py MODEL.onnx
"""
import math
import struct
import sys

from oracle_common import require_onnx

failures = []


def expect(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def float_raw(np, count):
    """f(i) = (i % 1000) * 0.25 - 1, as writemodel.c's set_float_raw computes it."""
    i = np.arange(count, dtype=np.int64)
    return (i % 1000).astype(np.float32) * np.float32(0.25) - np.float32(1.0)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    onnx = require_onnx()
    import numpy as np
    from onnx import numpy_helper

    with open(sys.argv[1], "rb") as f:
        data = f.read()
    m = onnx.load_from_string(data)
    expect("re-serialized by protobuf", m.SerializeToString() == data, True)
    onnx.checker.check_model(m, full_check=True)

    expect("ir_version", m.ir_version, 8)
    expect("producer_name", m.producer_name, "onnxz-oracle")
    expect("domain", m.domain, "ai.onnxz.test")
    expect("model_version", m.model_version, -5)
    expect("doc_string", m.doc_string, "reverse oracle model é")
    expect("opset_import", [(o.domain, o.version) for o in m.opset_import],
           [("", 17), ("ai.onnxz.test", 1)])
    expect("metadata_props", [(p.key, p.value, p.HasField("value")) for p in m.metadata_props],
           [("author", "", True)])

    g = m.graph
    expect("graph.name", g.name, "oracle_graph")
    expect("graph.doc_string", g.doc_string, "built by libonnxcore")

    def dims(vi):
        return [d.dim_param if d.HasField("dim_param") else d.dim_value
                for d in vi.type.tensor_type.shape.dim]

    expect("inputs", [(v.name, v.type.tensor_type.elem_type, dims(v)) for v in g.input],
           [("X", 1, ["N", 3])])
    expect("outputs", [(v.name, dims(v)) for v in g.output], [("Y", [2, "N"])])
    expect("value_info", [(v.name, dims(v)) for v in g.value_info], [("H", ["N", 2])])
    expect("nodes", [(n.op_type, n.name, list(n.input), list(n.output), n.domain)
                     for n in g.node],
           [("MatMul", "mm", ["X", "W"], ["H"], ""), ("Add", "add", ["H", "B"], ["A"], ""),
            ("LeakyRelu", "lrelu", ["A"], ["L"], ""), ("Transpose", "tr", ["L"], ["T"], ""),
            ("Constant", "c", [], ["C"], ""), ("Mul", "mul", ["T", "C"], ["Y"], ""),
            ("Custom", "custom", ["X"], ["Q"], "ai.onnxz.test")])
    attrs = {(n.name, a.name): a for n in g.node for a in n.attribute}
    A = onnx.AttributeProto
    expect("alpha", (attrs["lrelu", "alpha"].type, attrs["lrelu", "alpha"].f), (A.FLOAT, 0.125))
    expect("perm", (attrs["tr", "perm"].type, list(attrs["tr", "perm"].ints)), (A.INTS, [1, 0]))
    c = numpy_helper.to_array(attrs["c", "value"].t)
    expect("Constant value", (c.dtype, c.tolist()), (np.float32, [-1.0]))
    expect("custom.i", attrs["custom", "i"].i, -1)
    expect("custom.s", attrs["custom", "s"].s, b"bytes\0x")
    floats = list(attrs["custom", "floats"].floats)
    expect("custom.floats", [(x, math.copysign(1, x)) for x in floats],
           [(0.0, -1.0), (3.5, 1.0)])
    expect("custom.strings", list(attrs["custom", "strings"].strings), [b"one", b""])
    sub = attrs["custom", "g"].g
    expect("custom.g", (sub.name, [n.op_type for n in sub.node], sub.input[0].name,
                        sub.output[0].name), ("body", ["Identity"], "sx", "sy"))
    ts = [numpy_helper.to_array(t).tolist() for t in attrs["custom", "tensors"].tensors]
    expect("custom.tensors", ts, [[-1.0], [42]])
    expect("custom attribute types", [a.type for a in g.node[-1].attribute],
           [A.INT, A.STRING, A.FLOATS, A.STRINGS, A.GRAPH, A.TENSORS])

    inits = {t.name: t for t in g.initializer}
    expect("initializer names", list(inits),
           ["W", "B", "I64", "D", "U64", "S", "I8", "F16", "BOOL", "EMPTY", "BIG"])
    want = {
        "W": np.reshape(float_raw(np, 6), (3, 2)),
        "B": np.array([0.25, -0.75], np.float32),
        "I64": np.array([-2**63, -1, 2**63 - 1], np.int64),
        "D": np.array([1e300, -sys.float_info.min], np.float64),
        "U64": np.array([2**64 - 1, 1], np.uint64),
        "S": np.array(["abc", "", "\0é"], dtype=object),
        "I8": np.array([-128, 0, 127], np.int8),
        "F16": np.array([1.0, -2.0], np.float16),
        "BOOL": np.array([True, False]),
        "EMPTY": np.zeros((0,), np.float32),
        "BIG": np.reshape(float_raw(np, 256 * 256), (256, 256)),
    }
    for name, w in want.items():
        got = numpy_helper.to_array(inits[name])
        same = got.dtype == w.dtype and got.shape == w.shape and (
            got.tolist() == w.tolist() if w.dtype == object else np.array_equal(got, w))
        expect(f"initializer {name}", same, True)
        if not same:
            failures.append(f"  {name}: got {got.dtype}{got.shape} {got.ravel()[:4]}, "
                            f"want {w.dtype}{w.shape} {w.ravel()[:4]}")
    expect("EMPTY has raw_data", inits["EMPTY"].HasField("raw_data"), True)
    expect("BIG doc_string", inits["BIG"].doc_string, "256 KiB of raw_data")
    expect("W raw_data bytes", inits["W"].raw_data,
           struct.pack("<6f", *[(i % 1000) * 0.25 - 1 for i in range(6)]))

    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type
    expect("inferred Y", (out.elem_type, dims(inferred.graph.output[0])), (1, [2, "N"]))

    if failures:
        print("check_written: python3-onnx read different values:")
        for line in failures:
            print("  " + line)
        raise SystemExit(1)
    print(f"check_written: {sys.argv[1]}: checker passed, all fields and "
          f"{len(want)} tensors as written")


if __name__ == "__main__":
    main()
