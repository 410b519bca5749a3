"""Built-in models: ONNX graphs built in code with seeded random weights (no downloads).

They have the topology, operators and naming of the real exported models (torchvision,
HuggingFace via torch.onnx, TensorFlow recommenders via tf2onnx), so the importer, the
reference interpreter, the schedules and the emulator are all checked on what users feed
them. The weights are random but scaled so every activation stays in fp16's comfortable
range. The list is the seeds' supported-model table (CV, NLP and recommendation).

    model = build("bert-base", batch=8, num_layers=2)
    outputs = onnxruntime.InferenceSession(model.SerializeToString()).run(
        None, example_inputs("bert-base", model))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
import onnx

from stc_mlir.models import (
    albert, bert, deepfm, densenet, dlrm, dssm, mmoe, mobilenetv1, mobilenetv2, resnet, widedeep, xlnet,
)


@dataclass(frozen=True)
class ModelEntry:
    """A built-in model: its builder module, the options its name fixes (not settable) or
    defaults differently, a one-line summary, and a tiny option set that keeps it seconds
    to compile and emulate (the tests use it; the full size is the default)."""

    module: ModuleType
    summary: str
    small: Mapping[str, object]
    fixed: Mapping[str, object] = field(default_factory=dict)
    defaults: Mapping[str, object] = field(default_factory=dict)


_TINY_RESNET = {"image_size": 32, "stages": (1, 1, 1, 1)}
_TINY_BERT = {"seq_len": 16, "num_layers": 1}
_TINY_WIDTH = {"hidden_size": 64, "num_heads": 2, "intermediate_size": 128}
_BERT_LARGE = {"num_layers": 24, "hidden_size": 1024, "num_heads": 16, "intermediate_size": 4096}

_MODELS: dict[str, ModelEntry] = {  # the seeds' table order: CV, NLP, recommendation
    "resnet50": ModelEntry(resnet, "ResNet-50 v1.5 (torchvision)", {"image_size": 32},
                           fixed={"depth": 50}),
    "resnet34": ModelEntry(resnet, "ResNet-34 (torchvision, basic blocks)", _TINY_RESNET,
                           fixed={"depth": 34}),
    "resnet101": ModelEntry(resnet, "ResNet-101 v1.5 (torchvision)", _TINY_RESNET,
                            fixed={"depth": 101}),
    "mobilenetv1": ModelEntry(mobilenetv1, "MobileNetV1 (depthwise-separable, ReLU6)",
                              {"image_size": 32}),
    "mobilenetv2": ModelEntry(mobilenetv2, "MobileNetV2 (torchvision)", {"image_size": 32}),
    "densenet121": ModelEntry(densenet, "DenseNet-121 (torchvision)",
                              {"image_size": 32, "block_config": (2, 2, 2, 2), "growth_rate": 8}),
    "bert-base": ModelEntry(bert, "BERT-base, sequence 128 (HuggingFace BertModel)", _TINY_BERT),
    "bert-base-256": ModelEntry(bert, "BERT-base, sequence 256",
                                {"num_layers": 1, **_TINY_WIDTH}, defaults={"seq_len": 256}),
    "bert-base-512": ModelEntry(bert, "BERT-base, sequence 512",
                                {"num_layers": 1, **_TINY_WIDTH}, defaults={"seq_len": 512}),
    "bert-large": ModelEntry(bert, "BERT-large, sequence 128 (24 layers, hidden 1024)",
                             {**_TINY_BERT, "num_layers": 2, **_TINY_WIDTH}, defaults=_BERT_LARGE),
    "xlnet": ModelEntry(xlnet, "XLNet-base (relative attention as Einsums)",
                        {**_TINY_BERT, "num_layers": 2, **_TINY_WIDTH}),
    "albert": ModelEntry(albert, "ALBERT-base v2 (factorised embedding, one shared layer)",
                         {**_TINY_BERT, "num_layers": 3, "embedding_size": 32, **_TINY_WIDTH}),
    "wide-deep": ModelEntry(widedeep, "Wide & Deep on Criteo fields (TensorFlow)",
                            {"hidden_units": (64, 32), "max_table_rows": 1000}),
    "deepfm": ModelEntry(deepfm, "DeepFM, 39 Criteo fields", {}),
    "dlrm": ModelEntry(dlrm, "DLRM, Criteo Kaggle configuration (tables capped at 100k rows)",
                       {"bottom_mlp": (32,), "top_mlp": (32,), "max_table_rows": 1000}),
    "dssm": ModelEntry(dssm, "DSSM two-tower semantic matching (30k letter trigrams)",
                       {"trigrams": 2000, "hidden_units": (64, 32)}),
    "mmoe": ModelEntry(mmoe, "MMoE multi-task ranking (8 experts, 2 tasks)",
                       {"num_experts": 3, "expert_units": (32,), "tower_units": (16,),
                        "max_table_rows": 1000}),
}


def names() -> list[str]:
    return list(_MODELS)


def entry(name: str) -> ModelEntry:
    if name not in _MODELS:
        raise ValueError(f"unknown model {name!r}; built-in models: {', '.join(_MODELS)}")
    return _MODELS[name]


def summary(name: str) -> str:
    return entry(name).summary


def options(name: str) -> dict[str, object]:
    """The options `build` accepts for a model, with their defaults."""
    model = entry(name)
    parameters = inspect.signature(model.module.build).parameters
    return {
        p.name: model.defaults.get(p.name, p.default)
        for p in parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name not in model.fixed
    }


def small_options(name: str) -> dict[str, object]:
    """A tiny configuration of the model (same operators and patterns, few layers, small
    images or sequences): seconds to compile and emulate, for tests and quick runs."""
    return dict(entry(name).small)


def build(name: str, batch: int = 1, **options_: object) -> onnx.ModelProto:
    """Builds a built-in model; the same name, batch and options give the same model."""
    valid = options(name)
    unknown = sorted(set(options_) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} for model {name!r}; "
            f"valid options: {', '.join(valid)}"
        )
    model = entry(name)
    return model.module.build(batch, **{**model.defaults, **options_, **model.fixed})


def example_inputs(name: str, model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Valid inputs for `model` (built as `name`), shaped from its graph inputs; a symbolic
    batch dimension gets size 2."""
    example: Callable[[onnx.ModelProto, int], dict[str, np.ndarray]] = entry(name).module.example_inputs
    return example(model, seed)


__all__ = ["ModelEntry", "build", "example_inputs", "names", "options", "small_options",
           "summary"]
