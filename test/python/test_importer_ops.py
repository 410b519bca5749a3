"""The operators beyond the first importer: the seeds' whole table, integer and bool
tensors, runtime operands and the patterns current exports emit, each imported,
interpreted and compared with onnxruntime (graphs built with onnx.helper)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from stc_mlir import onnx_backend, reference
from stc_mlir.frontend import OnnxImportError, RuntimeValueError, import_onnx

from test_importer import check, make_model, ops_of, x

RNG = np.random.default_rng(1)
B, I64, I32, I8, U8, F = TensorProto.BOOL, TensorProto.INT64, TensorProto.INT32, TensorProto.INT8, TensorProto.UINT8, TensorProto.FLOAT


def ints(*shape, low=-50, high=50, dtype=np.int64):
    return RNG.integers(low, high, shape).astype(dtype)


# ----------------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("op_type, graph_op", [
    ("Cosh", "graph.cosh"), ("Sinh", "graph.sinh"), ("Sign", "graph.sign"), ("Mish", "graph.mish"),
    ("HardSwish", "graph.hard_swish"), ("Softplus", "graph.softplus"),
])
def test_unary_float(op_type, graph_op):
    model = make_model([helper.make_node(op_type, ["x"], ["y"])], [("x", [2, 3, 4])], [("y", None)], opset=18)
    assert ops_of(check(model, {"x": x(2, 3, 4)})) == [graph_op]


def test_hard_sigmoid_attributes():
    model = make_model([helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)],
                       [("x", [5, 7])], [("y", None)])
    module = check(model, {"x": 4 * x(5, 7)})
    assert "alpha = 3.0" in str(module) or "alpha = 0.3" in str(module)


@pytest.mark.parametrize("op_type", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("elem, dtype", [(F, np.float32), (I64, np.int64), (I8, np.int8), (U8, np.uint8)])
def test_comparisons_give_bool(op_type, elem, dtype):
    model = make_model([helper.make_node(op_type, ["a", "b"], ["y"])],
                       [("a", [3, 4], elem), ("b", [4], elem)], [("y", None, B)], opset=19)
    a = ints(3, 4, low=0, high=5).astype(dtype)
    b = ints(4, low=0, high=5).astype(dtype)
    module = check(model, {"a": a, "b": b})
    assert "xi1>" in str(module)


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logic_and_not(op_type):
    model = make_model([helper.make_node(op_type, ["a", "b"], ["t"]), helper.make_node("Not", ["t"], ["y"])],
                       [("a", [2, 3], B), ("b", [3], B)], [("y", None, B)])
    check(model, {"a": RNG.random((2, 3)) > 0.5, "b": RNG.random(3) > 0.5})


def test_where_with_a_runtime_mask_from_greater():
    """transformers' attention masks: Greater on the input, Where picks -inf-like fill."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["m"]), helper.make_node("Where", ["m", "x", "fill"], ["y"])]
    model = make_model(nodes, [("x", [2, 8])], [("y", None)],
                       [("zero", np.float32(0)), ("fill", np.float32(-1e4))])
    assert ops_of(check(model, {"x": x(2, 8)})) == ["graph.greater", "graph.where"]


def test_integer_arithmetic_is_exact():
    """Recommenders add field offsets to int64 ids: no float32 rounding of large values."""
    nodes = [helper.make_node("Add", ["ids", "off"], ["s"]), helper.make_node("Div", ["s", "k"], ["q"]),
             helper.make_node("Mul", ["q", "k"], ["y"])]
    model = make_model(nodes, [("ids", [4, 3], I64)], [("y", None, I64)],
                       [("off", np.array([0, 1 << 40, 3 << 41], np.int64)), ("k", np.array(-7, np.int64))])
    ids = ints(4, 3, low=-(1 << 30), high=1 << 30)
    module = check(model, {"ids": ids})
    assert "i64" in str(module)


