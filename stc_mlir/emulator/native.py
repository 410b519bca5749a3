"""Helpers of the emulator's event loop, in C where built.

- `join(dst, src)`: a vector-clock join. The event loop joins a semaphore's clock with each
  signal's and a thread's clock with the semaphores it takes: ~150,000 joins of
  33-element int64 rows per ResNet-50 b16 run, where `numpy.maximum(dst, src, out=dst)`
  spends ~1 us setting up each call (~0.15 us in C).
- `settled(...)`: what a read or write learns from a memory's writer runs before looking
  at any granule (`Memory.known` and the tracker's unseen-writer test in one call: ~3
  Python calls per access).

The optional C module `_loop` (built by setup.py with `_f16`; `python setup.py build_ext
--inplace` in a source tree) provides both; without it the Python versions below are used,
with the same results. `STC_LOOP_NATIVE=0` in the environment turns the C path off.
"""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from . import _loop  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _loop = None

NATIVE = bool(_loop is not None and os.environ.get("STC_LOOP_NATIVE", "1") != "0")
"""Whether the C path is used (tests compare both)."""


def numpy_join(dst: np.ndarray, src: np.ndarray) -> None:
    """`dst` = max(`dst`, `src`) element-wise, in place."""
    np.maximum(dst, src, out=dst)


def python_settled(starts: list[int], values: list[int], lo: int, hi: int, seen: list[int],
                   writers: Any, bits: int) -> tuple[list[int] | None, bool, bool]:
    """(known, write settled, read settled) of granules [lo, hi) of a memory whose writer
    runs are `starts` / `values`, for a thread whose clock is `seen` (codes are `epoch <<
    bits | thread`): `known` the codes over the range (`Memory.known`: None if some run is
    unknown); a write is settled if they are known and none was written by a thread after
    the epoch `seen` of it (only looked at if `writers`, the memory's writing threads, is
    not empty); a read if moreover none is 0 (never written)."""
    if lo >= hi:
        return None, False, False
    known = values[bisect_right(starts, lo) - 1:bisect_left(starts, hi)]
    if min(known) < 0:
        return None, False, False
    if writers:
        mask = (1 << bits) - 1
        for code in set(known) if len(known) > 8 else known:
            if code >> bits > seen[code & mask]:
                return known, False, False
    return known, True, 0 not in known


join: Callable[[np.ndarray, np.ndarray], None] = _loop.join if NATIVE else numpy_join
"""`dst` = max(`dst`, `src`) element-wise, in place (C-contiguous int64 of one length)."""

settled: Callable[..., tuple[list[int] | None, bool, bool]] = _loop.settled if NATIVE else python_settled
"""See `python_settled`."""
