"""stc_mlir.schedules"""
