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
The derived-value cache (`TileCache`) takes a lock and keeps nothing it made from bytes
written meanwhile (see there). The simulator hands over only large products (a small
command is computed where it starts, which is as safe: the commands still computing
touch none of its bytes).

The event loop's thread also computes while it waits (the pending commands are mutually
independent: any of them may run anywhere, in any order); `threads` - 1 helper threads
take the rest. numpy's BLAS and the `_f16` kernels release the GIL.
"""

from __future__ import annotations

import _thread
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any

SWITCH_INTERVAL = 0.0002
"""The interpreter's thread switch interval during a parallel run (seconds; default 0.005):
a helper that has finished a matrix product waits for the event loop's thread to let go
of the GIL at most this long."""


class _Job:
    __slots__ = ("work", "done", "error")

    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.error: BaseException | None = None

    def __call__(self) -> None:
        try:
            self.work()
        except BaseException as err:  # raised where it is waited for
            self.error = err
        finally:
            self.work = None  # (its views and closures go now)
            self.done.release()


class Values:
    """The commands' values on `threads` threads (this one and `threads` - 1 helpers)
    during one run: when a command starts, `completed(timeline)` then (its values handed
    over) `start(key, work)`; `finish()` at the end, then (also after an error) `close()`."""

    def __init__(self, threads: int) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.pending: dict[Any, _Job] = {}  # (core, index) -> its values, in start order
        self.seen = 0  # timeline slices looked at
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self.interval, SWITCH_INTERVAL))
        self.helpers = [threading.Thread(target=self._help, name=f"stc-values-{i}", daemon=True)
                        for i in range(threads - 1)]
        for t in self.helpers:
            t.start()

    def _help(self) -> None:
        get = self.jobs.get
        while (job := get()) is not None:
            job()

    def _settle(self, job: _Job) -> None:
        """Until `job` is done, compute pending ones here (the first of them may be it)."""
        while not job.done.acquire(False):
            try:
                other = self.jobs.get_nowait()
            except queue.Empty:
                job.done.acquire()
                return
            other()

    def _wait(self, job: _Job) -> None:
        self._settle(job)
        if job.error is not None:
            raise job.error

    def completed(self, timeline: list) -> None:
        """Wait for the values of the commands whose slices `timeline` got since the last
        call (a slice is (core, unit, index, ...))."""
        pending = self.pending
        n = len(timeline)
        for i in range(self.seen, n) if pending else ():
            s = timeline[i]
            job = pending.pop((s[0], s[2]), None)
            if job is not None:
                self._wait(job)
        self.seen = n

    def start(self, key: Any, work: Callable[[], None]) -> None:
        """Compute `work` (the values of command `key`) on some thread (after `completed`)."""
        job = self.pending[key] = _Job(work)
        self.jobs.put(job)

    def finish(self) -> None:
        """Wait for every value (the first error raised)."""
        pending, self.pending = self.pending, {}
        for job in pending.values():
            self._wait(job)

    def close(self) -> None:
        """Wait for every value (errors dropped: one is being raised), stop the helpers."""
        try:
            for job in self.pending.values():
                self._settle(job)
            self.pending = {}
        finally:
            for _ in self.helpers:
                self.jobs.put(None)
            for t in self.helpers:
                t.join()
            sys.setswitchinterval(self.interval)
