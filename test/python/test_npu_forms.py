"""Graphs whose ops the npu takes only after graph-canonicalize rewrites them (reversing
slices as gathers, integer max pools and scalar einsum operands in a float form), end to
end on the emulator against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import onnx_backend

RNG = np.random.default_rng(3)


def model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def compare(m, feeds, exact=False):
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onnx_backend.EmulatorBackend.prepare(m).run(feeds)
    for a, b in zip(want, got, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        if exact:
            np.testing.assert_array_equal(b, a)
        else:
            np.testing.assert_allclose(b.astype(np.float32), a, rtol=1e-2, atol=1e-2)


def test_slice_with_negative_steps():
    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    m = model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 7, 6])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 3])],
              [ints("starts", [-1, 0]), ints("ends", [0, 6]), ints("axes", [1, 2]), ints("steps", [-2, 2])])
    compare(m, {"x": RNG.standard_normal((2, 7, 6)).astype(np.float32)})


def test_max_pool_on_uint8_is_exact():
    m = model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
              [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 9, 9])],
              [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 3, 5, 5])])
    compare(m, {"x": RNG.integers(0, 256, (1, 3, 9, 9)).astype(np.uint8)}, exact=True)


def test_einsum_with_a_scalar_operand():
    m = model([helper.make_node("Einsum", ["s", "x"], ["y"], equation=",ij->ji")],
              [helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
               helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])])
    compare(m, {"s": np.array(1.5, np.float32), "x": RNG.standard_normal((3, 4)).astype(np.float32)})


def test_grouped_conv_whose_group_does_not_fit_the_weight_buffer_twice():
    """AlexNet's conv2: 2 groups of 128 output channels over 48 x 5 x 5 inputs, 307,200 bytes
    of fp16 weights per group: chunks of 32 output channels within a group."""
    w = (RNG.standard_normal((256, 48, 5, 5)) / 40).astype(np.float32)
    b = RNG.standard_normal(256).astype(np.float32)
    m = model([helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2, kernel_shape=[5, 5], pads=[2, 2, 2, 2])],
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 96, 6, 6])],
              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256, 6, 6])],
              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    compare(m, {"x": RNG.standard_normal((1, 96, 6, 6)).astype(np.float32)})
