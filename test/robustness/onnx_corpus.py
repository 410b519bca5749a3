"""A second corpus of malformed ONNX models (test_onnx_corpus.py): broken files, broken
graphs (undefined values, cycles, missing outputs, bad initializers, opsets) and nodes whose
operand shapes or attributes contradict each other. Each entry: (model or raw bytes, the
parts of the one-line refusal that name the place and the numbers)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F = TensorProto.FLOAT


def model(nodes, inputs, outputs=("y",), inits=(), opset=OPSET, domain=""):
    graph = helper.make_graph(
        nodes, "bad",
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(o, F, None) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, opset)])


def node(op, ins, outs=("y",), name="n", **attrs):
    return helper.make_node(op, list(ins), list(outs), name=name, **attrs)


def _i64(*v):
    return np.asarray(v, np.int64)


X4 = [("x", [1, 3, 8, 8])]
X2 = [("x", [2, 5])]


def _raw_init_wrong_size():
    m = model([node("Add", ["x", "b"])], X2, inits=[("b", np.ones(5, np.float32))])
    m.graph.initializer[0].raw_data = b"\0" * 6  # 5 floats need 20 bytes
    return m


def _cycle():
    return model([node("Relu", ["z"], ["a"], name="r1"), node("Relu", ["a"], ["z"], name="r2"),
                  node("Add", ["x", "z"], name="add")], X2)


def _no_opset():
    m = model([node("Relu", ["x"])], X2)
    del m.opset_import[:]
    return m


def _external_data():
    m = model([node("Add", ["x", "b"])], X2, inits=[("b", np.ones(5, np.float32))])
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    entry = t.external_data.add()
    entry.key, entry.value = "location", "missing_weights.bin"
    return m


CORPUS: dict[str, tuple[object, list[str]]] = {
    # broken files
    "empty-file": (b"", ["is not an ONNX model (no graph found)"]),
    "not-protobuf": (b"\xff\xfe this is not an onnx model \x00\x01", ["cannot read ONNX model", "corrupt"]),
    "truncated": ("truncate", ["cannot read ONNX model", "corrupt"]),
    "text-file": (b"ir_version: 8\ngraph { }\n", ["cannot read ONNX model", "corrupt"]),
    # broken graphs
    "undefined-input": (model([node("Add", ["x", "ghost"])], X2), ["'ghost'"]),
    "cycle": (_cycle(), ["node 'r1' (Relu, opset 17)", "input 'z' is not produced"]),
    "output-never-produced": (model([node("Relu", ["x"], ["z"])], X2, outputs=("y",)), ["input 'y' is not produced"]),
    "no-opset-import": (_no_opset(), ["imports no default-domain (ai.onnx) opset"]),
    "opset-zero": (model([node("Relu", ["x"])], X2, opset=0), ["opset 0"]),
    "opset-from-the-future": (model([node("Relu", ["x"])], X2, opset=99), ["99"]),
    "unknown-op": (model([node("Frobnicate", ["x"])], X2), ["Frobnicate"]),
    "custom-domain-op": (helper.make_model(helper.make_graph(
        [helper.make_node("MyOp", ["x"], ["y"], name="n", domain="com.acme")], "bad",
        [helper.make_tensor_value_info("x", F, [2, 5])], [helper.make_tensor_value_info("y", F, None)]),
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.acme", 1)]),
        ["node 'n' (MyOp", "domain 'com.acme' is not supported"]),
    "initializer-raw-size": (_raw_init_wrong_size(), ["initializer 'b'", "multiple of element size"]),
    "external-data-missing": (_external_data(), ["tensor name: b", "missing_weights.bin"]),
    "string-input": (helper.make_model(helper.make_graph(
        [node("Identity", ["x"])], "bad",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None)]),
        opset_imports=[helper.make_opsetid("", OPSET)]), ["input 'x'", "STRING"]),
    # operand shapes that contradict each other
    "matmul-inner-dims": (model([node("MatMul", ["x", "w"])], X2, inits=[("w", np.ones((4, 3), np.float32))]),
                          ["MatMul", "5", "4"]),
    "add-broadcast": (model([node("Add", ["x", "b"])], X2, inits=[("b", np.ones(3, np.float32))]),
                      ["Add", "2x5", "3"]),
    "gemm-dims": (model([node("Gemm", ["x", "w"])], X2, inits=[("w", np.ones((4, 3), np.float32))]),
                  ["Gemm", "5", "4"]),
    "concat-ranks": (model([node("Concat", ["x", "z"], axis=0)], [("x", [2, 5]), ("z", [2, 5, 1])]),
                     ["Concat", "differ outside axis 0"]),
    "concat-dims": (model([node("Concat", ["x", "z"], axis=0)], [("x", [2, 5]), ("z", [2, 4])]),
                    ["Concat", "5", "4"]),
    "reshape-two-minus-one": (model([node("Reshape", ["x", "s"])], X2, inits=[("s", _i64(-1, -1))]),
                              ["Reshape", "-1"]),
    "reshape-wrong-count": (model([node("Reshape", ["x", "s"])], X2, inits=[("s", _i64(3, 3))]),
                            ["Reshape", "10", "9"]),
    "transpose-perm-length": (model([node("Transpose", ["x"], perm=[1, 0, 2])], X2), ["Transpose", "perm"]),
    "transpose-perm-repeat": (model([node("Transpose", ["x"], perm=[0, 0])], X2), ["Transpose", "perm"]),
    "split-sizes": (model([node("Split", ["x", "s"], ["a", "b"], axis=1)], X2, outputs=("a", "b"),
                          inits=[("s", _i64(2, 2))]), ["Split", "5"]),
    "squeeze-non-unit": (model([node("Squeeze", ["x", "a"])], X2, inits=[("a", _i64(1))]), ["Squeeze", "5"]),
    "unsqueeze-repeat": (model([node("Unsqueeze", ["x", "a"])], X2, inits=[("a", _i64(0, 0))]), ["Unsqueeze", "repeated axes (0, 0)"]),
    "gather-index-range": (model([node("Gather", ["x", "i"], axis=1)], X2, inits=[("i", _i64(7))]),
                           ["Gather", "index 7", "size 5", "valid: -5 to 4"]),
    "reduce-axes-range": (model([node("ReduceSum", ["x", "a"])], X2, inits=[("a", _i64(5))]),
                          ["rejected by onnx.checker", "ReduceSum", "axis must be in"]),
    "layernorm-axis": (model([node("LayerNormalization", ["x", "g"], axis=4)], X2,
                             inits=[("g", np.ones(5, np.float32))]), ["LayerNormalization", "4"]),
    "batchnorm-params": (model([node("BatchNormalization", ["x", "s", "b", "m", "v"])], X4,
                               inits=[(k, np.ones(4, np.float32)) for k in "sbmv"]),
                         ["BatchNormalization", "4", "3"]),
    "conv-channels": (model([node("Conv", ["x", "w"])], X4, inits=[("w", np.ones((4, 5, 3, 3), np.float32))]),
                      ["Conv", "5", "3"]),
    "conv-group": (model([node("Conv", ["x", "w"], group=2)], X4, inits=[("w", np.ones((4, 3, 3, 3), np.float32))]),
                   ["Conv", "group 2 expects 3 x 2 = 6"]),
    "conv-bias-size": (model([node("Conv", ["x", "w", "b"])], X4,
                             inits=[("w", np.ones((4, 3, 3, 3), np.float32)), ("b", np.ones(7, np.float32))]),
                       ["Conv", "7", "4"]),
    "pool-kernel-too-big": (model([node("MaxPool", ["x"], kernel_shape=[9, 9])], X4), ["MaxPool", "9"]),
    "slice-axes-repeat": (model([node("Slice", ["x", "s", "e", "a"])], X2,
                                inits=[("s", _i64(0, 0)), ("e", _i64(1, 1)), ("a", _i64(1, 1))]), ["Slice", "axes [1, 1] repeat an axis"]),
    "expand-shape": (model([node("Expand", ["x", "s"])], X2, inits=[("s", _i64(3, 5))]), ["Expand", "2", "3"]),
    "cast-to-unknown": (model([node("Cast", ["x"], to=999)], X2), ["Cast", "'to' is 999", "not an ONNX element type"]),
    "where-shapes": (model([node("Where", ["c", "x", "z"])], [("x", [2, 5]), ("z", [3, 5])],
                           inits=[("c", np.ones((2, 5), bool))]), ["Where", "do not broadcast"]),
    "softmax-negative-axis": (model([node("Softmax", ["x"], axis=-3)], X2), ["Softmax", "-3"]),
}
