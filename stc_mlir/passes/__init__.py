"""stc_mlir.passes"""
