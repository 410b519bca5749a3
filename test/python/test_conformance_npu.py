"""The index, mask and detection commands end to end: ONNX graphs made with onnx.helper,
compiled with the default schedule, run on the emulator and compared with onnxruntime
(floats: fp16 tolerance; integers, bools and indices: exactly)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import onnx_backend
from stc_mlir.emulator import program_from_module
from stc_mlir.pipeline import Pipeline

RNG = np.random.default_rng(7)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def model(nodes, inputs, outputs, initializers=(), opset=21):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(v, n) for n, v in initializers])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def check(m, feeds, atol=1e-2):
    """Emulator outputs against onnxruntime's; returns the emulator's."""
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = onnx_backend.EmulatorBackend.prepare(m).run(feeds)
    for w, x in zip(want, got):
        assert x.shape == w.shape and x.dtype == w.dtype
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(x, w, rtol=1e-2, atol=atol)
        else:
            np.testing.assert_array_equal(x, w)
    return got


def commands(m) -> set[str]:
    from stc_mlir.frontend import import_onnx

    program = program_from_module(Pipeline(None).run(import_onnx(m, dtype="float16")))
    return {c.op for _, _, c in program.commands()}


def test_masks_and_selects_on_int64_ids():
    """A recommender's id arithmetic and a transformer's attention mask: i64 add (beyond
    f16/f32 precision), Greater/Equal into bools, And/Not, and Where choosing between floats."""
    m = model([helper.make_node("Add", ["ids", "offset"], ["shifted"]),
               helper.make_node("Greater", ["shifted", "limit"], ["big"]),
               helper.make_node("Equal", ["ids", "limit"], ["same"]),
               helper.make_node("Not", ["same"], ["other"]),
               helper.make_node("And", ["big", "other"], ["mask"]),
               helper.make_node("Where", ["mask", "x", "y"], ["out"])],
              [("ids", I64, [4, 6]), ("x", F, [4, 6]), ("y", F, [6])],
              [("shifted", I64, None), ("mask", B, None), ("out", F, None)],
              [("offset", np.array([2**40, 0, 1, 2, 3, -5], np.int64)), ("limit", np.array(3, np.int64))])
    feeds = {"ids": RNG.integers(-4, 8, (4, 6)).astype(np.int64),
             "x": RNG.standard_normal((4, 6)).astype(np.float32),
             "y": RNG.standard_normal(6).astype(np.float32)}
    check(m, feeds)
    assert {"binary", "compare", "unary", "select"} <= commands(m)


@pytest.mark.parametrize("op,attrs", [
    ("ArgMax", dict(axis=1, keepdims=0)), ("ArgMin", dict(axis=-1, select_last_index=1)),
    ("ReduceMin", dict(keepdims=1)),
])
def test_index_and_min_reductions(op, attrs):
    data = RNG.integers(0, 5, (3, 8, 5)).astype(np.float32)  # ties: first or last index
    inputs = ["x"] + (["axes"] if op == "ReduceMin" else [])
    inits = [("axes", np.array([1], np.int64))] if op == "ReduceMin" else []
    m = model([helper.make_node(op, inputs, ["y"], **attrs)], [("x", F, [3, 8, 5])],
              [("y", I64 if op.startswith("Arg") else F, None)], inits)
    check(m, {"x": data})


def test_topk_values_and_indices_are_one_item_each():
    m = model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)],
              [("x", F, [2, 9, 3])], [("v", F, None), ("i", I64, None)], [("k", np.array([4], np.int64))])
    check(m, {"x": RNG.permutation(54).reshape(2, 9, 3).astype(np.float32)})
    assert "topk" in commands(m)


def test_split_results_become_slices():
    m = model([helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1)],
              [("x", F, [2, 7])], [("a", F, None), ("b", F, None), ("c", F, None)],
              [("sizes", np.array([1, 2, 4], np.int64))])
    check(m, {"x": RNG.standard_normal((2, 7)).astype(np.float32)})


@pytest.mark.parametrize("mode,coords", [
    ("nearest", "asymmetric"), ("linear", "half_pixel"), ("linear", "align_corners"), ("cubic", "pytorch_half_pixel"),
])
def test_resize_cut_along_the_axes_it_keeps(mode, coords):
    """A 2x upsample of a feature map (FPN, U-Net): batch and channels are spread over cores."""
    m = model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                                coordinate_transformation_mode=coords)],
              [("x", F, [2, 8, 5, 6])], [("y", F, None)],
              [("scales", np.array([1, 1, 2, 1.5], np.float32))])
    check(m, {"x": RNG.standard_normal((2, 8, 5, 6)).astype(np.float32)}, atol=2e-2)


def test_gathers_and_one_hot():
    m = model([helper.make_node("GatherElements", ["x", "i"], ["ge"], axis=1),
               helper.make_node("GatherND", ["x", "nd"], ["gn"], batch_dims=1),
               helper.make_node("OneHot", ["cls", "depth", "values"], ["hot"], axis=-1)],
              [("x", F, [3, 5]), ("i", I64, [3, 4]), ("nd", I64, [3, 2, 1]), ("cls", I64, [4])],
              [("ge", F, None), ("gn", F, None), ("hot", F, None)],
              [("depth", np.array(6, np.int64)), ("values", np.array([-1, 2], np.float32))])
    check(m, {"x": RNG.standard_normal((3, 5)).astype(np.float32),
              "i": RNG.integers(-5, 5, (3, 4)).astype(np.int64),
              "nd": RNG.integers(0, 5, (3, 2, 1)).astype(np.int64),
              "cls": np.array([0, 5, -1, 3], np.int64)})
    # (a one-hot of integer indices with constant values is compare + select after
    # graph-canonicalize: elementwise commands tile, the one_hot command does not)
    assert {"gather_elements", "gather_nd", "compare"} <= commands(m)


def test_batch_norm_with_statistics_computed_by_the_model():
    """Standalone BatchNormalization whose mean/var are model inputs (graph-canonicalize
    cannot fold it): npu.batch_norm."""
    m = model([helper.make_node("BatchNormalization", ["x", "s", "b", "mean", "var"], ["y"], epsilon=1e-3)],
              [("x", F, [2, 4, 3, 3]), ("mean", F, [4]), ("var", F, [4])], [("y", F, None)],
              [("s", RNG.standard_normal(4).astype(np.float32)), ("b", RNG.standard_normal(4).astype(np.float32))])
    check(m, {"x": RNG.standard_normal((2, 4, 3, 3)).astype(np.float32),
              "mean": RNG.standard_normal(4).astype(np.float32),
              "var": RNG.uniform(0.5, 2, 4).astype(np.float32)})


@pytest.mark.parametrize("op", ["HardSwish", "HardSigmoid", "Mish", "Sign", "Cosh", "Sinh", "Softplus"])
def test_new_unary_kinds(op):
    m = model([helper.make_node(op, ["x"], ["y"])], [("x", F, [4, 16])], [("y", F, None)])
    check(m, {"x": RNG.uniform(-4, 4, (4, 16)).astype(np.float32)})


def test_prelu_and_integer_division():
    m = model([helper.make_node("PRelu", ["x", "slope"], ["y"]), helper.make_node("Div", ["a", "b"], ["q"])],
              [("x", F, [2, 3, 4]), ("a", I64, [5]), ("b", I64, [5])], [("y", F, None), ("q", I64, None)],
              [("slope", np.array([[0.1], [0.2], [-0.5]], np.float32))])
    check(m, {"x": RNG.standard_normal((2, 3, 4)).astype(np.float32),
              "a": np.array([7, -7, 2**50 + 1, 0, -9], np.int64), "b": np.array([2, 2, 3, 5, -4], np.int64)})


def test_roi_align_and_nms_as_a_bound_plus_a_count():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32)
    m = model([helper.make_node("NonMaxSuppression", ["boxes", "scores", "limit", "iou"], ["sel"])],
              [("boxes", F, [1, 6, 4]), ("scores", F, [1, 1, 6])], [("sel", I64, None)],
              [("limit", np.array([3], np.int64)), ("iou", np.array([0.5], np.float32))])
    (sel,) = check(m, {"boxes": boxes, "scores": scores})
    assert sel.shape == (3, 3)  # cut from the bound (1 x 1 x 3 rows) to the count
    m = model([helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], output_height=3, output_width=2,
                                sampling_ratio=2, spatial_scale=0.5)],
              [("x", F, [2, 3, 10, 10]), ("rois", F, [4, 4]), ("idx", I64, [4])], [("y", F, None)])
    check(m, {"x": RNG.standard_normal((2, 3, 10, 10)).astype(np.float32),
              "rois": np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5, 5, 9, 9], [1, 2, 15, 12]], np.float32),
              "idx": np.array([0, 0, 1, 1], np.int64)})


@pytest.mark.parametrize("a,b,weight", [
    ((300,), (300, 70), True),   # a row times a weight
    ((2, 3, 40), (40,), False),  # a batch of matrices times a computed column
    ((40,), (3, 40, 5), False),  # a row broadcast against batched matrices
    ((33,), (33,), False),       # an inner product: a rank-0 result
])
def test_matmul_of_1d_operands(a, b, weight):
    """numpy.matmul's 1-D rules: the 1-D operand is read as a row / column (a unit dim at
    stride 0) and the result drops that dim."""
    inputs = [("a", F, list(a))] + ([] if weight else [("b", F, list(b))])
    inits = [("b", RNG.standard_normal(b).astype(np.float32))] if weight else []
    m = model([helper.make_node("MatMul", ["a", "b"], ["y"])], inputs, [("y", F, None)], inits)
    feeds = {"a": RNG.standard_normal(a).astype(np.float32)}
    if not weight:
        feeds["b"] = RNG.standard_normal(b).astype(np.float32)
    check(m, feeds, atol=5e-2)


def test_lrn_across_channels():
    """AlexNet / Inception v1 / ZFNet's LRN: cut along every axis but the channels."""
    m = model([helper.make_node("LRN", ["x"], ["y"], size=5, alpha=1e-3, beta=0.75, bias=2.0)],
              [("x", F, [2, 16, 6, 6])], [("y", F, None)])
    check(m, {"x": RNG.standard_normal((2, 16, 6, 6)).astype(np.float32)})
    assert "lrn" in commands(m)


