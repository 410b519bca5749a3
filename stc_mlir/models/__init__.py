"""stc_mlir.models"""
