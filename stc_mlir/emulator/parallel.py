"""Commands' values on several host threads (`Simulator._compute` with `threads` > 1).

Why the values do not change: a run with hazard checks that raises no hazard orders every
two commands that touch the same bytes (one of them writing) by happens-before, so the
first one completed (in simulated time) before the second one started: the second one
waits for a semaphore the first one's completion signalled, or follows it in a unit queue
or across a fence. The emulator applies a command's data effect when it starts, in the
order of the event loop, so the first one was computed or handed over before the second
one starts. Two commands *conflict* when one writes bytes the other reads or writes (byte
hulls per memory, `Simulator._touches`; a hull is a superset of the bytes: more conflicts,
never fewer). So when a command starts, it is enough that its values are computed after
those of the pending commands it conflicts with, whatever their simulated times: a large
product is handed over with them (`start(..., after)`: its job waits for theirs; each of
them was queued before it, so some thread has taken it: no deadlock), any other command
waits for them where it starts (`conflicting`), a dense DMA's copy included. The commands
computing meanwhile touch none of its bytes but to read them too (each command computes as
it does alone, single-threaded BLAS included: the same bits). The derived-value cache
(`TileCache`) takes a lock and keeps nothing it made from bytes written meanwhile (see
there).

Pending commands are dropped once done when the next one is handed over (an error raised
then), and the end of the run waits for all (`finish`). The event loop's thread also
computes while it waits (queued jobs, in order); `threads` - 1 helper threads take the
rest. numpy's BLAS and the `_f16` kernels release the GIL; the event loop, in C, lets go of
it at each command start while commands are pending (`_values.hook`), else a helper would
wait for it until the loop next runs Python code.
"""

from __future__ import annotations

import _thread
import queue
import sys
import threading
from collections.abc import Callable, Sequence

SWITCH_INTERVAL = 0.0002
"""The interpreter's thread switch interval during a parallel run (seconds; default 0.005):
a helper that has finished a matrix product waits for the event loop's thread to let go
of the GIL at most this long."""


class _Job:
    __slots__ = ("work", "after", "done", "error")

    def __init__(self, work: Callable[[], None], after: Sequence[_Job]) -> None:
        self.work = work
        self.after = after  # the pending commands it conflicts with (handed over before it)
        self.done = _thread.allocate_lock()  # held until done
        self.done.acquire()
        self.error: BaseException | None = None

    def __call__(self) -> None:
        try:
            for job in self.after:  # (each taken from the queue before this one: no deadlock)
                _finished(job)
            self.work()
        except BaseException as err:  # raised where it is waited for
            self.error = err
        finally:
            self.work = self.after = None  # (its views and closures go now)
            self.done.release()


def _finished(job: _Job) -> None:
    """Block until `job` is done."""
    if job.done.locked():
        job.done.acquire()
        job.done.release()


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
        while job.done.locked():
            try:
                other = self.jobs.get_nowait()
            except queue.Empty:
                _finished(job)
                return
            other()

    def _wait(self, job: _Job) -> None:
        self._settle(job)
        if job.error is not None:
            raise job.error

    def conflicts(self, reads: tuple, writes: tuple) -> list[_Job]:
        """The pending commands that write bytes of `reads` or `writes` or read bytes of
        `writes`, in start order (what `_values.hook` finds in C)."""
        return [job for job, their_reads, their_writes in self.pending
                if _overlap(their_writes, reads) or _overlap(their_writes, writes) or _overlap(their_reads, writes)]

    def conflicting(self, reads: tuple, writes: tuple) -> None:
        """Wait for the values of the pending commands that conflict with a command
        computed here (`conflicts`), and drop them."""
        jobs = self.conflicts(reads, writes)
        if jobs:
            self.pending[:] = [entry for entry in self.pending if entry[0] not in jobs]
            for job in jobs:
                self._wait(job)

    def start(self, reads: tuple, writes: tuple, work: Callable[[], None], after: Sequence[_Job]) -> None:
        """Compute `work` (the values of a command reading and writing those byte hulls,
        which conflicts with the pending commands `after`) on some thread, after those;
        first drop the pending commands done."""
        pending = self.pending
        if pending:
            done = [entry for entry in pending if not entry[0].done.locked()]
            if done:
                pending[:] = [entry for entry in pending if entry[0].done.locked()]
                for job, _, _ in done:
                    self._wait(job)  # (done: raises its error, if any)
        job = _Job(work, after)
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
