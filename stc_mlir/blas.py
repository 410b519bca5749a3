"""How numpy's BLAS runs our matrix products: on one thread, and with which kernels.

The emulator and the model builders compute many small products, for which BLAS threads
waiting for a busy core cost far more than they gain (ResNet-50 b16 took 133 s instead of
15 s on a loaded 2-core machine). OpenBLAS reads its thread count when it loads (with
numpy), so the tools and benchmarks call `single_threaded` before importing numpy; set
the variables to override. (The emulator also limits BLAS to one thread around a run:
`stc_mlir.emulator.simulator.run`.)

OpenBLAS also picks its kernels by CPU at load, unless OPENBLAS_CORETYPE names them: a
machine that pins older kernels runs the products at about half speed (AVX2 against
AVX-512 on this project's machines). `kernels` says which run, so a benchmark can print it.
This module does not import numpy.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def single_threaded(environ: MutableMapping[str, str] = os.environ) -> None:
    """BLAS on one thread for the rest of the process (and its children), unless the
    variables are set: call before numpy is imported."""
    for var in THREADS:
        environ.setdefault(var, "1")


def kernels() -> str:
    """The kernels numpy's BLAS runs (threadpoolctl's `architecture`, e.g. 'SkylakeX'), or
    'unknown'."""
    from threadpoolctl import threadpool_info

    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            return str(pool.get("architecture") or "unknown")
    return "unknown"