def test_int32_and_int8_tensors_keep_their_type():
    nodes = [helper.make_node("Max", ["a", "b"], ["m"]), helper.make_node("Cast", ["m"], ["y"], to=I8)]
    model = make_model(nodes, [("a", [6], I32), ("b", [6], I32)], [("y", None, I8)])
    module = check(model, {"a": ints(6, dtype=np.int32), "b": ints(6, dtype=np.int32)})
    assert "xi32>" in str(module) and "xi8>" in str(module)


def test_mixed_type_pow():
    model = make_model([helper.make_node("Pow", ["x", "e"], ["y"])], [("x", [3, 4]), ("e", [4], I64)],
                       [("y", None)], opset=15)
    check(model, {"x": np.abs(x(3, 4)) + 0.5, "e": np.array([0, 1, 2, 3], np.int64)})


def test_clip_with_runtime_bounds():
    model = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                       [("x", [2, 5]), ("lo", []), ("hi", [])], [("y", None)])
    module = check(model, {"x": x(2, 5), "lo": np.array(-0.5, np.float32), "hi": np.array(0.25, np.float32)})
    assert ops_of(module) == ["graph.maximum", "graph.minimum"]


def test_clip_integer_with_constant_bounds():
    model = make_model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], [("x", [7], I64)], [("y", None, I64)],
                       [("lo", np.array(-3, np.int64)), ("hi", np.array(4, np.int64))])
    check(model, {"x": ints(7)})


# ----------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("op_type", ["ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                     "ReduceLogSumExp", "ReduceMax", "ReduceMean"])
@pytest.mark.parametrize("opset", [13, 18])
def test_reductions(op_type, opset):
    if opset >= 18:
        node = helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0)
        inits = [("axes", np.array([1, -1], np.int64))]
    else:
        node = helper.make_node(op_type, ["x"], ["y"], axes=[1, -1], keepdims=0)
        inits = []
    model = make_model([node], [("x", [2, 3, 4])], [("y", None)], inits, opset=opset)
    check(model, {"x": x(2, 3, 4) * 0.5})


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions(op_type, last):
    model = make_model([helper.make_node(op_type, ["x"], ["y"], axis=1, keepdims=0, select_last_index=last)],
                       [("x", [3, 6], I64)], [("y", None, I64)])
    check(model, {"x": ints(3, 6, low=0, high=3)})  # ties on purpose


def test_topk_static_k():
    model = make_model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)],
                       [("x", [3, 10])], [("v", None), ("i", None, I64)], [("k", np.array([4], np.int64))])
    module = check(model, {"x": x(3, 10)})
    assert "graph.topk" in ops_of(module)


def test_topk_with_a_runtime_k_is_a_bound_plus_a_count():
    model = make_model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="top")],
                       [("x", [4, 6]), ("k", [1], I64)], [("v", None), ("i", None, I64)])
    module = import_onnx(model, dtype="float32")
    text = str(module)
    assert text.count('graph.valid_count = "v.count", graph.valid_axis = 1 : i64') == 2
    assert "tensor<4x6xf32>" in text  # the whole axis, sorted
    data = x(4, 6)
    v, i = onnx_backend.prepare(model).run([data, np.array([3], np.int64)])
    assert v.shape == i.shape == (4, 3)
    np.testing.assert_allclose(v, -np.sort(-data, axis=1)[:, :3], rtol=1e-6)
    # a runtime that knows k imports again with it fixed: exact shapes
    module = import_onnx(model, dtype="float32", values={"k": np.array([2], np.int64)})
    assert "tensor<4x2xf32>" in str(module)


def test_a_bound_used_by_another_node_is_refused():
    nodes = [helper.make_node("TopK", ["x", "k"], ["v", "i"]), helper.make_node("Relu", ["v"], ["y"], name="after")]
    model = make_model(nodes, [("x", [6]), ("k", [1], I64)], [("y", None)])
    with pytest.raises(OnnxImportError, match=r"node 'after' \(Relu, opset 13\): input 'v' has a data-dependent size"):
        import_onnx(model)


