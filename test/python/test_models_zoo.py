"""The seeds' supported-model list (beyond the four models `test_models*.py` study in
depth): each built-in model at its tiny configuration (`models.small_options`) is valid ONNX
that onnxruntime runs, the reference interpreter matches onnxruntime in fp16, and the model
compiles with the default schedule and runs on the emulator within cosine 0.999.

Where the compiler does not take a model's real pattern yet, the model keeps it and the test
is a strict xfail whose reason is the compiler's exact diagnostic: it flips when coverage
lands. The full sizes are in bench/model_zoo.py.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest

from stc_mlir import compare, fp16_range, models, reference
from stc_mlir.emulator import program_from_module, run
from stc_mlir.frontend import import_onnx
from stc_mlir.models import xlnet
from stc_mlir.pipeline import Pipeline

# the models test_models.py / test_models_numerics.py / test_lowering_models.py cover
STUDIED = ("resnet50", "bert-base", "deepfm", "mobilenetv2")
ZOO = [name for name in models.names() if name not in STUDIED]
BATCH = 2

# (model, stage) -> the diagnostic the compiler gives today
KNOWN_GAPS: dict[tuple[str, str], str] = {
    # (XLNet's 1e30 * mask of a float32 export is saturated by the importer: fp16_range)
}


class KnownGap(Exception):
    """A stage failed with the diagnostic KNOWN_GAPS records for it."""


def stage(name: str, step: str, action):
    gap = KNOWN_GAPS.get((name, step))
    try:
        return action()
    except Exception as e:
        if gap is not None and gap in str(e):
            raise KnownGap(str(e)) from e
        raise


def cases(step: str, steps_before: tuple[str, ...] = ()):
    """The zoo models, strict-xfail where this step or one it needs has a known gap."""
    params = []
    for name in ZOO:
        gap = next((KNOWN_GAPS[(name, s)] for s in (*steps_before, step) if (name, s) in KNOWN_GAPS), None)
        marks = [pytest.mark.xfail(strict=True, raises=KnownGap, reason=gap)] if gap else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@functools.cache
def golden(name: str, **options):
    model = models.build(name, batch=BATCH, **{**models.small_options(name), **options})
    inputs = models.example_inputs(name, model)
    return model, inputs, compare.onnxruntime_outputs(model, inputs)


def imported(name: str, model: onnx.ModelProto, dtype: str = "float16"):
    """What stc-run does: refuse constants beyond fp16's range, then import."""
    fp16_range.check_model(model, name)
    return import_onnx(model, dtype=dtype)


def assert_matches(name: str, model: onnx.ModelProto, want: list, got: dict[str, np.ndarray]) -> None:
    by_name = dict(zip((o.name for o in model.graph.output), want))
    assert set(got) == set(by_name)
    for output, value in got.items():
        assert value.shape == by_name[output].shape
        cosine = compare.cosine(by_name[output], value)
        assert cosine >= compare.MIN_COSINE, f"{name}: {output} cosine {cosine:.6f}"


def test_every_builtin_model_is_tested():
    assert set(ZOO) | set(STUDIED) == set(models.names())
    for name in models.names():
        assert set(models.small_options(name)) <= set(models.options(name)), name
        assert models.summary(name)


@pytest.mark.parametrize("name", ZOO)
def test_valid_onnx_that_onnxruntime_runs(name):
    model, _, want = golden(name)
    onnx.checker.check_model(model, full_check=True)
    for output, value in zip(model.graph.output, want, strict=True):
        assert np.isfinite(value).all(), f"{name}: {output.name}"
        assert value.std() > 1e-3, f"{name}: {output.name} is degenerate"
        assert np.abs(value).max() < 1000.0, f"{name}: {output.name} reaches {np.abs(value).max():.4g}"


@pytest.mark.parametrize("name", cases("reference", ("import",)))
def test_reference_matches_onnxruntime_in_fp16(name):
    model, inputs, want = golden(name)
    module = stage(name, "import", lambda: imported(name, model))
    got = stage(name, "reference", lambda: reference.run(module, inputs))
    assert_matches(name, model, want, dict(zip((o.name for o in model.graph.output), got)))


@pytest.mark.parametrize("name", cases("emulate", ("import", "compile")))
def test_default_schedule_on_the_emulator_matches_onnxruntime(name):
    model, inputs, want = golden(name)
    module = stage(name, "import", lambda: imported(name, model))
    program = stage(name, "compile", lambda: program_from_module(Pipeline(None).run(module)))
    outputs, report = stage(name, "emulate", lambda: run(program, inputs))
    assert not report.hazards
    assert_matches(name, model, want, outputs)
    assert report.cycles >= report.roofline_cycles > 0


