"""The built-in models: valid ONNX that onnxruntime runs, and numerically fit for fp16.

The product runs these models in float16 and compares with onnxruntime in float32, so the
random weights must keep every activation well scaled; these tests measure that directly.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import models
from stc_mlir.models import bert, deepfm

# Small enough to keep the file fast; resnet50 and mobilenetv2 at full 224x224 size.
CONFIGS = {
    "resnet50": dict(batch=1),
    "mobilenetv2": dict(batch=1),
    "bert-base": dict(batch=2, num_layers=2, seq_len=32),
    "deepfm": dict(batch=16),
}
OUTPUT_SHAPES = {
    "resnet50": {"output": (1, 1000)},
    "mobilenetv2": {"output": (1, 1000)},
    "bert-base": {"last_hidden_state": (2, 32, 768)},
    "deepfm": {"output": (16, 1)},
}
# The additive attention mask is -10000 by design (fp16-safe); it is not an activation.
MASK_VALUE_BOUND = 10000.0 + 100.0


def session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def to_fp16_and_back(array: np.ndarray) -> np.ndarray:
    if array.dtype != np.float32:
        return array
    return array.astype(np.float16).astype(np.float32)


def with_fp16_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the model with every float initializer rounded to float16."""
    rounded = copy.deepcopy(model)
    for tensor in rounded.graph.initializer:
        if tensor.data_type == TensorProto.FLOAT:
            values = numpy_helper.to_array(tensor)
            tensor.ClearField("float_data")
            tensor.raw_data = to_fp16_and_back(values).tobytes()
    return rounded


def round_activations_to_fp16(model: onnx.ModelProto, float_tensors: set[str]) -> None:
    """Rounds every float intermediate to float16 (a Cast pair after each node), as an
    fp16 pipeline stores them; in place."""
    graph = model.graph
    outputs = {o.name for o in graph.output}
    renamed: dict[str, str] = {}
    nodes = []
    for node in graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        nodes.append(node)
        for name in node.output:
            if name in float_tensors and name not in outputs:
                half, rounded = f"{name}.fp16", f"{name}.rounded"
                nodes.append(helper.make_node("Cast", [name], [half], to=TensorProto.FLOAT16))
                nodes.append(helper.make_node("Cast", [half], [rounded], to=TensorProto.FLOAT))
                renamed[name] = rounded
    graph.ClearField("node")
    graph.node.extend(nodes)


def mask_tensors(model: onnx.ModelProto) -> set[str]:
    """Tensors derived from bert's attention_mask up to the Softmax that consumes them."""
    derived = {"attention_mask"}
    for node in model.graph.node:
        if node.op_type != "Softmax" and derived.intersection(node.input):
            derived.update(node.output)
    return derived - {"attention_mask"}


@functools.cache
def built(name: str) -> onnx.ModelProto:
    return models.build(name, **CONFIGS[name])


@functools.cache
def inputs(name: str) -> dict[str, np.ndarray]:
    return models.example_inputs(name, built(name))


@functools.cache
def all_activations(name: str) -> dict[str, np.ndarray]:
    """Every tensor the graph computes, by running it with all of them as outputs
    (onnxruntime infers the types of outputs declared by name only)."""
    model = copy.deepcopy(built(name))
    known = {o.name for o in model.graph.output}
    model.graph.output.extend(
        onnx.ValueInfoProto(name=tensor)
        for node in model.graph.node
        for tensor in node.output
        if tensor not in known
    )
    names = [o.name for o in model.graph.output]
    return dict(zip(names, session(model).run(names, inputs(name))))


@pytest.mark.parametrize("name", list(CONFIGS))
def test_model_is_valid_onnx_for_onnxruntime(name):
    model = built(name)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version in (8, 9)
    assert [(o.domain, o.version) for o in model.opset_import] == [
        ("", 14 if name == "bert-base" else 13)
    ]
    outputs = session(model).run(None, inputs(name))
    assert {o.name: v.shape for o, v in zip(model.graph.output, outputs)} == OUTPUT_SHAPES[name]
    assert all(np.isfinite(v).all() for v in outputs)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_activations_are_well_scaled(name):
    activations = all_activations(name)
    model = built(name)
    masks = mask_tensors(model) if name == "bert-base" else set()
    floats = {n: v for n, v in activations.items() if v.dtype == np.float32 and v.size}
    assert len(floats) > 20
    for tensor, value in floats.items():
        largest = float(np.abs(value).max())
        bound = MASK_VALUE_BOUND if tensor in masks else 1000.0
        assert largest < bound, f"{name}: {tensor} reaches {largest:.4g}"
    for output in model.graph.output:
        value = activations[output.name]
        assert value.std() > 1e-3, f"{name}: {output.name} is degenerate"
    if name == "deepfm":  # a click probability, not saturated
        assert 0.02 < activations["output"].min() and activations["output"].max() < 0.98
    for tensor, value in floats.items():
        if "Softmax" in tensor:  # peaked but not one-hot, uniform would be 1/S
            assert 2.0 / value.shape[-1] < value.max(axis=-1).mean() < 0.9


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fp16_rounding_keeps_results(name):
    model = built(name)
    output = model.graph.output[0].name
    want = all_activations(name)[output]
    rounded_inputs = {k: to_fp16_and_back(v) for k, v in inputs(name).items()}
    rounded = with_fp16_weights(model)
    weights_only = session(rounded).run([output], rounded_inputs)[0]
    assert cosine(want, weights_only) >= 0.9995
    float_tensors = {n for n, v in all_activations(name).items() if v.dtype == np.float32}
    round_activations_to_fp16(rounded, float_tensors)
    everything = session(rounded).run([output], rounded_inputs)[0]
    assert cosine(want, everything) >= 0.999