def test_einsum_contractions_of_attention():
    m = model([helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhid,bhjd->bhij")],
              [("q", F, [1, 2, 4, 8]), ("k", F, [1, 2, 5, 8])], [("s", F, None)])
    check(m, {"q": RNG.standard_normal((1, 2, 4, 8)).astype(np.float32),
              "k": RNG.standard_normal((1, 2, 5, 8)).astype(np.float32)}, atol=3e-2)
    # a (batched) matrix product: graph-canonicalize makes it a matmul, which tiles
    assert "matmul" in commands(m) and "einsum" not in commands(m)


def test_einsum_that_is_no_matrix_product_runs_as_one_einsum_command():
    m = model([helper.make_node("Einsum", ["a", "b"], ["y"], equation="ii,ij->j")],
              [("a", F, [3, 3]), ("b", F, [3, 4])], [("y", F, None)])
    check(m, {"a": RNG.standard_normal((3, 3)).astype(np.float32),
              "b": RNG.standard_normal((3, 4)).astype(np.float32)}, atol=3e-2)
    assert "einsum" in commands(m)


def test_casts_to_bool_int8_and_float8():
    m = model([helper.make_node("Cast", ["x"], ["b"], to=B), helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT8),
               helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT8E4M3FN)],
              [("x", F, [12])], [("b", B, None), ("i", TensorProto.INT8, None), ("f", TensorProto.FLOAT8E4M3FN, None)])
    x = np.array([0, 1.5, -2.25, 100, -128, 127, 0.001, -0.5, 3, 600, -600, 7], np.float32)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = onnx_backend.EmulatorBackend.prepare(m).run({"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2].view(np.uint8), want[2].view(np.uint8))  # ort gives the bits


def test_a_command_the_vector_unit_cannot_do_on_integers_is_refused_by_name():
    from stc_mlir.passes.lowering import LoweringError

    m = model([helper.make_node("ReduceMean", ["x"], ["y"], keepdims=1)], [("x", I64, [3, 4])], [("y", I64, None)])
    with pytest.raises(LoweringError, match=r"graph.reduce_mean 'y': a mean of i64 tensors is not supported"):
        onnx_backend.EmulatorBackend.prepare(m)
    m = model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest")], [("x", TensorProto.UINT8, [1, 1, 4, 4])],
              [("y", TensorProto.UINT8, None)], [("s", np.array([1, 1, 2, 2], np.float32))])
    with pytest.raises(LoweringError, match=r"graph.resize 'y': computes on ui8 tensors \(input\): "
                                            r"npu.resize takes f16/f32 \(cast first\)"):
        onnx_backend.EmulatorBackend.prepare(m)


def test_default_schedule_gives_multi_result_ops_one_item_per_used_result():
    """A group has one output: a Split becomes slices, a TopK one group per used result
    (results nobody uses are not computed)."""
    from stc_mlir.frontend import import_onnx
    from stc_mlir.schedules.default import default_schedule

    m = model([helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1),
               helper.make_node("TopK", ["a", "k"], ["v", "i"], axis=1)],
              [("x", F, [2, 7])], [("b", F, None), ("i", I64, None)],
              [("sizes", np.array([3, 4], np.int64)), ("k", np.array([2], np.int64))])
    module = default_schedule(import_onnx(m, dtype="float16")).module
    names = [op.name for op in module.walk()]
    assert "graph.split" not in names and names.count("graph.slice") == 2
    groups = [op for op in module.walk() if op.name == "schedule.group"]
    assert [g.group_name.data for g in groups if "graph.topk" in [o.name for o in g.walk()]] == ["i_0"]
    assert commands(m) >= {"topk"}
    check(m, {"x": RNG.standard_normal((2, 7)).astype(np.float32)})


