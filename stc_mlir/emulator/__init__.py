"""stc_mlir.emulator"""
