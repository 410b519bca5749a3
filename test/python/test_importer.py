"""ONNX importer: each operator (across opsets) imported, interpreted and compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import compare, reference
from stc_mlir.dialects import graph as g
from stc_mlir.frontend import OnnxImportError, import_onnx

RNG = np.random.default_rng(0)


def make_model(nodes, inputs, outputs, initializers=(), opset=13):
    """A model from nodes; inputs/outputs as (name, shape[, elem_type])."""
    def info(spec):
        name, shape, *elem = spec
        return helper.make_tensor_value_info(name, elem[0] if elem else TensorProto.FLOAT, shape)

    graph = helper.make_graph(
        nodes, "test", [info(i) for i in inputs], [info(o) for o in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def check(model, inputs, dtype="float32", min_cosine=0.99999, atol=1e-4):
    """Import, interpret, compare with onnxruntime; returns the imported module."""
    module = import_onnx(model, dtype=dtype)
    module.verify()
    got = reference.run(module, inputs)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    assert len(got) == len(want)
    for a, b in zip(want, got):
        assert a.shape == b.shape
        if dtype == "float32" or not np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64), atol=atol, rtol=1e-4)
        else:
            assert compare.cosine(a, b) >= min_cosine
    return module


def ops_of(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("graph.") and op.name != "graph.constant"]


def x(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------- one node per case

CONV_CASES = [
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 0, 1, 0]),
    dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2]),
    dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2]),
    dict(kernel_shape=[3, 3], auto_pad="SAME_LOWER"),
    dict(kernel_shape=[1, 1], auto_pad="VALID"),
]


@pytest.mark.parametrize("attrs", CONV_CASES)
@pytest.mark.parametrize("group", [1, 8])
def test_conv(attrs, group):
    w = x(16, 8 // group, *attrs["kernel_shape"])
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=group, **attrs)
    model = make_model([node], [("x", [2, 8, 9, 10])], [("y", None)], [("w", w), ("b", x(16))])
    check(model, {"x": x(2, 8, 9, 10)})


@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[1, 1], dilations=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[2, 2], auto_pad="SAME_UPPER")),
    ("GlobalAveragePool", {}),
    ("GlobalMaxPool", {}),
])
def test_pooling(op, attrs):
    model = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", [2, 3, 11, 10])], [("y", None)])
    check(model, {"x": x(2, 3, 11, 10)})


@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Abs", "Neg"])
def test_unary(op):
    model = make_model([helper.make_node(op, ["x"], ["y"])], [("x", [3, 5])], [("y", None)])
    check(model, {"x": x(3, 5)})


def test_unary_positive_domain():
    nodes = [helper.make_node(op, ["x"], [op]) for op in ("Sqrt", "Log", "Reciprocal")]
    model = make_model(nodes, [("x", [3, 5])], [(op, None) for op in ("Sqrt", "Log", "Reciprocal")])
    check(model, {"x": np.abs(x(3, 5)) + 0.5})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
def test_binary_broadcast(op):
    model = make_model([helper.make_node(op, ["a", "b"], ["y"])], [("a", [2, 3, 4]), ("b", [3, 1])], [("y", None)])
    a, b = x(2, 3, 4), x(3, 1)
    if op == "Pow":
        a = np.abs(a) + 0.1
    check(model, {"a": a, "b": b})


def test_variadic_max_and_sum():
    nodes = [helper.make_node("Max", ["a", "b", "c"], ["m"]), helper.make_node("Sum", ["a", "b", "c"], ["s"])]
    model = make_model(nodes, [("a", [4]), ("b", [2, 4]), ("c", [1])], [("m", None), ("s", None)])
    module = check(model, {"a": x(4), "b": x(2, 4), "c": x(1)})
    assert ops_of(module).count("graph.maximum") == 2 and "graph.sum" in ops_of(module)


@pytest.mark.parametrize("opset", [9, 13])
def test_clip_relu6(opset):
    if opset < 11:
        node = helper.make_node("Clip", ["x"], ["y"], min=0.0, max=6.0)
        inits = []
    else:
        node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
        inits = [("lo", np.array(0.0, np.float32)), ("hi", np.array(6.0, np.float32))]
    model = make_model([node], [("x", [4, 5])], [("y", None)], inits, opset=opset)
    check(model, {"x": x(4, 5) * 5})


def test_leaky_relu_prelu():
    nodes = [helper.make_node("LeakyRelu", ["x"], ["a"], alpha=0.2), helper.make_node("PRelu", ["x", "s"], ["b"])]
    model = make_model(nodes, [("x", [2, 3, 4, 4])], [("a", None), ("b", None)], [("s", x(3, 1, 1))])
    check(model, {"x": x(2, 3, 4, 4)})


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm(ta, tb):
    a, b = x(4, 3) if ta else x(3, 4), x(5, 4) if tb else x(4, 5)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=ta, transB=tb, alpha=0.5, beta=2.0)
    model = make_model([node], [("a", list(a.shape))], [("y", None)], [("b", b), ("c", x(5))])
    check(model, {"a": a})


@pytest.mark.parametrize("sa,sb", [((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 5)), ((3, 4), (4,))])
def test_matmul(sa, sb):
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", list(sa)), ("b", list(sb))], [("y", None)])
    check(model, {"a": x(*sa), "b": x(*sb)})


@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (13, 1), (13, -1)])
def test_softmax_axis_semantics(opset, axis):
    model = make_model([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], [("x", [2, 3, 4])], [("y", None)], opset=opset)
    check(model, {"x": x(2, 3, 4)})


def test_layer_norm_and_batch_norm():
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1, epsilon=1e-6),
        helper.make_node("BatchNormalization", ["img", "s", "bb", "m", "v"], ["bn"], epsilon=1e-3),
    ]
    inits = [("g", x(8)), ("b", x(8)), ("s", x(3)), ("bb", x(3)), ("m", x(3)), ("v", np.abs(x(3)) + 0.5)]
    model = make_model(nodes, [("x", [2, 5, 8]), ("img", [2, 3, 4, 4])], [("ln", None), ("bn", None)], inits, opset=17)
    check(model, {"x": x(2, 5, 8), "img": x(2, 3, 4, 4)})


def _decomposed_layer_norm(with_affine: bool):
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["x", "mean"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
        helper.make_node("Div", ["d", "std"], ["n"]),
    ]
    inits = [("two", np.array(2.0, np.float32)), ("eps", np.array(1e-12, np.float32))]
    out = "n"
    if with_affine:
        nodes += [helper.make_node("Mul", ["n", "g"], ["ng"]), helper.make_node("Add", ["ng", "b"], ["y"])]
        inits += [("g", x(16)), ("b", x(16))]
        out = "y"
    return make_model(nodes, [("x", [2, 7, 16])], [(out, None)], inits)


@pytest.mark.parametrize("with_affine", [True, False])
def test_decomposed_layer_norm_is_fused(with_affine):
    module = check(_decomposed_layer_norm(with_affine), {"x": x(2, 7, 16)}, atol=1e-3)
    assert ops_of(module) == ["graph.layer_norm"]


def test_decomposed_layer_norm_with_extra_use_is_not_fused():
    model = _decomposed_layer_norm(True)
    model.graph.output.append(helper.make_tensor_value_info("d", TensorProto.FLOAT, None))
    model.graph.node.append(helper.make_node("Relu", ["mean"], ["extra"]))
    model.graph.output.append(helper.make_tensor_value_info("extra", TensorProto.FLOAT, None))
    module = check(model, {"x": x(2, 7, 16)}, atol=1e-3)
    assert "graph.layer_norm" not in ops_of(module)


def test_shape_arithmetic_is_folded():
    """The Shape -> Gather -> Unsqueeze -> Concat -> Reshape chain PyTorch exports for views."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3]),
        helper.make_node("ConstantOfShape", ["rest"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("Cast", ["shape"], ["shape_f"], to=TensorProto.FLOAT),
        helper.make_node("Identity", ["t"], ["y"]),
    ]
    inits = [("zero", np.array(0, np.int64)), ("axes0", np.array([0], np.int64)), ("rest", np.array([4, 3, 2], np.int64))]
    model = make_model(nodes, [("x", [2, 4, 6])], [("y", None)], inits, opset=14)
    module = check(model, {"x": x(2, 4, 6)})
    assert ops_of(module) == ["graph.reshape", "graph.transpose"]


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_axes_attr_or_input(opset):
    if opset < 13:
        nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0, 3]), helper.make_node("Squeeze", ["u"], ["y"], axes=[0])]
        inits = []
    else:
        nodes = [helper.make_node("Unsqueeze", ["x", "a"], ["u"]), helper.make_node("Squeeze", ["u", "b"], ["y"])]
        inits = [("a", np.array([0, 3], np.int64)), ("b", np.array([0], np.int64))]
    model = make_model(nodes, [("x", [2, 3, 4])], [("y", None)], inits, opset=opset)
    check(model, {"x": x(2, 3, 4)})


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [-1], [1], [1]),
    ([0, 2], [9223372036854775807, 100], [0, 2], [1, 2]),
    ([-1], [-9223372036854775807], [2], [-1]),
    ([4], [0], [1], [-2]),
    ([-10], [-100], [1], [-1]),  # ONNX clamps the start to 0 here; Python's slice would select nothing
])
def test_slice(starts, ends, axes, steps):
    node = helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])
    inits = [(n, np.array(v, np.int64)) for n, v in (("s", starts), ("e", ends), ("a", axes), ("st", steps))]
    model = make_model([node], [("x", [3, 6, 5])], [("y", None)], inits)
    check(model, {"x": x(3, 6, 5)})


