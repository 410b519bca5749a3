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
def gc_paused(long_lived: bool = False) -> Iterator[None]:
    """No automatic cyclic collection inside the block (restores the previous state).

    `long_lived`: what the block leaves alive is its long-lived result (a lowered program:
    ~340k tracked objects for ResNet-50 b16, ~570k for BERT-base b8), so the outermost
    pause moves every tracked object into the oldest generation when it ends (`gc.freeze`
    then `gc.unfreeze`: two list splices) instead of letting the next allocation start a
    young collection that walks all of them to find nothing (0.2-0.4 s) and a middle one
    that walks them again. Reference counting still frees them when dropped; a reference
    cycle made inside the block waits for the next full collection (or `gc.collect()`).
    Skipped while anything is frozen (`gc.get_freeze_count()`), which unfreeze would thaw."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if long_lived and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
