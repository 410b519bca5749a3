"""Test-session set-up shared by every test directory (loaded before the others).

BLAS runs single-threaded: the emulator computes many small matrix products, and on a
shared machine OpenBLAS threads waiting for a busy core make them tens of times slower
(bench/emulator_conv.py measures the same). Set the variables yourself to override."""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
