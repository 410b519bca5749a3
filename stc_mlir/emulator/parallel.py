"""Commands' values on several host threads (`Simulator._compute` with `threads` > 1).

Why the values do not change: a run with hazard checks that raises no hazard orders every
two commands that touch the same bytes (one of them writing) by happens-before, so the
first one completed (in simulated time) before the second one started: the second one
waits for a semaphore the first one's completion signalled, or follows it in a unit queue
or across a fence. The emulator applies a command's data effect when it starts, in the
order of the event loop, so the first one's values were handed over (or computed) before
the second one starts. When a command starts, waiting for the values of every pending
command that *conflicts* with it (`Values.conflicting`: its writes overlap the starting
command's reads or writes, or its reads overlap the starting command's writes, in byte
hulls per memory, `Simulator._touches`) therefore waits for all those it depends on; the
commands still computing touch none of its bytes but to read them both, whether or not
they run at the same simulated time (each command computes as it does alone,
single-threaded BLAS included: the same bits). A dense DMA's copy, done where it starts,
is a command like any other. The derived-value cache (`TileCache`) takes a lock and keeps
nothing it made from bytes written meanwhile (see there). The simulator hands over only
large products (a small command is computed where it starts, after the same wait).

Pending commands are dropped once done when the next one is handed over (an error raised
then), and the end of the run waits for all (`finish`). The event loop's thread also
computes while it waits (the pending commands are mutually independent: any of them may
run anywhere, in any order); `threads` - 1 helper threads take the rest. numpy's BLAS and
the `_f16` kernels release the GIL.
"""

from __future__ import annotations

import _thread
import queue
import sys
import threading
from collections.abc import Callable

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
    during one run: when a command starts, `conflicting(reads, writes)` then (its values
    handed over) `start(reads, writes, work)`, where `reads` and `writes` are its byte
    hulls, (memory key, lo, hi) each; `finish()` at the end, then (also after an error)
    `close()`."""

    def __init__(self, threads: int) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        # (job, reads, writes) of the commands handed over, in start order (the C hook,
        # `_values.hook`, reads and shortens this very list)
        self.pending: list[tuple[_Job, tuple, tuple]] = []
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

    def conflicting(self, reads: tuple, writes: tuple) -> None:
        """Wait for the values of the pending commands that write bytes of `reads` or
        `writes` or read bytes of `writes` (what `_values.hook` does in C)."""
        pending = self.pending
        i = 0
        while i < len(pending):
            job, their_reads, their_writes = pending[i]
            if _overlap(their_writes, reads) or _overlap(their_writes, writes) or _overlap(their_reads, writes):
                del pending[i]
                self._wait(job)
            else:
                i += 1

    def start(self, reads: tuple, writes: tuple, work: Callable[[], None]) -> None:
        """Compute `work` (the values of a command reading and writing those byte hulls)
        on some thread (after `conflicting`); first drop the pending commands done."""
        pending = self.pending
        if pending:
            done = [entry for entry in pending if not entry[0].done.locked()]
            if done:
                pending[:] = [entry for entry in pending if entry[0].done.locked()]
                for job, _, _ in done:
                    self._wait(job)  # (done: raises its error, if any)
        job = _Job(work)
        pending.append((job, reads, writes))
        self.jobs.put(job)

    def finish(self) -> None:
        """Wait for every value (the first error raised)."""
        pending, self.pending = self.pending, []
        for job, _, _ in pending:
            self._wait(job)

    def close(self) -> None:
        """Wait for every value (errors dropped: one is being raised), stop the helpers."""
        try:
            for job, _, _ in self.pending:
                self._settle(job)
            self.pending = []
        finally:
            for _ in self.helpers:
                self.jobs.put(None)
            for t in self.helpers:
                t.join()
            sys.setswitchinterval(self.interval)


def _overlap(spans: tuple, others: tuple) -> bool:
    """Whether two collections of byte hulls, (memory key, lo, hi) each, share a byte."""
    return any(lo < other_hi and other_lo < hi and key == other_key
               for key, lo, hi in spans for other_key, other_lo, other_hi in others)
