"""Commands' values on several host threads (`Simulator._compute` with `threads` > 1).

Why the values do not change: a run with hazard checks that raises no hazard orders every
two commands that touch the same bytes (one of them writing) by happens-before, so the
first one completed (in simulated time) before the second one started: the second one
waits for a semaphore the first one's completion signalled, or follows it in a unit queue
or across a fence. The emulator applies a command's data effect when it starts, and the
timeline gets a command's slice when it completes, in the order of the event loop. So
when a command starts, waiting for the values of every command whose slice the timeline
has got since (`Values.start`) waits for all those it depends on; the commands still
computing are ones running at the same simulated time, which touch none of its bytes
(each command computes as it does alone, single-threaded BLAS included: the same bits).
The simulator hands over only large products and binary commands (`_Task.hand`; a small
command is computed where it starts, which is as safe: the commands still computing touch
none of its bytes).

What is handed over is a product alone: the event loop's thread does a handed command's
Python work (its operands' views, fp32 copies and columns, from the derived-value cache)
and queues its product on a pool of C threads (`halves.handing`, `_f16.Pool`), which
never take the GIL; waiting for a product, the loop's thread works out queued ones
itself. Without the C products a handed command is computed where it starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import halves


class Values:
    """The commands' values on `threads` threads (this one and a pool of `threads` - 1)
    during one run: when a command starts, `completed(timeline)` then (its values handed
    over) `start(key, work)`; `finish()` at the end, then (also after an error) `close()`."""

    def __init__(self, threads: int) -> None:
        self.pool = halves.pool(threads - 1)
        self.pending: dict[Any, tuple[list, Callable[[], None]]] = {}  # (core, index) -> its jobs, in start order
        self.seen = 0  # timeline slices looked at

    def _wait(self, entry: tuple[list, Callable[[], None]]) -> None:
        jobs, work = entry
        if not all([job.wait() for job in jobs]):  # (every job waited for)
            work()  # a NaN met: numpy's path, here (nothing that touches its bytes has started)

    def completed(self, timeline: list) -> None:
        """Wait for the values of the commands whose slices `timeline` got since the last
        call (a slice is (core, unit, index, ...))."""
        pending = self.pending
        n = len(timeline)
        for i in range(self.seen, n) if pending else ():
            s = timeline[i]
            entry = pending.pop((s[0], s[2]), None)
            if entry is not None:
                self._wait(entry)
        self.seen = n

    def start(self, key: Any, work: Callable[[], None]) -> None:
        """Compute `work` (the values of command `key`), its products on the pool (after
        `completed`)."""
        if self.pool is None:
            work()
            return
        jobs = halves.handing(self.pool, work)
        if jobs:
            self.pending[key] = (jobs, work)

    def finish(self) -> None:
        """Wait for every value (the first error raised)."""
        pending, self.pending = self.pending, {}
        for entry in pending.values():
            self._wait(entry)

    def close(self) -> None:
        """Wait for every product (an error is being raised, or none is pending), stop the pool."""
        try:
            for jobs, _ in self.pending.values():
                for job in jobs:
                    job.wait()
            self.pending = {}
        finally:
            if self.pool is not None:
                self.pool.close()
