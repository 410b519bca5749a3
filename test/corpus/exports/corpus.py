"""The exported-model corpus: ONNX files written by `torch.onnx.export` (default settings,
random weights) from torchvision classifiers and transformers models, committed without
their large float weights (tools/export_corpus.py writes them; README.md here says how).

    import corpus                          # this directory on sys.path
    corpus.names()                         # ['albert', 'alexnet', ...]
    model = corpus.load("resnet18")        # an onnx.ModelProto with its weights regenerated
    feeds = corpus.inputs(model)           # {input name: array} as the model expects them

A stripped tensor keeps its name, dims and dtype; its `doc_string` records the statistics
of the exported values (mean, std, min, max) and `load` draws new ones from
normal(mean, std) clipped to [min, max] (convolution weights at He's scale, zero-initialised
weights at std 0.02: see `regenerate`), with a generator seeded by the model's recorded
seed and the tensor's name (the same file gives the same weights on every machine).
Only weights are stripped (`WEIGHT_INPUTS`: matmul, conv and embedding tables of
`MIN_BYTES` or more); everything else is kept verbatim (shapes, indices, biases, norms,
and what the exporter folded into constants: masks, position biases, rotary tables).
Needs numpy and onnx only: the export tool (in a torch venv) and the tests (without
torch) both use it.
"""

from __future__ import annotations

import json
import math
import os
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

DIRECTORY = os.path.dirname(os.path.abspath(__file__))
MIN_BYTES = 1024
ZERO_INIT_STD = 0.02
STRIPPED = "export_corpus:stripped "
SEED_KEY = "export_corpus.seed"
INPUTS_KEY = "export_corpus.inputs"
SOURCE_KEY = "export_corpus.source"
FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16)


def names() -> list[str]:
    """The corpus's models (its .onnx files, without the suffix), sorted."""
    return sorted(f[: -len(".onnx")] for f in os.listdir(DIRECTORY) if f.endswith(".onnx"))


def path(name: str) -> str:
    return os.path.join(DIRECTORY, name + ".onnx")