@pytest.mark.parametrize("opset,split", [(11, [2, 4]), (13, [1, 5]), (13, None), (18, None)])
def test_split(opset, split):
    kwargs = {"axis": 1}
    inputs = ["x"]
    inits = []
    if split is not None and opset < 13:
        kwargs["split"] = split
    elif split is not None:
        inputs.append("sp")
        inits.append(("sp", np.array(split, np.int64)))
    elif opset >= 18:
        kwargs["num_outputs"] = 2
    node = helper.make_node("Split", inputs, ["y0", "y1"], **kwargs)
    model = make_model([node], [("x", [2, 6])], [("y0", None), ("y1", None)], inits, opset=opset)
    check(model, {"x": x(2, 6)})


def test_gather_embedding_and_negative_indices():
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
             helper.make_node("Gather", ["e", "neg"], ["y"], axis=1)]
    inits = [("table", x(10, 4)), ("neg", np.array([-1, 0], np.int64))]
    model = make_model(nodes, [("ids", [2, 3], TensorProto.INT64)], [("y", None)], inits)
    check(model, {"ids": np.array([[0, 9, 3], [2, 2, 1]], np.int64)})


def test_expand_flatten_transpose_concat_reduce_cast():
    nodes = [
        helper.make_node("Expand", ["x", "shape"], ["e"]),
        helper.make_node("Flatten", ["e"], ["f"], axis=2),
        helper.make_node("Transpose", ["f"], ["t"]),
        helper.make_node("Concat", ["t", "t"], ["c"], axis=-1),
        helper.make_node("ReduceSum", ["c", "axes"], ["rs"], keepdims=0),
        helper.make_node("ReduceMean", ["c"], ["rm"], axes=[0], keepdims=1),
        helper.make_node("ReduceMax", ["c"], ["rx"]),
        helper.make_node("Cast", ["ids"], ["idf"], to=TensorProto.FLOAT),
    ]
    inits = [("shape", np.array([2, 3, 4, 1], np.int64)), ("axes", np.array([1], np.int64))]
    model = make_model(nodes, [("x", [3, 1, 1]), ("ids", [2], TensorProto.INT64)],
                       [("rs", None), ("rm", None), ("rx", None), ("idf", None)], inits)
    check(model, {"x": x(3, 1, 1), "ids": np.array([3, -2], np.int64)})