XLNET_FP16_MASK = {"mask_scale": xlnet.FP16_MASK_SCALE}


def test_xlnet_with_its_fp16_mask_scale_matches_in_the_reference():
    """HuggingFace's XLNet as exported from a float16 model (65500 * mask, kept as it is: it
    is in fp16's range) imports and the reference interpreter matches."""
    model, inputs, want = golden("xlnet", **XLNET_FP16_MASK)
    got = reference.run(imported("xlnet", model), inputs)
    assert_matches("xlnet", model, want, dict(zip((o.name for o in model.graph.output), got)))


def test_family_options_shape_the_network():
    ops = lambda name, **o: [n.op_type for n in models.build(name, **o).graph.node]  # noqa: E731
    assert ops("resnet34", image_size=32).count("Conv") == 36
    assert ops("resnet101", image_size=32).count("Conv") == 104
    assert ops("resnet34", stages="1,1,1,1", image_size=32).count("Conv") == 12  # + 3 projections
    densenet = ops("densenet121", image_size=32)
    assert densenet.count("Conv") == 120 and densenet.count("BatchNormalization") == 121
    mobilenet = models.build("mobilenetv1", image_size=32)
    depthwise = [n for n in mobilenet.graph.node if n.op_type == "Conv"
                 and any(a.name == "group" and a.i > 1 for a in n.attribute)]
    assert len(depthwise) == 13
    with pytest.raises(ValueError, match="stages must be 4 positive integers"):
        models.build("resnet34", stages="1,1")
    with pytest.raises(ValueError, match="unknown option.*depth"):
        models.build("resnet34", depth=50)
    assert models.options("bert-base-512")["seq_len"] == 512


def test_exported_idioms_are_present():
    """The patterns that make each model what its exporter writes (and what the compiler
    must take)."""
    def nodes(name):
        return models.build(name, **models.small_options(name)).graph.node

    albert = models.build("albert", **models.small_options("albert"))
    query = [n for n in albert.graph.node if n.op_type == "MatMul" and "attention.query.weight" in n.input[1]]
    assert len(query) == 3 and len({n.input[1] for n in query}) == 1  # one shared layer
    words = next(t for t in albert.graph.initializer if t.name == "embeddings.word_embeddings.weight")
    assert list(words.dims) == [30000, 32]  # factorised: embedding_size, then the mapping
    assert "Tanh" in {n.op_type for n in albert.graph.node}  # gelu_new

    xlnet = [n.op_type for n in nodes("xlnet")]
    assert xlnet.count("Einsum") == 11 * 2  # per layer: q k v r, ac bd, ef x2, mask, attn_vec, o
    assert {"OneHot", "Equal", "Not", "Greater", "Slice"} <= set(xlnet)

    dlrm = nodes("dlrm")
    scalar_gathers = [n for n in dlrm if n.op_type == "Gather" and n.input[0] == "lS_i"]
    assert len(scalar_gathers) == 26
    assert [n.op_type for n in dlrm].count("Gemm") == 4  # bottom 32, 16; top 32, 1
    assert any(n.op_type == "MatMul" for n in dlrm)  # the batched dot interaction

    for name in ("wide-deep", "mmoe"):
        offsets = [n for n in nodes(name) if n.op_type == "Add" and n.input[0] == "categorical_ids"]
        assert offsets, f"{name}: ids + field offsets"
    mmoe = [n.op_type for n in nodes("mmoe")]
    assert mmoe.count("Softmax") == 2 and mmoe.count("Sigmoid") == 2
    dssm = [n.op_type for n in nodes("dssm")]
    assert dssm.count("Tanh") == 4 and dssm.count("Reciprocal") == 2


@pytest.mark.parametrize("name", [n for n in ZOO if n != "xlnet"])
def test_dynamic_batch(name):
    model = models.build(name, dynamic_batch=True, **models.small_options(name))
    for value_info in list(model.graph.input) + list(model.graph.output):
        assert value_info.type.tensor_type.shape.dim[0].dim_param == "batch"
    inputs = models.example_inputs(name, model)
    assert all(v.shape[0] == 2 for v in inputs.values())
    outputs = compare.onnxruntime_outputs(model, inputs)
    assert all(o.shape[0] == 2 and np.isfinite(o).all() for o in outputs)


def test_xlnet_refuses_a_dynamic_batch():
    with pytest.raises(ValueError, match="xlnet: dynamic_batch is not available"):
        models.build("xlnet", dynamic_batch=True)
