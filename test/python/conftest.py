"""Shared fixtures. `small_model(name)`: the small versions of the built-in models that the
compile-and-run tests use, built once per session (building ResNet-50 calibrates its
BatchNorms on a forward pass: seconds)."""

from __future__ import annotations

import contextlib
import functools

import onnx
import pytest

from stc_mlir import models

SMALL = {
    "resnet50": {"batch": 2, "image_size": 32},
    "bert-base": {"batch": 2, "num_layers": 1, "seq_len": 16},
    "deepfm": {"batch": 16},
    "mobilenetv2": {"batch": 2, "image_size": 32},
}


@functools.cache
def _build(name: str) -> onnx.ModelProto:
    return models.build(name, **SMALL[name])


@pytest.fixture(scope="session", autouse=True)
def _decision_cache(tmp_path_factory):
    """The automatic scheduler's decision cache (the default level 3 writes one per model
    compiled) in the session's temporary directory, not the user's ~/.cache; a test that
    needs a cold cache sets STC_MLIR_CACHE_DIR itself."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path_factory.mktemp("autoschedule-cache")))
        yield


@pytest.fixture(scope="session")
def small_model():
    return _build


@pytest.fixture
def recorded(monkeypatch):
    """Every `progress.steps` reported, as [description, total, steps done]: as `counted`
    sees it and as the emulator, which imports `steps` by name, does."""
    from stc_mlir import progress
    from stc_mlir.emulator import simulator

    seen = []

    @contextlib.contextmanager
    def recording(description, total=None):
        entry = [description, total, 0]  # its own entry: steps nest (the emulator's inside the search's)
        seen.append(entry)

        def advance(n=1):
            entry[2] += n

        yield advance

    monkeypatch.setattr(progress, "steps", recording)
    monkeypatch.setattr(simulator, "steps", recording)
    return seen