def test_a_shape_from_a_model_input_is_refused_by_name():
    model = make_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                       [("x", [3, 4]), ("s", [2], I64)], [("y", None)])
    with pytest.raises(RuntimeValueError, match=r"node 'rs' \(Reshape, opset 13\): Reshape shape \('s'\) must be "
                                                r"known at import time because it determines a shape, but it is a model input") as e:
        import_onnx(model)
    assert e.value.input == "s"


# ----------------------------------------------------------------------------- indexing


def test_gather_elements_gather_nd_one_hot():
    nodes = [
        helper.make_node("GatherElements", ["x", "ge"], ["a"], axis=1),
        helper.make_node("GatherND", ["x", "nd"], ["b"], batch_dims=0),
        helper.make_node("OneHot", ["ids", "depth", "vals"], ["c"], axis=-1),
    ]
    model = make_model(nodes, [("x", [3, 4]), ("ids", [5], I64)], [("a", None), ("b", None), ("c", None)],
                       [("ge", ints(3, 2, low=-4, high=4)), ("nd", np.array([[0, 1], [2, -1]], np.int64)),
                        ("depth", np.array(6, np.int64)), ("vals", np.array([-1.0, 2.0], np.float32))], opset=13)
    module = check(model, {"x": x(3, 4), "ids": ints(5, low=-6, high=6)})
    assert ops_of(module) == ["graph.gather_elements", "graph.gather_nd", "graph.one_hot"]


def test_gather_elements_on_constants_folds_with_our_kernel():
    """onnx's reference evaluator mis-shapes this fold under numpy 2 (XLNet's position ids)."""
    nodes = [helper.make_node("GatherElements", ["table", "idx"], ["pos"], axis=1),
             helper.make_node("Add", ["x", "pos"], ["y"])]
    table = np.arange(256, dtype=np.float32).reshape(1, 256)
    model = make_model(nodes, [("x", [1, 128])], [("y", None)],
                       [("table", table), ("idx", np.arange(128, dtype=np.int64)[None, ::-1].copy())])
    module = check(model, {"x": x(1, 128)})
    assert ops_of(module) == ["graph.add"]


def test_scalar_index_gather():
    """ViT's class token / DLRM's x[:, i, :]: a rank-0 index drops the axis."""
    model = make_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [("x", [2, 5, 3])], [("y", None)],
                       [("i", np.array(-2, np.int64))])
    module = check(model, {"x": x(2, 5, 3)})
    assert "tensor<2x3xf32>" in str(module)


