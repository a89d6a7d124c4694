#!/usr/bin/python3
"""Builds samples/mlp.onnx, the small model the README demo and the CLI tests use.

Run it with Debian's interpreter, which has python3-onnx and numpy:

    /usr/bin/python3 samples/make_sample.py [OUTPUT]      (default: samples/mlp.onnx)

The output is deterministic: weights come from a seeded generator and protobuf writes
the same bytes for the same message, so re-running it reproduces the committed file
byte for byte (with the same onnx and numpy versions: 1.12 and 1.24 here).

The model is a 3-layer perceptron, x[batch, 96] -> 384 -> 192 -> 10, followed by a
temperature-scaled softmax and a reshape. It deliberately mixes the ways ONNX stores
tensor bytes, so `onnxz info` has something to report in each category:
  - float32 weights and biases as raw_data initializers (about 440 KiB in all);
  - a Constant node whose tensor attribute keeps its value in float_data;
  - a small int64 initializer (the reshape target) kept in int64_data;
plus doc strings, metadata_props and inferred value_info entries.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240601
LAYERS = [96, 384, 192, 10]  # input width, hidden widths, number of classes
OPSET = 13


def dense_layer(rng, index, fan_in, fan_out, x_name):
    """MatMul + Add with He-initialised float32 weights, returned as (nodes, initializers, out)."""
    w = (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    b = (rng.standard_normal(fan_out) * 0.01).astype(np.float32)
    w_name, b_name = f"fc{index}.weight", f"fc{index}.bias"
    mm, out = f"fc{index}.matmul", f"fc{index}.out"
    nodes = [
        helper.make_node("MatMul", [x_name, w_name], [mm], name=f"fc{index}/MatMul"),
        helper.make_node("Add", [mm, b_name], [out], name=f"fc{index}/Add"),
    ]
    inits = [numpy_helper.from_array(w, w_name), numpy_helper.from_array(b, b_name)]
    return nodes, inits, out


def build_graph():
    rng = np.random.RandomState(SEED)
    nodes, inits = [], []
    x = "x"
    last = len(LAYERS) - 2
    for i, (fan_in, fan_out) in enumerate(zip(LAYERS, LAYERS[1:])):
        layer_nodes, layer_inits, x = dense_layer(rng, i + 1, fan_in, fan_out, x)
        nodes += layer_nodes
        inits += layer_inits
        if i != last:
            relu = f"fc{i + 1}.relu"
            nodes.append(helper.make_node("Relu", [x], [relu], name=f"fc{i + 1}/Relu"))
            x = relu

    # raw=False keeps the value in float_data: a typed field, not raw_data.
    temperature = helper.make_tensor("temperature", TensorProto.FLOAT, [1], [1.0 / 0.7])
    nodes.append(helper.make_node("Constant", [], ["inv_temperature"], name="temperature",
                                  value=temperature))
    nodes.append(helper.make_node("Mul", [x, "inv_temperature"], ["scaled_logits"],
                                  name="scale"))
    nodes.append(helper.make_node("Softmax", ["scaled_logits"], ["probs"], name="softmax",
                                  axis=-1))
    # A small int64 initializer in int64_data (make_tensor without raw).
    inits.append(helper.make_tensor("output_shape", TensorProto.INT64, [2], [-1, LAYERS[-1]]))
    nodes.append(helper.make_node("Reshape", ["probs", "output_shape"], ["y"], name="reshape"))

    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", LAYERS[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", LAYERS[-1]])],
        initializer=inits,
        doc_string="A 3-layer perceptron with a temperature-scaled softmax.")
    return graph


def build_model():
    model = helper.make_model(
        build_graph(),
        producer_name="onnxz-make-sample",
        producer_version="1.0",
        domain="org.onnxz.samples",
        model_version=1,
        doc_string="onnxz sample model: deterministic random weights, for demos and tests.",
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    helper.set_model_props(model, {
        "author": "onnxz project",
        "license": "CC0-1.0",
        "generator": "samples/make_sample.py",
        "seed": str(SEED),
    })
    # Record the intermediate shapes as value_info, as exporters usually do.
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "mlp.onnx")
    data = build_model().SerializeToString()
    with open(out, "wb") as f:
        f.write(data)
    print(f"wrote {out}: {len(data)} bytes")


if __name__ == "__main__":
    main()
