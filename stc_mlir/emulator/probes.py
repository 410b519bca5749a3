"""Reading graph values back during a run: the emulator's side of per-tensor comparison.

`Snapshots` is a simulator observer (`simulator.Observer`) for a program with probes
(`Program.probes`, recorded by the lowering): when the last command a probe waits for has
completed (the cluster barrier ending the phase that computed the value) it copies the
value's pieces out of the memories, before any later phase can reuse their bytes. Probes
waiting for nothing are read at the end of the run. The copies are assembled into whole
arrays by graph-order index (of the probe's `region` only: a row stripe's rows of a
value); a piece holding bytes no command ever wrote, or pieces that do not cover the
value, are recorded as problems instead of values.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from stc_mlir.isa.program import DTYPES, Probe, Program

from .memory import Footprint


class Snapshots:
    """The values of a program's probes, read as the run goes: `values[index]`, or
    `problems[index]` (why a value could not be read)."""

    def __init__(self, program: Program):
        self.probes = {p.index: p for p in program.probes}
        self.values: dict[int, np.ndarray] = {}
        self.problems: dict[int, str] = {}
        self.when: dict[int, float] = {}
        """cycle at which each value was read"""
        self._waiting: dict[tuple[int, int], list[int]] = defaultdict(list)
        self._remaining: dict[int, int] = {}
        for p in program.probes:
            if p.pieces and p.after:
                self._remaining[p.index] = len(p.after)
                for at in p.after:
                    self._waiting[at].append(p.index)

    def command_done(self, sim, core: int, index: int) -> None:
        for i in self._waiting.pop((core, index), ()):
            self._remaining[i] -= 1
            if not self._remaining[i]:
                del self._remaining[i]
                self._read(sim, self.probes[i])

    def finished(self, sim) -> None:
        for p in self.probes.values():
            if p.pieces and not p.after:
                self._read(sim, p)
        for i in self._remaining:  # the run ended before the barrier: cannot happen without a hazard
            self.problems[i] = "the run ended before the value was complete"

    def _read(self, sim, probe: Probe) -> None:
        self.when[probe.index] = sim.now
        region = probe.region or tuple((0, n) for n in probe.shape)
        extent = tuple(hi - lo for lo, hi in region)
        out = np.zeros(extent, dtype=DTYPES[probe.dtype])
        covered = np.zeros(extent, dtype=bool)
        for piece in probe.pieces:
            t = piece.tile
            mem, offset = sim._place(t.buffer)
            base = offset + t.offset
            if mem.code is not None and not mem.codes(Footprint.of(base, t)).all():
                self.problems[probe.index] = (f"{t.buffer} (in {mem.name}) holds bytes of it no "
                                              f"command wrote")
                return
            box = tuple(slice(a - lo, a - lo + d) for a, d, (lo, _) in zip(piece.at, t.shape, region))
            out[box] = mem.view(base, t)
            covered[box] = True
        if not covered.all():
            self.problems[probe.index] = (f"its pieces cover {int(covered.sum()):,} of "
                                          f"{math.prod(extent):,} elements")
            return
        self.values[probe.index] = out
