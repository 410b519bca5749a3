"""Vector-clock joins of the emulator's event loop, in C where built.

The event loop joins a semaphore's clock with each signal's and a thread's clock with the
semaphores it takes: ~150,000 joins of 33-element int64 rows per ResNet-50 b16 run, where
`numpy.maximum(dst, src, out=dst)` spends ~1 us setting up each call. The optional C module
`_clocks` (built by setup.py with `_f16`; `python setup.py build_ext --inplace` in a
source tree) does the same in ~0.15 us; without it numpy's maximum is used, with the same
result. `STC_CLOCKS_NATIVE=0` in the environment turns the C path off.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

try:
    from . import _clocks  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _clocks = None

NATIVE = bool(_clocks is not None and os.environ.get("STC_CLOCKS_NATIVE", "1") != "0")
"""Whether the C path is used (tests compare both)."""


def numpy_join(dst: np.ndarray, src: np.ndarray) -> None:
    """`dst` = max(`dst`, `src`) element-wise, in place."""
    np.maximum(dst, src, out=dst)


join: Callable[[np.ndarray, np.ndarray], None] = _clocks.join if NATIVE else numpy_join
"""`dst` = max(`dst`, `src`) element-wise, in place (C-contiguous int64 of one length)."""
