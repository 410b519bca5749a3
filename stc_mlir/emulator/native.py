"""Helpers of the emulator's event loop, in C where built.

- `join(dst, src)`: a vector-clock join. The event loop joins a semaphore's clock with each
  signal's and a thread's clock with the semaphores it takes: ~150,000 joins of
  33-element int64 rows per ResNet-50 b16 run, where `numpy.maximum(dst, src, out=dst)`
  spends ~1 us setting up each call (~0.15 us in C).
- `settled(...)`: what a read or write learns from a memory's writer runs before looking
  at any granule (`Memory.known` and the tracker's unseen-writer test in one call: ~3
  Python calls per access).
- `command(task, clock, code_of, bytes_read, bytes_written, hooks)`: a command's hazard
  and provenance checks and byte counts (`python_command`): what the writer runs or the
  granule codes settle in one call, the rest by the simulator's slow paths.
- `plan(threads)` and `simulate(plan, ...)`: the whole event loop of a run
  (`Simulator._simulate`) in C over the prepared tasks (`simulator._native_plan`), calling
  `command` directly and the simulator's Python code for what is not per-command routine
  (the hooks of `command`, a command's numerics, the DMA rates' memo, a deadlock's message).
  No Python version here: the simulator's own loop is it (`Simulator._simulate`, used when
  these are not).

The optional C module `_loop` (built by setup.py with `_f16`; `python setup.py build_ext
--inplace` in a source tree) provides them; without it the Python versions are used,
with the same results. `STC_LOOP_NATIVE=0` in the environment turns the C path off.
"""

from __future__ import annotations

import os
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    from . import _loop  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _loop = None

TID_BITS = 8
"""The thread bits of a writer code (`HazardTracker.TID_BITS`, which is this)."""

INTERFACE = 5
"""The `_loop.c` interface this file calls (its `LOOP_INTERFACE`)."""
NATIVE = bool(_loop is not None and os.environ.get("STC_LOOP_NATIVE", "1") != "0"
              and getattr(_loop, "INTERFACE", None) == INTERFACE)
"""Whether the C path is used (tests compare both; a module built from an older `_loop.c`
is not, whose functions may be missing or take other arguments: rebuild it with `python
setup.py build_ext --inplace`)."""


class ListLog(list):
    """`Log` without the C module: a list of the entries (tuples)."""

    def __init__(self, width: int, entries: Any = ()) -> None:
        super().__init__(tuple(e) for e in entries)


Log: Any = _loop.Log if _loop is not None and getattr(_loop, "INTERFACE", None) == INTERFACE else ListLog
"""An access log: `Log(width, entries=())`, entries of `width` ints appended (`append`) and
read as tuples (`len`, index, iteration, `==` with a list of tuples). The C module's keeps
them as C numbers (a logged read or write makes no Python object; the C checks read them
directly) and is used whenever the module is built, with the C path on or off
(`STC_LOOP_NATIVE=0`), so both paths share one memory state."""


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


def _wrote_since(log: Sequence[tuple[int, ...]], seen: int, lo: int, hi: int, limit: int = 32) -> bool:
    """`memory._wrote_since` (repeated here: memory imports this module)."""
    for i in range(len(log) - 1, max(len(log) - 1 - limit, -1), -1):
        epoch, wlo, whi = log[i][:3]
        if epoch <= seen:
            return False
        if wlo < hi and whi > lo:
            return True
    return len(log) > limit and log[-1 - limit][0] > seen


def _granules_fine(mem: Any, fp: Any, seen: list[int], zero: bool) -> bool:
    """What a check the writer runs do not settle finds with the tracker's own tests
    (`HazardTracker.read` / `write`), when they find nothing: with `zero`, no granule code
    of footprint `fp` of `mem` is 0 (never written: every block of its hull flagged all
    written, `_hull_full`, else `Memory.codes` brought up to date over its hull first; a
    dense footprint's from its runs, `_granules_dense`), and none of its granule codes
    (`Memory.codes`, looked at only if there are candidates) is by a thread that wrote
    `mem` after the epoch `seen` has of it near `fp` (`_check_writers`' candidates and
    test). An empty footprint is never fine (the slow path says what it is)."""
    if fp.span <= 0 or fp.run <= 0:
        return False
    if zero and not (_hull_full(mem, *fp.hull(mem.granule)[:2]) or (
            _granules_dense(mem, fp, None) if fp.run == fp.span else mem.codes(fp).all())):
        return False
    lo, hi = fp.base, fp.base + fp.span
    unseen = [w for w, (epoch, wlo, whi) in mem.writers.items()
              if epoch > seen[w] and wlo < hi and whi > lo and _wrote_since(mem.writes[w], seen[w], lo, hi)]
    if not unseen:
        return True
    codes = mem.codes(fp)
    tids = codes & ((1 << TID_BITS) - 1)
    return not any(((tids == w) & (codes >= (seen[w] + 1) << TID_BITS)).any() for w in unseen)