def _tensors(model: onnx.ModelProto):
    """Every initializer and Constant-node tensor of the model, subgraphs included."""
    def walk(graph: onnx.GraphProto):
        yield from graph.initializer
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t
                elif attr.type == onnx.AttributeProto.GRAPH:
                    yield from walk(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for g in attr.graphs:
                        yield from walk(g)

    yield from walk(model.graph)


# (operator, input index) that hold a layer's weights: the only tensors stripped
WEIGHT_INPUTS = {("MatMul", 0), ("MatMul", 1), ("Gemm", 1), ("Conv", 1), ("ConvTranspose", 1), ("Gather", 0)}


def _weights(model: onnx.ModelProto) -> set[str]:
    """Names of the main graph's tensors used as weights (WEIGHT_INPUTS)."""
    return {name for node in model.graph.node for i, name in enumerate(node.input)
            if (node.op_type, i) in WEIGHT_INPUTS}


def strip(model: onnx.ModelProto, seed: int, min_bytes: int = MIN_BYTES) -> int:
    """Drop the values of the float weights of `min_bytes` or more (in place), recording
    their statistics; returns how many were stripped. Everything else stays verbatim:
    integer tensors, small ones, and constants the exporter folded that are not weights
    (attention masks, position biases with the mask added, rotary tables)."""
    weights = _weights(model)
    constants = {node.output[0]: attr.t for node in model.graph.node if node.op_type == "Constant"
                 for attr in node.attribute if attr.name == "value"}
    stripped = 0
    for name in sorted(weights):
        tensor = next((t for t in model.graph.initializer if t.name == name), None) or constants.get(name)
        if tensor is None or tensor.data_type not in FLOATS or tensor.doc_string.startswith(STRIPPED):
            continue
        values = numpy_helper.to_array(tensor)
        if values.nbytes < min_bytes or not np.isfinite(values).all() or np.abs(values).max() >= 1e4:
            continue
        v = values.astype(np.float64)
        stats = {"mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()), "max": float(v.max())}
        dims = list(tensor.dims)
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            tensor.ClearField(field)
        del tensor.dims[:]
        tensor.dims.extend(dims)
        tensor.doc_string = STRIPPED + json.dumps(stats)
        stripped += 1
    model.metadata_props.add(key=SEED_KEY, value=str(seed))
    return stripped


def regenerate(model: onnx.ModelProto) -> int:
    """Fill every stripped tensor (in place) with deterministic random values of its recorded
    statistics; returns how many were filled."""
    meta = {p.key: p.value for p in model.metadata_props}
    seed = int(meta.get(SEED_KEY, "0"))
    conv_weights = {n.input[1] for n in model.graph.node if n.op_type == "Conv" and len(n.input) > 1}
    filled = 0
    for tensor in _tensors(model):
        if not tensor.doc_string.startswith(STRIPPED):
            continue
        stats = json.loads(tensor.doc_string[len(STRIPPED):])
        rng = np.random.default_rng([seed, zlib.crc32(tensor.name.encode())])
        shape = tuple(tensor.dims)
        if tensor.name in conv_weights and len(shape) > 1:
            # He's scale: the exporter folds eval BatchNorms (statistics 0 and 1 at random
            # init) into the convolutions, whose own init (fan-out scaled) then makes the
            # activations of deep nets vanish (MobileNetV2's logits ~1e-10: below fp16)
            std = math.sqrt(2.0 / math.prod(shape[1:]))
            mean, low, high = 0.0, -3 * std, 3 * std
        elif stats["std"] == 0 and stats["mean"] == 0:
            # a zero-initialised weight (torchvision ViT's classification head): the model's
            # output would be constant, so it gets transformers' init scale instead
            mean, std, low, high = 0.0, ZERO_INIT_STD, -3 * ZERO_INIT_STD, 3 * ZERO_INIT_STD
        else:
            mean, std, low, high = stats["mean"], stats["std"], stats["min"], stats["max"]
        # float32 draws, scaled in place: VGG-11's 130M weights in seconds
        values = rng.standard_normal(shape, dtype=np.float32)
        values *= np.float32(std)
        values += np.float32(mean)
        np.clip(values, low, high, out=values)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
        tensor.raw_data = values.astype(dtype, copy=False).tobytes()
        tensor.doc_string = ""
        filled += 1
    return filled


def load(name_or_path: str) -> onnx.ModelProto:
    """A corpus model (by name or path) with its stripped weights regenerated."""
    model = onnx.load(name_or_path if name_or_path.endswith(".onnx") else path(name_or_path))
    regenerate(model)
    return model


def input_specs(model: onnx.ModelProto) -> dict[str, dict]:
    """`{input: {"kind": "normal" | "randint" | "mask", ...}}` as the export recorded it."""
    meta = {p.key: p.value for p in model.metadata_props}
    return json.loads(meta.get(INPUTS_KEY, "{}"))


def inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for `model`: standard-normal floats, token ids below the vocabulary size,
    attention masks of ones with the last quarter of the second sequence masked out."""
    specs = input_specs(model)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = tuple(d.dim_value for d in tensor_type.shape.dim)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        spec = specs.get(value.name, {"kind": "normal"})
        if spec["kind"] == "randint":
            feeds[value.name] = rng.integers(spec.get("low", 0), spec["high"], size=shape).astype(dtype)
        elif spec["kind"] == "mask":
            mask = np.ones(shape, dtype=dtype)
            if len(shape) == 2 and shape[0] > 1:
                mask[1, shape[1] - max(1, shape[1] // 4):] = 0
            feeds[value.name] = mask
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def source(model: onnx.ModelProto) -> str:
    """What the model was exported from (library, class, configuration, input shapes)."""
    return {p.key: p.value for p in model.metadata_props}.get(SOURCE_KEY, "")
