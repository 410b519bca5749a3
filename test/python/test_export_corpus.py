"""Models as users export them: every file of test/corpus/exports (torchvision classifiers
and transformers encoders and decoders written by `torch.onnx.export` with its default
settings, random weights; tools/export_corpus.py) goes through the public API —
`stc_mlir.from_onnx`, `Model.compile` with the default schedule, `Executor` on the emulator
— and matches onnxruntime on the same file (cosine >= 0.999 on every output).

Torch is not needed: the files are committed with their large weights stripped and
`corpus.load` regenerates them. Where the compiler does not take a model yet, the test is a
strict xfail whose reason is the compiler's diagnostic (it flips when support lands); the
slowest models run only in bench/model_zoo.py (`--exports`).
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import onnx
import pytest

import stc_mlir
from stc_mlir import compare, fp16_range

CORPUS_DIR = os.path.join(os.path.dirname(__file__), os.pardir, "corpus", "exports")
sys.path.insert(0, os.path.abspath(CORPUS_DIR))

import corpus  # noqa: E402

# model -> the diagnostic the compiler gives today (a substring of it)
# (vgg11's adaptive pooling with uneven bins, 6-D masks and gathers, compiles since
# stc_mlir/passes/coalesce_dims.py merges their dims)
KNOWN_GAPS: dict[str, str] = {}

# transformers' additive attention masks: finfo(float32).min where a score must not count.
# fp16_range refuses them until it recognises additive masks and the importer saturates
# them (cov-rest's branch: `fp16_range.additive_masks`); with that they all match.
ADDITIVE_MASKS = {"bert", "distilbert", "roberta", "albert", "gpt2", "t5-encoder", "t5", "bart", "llama"}
MASK_GAP = "values outside fp16's range"


def gaps(name: str) -> list[str]:
    """The diagnostics `name` may fail with today."""
    found = [KNOWN_GAPS[name]] if name in KNOWN_GAPS else []
    if name in ADDITIVE_MASKS and not hasattr(fp16_range, "additive_masks"):
        found.append(MASK_GAP)
    return found


# the slowest to compile and emulate (20 s to 2 min each): bench/model_zoo.py --exports-only
BENCH_ONLY = {"vit_b_16", "convnext_tiny", "densenet121", "efficientnet_b0", "vgg11"}

MAX_FILE_BYTES = 1 << 20


class KnownGap(Exception):
    """The model failed with the diagnostic KNOWN_GAPS records for it."""


def cases():
    params = []
    for name in corpus.names():
        reasons = gaps(name)
        marks = [pytest.mark.xfail(strict=True, raises=KnownGap, reason="; ".join(reasons))] if reasons else []
        if name in BENCH_ONLY:
            marks = [pytest.mark.skip(reason="slow to emulate: bench/model_zoo.py --exports runs it")]
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@functools.cache
def golden(name: str):
    model = corpus.load(name)
    feeds = corpus.inputs(model)
    return model, feeds, compare.onnxruntime_outputs(model, feeds)


def test_corpus_is_complete_and_small():
    names = corpus.names()
    assert {"resnet18", "mobilenet_v2", "vit_b_16", "bert", "gpt2", "t5", "llama"} <= set(names)
    assert sum(os.path.getsize(corpus.path(n)) for n in names) < 8 * MAX_FILE_BYTES
    for name in names:
        assert os.path.getsize(corpus.path(name)) < MAX_FILE_BYTES, name
    assert set(KNOWN_GAPS) | BENCH_ONLY | ADDITIVE_MASKS <= set(names)


def test_stripped_weights_regenerate_deterministically():
    raw = onnx.load(corpus.path("resnet18"))
    stripped = [t for t in raw.graph.initializer if t.doc_string.startswith(corpus.STRIPPED)]
    assert stripped and all(not t.raw_data for t in stripped)
    first, second = corpus.load("resnet18"), corpus.load("resnet18")
    by_name = {t.name: t for t in second.graph.initializer}
    for t in first.graph.initializer:
        assert t.raw_data == by_name[t.name].raw_data, t.name
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in first.graph.initializer}
    for t in stripped:
        assert weights[t.name].shape == tuple(t.dims) and weights[t.name].std() > 0, t.name
    onnx.checker.check_model(first)


@pytest.mark.parametrize("name", [n for n in corpus.names() if n not in BENCH_ONLY])
def test_onnxruntime_runs_the_regenerated_model(name):
    model, feeds, want = golden(name)
    assert corpus.source(model), f"{name}: no record of what it was exported from"
    for output, value in zip(model.graph.output, want, strict=True):
        assert np.isfinite(value).all(), f"{name}: {output.name}"
        assert value.std() > 1e-5, f"{name}: {output.name} is constant"


def run_on_the_emulator(name: str, model: onnx.ModelProto, feeds: dict, tmp_path) -> list[np.ndarray]:
    """What a user does: from_onnx, compile (default schedule), Executor."""
    try:
        path = stc_mlir.from_onnx(model).compile(tmp_path / f"{name}.stcobj")
        executor = stc_mlir.Executor.load_from_stcobj(path)
        executor.set_input(feeds)
        outputs = executor()
    except Exception as e:
        if any(gap in str(e) for gap in gaps(name)):
            raise KnownGap(str(e)) from e
        raise
    assert not executor.report.hazards
    return outputs


@pytest.mark.parametrize("name", cases())
def test_compiles_and_matches_onnxruntime(name, tmp_path):
    model, feeds, want = golden(name)
    got = run_on_the_emulator(name, model, feeds, tmp_path)
    assert len(got) == len(want)
    cosines = [compare.cosine(w, g) for w, g in zip(want, got)]
    for output, w, g, cos in zip(model.graph.output, want, got, cosines):
        assert g.shape == w.shape, f"{name}: {output.name} shape {g.shape}, onnxruntime {w.shape}"
    worst = min(cosines)
    assert worst >= compare.MIN_COSINE, f"{name}: cosine {worst:.6f}"


# -- the exporter's idioms the importer rewrites, each against onnxruntime on its own


def _emulate(model: onnx.ModelProto, feeds: dict, tmp_path) -> list[np.ndarray]:
    executor = stc_mlir.Executor.load_from_stcobj(stc_mlir.from_onnx(model).compile(tmp_path / "m.stcobj"))
    executor.set_input(feeds)
    return executor()


def test_isnan_guard_of_scaled_dot_product_attention(tmp_path):
    """torch's SDPA decomposition: softmax, then Where(IsNaN(p), 0, p) (fully masked rows)."""
    h = onnx.helper
    nodes = [h.make_node("IsNaN", ["x"], ["nan"]), h.make_node("Where", ["nan", "zero", "x"], ["y"]),
             h.make_node("Cast", ["nan"], ["mask"], to=onnx.TensorProto.FLOAT)]
    graph = h.make_graph(nodes, "isnan", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 8])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3, 8]),
                          h.make_tensor_value_info("mask", onnx.TensorProto.FLOAT, [2, 3, 8])],
                         [onnx.numpy_helper.from_array(np.zeros((), np.float32), "zero")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    x[0, 1, 2] = x[1, 2, :] = np.nan
    want = compare.onnxruntime_outputs(model, {"x": x})
    got = _emulate(model, {"x": x}, tmp_path)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-3, atol=1e-3)


