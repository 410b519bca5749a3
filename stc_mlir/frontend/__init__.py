"""Frontends: ONNX models into the graph dialect."""

from stc_mlir.frontend.onnx_importer import OnnxImportError, RuntimeValueError, import_onnx

__all__ = ["OnnxImportError", "RuntimeValueError", "import_onnx"]