@pytest.mark.parametrize("equation, shapes", [
    ("bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),   # attention scores
    ("bhij,bhjd->bhid", [(2, 3, 4, 6), (2, 3, 6, 5)]),   # attention context
    ("ibnd,jbnd->bnij", [(4, 2, 3, 5), (6, 2, 3, 5)]),   # XLNet
    ("bij,jk->bik", [(2, 4, 5), (5, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
])
def test_einsum(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    model = make_model([helper.make_node("Einsum", names, ["y"], equation=equation)],
                       [(n, list(s)) for n, s in zip(names, shapes)], [("y", None)], opset=12)
    check(model, {n: x(*s) for n, s in zip(names, shapes)})


# ----------------------------------------------------------------------------- resampling and detection


@pytest.mark.parametrize("attrs", [
    dict(mode="nearest"),
    dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    dict(mode="linear"),
    dict(mode="linear", coordinate_transformation_mode="align_corners"),
    dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1),
    dict(mode="linear", antialias=1),
])
@pytest.mark.parametrize("scales", [(1, 1, 2, 1.5), (1, 1, 0.5, 0.75)])
def test_resize(attrs, scales):
    model = make_model([helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs)], [("x", [1, 2, 8, 8])],
                       [("y", None)], [("s", np.array(scales, np.float32))], opset=18)
    check(model, {"x": x(1, 2, 8, 8)})


def test_resize_sizes_and_lrn():
    nodes = [helper.make_node("Resize", ["x", "", "", "sz"], ["r"], mode="linear"),
             helper.make_node("LRN", ["r"], ["y"], size=3, alpha=1e-3, beta=0.75, bias=2.0)]
    model = make_model(nodes, [("x", [1, 4, 5, 5])], [("y", None)], [("sz", np.array([1, 4, 9, 7], np.int64))])
    check(model, {"x": x(1, 4, 5, 5)})


def test_roi_align_and_max_roi_pool():
    rois = np.array([[0, 0, 7, 7], [1, 2, 5, 6], [2.5, 1.5, 6.5, 4.5]], np.float32)
    nodes = [helper.make_node("RoiAlign", ["x", "rois", "bi"], ["a"], output_height=3, output_width=2,
                              sampling_ratio=2, spatial_scale=1.0),
             helper.make_node("MaxRoiPool", ["x", "rois5"], ["m"], pooled_shape=[2, 2], spatial_scale=1.0)]
    model = make_model(nodes, [("x", [2, 3, 8, 8])], [("a", None), ("m", None)],
                       [("rois", rois), ("bi", np.array([0, 1, 0], np.int64)),
                        ("rois5", np.concatenate([np.array([[0], [1], [0]], np.float32), rois], axis=1))], opset=16)
    check(model, {"x": x(2, 3, 8, 8)})


def test_non_max_suppression_is_a_bound_plus_a_count():
    boxes = RNG.random((1, 6, 4)).astype(np.float32)
    boxes[..., 2:] += boxes[..., :2]
    node = helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "thr"], ["sel"])
    model = make_model([node], [("boxes", [1, 6, 4]), ("scores", [1, 2, 6])], [("sel", None, I64)],
                       [("max", np.array([3], np.int64)), ("iou", np.array([0.3], np.float32)),
                        ("thr", np.array([0.2], np.float32))], opset=11)
    module = import_onnx(model, dtype="float32")
    text = str(module)
    assert 'graph.valid_count = "sel.count"' in text and "tensor<6x3xi64>" in text
    scores = RNG.random((1, 2, 6)).astype(np.float32)
    got = onnx_backend.prepare(model).run([boxes, scores])[0]
    import onnxruntime as ort
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"boxes": boxes, "scores": scores})[0]
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- normalisation and inference flags


def test_layer_norm_mean_and_inv_std_outputs():
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "mean", "inv"], axis=-1, epsilon=1e-5)
    model = make_model([node], [("x", [2, 3, 8])], [("y", None), ("mean", None), ("inv", None)],
                       [("g", x(8)), ("b", x(8))], opset=17)
    check(model, {"x": x(2, 3, 8)})


def test_batch_norm_training_mode_uses_batch_statistics():
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                            training_mode=1, momentum=0.8)
    model = make_model([node], [("x", [4, 3, 5, 5])], [("y", None), ("rm", None), ("rv", None)],
                       [("s", x(3)), ("b", x(3)), ("m", x(3)), ("v", np.abs(x(3)) + 1)], opset=15)
    check(model, {"x": x(4, 3, 5, 5)}, atol=1e-4)


def test_standalone_batch_norm():
    """DenseNet's pre-activation: BatchNormalization on a block input, not after a conv."""
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])
    model = make_model([node, helper.make_node("Relu", ["y"], ["z"])], [("x", [2, 3, 4, 4])], [("z", None)],
                       [("s", x(3)), ("b", x(3)), ("m", x(3)), ("v", np.abs(x(3)) + 1)], opset=9)
    check(model, {"x": x(2, 3, 4, 4)})


def test_dropout_mask_is_ones_and_training_flag_with_ratio_zero_is_noted():
    nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], name="drop")]
    model = make_model(nodes, [("x", [2, 3])], [("y", None), ("mask", None, B)],
                       [("r", np.array(0.0, np.float32)), ("t", np.array(True))], opset=13)
    notes: list[str] = []
    module = import_onnx(model, dtype="float32", notes=notes)
    y, mask = reference.run(module, {"x": x(2, 3)})
    assert mask.dtype == np.bool_ and mask.all()
    assert len(notes) == 1 and "node 'drop' (Dropout, opset 13): training-mode Dropout with ratio 0" in notes[0]
    model = make_model(nodes, [("x", [2, 3])], [("y", None), ("mask", None, B)],
                       [("r", np.array(0.5, np.float32)), ("t", np.array(True))], opset=13)
    with pytest.raises(OnnxImportError, match=r"node 'drop' \(Dropout, opset 13\): Dropout in training mode"):
        import_onnx(model)


