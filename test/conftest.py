"""Test-session set-up shared by every test directory (loaded before the others).

BLAS runs single-threaded: the emulator computes many small matrix products, and on a
shared machine OpenBLAS threads waiting for a busy core make them tens of times slower
(bench/emulator_conv.py measures the same). Set the variables yourself to override.
Importing stc_mlir before numpy also chooses the BLAS kernels (`stc_mlir.blas`)."""

from stc_mlir import blas

blas.single_threaded()
