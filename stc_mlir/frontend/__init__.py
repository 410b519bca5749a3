"""stc_mlir.frontend"""