# ----------------------------------------------------------------------------- opsets, folding, errors


def test_opset_9_unsqueeze_folds_with_its_own_version():
    """Inception v2 / DenseNet-121 from onnx's light zoo: Unsqueeze-1 (axes attribute) on a constant."""
    nodes = [helper.make_node("Unsqueeze", ["c"], ["u"], axes=[0]), helper.make_node("Add", ["x", "u"], ["y"])]
    model = make_model(nodes, [("x", [2, 3])], [("y", None)], [("c", x(3))], opset=9)
    assert ops_of(check(model, {"x": x(2, 3)})) == ["graph.add"]


def test_pooling_1d_and_3d_become_2d_pools():
    nodes = [helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[3], pads=[1, 1], strides=[2]),
             helper.make_node("AveragePool", ["b"], ["q"], kernel_shape=[2, 3, 2], pads=[0, 1, 1, 1, 0, 0],
                              strides=[1, 2, 2], count_include_pad=1, ceil_mode=1)]
    model = make_model(nodes, [("a", [2, 3, 9]), ("b", [1, 2, 5, 6, 7])], [("p", None), ("q", None)], opset=19)
    module = check(model, {"a": x(2, 3, 9), "b": x(1, 2, 5, 6, 7)})
    assert {"graph.max_pool", "graph.avg_pool"} <= set(ops_of(module))


def test_dilated_average_pool():
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1])
    model = make_model([node], [("x", [1, 3, 7, 7])], [("y", None)], opset=19)
    assert "graph.conv2d" in ops_of(check(model, {"x": x(1, 3, 7, 7)}))


def test_newer_operator_version_is_refused_by_name(monkeypatch):
    from stc_mlir.frontend import onnx_ops

    monkeypatch.setitem(onnx_ops.NEWEST_VERSION, "Resize", 13)
    model = make_model([helper.make_node("Resize", ["x", "", "s"], ["y"], name="up")], [("x", [1, 1, 2, 2])],
                       [("y", None)], [("s", np.array([1, 1, 2, 2], np.float32))], opset=18)
    with pytest.raises(OnnxImportError, match=r"node 'up' \(Resize, opset 18\): Resize-18 is newer than the "
                                              r"versions this importer knows \(up to Resize-13\)"):
        import_onnx(model)


def test_strings_and_sequences_are_refused_with_the_input_name():
    model = make_model([helper.make_node("Identity", ["s"], ["y"])], [("s", [2], TensorProto.STRING)],
                       [("y", None, TensorProto.STRING)])
    with pytest.raises(OnnxImportError, match="input 's' has ONNX element type STRING"):
        import_onnx(model)


# ----------------------------------------------------------------------------- the ONNX backend


def test_backend_specialises_shape_inputs_and_casts_outputs_back():
    """Reshape's shape as a model input: imported again per value; float64 in, float64 out."""
    model = make_model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                       [("x", [2, 6], TensorProto.DOUBLE), ("shape", [2], I64)], [("y", None, TensorProto.DOUBLE)])
    rep = onnx_backend.prepare(model)
    data = RNG.standard_normal((2, 6))
    (a,) = rep.run([data, np.array([3, 4], np.int64)])
    (b,) = rep.run({"x": data, "shape": np.array([-1, 2], np.int64)})
    assert a.dtype == np.float64 and a.shape == (3, 4) and b.shape == (6, 2)
    assert rep.specialized == {"shape"}
    np.testing.assert_allclose(b.reshape(-1), data.reshape(-1), rtol=1e-6)


def test_backend_run_node_and_device():
    node = helper.make_node("Where", ["c", "a", "b"], ["y"])
    c = RNG.random((2, 3)) > 0.5
    (y,) = onnx_backend.run_node(node, [c, np.ones((2, 3), np.int32), np.zeros((3,), np.int32)])
    np.testing.assert_array_equal(y, c.astype(np.int32))
    assert onnx_backend.supports_device("CPU") and not onnx_backend.supports_device("CUDA")


