"""stc_mlir.target"""
