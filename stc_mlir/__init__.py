"""stc-mlir: an MLIR-style compiler (on xDSL) and emulator for the STCP920 multi-core NPU.

    import stc_mlir
    model = stc_mlir.from_onnx("model.onnx")                  # stc_mlir.model.from_onnx
    executor = stc_mlir.Executor.load_from_stcobj(model.compile())
    module = stc_mlir.read_ir("model.mlir")                   # stc_mlir.ir: parsed and verified

The names are loaded on first use, so `import stc_mlir` stays cheap.
"""

__version__ = "0.1.0"

_LAZY = {"Executor": "stc_mlir.executor", "from_onnx": "stc_mlir.model", "Model": "stc_mlir.model",
         "read_ir": "stc_mlir.ir"}
_SUBMODULES = ("model", "executor")  # `stc_mlir.model.from_onnx` without importing stc_mlir.model first


def __getattr__(name: str):
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"stc_mlir.{name}")
    raise AttributeError(f"module 'stc_mlir' has no attribute '{name}'")


def __dir__():
    return sorted([*globals(), *_LAZY, *_SUBMODULES])
