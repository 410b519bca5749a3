"""Pausing Python's cyclic garbage collector around long, allocation-heavy work.

The lowering and the emulator allocate hundreds of thousands of small objects (tiles,
commands, records) that stay alive; every automatic collection walks all of them, which
cost ~30% of the lowering's time. They make almost no reference cycles, so reference
counting frees what they drop, and the cycles there are are collected once the work ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block (restores the previous state)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
