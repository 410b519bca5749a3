"""Matrix products (numpy.matmul semantics, batched and broadcasting).

The output [..., M, N] is spread over cores and cut into tiles along its batch dims and
rows (M); every tile reads its rows of the left operand with all of K. A constant right
operand (a weight) goes to the weight buffer: whole if it fits, else in chunks of columns
(multiples of the 32 N lanes) two at a time, and when even one 32-column chunk of all of K
does not fit twice, K is cut too (multiples of the 16 K lanes) with fp32 partial sums in
L1 as for convolutions. A right operand computed by the model (attention: Q K^T, P V)
comes from L1 like the left one.
"""

from __future__ import annotations

import math

from stc_mlir.dialects import graph as g

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref
from .placement import LoweringError
from .stage import Rule, Work, project, weight_chunks
from .values import constant, shape_of


class MatmulRule(Rule):
    def __init__(self, op: g.MatmulOp, operands, out):
        super().__init__(op, operands, out)
        self.a, self.b = shape_of(operands[0]), shape_of(operands[1])
        if len(self.a) < 2 or len(self.b) < 2:
            raise LoweringError("matmul of a 1-D operand is not supported (reshape it to 2-D)")
        rank = len(shape_of(out))
        self.split_axes = self.tile_axes = tuple(range(rank - 1))
        self.weight_slots = frozenset(i for i, v in enumerate(operands) if constant(v))
        self.k, self.n = self.b[-2], self.b[-1]
        self.nc, self.kc = self.n, self.k

    def configure(self, wb_budget: int) -> None:
        if 1 not in self.weight_slots:
            if 0 in self.weight_slots and math.prod(self.a) * 2 > wb_budget:
                raise LoweringError(f"its constant left operand ({math.prod(self.a) * 2:,} "
                                    f"bytes) does not fit the {wb_budget:,}-byte weight buffer")
            return
        self.nc, self.kc = weight_chunks(self.n, self.k, math.prod(self.b[:-2]) * 2, wb_budget,
                                         "row of the right operand")

    def chunks(self, box: Box) -> list[Box]:
        lo, hi = box[-1]
        cuts = sorted({lo, hi} | {c for c in range(0, hi, self.nc) if lo < c < hi})
        return [bx.with_dim(box, len(box) - 1, (a, b)) for a, b in zip(cuts, cuts[1:])]

    def _lhs(self, out: Box, k: tuple[int, int]) -> Box:
        return project(out[:-1] + (k,), self.a)

    def _rhs(self, out: Box, k: tuple[int, int]) -> Box:
        return project(out[:-2] + (k, out[-1]), self.b)

    def steps(self, out: Box) -> list[list[Box | None]]:
        whole = self.nc == self.n and self.kc == self.k
        lhs = self._lhs(out, (0, self.k))
        return [[lhs, bx.full(self.b) if whole and 1 in self.weight_slots else self._rhs(out, k)]
                for k in bx.chunks(0, self.k, self.kc)]

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        k = bx.chunks(0, self.k, self.kc)[step]
        last = step == len(work.steps) - 1
        extra = {"residual": acc.ref(work.out)} if step > 0 else {}
        em.emit(core, "matmul", lhs=frames[0].ref(self._lhs(work.out, k)),
                rhs=frames[1].ref(self._rhs(work.out, k)),
                output=out if last else acc.ref(work.out), **extra)
