"""Provenance checks: every read sees the write the lowering intended.

The hazard tracker finds unordered accesses by address; it cannot tell that a properly
ordered read sees an *older* result than the one meant for it (a DMA that was lost, a
buffer allocated over another one). The lowering records, per read operand, which
commands' results it expects (`Command.expects`, see `stc_mlir.passes.lowering.sync`);
this check compares them with who really wrote the bytes last.

It reuses the tracker's writer codes (as runs where they settle it, else per granule) (`epoch << TID_BITS | thread`, the host's
`HOST_CODE`): a command's code is known when it starts, so the expected writers of a read
are a handful of codes, and the check is one vectorised comparison over the codes of the
bytes read. Commands without `expects` (hand-written programs, old `.stcobj` files) and
runs without hazard tracking are not checked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stc_mlir.isa.program import HOST, Program

from .memory import HazardError, HazardTracker, Memory

_Task = Any  # the simulator's prepared command (core, index, cmd, tid, reads): not imported, no cycle
_HOST = "the host (a model input or constant)"


class Provenance:
    """The codes of the commands started so far, and the check of a command's reads."""

    def __init__(self, program: Program, tracker: HazardTracker):
        self.program = program
        self.tracker = tracker
        # per command (numbered in program order: `numbering`), the tracker code it wrote
        # with (0: not started); a Python list: one scalar store and a few loads per
        # command, no numpy scalars
        self.first = numbering(program)
        self.codes = [0] * sum(len(stream) for stream in program.cores.values())
        # (place, expected codes) -> `Memory.state` of its hull when its granule codes were
        # last found all expected: the same state again needs no second look (a place is a
        # (memory, footprint) pair: `_Task.reads`)
        self.passed: dict[tuple, tuple] = {}

    @staticmethod
    def expectations(task: _Task, first: dict[int, int]) -> tuple:
        """What `check` compares for `task` (prepared once): per read with expected writers,
        (its position in `task.reads`, whether the host is among them, the writers as
        command numbers, -1 for the host)."""
        expects = task.cmd.expects
        if not expects:
            return ()
        out = []
        for i, a in enumerate(task.reads):
            writers = expects.get(a[0])
            if writers is None:
                continue
            out.append((i, HOST in writers, tuple(-1 if w == HOST else first[w[0]] + w[1] for w in writers)))
        return tuple(out)

    def check_read(self, task: _Task, i: int, host: bool, writers: tuple[int, ...],
                   codes: list[np.ndarray | None], runs: list[int] | None) -> None:
        """Check read `i` of `task` (its thread's code already noted) against the writers
        it expects (one entry of `task.expect`); `runs`: the writer codes over its hull
        (None if unknown, else a superset of its own: `Memory.known`); `codes`: per read of
        `task`, its granule codes if looked at already (`Memory.codes`, kept there for the
        tracker). When all runs are expected the read is fine; else the granule codes
        decide."""
        code_of = self.codes
        _, mem, fp, _, _, hull, place = task.reads[i]
        if host and not _commands_wrote(mem, fp.base, fp.base + fp.span):
            return  # only the host wrote these bytes (or nobody: the tracker's case)
        if len(writers) == 1:  # the common case: one comparison
            w = writers[0]
            code = HazardTracker.HOST_CODE if w < 0 else code_of[w] or -1  # not started: matches nothing
            if runs is not None and runs.count(code) == len(runs):
                return
            key: tuple = (place, code)
        else:
            allowed = [HazardTracker.HOST_CODE if w < 0 else code_of[w] or -1 for w in writers]
            if runs is not None and set(runs) <= set(allowed):
                return
            key = (place, *allowed)
        state = mem.state(hull[0], hull[1])
        if self.passed.get(key) == state:
            return  # no write here since these very codes were found expected
        at = codes[i]
        if at is None:
            at = codes[i] = mem.codes(fp)
        if len(writers) == 1:
            if not (at != code).any():
                self.passed[key] = state
                return
            bad = at != code
        else:
            bad = _outside(at, allowed)
            if not bad.any():
                self.passed[key] = state
                return
        bad &= at != 0  # never written: the tracker's uninitialised read
        if bad.any():
            slot = task.reads[i][0]
            self._fail(task, slot, mem, fp, at, bad, task.cmd.expects[slot])

    def _fail(self, task: _Task, slot: str, mem: Memory, fp, codes: np.ndarray,
              bad: np.ndarray, writers: tuple[tuple[int, int], ...]) -> None:
        prog = self.program
        addr = fp.address(bad, mem.granule)
        code = int(codes[bad][0])
        tile = task.cmd.tiles[slot]
        tid, epoch = code & ((1 << HazardTracker.TID_BITS) - 1), code >> HazardTracker.TID_BITS
        actual = _HOST if tid == 0 else prog.where(*self.tracker.who[tid][epoch - 1])
        expected = "; ".join(_HOST if w == HOST else prog.where(*w) for w in writers)
        expected = f"expected the result of {expected}" if expected else \
            "the command whose result it expected is not in the program"
        raise HazardError(
            "provenance", f"{prog.where(task.core, task.index)} reads {slot} @{tile.buffer} "
            f"at {mem.name}+{addr:#x}, last written by {actual}; {expected}",
            task.core, task.index, addr)


def numbering(program: Program) -> dict[int, int]:
    """The number of each core's first command when all are numbered in program order."""
    first, n = {}, 0
    for core, stream in program.cores.items():
        first[core] = n
        n += len(stream)
    return first


def _commands_wrote(mem: Memory, lo: int, hi: int) -> bool:
    """Whether any command may have written bytes [lo, hi) of `mem` (from the hull of each
    writing thread's writes; the host's writes are not in it)."""
    return any(wlo < hi and whi > lo for _, wlo, whi in mem.writers.values())


def _outside(codes: np.ndarray, allowed: list[int]) -> np.ndarray:
    """Where `codes` is none of `allowed` (a bool array of `codes`' shape).

    The writers a read expects are mostly consecutive commands of one thread (the chunks of
    a matrix product writing one output tile): consecutive epochs of one thread, so codes
    `TID_BITS` apart. Each such run [lo, hi] is one range test on `codes - lo` (in range and
    of that thread: a multiple of 1 << TID_BITS), a few passes over the codes however many
    writers it holds (numpy's isin sorts, or loops over the values, or builds a table)."""
    step = 1 << HazardTracker.TID_BITS
    runs: list[list[int]] = []
    for code in sorted(set(allowed), key=lambda c: (c & (step - 1), c)):  # by thread, epoch
        if runs and code == runs[-1][1] + step:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    bad: np.ndarray | None = None
    for lo, hi in runs:
        if lo == hi:
            out = codes != lo
        else:
            d = codes - lo  # int32 like the codes (a Python int does not widen them)
            out = d.view(np.uint32) > hi - lo  # below lo: negative, so huge as unsigned
            out |= (d & (step - 1)) != 0  # another thread's code inside the range
        if bad is None:
            bad = out
        else:
            bad &= out
    return np.ones(codes.shape, dtype=bool) if bad is None else bad  # none expected: all bad
