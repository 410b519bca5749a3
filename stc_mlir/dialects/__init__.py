"""stc_mlir.dialects"""