@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1]),
    dict(kernel_shape=[2, 3, 1], strides=[2, 1, 2], dilations=[2, 1, 1], pads=[1, 0, 0, 0, 1, 0], group=2),
])
def test_conv3d_is_one_2d_conv_over_gathered_depth_taps(attrs):
    """The seeds' Conv3d: no 3-D op in the graph dialect, one graph.conv2d per 3-D conv."""
    group = attrs.get("group", 1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    model = make_model([node], [("x", [2, 4, 5, 6, 6])], [("y", None)],
                       [("w", x(6, 4 // group, *attrs["kernel_shape"])), ("b", x(6))], opset=11)
    module = check(model, {"x": x(2, 4, 5, 6, 6)}, atol=1e-3)
    assert ops_of(module).count("graph.conv2d") == 1


def test_conv3d_runs_end_to_end_on_the_emulator():
    """Its intermediate tensors are 4-D, so the npu lowering takes it as it is."""
    from stc_mlir import compare

    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3, 3], pads=[1] * 6)
    model = make_model([node], [("x", [1, 4, 4, 8, 8])], [("y", None)], [("w", x(8, 4, 3, 3, 3))], opset=17)
    data = x(1, 4, 4, 8, 8)
    (got,) = onnx_backend.EmulatorBackend.prepare(model).run([data])
    (want,) = onnx_backend.prepare(model).run([data])
    assert got.shape == (1, 8, 4, 8, 8) and compare.cosine(want, got) >= 0.999


def test_a_missing_attribute_names_the_node():
    model = make_model([helper.make_node("MaxPool", ["x"], ["y"], name="pool")], [("x", [1, 1, 4, 4])], [("y", None)])
    with pytest.raises(OnnxImportError, match=r"node 'pool' \(MaxPool, opset 13\): missing attribute 'kernel_shape'"):
        import_onnx(model)


@pytest.mark.parametrize("name", ["squeezenet", "inception_v2"])
def test_light_zoo_graphs_that_used_to_fail(name):
    """onnx's own `light` zoo graphs: SqueezeNet (Dropout with a mask output) and Inception v2
    (opset-9 Unsqueeze folded with its own version); all nine: docs/conformance.md."""
    import os

    import onnx

    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")
    model = onnx.load(path)
    inits = {i.name for i in model.graph.initializer}
    (info,) = [i for i in model.graph.input if i.name not in inits]
    check(model, {info.name: x(*(d.dim_value for d in info.type.tensor_type.shape.dim))}, atol=1e-3)


@pytest.mark.parametrize("axis, exclusive, reverse", [(1, 0, 0), (0, 1, 0), (-1, 0, 1), (1, 1, 1)])
def test_cumsum_of_a_padding_mask_gives_position_ids(axis, exclusive, reverse):
    """RoBERTa's position ids: cumsum(ids != pad) * mask + pad, int64 at run time. CumSum is
    a product with a triangular matrix of ones in float32, exact for these integers."""
    nodes = [helper.make_node("Not", ["pad"], ["keep"]),
             helper.make_node("Cast", ["keep"], ["m"], to=I64),
             helper.make_node("CumSum", ["m", "axis"], ["c"], exclusive=exclusive, reverse=reverse),
             helper.make_node("Mul", ["c", "m"], ["y"])]
    model = make_model(nodes, [("pad", [2, 7], B)], [("y", None, I64)],
                       [("axis", np.array(axis, np.int64))], opset=14)
    module = check(model, {"pad": RNG.random((2, 7)) < 0.3})
    assert "graph.matmul" in ops_of(module)


def test_cumsum_axis_must_be_known():
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"])]
    model = make_model(nodes, [("x", [3]), ("axis", [], I64)], [("y", None)], opset=14)
    with pytest.raises(RuntimeValueError, match="the axis .'axis'. must be known at import time"):
        import_onnx(model)