@pytest.mark.filterwarnings("error::stc_mlir.model.ScheduleFallbackWarning")
@pytest.mark.parametrize("data_shape, index_shape", [((2, 16), (2, 1, 1, 16, 2)), ((2, 2, 2, 8), (3, 2, 3, 2, 2))])
def test_gather_nd_of_constant_index_grids(data_shape, index_shape, tmp_path):
    """transformers' mask indexing (2-D mask, 5-D grid) and adaptive pooling's uneven bins
    (NHWC activations, a 5-D grid of (h, w) pairs giving a 6-D result): one Gather, at the
    default level 3 without falling back (a candidate cutting the flattened batch's gather
    into batch parts is refused by the verifier inside the search, not after it)."""
    h = onnx.helper
    rng = np.random.default_rng(1)
    k = index_shape[-1]
    index = np.stack([rng.integers(-d, d, size=index_shape[:-1]) for d in data_shape[:k]], axis=-1)
    nodes = [h.make_node("GatherND", ["x", "index"], ["g"]), h.make_node("Relu", ["g"], ["y"])]
    out_shape = [*index_shape[:-1], *data_shape[k:]]
    graph = h.make_graph(nodes, "gather_nd", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, data_shape)],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, out_shape)],
                         [onnx.numpy_helper.from_array(index.astype(np.int64), "index")])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    x = rng.standard_normal(data_shape).astype(np.float32)
    want = compare.onnxruntime_outputs(model, {"x": x})[0]
    module = stc_mlir.from_onnx(model).graph_module()
    assert "graph.gather_nd" not in str(module)
    # (the 6-D result: the relu runs on one merged dim, the gather's result reshaped to it)
    np.testing.assert_allclose(_emulate(model, {"x": x}, tmp_path)[0], want, rtol=1e-3, atol=1e-3)


