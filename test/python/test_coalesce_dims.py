"""Rank lowering by dim coalescing (stc_mlir/passes/coalesce_dims.py): random ONNX graphs of
5 and 6 dims (what exporters write for adaptive pooling with uneven bins), compiled with the
default schedule and emulated, against onnxruntime; after graph-canonicalize no op has more
than the npu's 4 dims."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context

import stc_mlir
from stc_mlir import onnx_backend
from stc_mlir.dialects import graph as g
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize


def model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def floats(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def max_rank(m) -> int:
    module = stc_mlir.from_onnx(m).graph_module()
    GraphCanonicalize().apply(Context(), module)
    return max(len(g.shape_of(r.type)) for op in module.walk() if isinstance(op, g.GraphOp)
               and not isinstance(op, (g.ReshapeOp, g.ConstantOp)) for r in op.results)


def check(m, feeds):
    assert max_rank(m) <= 4
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onnx_backend.EmulatorBackend.prepare(m).run(feeds)
    for a, b in zip(want, got, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(b.astype(np.float32), a, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("seed", [0, 1])
def test_masks_of_uneven_adaptive_pooling(seed):
    """vgg11's idiom: Where with a [7,2,1,1] and a [7,2] mask over a 6-D tensor, then the
    bins picked by Gathers along axes 3 and 4 and summed."""
    rng = np.random.default_rng(seed)
    shape = (2, 8, 7, 2, 7, 2)
    bools = lambda name, s: numpy_helper.from_array(rng.random(s) < 0.5, name)  # noqa: E731
    nodes = [helper.make_node("Where", ["m1", "zero", "x"], ["a"]),
             helper.make_node("Where", ["m2", "zero", "a"], ["b"]),
             helper.make_node("Gather", ["b", "one"], ["c"], axis=3),
             helper.make_node("Gather", ["c", "zero_i"], ["d0"], axis=4),
             helper.make_node("Gather", ["c", "one_i"], ["d1"], axis=4),
             helper.make_node("Add", ["d0", "d1"], ["y"])]
    m = model(nodes, [floats("x", shape)], [floats("y", (2, 8, 7, 7))],
              [bools("m1", (7, 2, 1, 1)), bools("m2", (7, 2)), numpy_helper.from_array(np.zeros((), np.float32), "zero"),
               ints("one", 1), ints("zero_i", 0), ints("one_i", 1)])
    check(m, {"x": rng.standard_normal(shape).astype(np.float32)})


@pytest.mark.parametrize("seed", [0, 1])
def test_elementwise_chains_with_broadcasts(seed):
    rng = np.random.default_rng(seed)
    shape = (2, 3, 4, 5, 6)
    nodes = [helper.make_node("Add", ["x", "y"], ["s"]),
             helper.make_node("Mul", ["s", "b"], ["p"]),
             helper.make_node("Greater", ["p", "c"], ["gt"]),
             helper.make_node("Where", ["gt", "p", "x"], ["w"]),
             helper.make_node("Tanh", ["w"], ["out"])]
    m = model(nodes, [floats("x", shape), floats("y", shape), floats("b", (5, 6)), floats("c", (2, 3, 1, 1, 1))],
              [floats("out", shape)])
    feeds = {"x": shape, "y": shape, "b": (5, 6), "c": (2, 3, 1, 1, 1)}
    check(m, {k: rng.standard_normal(s).astype(np.float32) for k, s in feeds.items()})


@pytest.mark.parametrize("axis, index_shape", [(0, (3,)), (1, (3, 2)), (3, (1,)), (5, (2, 2))])
def test_gathers(axis, index_shape):
    rng = np.random.default_rng(axis)
    shape = (2, 4, 3, 2, 3, 2)
    index = rng.integers(0, shape[axis], size=index_shape)
    out = shape[:axis] + index_shape + shape[axis + 1:]
    m = model([helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)], [floats("x", shape)], [floats("y", out)],
              [ints("i", index)])
    check(m, {"x": rng.standard_normal(shape).astype(np.float32)})


@pytest.mark.parametrize("op, axes, keepdims", [("ReduceSum", [2], 0), ("ReduceSum", [1, 2, 4], 1),
                                                ("ReduceMax", [0, 1], 0), ("ReduceMean", [3, 4], 1)])
def test_reductions(op, axes, keepdims):
    rng = np.random.default_rng(len(axes))
    shape = (2, 3, 4, 5, 6)
    out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)
    if op == "ReduceSum":
        node, inits = helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims), [ints("axes", axes)]
    else:
        node, inits = helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=keepdims), []
    m = model([node], [floats("x", shape)], [floats("y", out)], inits)
    check(m, {"x": rng.standard_normal(shape).astype(np.float32)})


@pytest.mark.parametrize("shape, perm", [((7, 2, 7, 2, 2, 16), (4, 5, 0, 1, 2, 3)),
                                         ((2, 3, 4, 5, 6), (3, 4, 0, 1, 2)),
                                         ((2, 1, 3, 4, 1, 5), (2, 3, 0, 4, 5, 1))])
def test_transposes(shape, perm):
    rng = np.random.default_rng(len(shape))
    m = model([helper.make_node("Transpose", ["x"], ["y"], perm=list(perm))], [floats("x", shape)],
              [floats("y", [shape[p] for p in perm])])
    check(m, {"x": rng.standard_normal(shape).astype(np.float32)})


def test_alternating_broadcasts_stay_above_4_dims():
    """full and broadcast dims alternate 5 times: no exact 4-D form, the op keeps its 5 dims
    (and the npu lowering says so)."""
    m = model([helper.make_node("Add", ["x", "b"], ["y"])], [floats("x", (2, 3, 4, 5, 6)), floats("b", (2, 1, 4, 1, 6))],
              [floats("y", (2, 3, 4, 5, 6))])
    assert max_rank(m) == 5
