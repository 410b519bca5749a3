"""Writes small ONNX models for the stc-import tool tests: make_onnx.py KIND OUT.onnx."""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, inits=(), opset=13):
    graph = helper.make_graph(
        nodes, "tool_test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, n) for n, v in inits],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


rng = np.random.default_rng(0)
conv_w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
KINDS = {
    "conv": lambda: model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv0"),
         helper.make_node("Relu", ["c"], ["y"], name="relu0")],
        [("x", ["batch", 3, 8, 8])], [("w", conv_w)]),
    "unknown-op": lambda: model([helper.make_node("Hardmax", ["x"], ["y"], name="hm0")], [("x", [2, 3])]),
    "bad-shape": lambda: model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm0")], [("x", [2, 4])],
        [("w", np.zeros((3, 5), np.float32))]),
    "old-opset": lambda: model([helper.make_node("Relu", ["x"], ["y"], name="r0")], [("x", [2])], opset=5),
}

kind, out = sys.argv[1], sys.argv[2]
data = KINDS["conv" if kind == "truncated" else kind]().SerializeToString()
with open(out, "wb") as f:
    f.write(data[: len(data) // 2] if kind == "truncated" else data)
