"""float32 builds (`import_onnx(..., dtype="float32")`): weight chunks are sized by the
weights' own element type, not fp16's 2 bytes, so an f32 conv or matmul whose weights do
not fit the weight buffer is chunked instead of failing to tile. The onnx package's light
SqueezeNet as shipped (0.02 fills: activations far beyond fp16's range) then matches
onnxruntime up to its logits (their softmax is degenerate: all 1,000 are equal)."""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest

from stc_mlir import compare
from stc_mlir.emulator import program_from_module, run
from stc_mlir.frontend import import_onnx
from stc_mlir.pipeline import Pipeline

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


@pytest.mark.skipif(not glob.glob(os.path.join(LIGHT, "light_squeezenet.onnx")),
                    reason="this onnx package ships no light SqueezeNet")
def test_light_squeezenet_as_shipped_in_float32():
    proto = onnx.load(os.path.join(LIGHT, "light_squeezenet.onnx"))
    # its logits, not the softmax: with the 0.02 fills all 1,000 logits are the same ~9.5e9,
    # so their softmax turns a one-ulp difference of float32 summation order (the BLAS
    # build's, which varies with numpy's release) into a different answer
    softmax = proto.graph.node[-1]
    assert softmax.op_type == "Softmax"
    (out,) = proto.graph.output
    out.name = softmax.input[0]
    del proto.graph.node[-1]
    (info,) = [i for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    x = (np.arange(np.prod(shape), dtype=np.float32) / np.float32(np.prod(shape))).reshape(shape)
    (want,) = compare.onnxruntime_outputs(proto, {info.name: x})
    assert np.abs(want).max() > 65504  # shipped fills: no fp16 model
    program = program_from_module(Pipeline(level=0).run(import_onnx(proto, dtype="float32")))
    outputs, report = run(program, {info.name: x})
    (got,) = outputs.values()
    assert not report.hazards
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_float32_conv_weights_are_chunked_by_their_own_size():
    # 192 x 48 x 3 x 3 weights: 331,776 bytes in f32 (165,888 if they were f16, which fit
    # the 256,901-byte weight buffer whole): chunked, not refused
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((192, 48, 3, 3)) / 20).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 48, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.standard_normal((2, 48, 8, 8)).astype(np.float32)
    (want,) = compare.onnxruntime_outputs(proto, {"x": x})
    # level 0: this lowering, without a search that could route around a refusal
    program = program_from_module(Pipeline(level=0).run(import_onnx(proto, dtype="float32")))
    outputs, report = run(program, {"x": x})
    (got,) = outputs.values()
    assert not report.hazards
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
