"""Provenance checks: every read sees the write the lowering intended.

The hazard tracker finds unordered accesses by address; it cannot tell that a properly
ordered read sees an *older* result than the one meant for it (a DMA that was lost, a
buffer allocated over another one). The lowering records, per read operand, which
commands' results it expects (`Command.expects`, see `stc_mlir.passes.lowering.sync`);
this check compares them with who really wrote the bytes last.

It reuses the tracker's per-byte writer codes (`epoch << TID_BITS | thread`, the host's
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
        # per core, the tracker code each command wrote with (0: not started); Python
        # lists: one scalar store and a few loads per command, no numpy scalars
        self.codes = {core: [0] * len(stream) for core, stream in program.cores.items()}

    def check(self, task: _Task, epoch: int) -> None:
        """Note `task`'s writer code (`epoch`: its thread's), then check its reads (before
        its writes land)."""
        self.codes[task.core][task.index] = (epoch << HazardTracker.TID_BITS) | task.tid
        expects = task.cmd.expects
        if not expects:
            return
        for slot, mem, fp, _, _ in task.reads:  # type: ignore[union-attr]
            writers = expects.get(slot)
            if writers is None or mem.code is None:
                continue
            if HOST in writers and not _commands_wrote(mem, fp.base, fp.base + fp.span):
                continue  # only the host wrote these bytes (or nobody: the tracker's case)
            codes = mem.codes(fp)
            if len(writers) == 1:  # the common case: one comparison
                if not (codes != self._code(writers[0])).any():
                    continue
                bad = codes != self._code(writers[0])
            else:
                # the codes' own int32 (a list of Python ints would make numpy compare in
                # int64, converting every code); sorting beats isin's loop of comparisons
                allowed = np.array([self._code(w) for w in writers], dtype=codes.dtype)
                bad = ~np.isin(codes, allowed, kind="sort")
            bad &= codes != 0  # never written: the tracker's uninitialised read
            if bad.any():
                self._fail(task, slot, mem, fp, codes, bad, writers)

    def _code(self, writer: tuple[int, int]) -> int:
        if writer == HOST:
            return HazardTracker.HOST_CODE
        return self.codes[writer[0]][writer[1]] or -1  # not started: matches nothing

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


def _commands_wrote(mem: Memory, lo: int, hi: int) -> bool:
    """Whether any command may have written bytes [lo, hi) of `mem` (from the hull of each
    writing thread's writes; the host's writes are not in it)."""
    return any(wlo < hi and whi > lo for _, wlo, whi in mem.writers.values())