def test_adaptive_average_pooling_with_uneven_bins(tmp_path):
    """torch's AdaptiveAvgPool2d((7, 7)) of a 2 x 2 map, as vgg11 at 64 x 64 exports it: a
    GatherND over a 7x2x7x2 grid, 6-D transposes and masks (Where), gathers of 6-D and 5-D
    tensors, adds and a divide; taken from the exported file itself."""
    model = onnx.utils.Extractor(corpus.load("vgg11")).extract_model(["max_pool2d_4"], ["div_4"])
    x = np.random.default_rng(3).standard_normal((2, 512, 2, 2)).astype(np.float32)
    want = compare.onnxruntime_outputs(model, {"max_pool2d_4": x})[0]
    got = _emulate(model, {"max_pool2d_4": x}, tmp_path)[0]
    assert got.shape == want.shape == (2, 512, 7, 7)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_scalar_gathers_sharing_index_constants():
    """torchvision's ViT splits q, k, v with Gather(x, 0 / 1 / 2) in every layer, the same
    three index initializers each time: every gather must get its own index (the importer
    once cached constants by id() of arrays it had let go, and gave layer 3 of ViT-B/16 the
    wrong index: cosine 0.91 end to end)."""
    from stc_mlir import reference
    from stc_mlir.frontend import import_onnx

    h = onnx.helper
    layers = 8
    nodes, outputs = [], []
    for layer in range(layers):
        for part in range(3):
            out = f"y{layer}_{part}"
            nodes.append(h.make_node("Gather", [f"x{layer}", f"i{part}"], [out], axis=0))
            outputs.append(h.make_tensor_value_info(out, onnx.TensorProto.FLOAT, [4, 5]))
    graph = h.make_graph(nodes, "qkv", [h.make_tensor_value_info(f"x{i}", onnx.TensorProto.FLOAT, [3, 4, 5])
                                        for i in range(layers)], outputs,
                         [onnx.numpy_helper.from_array(np.array(i, np.int64), f"i{i}") for i in range(3)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    rng = np.random.default_rng(2)
    feeds = {f"x{i}": rng.standard_normal((3, 4, 5)).astype(np.float32) for i in range(layers)}
    got = reference.run(import_onnx(model, dtype="float32"), feeds)
    for name, value in zip((o.name for o in outputs), got):
        layer, part = map(int, name[1:].split("_"))
        np.testing.assert_array_equal(value, feeds[f"x{layer}"][part], err_msg=name)