@pytest.mark.parametrize(
    "name,options",
    [("resnet50", dict(image_size=64)), ("mobilenetv2", dict(image_size=64)),
     ("bert-base", dict(num_layers=1, seq_len=16)), ("deepfm", {})],
)
def test_dynamic_batch(name, options):
    model = models.build(name, dynamic_batch=True, **options)
    onnx.checker.check_model(model)
    for value_info in list(model.graph.input) + list(model.graph.output):
        assert value_info.type.tensor_type.shape.dim[0].dim_param == "batch"
    inputs = models.example_inputs(name, model)
    assert all(v.shape[0] == 2 for v in inputs.values())
    (output, *_) = session(model).run(None, inputs)
    assert output.shape[0] == 2 and np.isfinite(output).all()


def test_static_batch_and_options_shape_the_model():
    model = models.build("bert-base", batch=3, seq_len=8, num_layers=1)
    shapes = [[d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input]
    assert shapes == [[3, 8]] * 3
    assert sum(n.op_type == "Softmax" for n in model.graph.node) == 1
    mobilenet = models.build("mobilenetv2", batch=2, image_size=96, opset=11)
    assert mobilenet.opset_import[0].version == 11
    image = mobilenet.graph.input[0]
    assert [d.dim_value for d in image.type.tensor_type.shape.dim] == [2, 3, 96, 96]
    (logits,) = session(mobilenet).run(None, models.example_inputs("mobilenetv2", mobilenet))
    assert logits.shape == (2, 1000) and np.isfinite(logits).all()


def test_builds_are_deterministic_per_seed():
    first, again = models.build("deepfm"), models.build("deepfm")
    assert first.SerializeToString() == again.SerializeToString()
    other = models.build("deepfm", seed=1)
    assert first.graph.initializer[0].raw_data != other.graph.initializer[0].raw_data


def test_unknown_model_or_option_is_a_value_error():
    with pytest.raises(ValueError, match="built-in models: resnet50, resnet34, resnet101, .*, mmoe"):
        models.build("resnet51")
    with pytest.raises(ValueError, match="valid options: .*seq_len"):
        models.build("bert-base", image_size=224)
    with pytest.raises(ValueError, match="opset"):
        models.build("bert-base", opset=18)
    with pytest.raises(ValueError, match="batch"):
        models.build("deepfm", batch=0)
    with pytest.raises(ValueError, match="unknown model"):
        models.example_inputs("gpt2", built("deepfm"))
    assert {"resnet50", "bert-base", "deepfm", "mobilenetv2"} <= set(models.names())


def test_exported_idioms_are_present():
    """What the importer must handle because real exports contain it."""
    ops = {name: [n.op_type for n in built(name).graph.node] for name in CONFIGS}
    resnet_convs = [n for n in built("resnet50").graph.node if n.op_type == "Conv"]
    assert ops["resnet50"].count("Conv") == 53 == ops["resnet50"].count("BatchNormalization")
    assert all(len(n.input) == 2 for n in resnet_convs)  # bias-free, BN not folded
    assert ops["resnet50"].count("Add") == 16
    mobilenet = built("mobilenetv2").graph
    depthwise = [
        n for n in mobilenet.node
        if n.op_type == "Conv" and any(a.name == "group" and a.i > 1 for a in n.attribute)
    ]
    assert len(depthwise) == 17
    assert all(len(n.input) == 3 for n in mobilenet.node if n.op_type == "Clip")
    for op in ["Shape", "Constant", "Concat", "Erf", "Pow", "Sqrt", "Identity", "Cast"]:
        assert op in ops["bert-base"], op
    assert "LayerNormalization" not in ops["bert-base"] and "Gelu" not in ops["bert-base"]
    assert {"Gemm", "MatMul", "ReduceSum", "Sigmoid", "Concat"} <= set(ops["deepfm"])


def test_example_inputs_are_in_range():
    feeds = inputs("bert-base")
    ids, mask, types = feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"]
    assert ids.dtype == mask.dtype == types.dtype == np.int64
    assert ids.min() >= 0 and ids.max() < bert.VOCAB_SIZE
    assert set(np.unique(mask)) == {0, 1} and set(np.unique(types)) <= {0, 1}
    assert mask[0, -1] == 0 and mask[1].all()  # row 0 padded, row 1 full
    assert (np.diff(mask, axis=1) <= 0).all()  # padding only at the end
    assert (ids[mask == 0] == bert.PAD).all()

    feeds = inputs("deepfm")
    index, value = feeds["feat_index"], feeds["feat_value"]
    assert index.dtype == np.int64 and value.dtype == np.float32
    assert index.shape == value.shape == (16, deepfm.FIELD_SIZE)
    assert index.min() >= 0 and index.max() < deepfm.FEATURE_SIZE
    assert value.min() >= 0.0 and value.max() <= 1.0

    image = inputs("resnet50")["data"]
    assert image.shape == (1, 3, 224, 224) and image.dtype == np.float32
    assert abs(float(image.std()) - 1.0) < 0.01
