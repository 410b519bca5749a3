"""Built-in models: ONNX graphs built in code with seeded random weights (no downloads).

They have the topology, operators and naming of the real exported models (torchvision,
HuggingFace via torch.onnx, a DeepFM), so the importer, the reference interpreter, the
schedules and the emulator are all checked on what users feed them. The weights are random
but scaled so every activation stays in fp16's comfortable range.

    model = build("bert-base", batch=8, num_layers=2)
    outputs = onnxruntime.InferenceSession(model.SerializeToString()).run(
        None, example_inputs("bert-base", model))
"""

from __future__ import annotations

import inspect
from types import ModuleType

import numpy as np
import onnx

from stc_mlir.models import bert, deepfm, mobilenetv2, resnet50

_BUILDERS: dict[str, ModuleType] = {
    "resnet50": resnet50,
    "bert-base": bert,
    "deepfm": deepfm,
    "mobilenetv2": mobilenetv2,
}


def names() -> list[str]:
    return list(_BUILDERS)


def _builder(name: str) -> ModuleType:
    if name not in _BUILDERS:
        raise ValueError(f"unknown model {name!r}; built-in models: {', '.join(_BUILDERS)}")
    return _BUILDERS[name]


def options(name: str) -> dict[str, object]:
    """The options `build` accepts for a model, with their defaults."""
    parameters = inspect.signature(_builder(name).build).parameters
    return {p.name: p.default for p in parameters.values() if p.kind is p.KEYWORD_ONLY}


def build(name: str, batch: int = 1, **options_: object) -> onnx.ModelProto:
    """Builds a built-in model; the same name, batch and options give the same model."""
    valid = options(name)
    unknown = sorted(set(options_) - set(valid))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} for model {name!r}; "
            f"valid options: {', '.join(valid)}"
        )
    return _builder(name).build(batch, **options_)


def example_inputs(name: str, model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Valid inputs for `model` (built as `name`), shaped from its graph inputs; a symbolic
    batch dimension gets size 2."""
    return _builder(name).example_inputs(model, seed)


__all__ = ["build", "example_inputs", "names", "options"]
