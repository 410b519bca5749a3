"""Recording where each graph value lives when it is complete (`Program.probes`).

Per-tensor comparison (`stc_mlir.compare_all`, docs/compare.md) reads every graph value
back from the emulator's memories. Only the lowering knows where a value is (a DDR/LLB
buffer, or pieces in several cores' L1) and when it is complete, so it records a probe as
it stores each result: the value's pieces as tiles, and a mark (how many commands each
core had then), and, inside a row stripe, the box of rows the stripe computes it on (the
stripe's `regions`: only those rows exist, in that stripe's phases). When the program is
finished, each mark becomes the cluster barrier that follows it: the value is complete when that barrier's first fences have run on every
core, and no later phase (which may reuse its bytes) has started yet.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from stc_mlir.isa.program import Probe, ProbePiece, Program

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter
from .placement import LoweringError, Placement
from .values import shape_of


class Probes:
    """The probes of one lowering, keyed by the values' graph order; `label(op)` names the
    op making a value (`items.op_label`)."""

    def __init__(self, em: Emitter, values: Sequence[SSAValue], label: Callable[[Operation], str]):
        self.em = em
        self.label = label
        self.index = {v: i for i, v in enumerate(values)}
        self.values = list(values)
        self.pending: dict[int, tuple[str, Placement, dict[int, int], Box | None]] = {}

    def record(self, v: SSAValue, placement: Placement, item: str, region: Box | None = None) -> None:
        """`v` is complete in `placement` once the commands emitted so far have run (only
        its box `region`, if given: a row stripe's rows of it)."""
        i = self.index.get(v)
        if i is None:
            return
        marks = {c: len(self.em.cmds.get(c, ())) for c in self._cores(placement)}
        if region == bx.full(placement.shape):
            region = None
        self.pending[i] = (item, placement, marks, region)

    def _cores(self, placement: Placement) -> list[int]:
        """The cores whose barrier fences mark a value complete: all of them, or with
        barriers that wait only for the cores involved (barriers.py), those that wrote the
        memories holding it in this phase (a core reusing those bytes later waits for
        them, not for the others)."""
        em = self.em
        if not em.narrow:
            return em.barrier_cores
        keys = {em.memory_key(piece.frame.buffer) for piece in placement.pieces}
        writers = [c for c in em.barrier_cores
                   if not keys.isdisjoint(em.touches.writes.get((em.phase, c), ()))]
        return writers or em.barrier_cores

    def resolve(self, program: Program) -> list[Probe]:
        """Every graph value's probe, in graph order (a value never stored whole has none of
        its pieces and a note)."""
        fences = {c: [i for i, cmd in enumerate(program.cores.get(c, ()))
                      if cmd.op == "fence" and not cmd.waits]  # a barrier's first fence (or a
        # second one waiting for nothing, which follows its first: never found instead of it)
                  for c in self.em.barrier_cores}
        probes = []
        for i, v in enumerate(self.values):
            op = v.owner
            assert isinstance(op, Operation)
            label = self.label(op) + (f" #{v.index}" if len(op.results) > 1 else "")  # type: ignore[attr-defined]
            if i not in self.pending:  # an op the lowering did not store a result of
                probes.append(Probe(i, label, "", shape_of(v), "f16", (), (), "not lowered as a value"))
                continue
            item, placement, marks, region = self.pending[i]
            pieces, note = _pieces(placement, region)
            after = []
            for c, mark in marks.items():
                at = bisect.bisect_left(fences[c], mark)
                if at < len(fences[c]):
                    after.append((c, fences[c][at]))
            if len(after) != len(marks):  # no barrier after it: complete at the end
                after = []
            probes.append(Probe(i, label, item, shape_of(v), placement.dtype, pieces, tuple(after), note,
                                region or ()))
        return probes


def _pieces(placement: Placement, region: Box | None) -> tuple[tuple[ProbePiece, ...], str]:
    """The pieces' tiles, cut to `region` (the whole value if None)."""
    owned = [(piece, piece.owned if region is None else bx.intersect(piece.owned, region))
             for piece in placement.pieces]
    try:
        return tuple(ProbePiece(piece.frame.ref(box).tile, tuple(lo for lo, _ in box))
                     for piece, box in owned if box is not None), ""
    except LoweringError as err:  # a tile the npu cannot address (rank above 4)
        return (), f"not readable: {err}"