def test_integer_passes_cost_by_element_width():
    """The vector unit moves 64 fp16 lanes a cycle: an i64 add takes 4 times an f16 add,
    i32 twice, an i8 / i1 compare the same; a topk sorts in log2 passes."""
    from stc_mlir import target
    from stc_mlir.emulator.cost import compute_cost
    from stc_mlir.isa.program import command, tile

    t = target.load("stcp920")

    def add(dtype):
        x = tile("a", (1024,), dtype=dtype)
        return compute_cost(command("binary", kind="add", lhs=x, rhs=x, output=x), t).cycles
    assert (add("f16"), add("i32"), add("i64"), add("i8")) == (16, 32, 64, 16)
    mask = tile("m", (1024,), dtype="i1")
    assert compute_cost(command("compare", kind="less", lhs=tile("a", (1024,)), rhs=tile("b", (1024,)),
                                output=mask), t).cycles == 16
    sort = command("topk", kind="values", k=4, input=tile("a", (8, 128)), output=tile("b", (8, 4)))
    assert compute_cost(sort, t).cycles == -(-(1024 * 7 * 8 // 2 + 32) // 64)  # log2(128) = 7 stages


def test_a_gather_index_out_of_range_stops_the_emulator():
    from stc_mlir.emulator.memory import HazardError

    m = model([helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)],
              [("x", F, [2, 3]), ("i", I64, [2, 2])], [("y", F, None)])
    rep = onnx_backend.EmulatorBackend.prepare(m)
    with pytest.raises(HazardError, match=r"out of bounds: .*npu.gather_elements.*index 7 is out of range for axis size 3"):
        rep.run({"x": np.ones((2, 3), np.float32), "i": np.array([[0, 7], [1, 2]], np.int64)})


def test_a_negative_slice_step_runs_as_a_gather():
    """graph-canonicalize turns it into a gather of the descending indices (the DMA engines
    take non-negative strides only: the lowering refuses a negative-step graph.slice)."""
    m = model([helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [("x", F, [4, 6])], [("y", F, None)],
              [("s", np.array([5], np.int64)), ("e", np.array([0], np.int64)), ("a", np.array([1], np.int64)),
               ("st", np.array([-2], np.int64))])
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    (y,) = onnx_backend.EmulatorBackend.prepare(m).run({"x": x})
    np.testing.assert_array_equal(y, x[:, 5:0:-2])