def test_float16_storage_types():
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"])], [("a", [2, 8])], [("y", None)], [("w", x(8, 3))])
    module = check(model, {"a": x(2, 8)}, dtype="float16", min_cosine=0.999)
    f = reference.find_function(module)
    assert f.args[0].type == g.tensor((2, 8), g.f16)
    const = next(op for op in module.walk() if isinstance(op, g.ConstantOp))
    assert const.numpy().dtype == np.float16


def test_input_and_output_names_are_kept():
    model = make_model([helper.make_node("Relu", ["input.1"], ["out:0"])], [("input.1", [2])], [("out:0", None)])
    f = reference.find_function(import_onnx(model))
    assert reference.input_names(f) == ["input.1"] and reference.output_names(f) == ["out:0"]


# ----------------------------------------------------------------------------- errors


def test_unsupported_operator_names_node_op_and_opset():
    model = make_model([helper.make_node("Hardmax", ["x"], ["y"], name="hm0")], [("x", [2, 3])], [("y", None)])
    with pytest.raises(OnnxImportError, match=r"node 'hm0' \(Hardmax, opset 13\): unsupported operator 'Hardmax'"):
        import_onnx(model)


def test_shape_mismatch_names_the_shapes():
    model = make_model([helper.make_node("MatMul", ["a", "w"], ["y"], name="mm")], [("a", [2, 4])], [("y", None)], [("w", x(3, 5))])
    with pytest.raises(OnnxImportError, match=r"node 'mm' \(MatMul, opset 13\): contraction dimensions differ: 4 .* 3"):
        import_onnx(model)


def test_dynamic_dimension_needs_a_shape():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", ["batch", 3])], [("y", None)])
    with pytest.raises(OnnxImportError, match=r"input 'x' has a dynamic dimension 0 \('batch'\)"):
        import_onnx(model)
    module = import_onnx(model, shape={"x": [5, 3]})
    assert reference.find_function(module).args[0].type == g.tensor((5, 3), g.f16)
    with pytest.raises(OnnxImportError, match="unknown input"):
        import_onnx(model, shape={"nope": [1]})


def test_unsupported_opset_and_bad_files(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [3])], [("y", None)], opset=99)
    with pytest.raises(OnnxImportError, match=r"opset 99 is not supported \(supported: 1 to \d+\)"):
        import_onnx(model)
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", [3])], [("y", None)], opset=5)
    with pytest.raises(OnnxImportError, match=r"node 'r' \(Relu, opset 5\): Relu-1 predates opset 7"):
        import_onnx(model)
    path = tmp_path / "m.onnx"
    good = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [3])], [("y", None)])
    data = good.SerializeToString()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(OnnxImportError, match="cannot read ONNX model"):
        import_onnx(path)
    with pytest.raises(OnnxImportError, match="no such file"):
        import_onnx(tmp_path / "missing.onnx")


def test_interpreter_input_errors():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [2, 3])], [("y", None)])
    module = import_onnx(model)
    with pytest.raises(reference.InterpreterError, match="missing input 'x'"):
        reference.run(module, {})
    with pytest.raises(reference.InterpreterError, match=r"input 'x' has shape \(3, 2\)"):
        reference.run(module, {"x": x(3, 2)})