def _hull_full(mem: Any, lo: int, hi: int) -> bool:
    """Whether every granule of [lo, hi) of `mem` has been written, from its `full` flags
    (per block of `Memory.BLOCK` granules, as `Memory.hull_written`): a block not yet
    flagged is looked at (`_range_ok`: nothing filled in) and flagged if it is all written
    (codes never return to 0 in a run); the first block that is not says False."""
    block, full = mem.BLOCK, mem.full
    for b in range(lo // block, (hi - 1) // block + 1):
        if not full[b]:
            if not _range_ok(mem, b * block, min((b + 1) * block, mem.code.size), None):
                return False
            full[b] = 1
    return lo < hi


def _granules_dense(mem: Any, fp: Any, allowed: set[int] | None) -> bool:
    """For a dense footprint `fp` of `mem` (its granules are its hull's): whether each of
    its granule codes is nonzero (`allowed` None) or in `allowed` (`_range_ok`)."""
    g = mem.granule
    return _range_ok(mem, fp.base // g, -(-(fp.base + fp.span) // g), allowed)


def _range_ok(mem: Any, lo: int, hi: int, allowed: set[int] | None) -> bool:
    """Whether each granule code of [lo, hi) of `mem` is nonzero (`allowed` None) or in
    `allowed`, from the writer runs where they are known (a known run's code is its
    granules', a run of 0 never written) and from `code` under the unknown runs only
    (which it holds up to date there): nothing filled in."""
    starts, values = mem.starts, mem.values
    for j in range(bisect_right(starts, lo) - 1, bisect_left(starts, hi)):
        v = values[j]
        if v >= 0:
            if (v == 0) if allowed is None else (v not in allowed):
                return False
            continue
        at = mem.code[max(starts[j], lo):starts[j + 1] if j + 1 < len(starts) and starts[j + 1] < hi else hi]
        if not (at.all() if allowed is None else np.isin(at, list(allowed)).all()):
            return False
    return True


def _granules_expected(mem: Any, fp: Any, allowed: list[int]) -> bool:
    """Whether every granule code of footprint `fp` of `mem` is 0 (never written: the
    tracker's uninitialised read, not the provenance check's) or one of `allowed`: what
    `Provenance.check_read` finds without a failure, when the runs do not settle it (a
    dense footprint from its runs, `_granules_dense`; else `Memory.codes`), unless the
    memory's `passed` cache says so for the same runs over its hull. An empty footprint is
    never fine (the slow path says what it is)."""
    if fp.span <= 0 or fp.run <= 0:
        return False
    key, state = (fp, *allowed), mem.state(*fp.hull(mem.granule)[:2])
    if mem.passed.get(key) == state:
        return True
    if fp.run == fp.span:
        fine = _granules_dense(mem, fp, {0, *allowed})
    else:
        fine = bool(np.isin(mem.codes(fp), [0, *allowed]).all())
    if fine:
        mem.passed[key] = state
    return fine


def read_overlapping(log: Any, fp: Any, tid: int, seen: list[int]) -> tuple[int, int] | None:
    """The first read of read log `log` (`_ReadLog`) by a thread other than `tid` after the
    epoch `seen` (a clock as a list) has of that thread whose bytes overlap footprint `fp`,
    byte by byte: (its row, the first such byte's address), or None
    (`HazardTracker._check_readers`' test)."""
    lo, hi, rtid, repoch = log.cols
    end = fp.base + fp.span
    cand = np.flatnonzero((lo < end) & (hi > fp.base) & (rtid != tid) & (repoch > np.asarray(seen)[rtid]))
    for i in cand:
        other = log.where[i]
        lo_all = min(fp.base, other.base)
        window = np.zeros(max(end, other.base + other.span) - lo_all, dtype=bool)
        fp._replace(base=fp.base - lo_all).view(window)[...] = True
        hit = other._replace(base=other.base - lo_all).view(window)
        if hit.any():
            return int(i), other.address(hit)
    return None


def python_command(task: Any, clock: np.ndarray, code_of: list[int], bytes_read: dict[str, int],
                   bytes_written: dict[str, int], hooks: tuple) -> None:
    """The hazard and provenance checks of one command (`task`, a prepared command of the
    simulator: its `reads`, `writes`, `expect`, `tid`, `number`) by a thread whose clock
    is `clock` (an int64 row; `seen` below: it as a list), with its byte counts, in the order the tracker does them. What the writer
    runs settle, or else the granule codes of the access (`_granules_fine`), is done here;
    the rest by `hooks` = (provenance, read, write, prune), the simulator's slow paths,
    which also raise the hazards:

    1. the command's code (its thread's epoch and number) into `code_of[task.number]`;
    2. per read, its hull's writer runs (`python_settled`);
    3. per provenance expectation (`Provenance.expectations`), settled if the host is
       among the writers and no command wrote near the read, or if every run of the hull
       was written by an expected writer, or else every granule of the read by one or
       never (`_granules_expected`); else
       `provenance(task, i, host, writers, codes, runs)` (`codes`: one slot per read for
       the granule codes a slow path looks at, shared with the reads' slow paths; `runs`:
       the hull's codes or None);
    4. per read, if its runs (else its granules) settle it, the read is logged
       (`_ReadLog.add`, then `prune(memory)` when the log has doubled since its last
       pruning), else `read(task, i, codes[i], runs, seen)`; then its bytes counted;
    5. per write in order, if its runs (else its granules) settle it (none written by a
       thread after what `seen` has of it) and no thread read its range after what `seen`
       has of that thread (`HazardTracker._check_readers`'s summary test, else none of
       those reads' bytes overlap its own: `read_overlapping`), it is
       recorded: a strided one's granule codes, the runs marked (`Memory.mark`), the
       thread's summary and log of writes; else `write(task, j, seen)`; then its bytes
       counted.

    The granule codes are brought up to date from the runs where looked at, as
    `Memory.codes` does wherever the tracker looks; only the speed depends on when."""
    provenance, read, write, prune = hooks
    seen = clock.tolist()
    tid = task.tid
    epoch = seen[tid]
    bits = TID_BITS
    code = (epoch << bits) | tid
    code_of[task.number] = code
    reads = task.reads
    hulls = [python_settled(mem.starts, mem.values, h[0], h[1], seen, mem.writers, bits)
             for _, mem, _, _, _, h, _ in reads]
    codes: list[Any] = [None] * len(reads)
    for i, host, writers in task.expect:
        _, mem, fp, _, _, _, _ = reads[i]
        if host:
            lo, hi = fp.base, fp.base + fp.span
            if not any(wlo < hi and whi > lo for _, wlo, whi in mem.writers.values()):
                continue
        runs = hulls[i][0]
        # every run (else every granule) by an expected writer (not started: matches nothing)
        allowed = [(1 << bits) if w < 0 else code_of[w] or -1 for w in writers]
        if runs is not None and all(r in allowed for r in runs):
            continue
        if _granules_expected(mem, fp, allowed):
            continue
        provenance(task, i, host, writers, codes, runs)
    for i, (_, mem, fp, _, nbytes, _, _) in enumerate(reads):
        runs, _, fine = hulls[i]
        if fine or _granules_fine(mem, fp, seen, True):
            log = mem.reads
            log.add(fp, tid, epoch)
            if log.n >= 2 * log.pruned_at:
                prune(mem)
        else:
            read(task, i, codes[i], runs, seen)
        bytes_read[mem.level] += nbytes
    for j, (_, mem, fp, _, nbytes, h, _) in enumerate(task.writes):
        lo, hi, _ = h
        start, stop = fp.base, fp.base + fp.span
        ok = (python_settled(mem.starts, mem.values, lo, hi, seen, mem.writers, bits)[1]
              or _granules_fine(mem, fp, seen, False))
        if ok:
            log = mem.reads
            for r, (repoch, rlo, rhi) in log.readers.items():
                if (repoch > seen[r] and rlo < stop and rhi > start and r != tid
                        and _wrote_since(log.by[r], seen[r], start, stop)):
                    ok = read_overlapping(log, fp, tid, seen) is None
                    break
        if ok:
            mem.record_write(fp, h, code, tid, epoch)
        else:
            write(task, j, seen)
        bytes_written[mem.level] += nbytes


command: Callable[..., None] = _loop.command if NATIVE else python_command
"""See `python_command`."""

def python_prune(log: Any, vc: np.ndarray, active: np.ndarray) -> None:
    """A read log's pruning in Python (`prune`'s fallback): with the threads' clocks `vc` and
    `active` flags, keep only the reads some thread that still has commands has not
    synchronised with."""
    live = np.flatnonzero(active)
    if live.size:
        known = vc[live].min(axis=0).tolist()
        log.keep([epoch > known[tid] for epoch, _, _, tid in log.rows])
    else:
        log.keep([False] * log.n)
    log.pruned_at = max(64, log.n)


prune: Callable[[Any, np.ndarray, np.ndarray], None] = _loop.prune if NATIVE else python_prune
"""A read log's pruning (`HazardTracker._prune`): the reads every thread that still has
commands has synchronised with forgotten, the readers' summaries rebuilt."""

plan: Callable[..., Any] | None = _loop.plan if NATIVE else None
"""The C event loop's prepared tasks (None: no C loop; see the module docstring)."""

simulate: Callable[..., tuple[tuple[int, ...], Any]] | None = _loop.simulate if NATIVE else None
"""The C event loop (`Simulator._simulate_native`); None without the C path."""
