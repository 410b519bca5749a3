"""Reading graph values back during a run: the emulator's side of per-tensor comparison.

`Snapshots` is a simulator observer (`simulator.Observer`) for a program with probes
(`Program.probes`, recorded by the lowering): when the last command a probe waits for has
completed (the cluster barrier ending the phase that computed the value) it copies the
value's pieces out of the memories, before any later phase can reuse their bytes: a piece
in one core's L1 as soon as that core's fence has run (with narrowed barriers the core may
go on before the others fence), the others once every fence has. Probes
waiting for nothing are read at the end of the run. The copies are assembled into whole
arrays by graph-order index (of the probe's `region` only: a row stripe's rows of a
value); a piece holding bytes no command ever wrote, or pieces that do not cover the
value, are recorded as problems instead of values.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from stc_mlir.isa.program import DTYPES, Probe, ProbePiece, Program

from .memory import Footprint


class Snapshots:
    """The values of a program's probes, read as the run goes: `values[index]`, or
    `problems[index]` (why a value could not be read)."""

    def __init__(self, program: Program):
        self.probes = {p.index: p for p in program.probes}
        self.values: dict[int, np.ndarray] = {}
        self.problems: dict[int, str] = {}
        self.when: dict[int, float] = {}
        """cycle at which each value was read (its last piece)"""
        self._waiting: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        self._remaining: dict[tuple[int, int], int] = {}  # (probe, part) -> fences still to run
        self._parts: dict[int, list[list[ProbePiece]]] = {}
        self._partial: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}  # (out, covered, parts left)
        for p in program.probes:
            if not (p.pieces and p.after):
                continue
            parts = _parts(program, p)
            self._parts[p.index] = [pieces for _, pieces in parts]
            for k, (fences, _) in enumerate(parts):
                self._remaining[p.index, k] = len(fences)
                for at in fences:
                    self._waiting[at].append((p.index, k))

    def command_done(self, sim, core: int, index: int) -> None:
        for i, k in self._waiting.pop((core, index), ()):
            self._remaining[i, k] -= 1
            if not self._remaining[i, k]:
                del self._remaining[i, k]
                self._read(sim, self.probes[i], self._parts[i][k], len(self._parts[i]))

    def finished(self, sim) -> None:
        for p in self.probes.values():
            if p.pieces and not p.after:
                self._read(sim, p, p.pieces, 1)
        for i in {i for i, _ in self._remaining}:  # the run ended before the barrier: cannot happen without a hazard
            self.problems[i] = "the run ended before the value was complete"

    def _read(self, sim, probe: Probe, pieces, parts: int) -> None:
        """Copy `pieces` of `probe` out of the memories; the value is whole once its `parts`
        sets of pieces are read."""
        i = probe.index
        if i in self.problems:
            return
        region = probe.region or tuple((0, n) for n in probe.shape)
        extent = tuple(hi - lo for lo, hi in region)
        if i not in self._partial:
            self._partial[i] = (np.zeros(extent, dtype=DTYPES[probe.dtype]), np.zeros(extent, dtype=bool), parts)
        out, covered, left = self._partial[i]
        self.when[i] = sim.now
        for piece in pieces:
            t = piece.tile
            mem, offset = sim._place(t.buffer)
            base = offset + t.offset
            if mem.code is not None and not mem.codes(Footprint.of(base, t)).all():
                self.problems[i] = f"{t.buffer} (in {mem.name}) holds bytes of it no command wrote"
                del self._partial[i]
                return
            box = tuple(slice(a - lo, a - lo + d) for a, d, (lo, _) in zip(piece.at, t.shape, region))
            out[box] = mem.view(base, t)
            covered[box] = True
        if left > 1:
            self._partial[i] = (out, covered, left - 1)
            return
        del self._partial[i]
        if not covered.all():
            self.problems[i] = f"its pieces cover {int(covered.sum()):,} of {math.prod(extent):,} elements"
            return
        self.values[i] = out


def _parts(program: Program, probe: Probe) -> list[tuple[list[tuple[int, int]], list[ProbePiece]]]:
    """The probe's pieces by the fences they wait for: a piece in one core's own memory (L1,
    weight buffer) of a core among `after` is complete at that core's fence (with barriers
    that wait only for the cores involved, that core may go on and reuse its bytes before
    the others reach theirs), any other piece at all of them."""
    fence = dict(probe.after)
    own: dict[int, list[ProbePiece]] = defaultdict(list)
    shared: list[ProbePiece] = []
    for piece in probe.pieces:
        core = program.buffers[piece.tile.buffer].memory[1]
        (own[core] if core in fence else shared).append(piece)
    parts = [([(core, fence[core])], pieces) for core, pieces in own.items()]
    if shared:
        parts.append((list(probe.after), shared))
    return parts
