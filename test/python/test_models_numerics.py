"""Built-in models: import + reference interpreter against onnxruntime, before and after the graph passes."""

from __future__ import annotations

import functools

import pytest
from xdsl.context import Context

from stc_mlir import compare, models, reference
from stc_mlir.frontend import import_onnx
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize
from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu

# small enough for CI, the full-size figures are in bench/ and the issue notes
OPTIONS = {
    "resnet50": dict(batch=1),
    "mobilenetv2": dict(batch=2),
    "deepfm": dict(batch=64),
    "bert-base": dict(batch=1, seq_len=32, num_layers=4),
}


@functools.cache
def golden(name: str):
    model = models.build(name, **OPTIONS[name])
    inputs = models.example_inputs(name, model)
    return model, inputs, compare.onnxruntime_outputs(model, inputs)


def assert_close(name, want, got, min_cosine):
    for a, b in zip(want, got, strict=True):
        assert a.shape == b.shape
        cos = compare.cosine(a, b)
        assert cos >= min_cosine, f"{name}: cosine {cos:.6f} < {min_cosine}"


def test_every_builtin_model_is_covered():
    assert set(OPTIONS) <= set(models.names())  # the others: test_models_zoo.py


@pytest.mark.parametrize("name", sorted(OPTIONS))
@pytest.mark.parametrize("dtype,min_cosine", [("float32", 0.9999), ("float16", 0.999)])
def test_reference_interpreter_matches_onnxruntime(name, dtype, min_cosine):
    model, inputs, want = golden(name)
    module = import_onnx(model, dtype=dtype)
    module.verify()
    assert_close(name, want, reference.run(module, inputs), min_cosine)


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_graph_passes_keep_results(name):
    model, inputs, want = golden(name)
    module = import_onnx(model, dtype="float16")
    before = reference.run(module, inputs)
    GraphCanonicalize().apply(Context(), module)
    GraphFuseConvAddRelu().apply(Context(), module)
    module.verify()
    after = reference.run(module, inputs)
    assert_close(name, before, after, 0.9999)
    assert_close(name, want, after, 0.999)
    remaining = {op.name for op in module.walk()}
    assert "graph.batch_norm" not in remaining and "graph.gemm" not in remaining
    if name in ("resnet50", "mobilenetv2"):
        convs = [op for op in module.walk() if op.name == "graph.conv2d"]
        assert all(c.props()["activation"] != "none" or c.bias is not None for c in convs)
