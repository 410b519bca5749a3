"""fp16 range policy: constants beyond fp16's range are refused, except additive attention
masks (saturated by the importer, then computed like onnxruntime's fp32)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import fp16_range, onnx_backend, reference
from stc_mlir.frontend import import_onnx

S = 8
RNG = np.random.default_rng(7)


def attention(mask_nodes, initializers=(), extra_outputs=()):
    """scores [1, 2, S, S] and a float 0/1 `keep` mask [1, 1, 1, S] -> Softmax over the last axis;
    `mask_nodes` turn `keep` into the additive term `neg`."""
    nodes = [*mask_nodes, helper.make_node("Add", ["scores", "neg"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["probs"], axis=-1)]
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, S, S]),
         helper.make_tensor_value_info("keep", TensorProto.FLOAT, [1, 1, 1, S])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 2, S, S]), *extra_outputs],
        list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def inputs():
    keep = np.ones((1, 1, 1, S), np.float32)
    keep[..., -3:] = 0.0  # the last three keys are padding
    return {"scores": (3 * RNG.standard_normal((1, 2, S, S))).astype(np.float32), "keep": keep}


def xlnet_style():
    """HuggingFace XLNet (float32 export): scores - 1e30 * (1 - keep), the constant an initializer."""
    big = numpy_helper.from_array(np.array(1e30, np.float32), "big")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    nodes = [helper.make_node("Sub", ["one", "keep"], ["pad"]),
             helper.make_node("Mul", ["pad", "big"], ["scaled"]),
             helper.make_node("Neg", ["scaled"], ["neg"])]
    return attention(nodes, [big, one])


def finfo_min_style():
    """Newer HuggingFace models: (1 - keep) * finfo(float32).min, the constant a Constant node,
    the mask broadcast through Unsqueeze-free Expand."""
    lowest = helper.make_tensor("lowest", TensorProto.FLOAT, [], [float(np.finfo(np.float32).min)])
    shape = numpy_helper.from_array(np.array([1, 2, S, S], np.int64), "shape")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    nodes = [helper.make_node("Constant", [], ["min"], value=lowest),
             helper.make_node("Sub", ["one", "keep"], ["pad"]),
             helper.make_node("Expand", ["pad", "shape"], ["wide"]),
             helper.make_node("Mul", ["wide", "min"], ["neg"])]
    return attention(nodes, [shape, one])


def onnxruntime(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("build", [xlnet_style, finfo_min_style])
def test_additive_masks_are_found_and_saturated(build):
    model = build()
    masks = fp16_range.additive_masks(model)
    assert list(masks.values()) == ["probs"]  # the Softmax node (named by its output)
    assert fp16_range.check_model(model, "m") == []  # not refused
    notes = []
    module = import_onnx(model, dtype="float16", notes=notes)
    assert len(notes) == 1 and "saturated to +/-10000" in notes[0] and "additive attention mask" in notes[0]
    constants = [op.numpy() for op in module.walk() if op.name == "graph.constant"]
    assert not any(np.isinf(c.astype(np.float32)).any() for c in constants)
    feeds = inputs()
    want = onnxruntime(model, feeds)[0]
    got = reference.run(module, feeds)[0].astype(np.float32)
    assert np.isfinite(got).all()
    assert (got[..., -3:] == 0).all()  # masked keys get nothing, as in fp32
    np.testing.assert_allclose(got, want, atol=2e-3)


def test_masked_softmax_end_to_end_matches_onnxruntime():
    model, feeds = xlnet_style(), inputs()
    got = onnx_backend.EmulatorBackend.prepare(model).run(feeds)[0].astype(np.float32)
    np.testing.assert_allclose(got, onnxruntime(model, feeds)[0], atol=2e-3)


def test_a_large_constant_that_is_not_a_mask_is_still_refused():
    # scores scaled by 1e30 (not a mask added to them): inf in fp16
    scaled = xlnet_style()  # (its 1e30 * (1 - keep) now goes nowhere)
    scaled.graph.node[-2].CopyFrom(helper.make_node("Mul", ["scores", "big"], ["masked"]))
    assert fp16_range.additive_masks(scaled) == {}
    with pytest.raises(fp16_range.Fp16RangeError, match="initializer 'big'"):
        fp16_range.check_model(scaled, "m")
    # a mask that also leaves the model as an output: its values are seen, not only exp'd
    big = numpy_helper.from_array(np.array(1e30, np.float32), "big")
    leaked = attention([helper.make_node("Mul", ["keep", "big"], ["neg"])], [big],
                       [helper.make_tensor_value_info("neg", TensorProto.FLOAT, [1, 1, 1, S])])
    assert fp16_range.additive_masks(leaked) == {}
    with pytest.raises(fp16_range.Fp16RangeError):
        fp16_range.check_model(leaked, "m")


def test_float32_import_keeps_the_mask_value():
    module = import_onnx(xlnet_style(), dtype="float32")
    values = {float(op.numpy()) for op in module.walk() if op.name == "graph.constant" and op.numpy().size == 1}
    assert any(v == pytest.approx(1e30, rel=1e-6) for v in values)


def growing(weight: float):
    """|x| through two 300 x 300 MatMuls of constant weights (constant fills, as the onnx
    package's light zoo graphs have): the values grow 300 * weight per layer."""
    w = numpy_helper.from_array(np.full((300, 300), weight, np.float32), "w")
    nodes = [helper.make_node("Abs", ["x"], ["a0"]),
             helper.make_node("MatMul", ["a0", "w"], ["h1"], name="layer1"),
             helper.make_node("Relu", ["h1"], ["a1"]),
             helper.make_node("MatMul", ["a1", "w"], ["h2"], name="layer2"),
             helper.make_node("Softmax", ["h2"], ["y"])]
    graph = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 300])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 300])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_first_overflow_names_the_op_and_its_fp32_magnitude():
    """Inputs of 1 through weights of 1: the second MatMul reaches 300 * 300 = 90,000."""
    module = import_onnx(growing(1.0), dtype="float16")
    feeds = {"x": np.full((1, 300), 1.0, np.float32)}
    with np.errstate(all="ignore"):
        assert np.isnan(reference.run(module, feeds)[0].astype(np.float32)).all()  # what a user sees
    found = fp16_range.first_overflow(module, feeds)
    assert found is not None and found.op == "graph.matmul 'h2'"
    assert found.largest == pytest.approx(90000.0, rel=1e-3)
    assert "computes values up to 9e+04 (fp16 holds up to 65504)" in str(found)
    assert fp16_range.first_overflow(module, {"x": np.full((1, 300), 1e-3, np.float32)}) is None


def test_stc_run_check_names_the_op_that_overflows(tmp_path, capsys):
    from stc_mlir.tools.stc_run import main

    path = tmp_path / "deep.onnx"
    path.write_bytes(growing(2.0).SerializeToString())
    assert main([str(path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "y: cosine nan" in out
    assert "fp16 overflow: graph.matmul 'h2' computes values up to" in out
