"""stc-mlir: an MLIR-style compiler (on xDSL) and emulator for the STCP920 multi-core NPU."""

__version__ = "0.1.0"
