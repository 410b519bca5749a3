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
from collections.abc import Sequence

from stc_mlir.dialects import graph as g
from stc_mlir.isa.program import DTYPES, MAX_RANK, Tile

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref
from .placement import LoweringError
from .stage import Rule, Work, project, weight_chunks
from .values import constant, dtype_of, shape_of


SPLIT_N_BELOW = 8
"""A matmul with a constant right operand and fewer output rows than this (all batch dims
together) is spread over cores along N first."""


class MatmulRule(Rule):
    """numpy.matmul, a 1-D operand included: a 1-D left operand [K] is a row [1, K] and a
    1-D right operand [K] a column [K, 1] whose unit dim the result drops; the rule works
    in the *full* coordinates (both kept, `_full`) and reads the 1-D tiles with the unit
    dim added at stride 0 (`_unit`)."""

    def __init__(self, op: g.MatmulOp, operands, out):
        super().__init__(op, operands, out)
        a, b = g.shape_of(operands[0].type), g.shape_of(operands[1].type)
        self.row, self.column = len(a) == 1, len(b) == 1  # promoted operands
        self.a = (1, *a) if self.row else shape_of(operands[0])
        self.b = (*b, 1) if self.column else shape_of(operands[1])
        rank = len(g.shape_of(out.type))
        self.scalar = rank == 0  # [K] x [K]: a rank-0 result (looked up once, not per tile)
        if rank + self.row + self.column > MAX_RANK:
            raise LoweringError(f"matmul of {list(a)} and {list(b)}: with the unit dims of its 1-D "
                                f"operands the product has more than {MAX_RANK} dims")
        # tiles along every dim but N (a column has none): rows and batch dims; spread over
        # cores along those, then along N when they run out (a few rows: each core reads its
        # own columns of the weight, the cores' DMA engines load them side by side)
        self.tile_axes = tuple(range(rank if self.column else rank - 1)) or (0,)
        self.split_axes = tuple(range(rank)) or (0,)
        out_shape = g.shape_of(out.type)
        if (not self.column and rank > 1 and constant(operands[1])
                and math.prod(out_shape[:-1]) < SPLIT_N_BELOW):
            # fewer rows than cores: N first, so each core streams only its own columns of
            # the weight (no copies between cores) and all DMA engines load side by side
            self.split_axes = (rank - 1, *range(rank - 1))
        self.weight_slots = frozenset(i for i, v in enumerate(operands) if constant(v))
        self.k, self.n = self.b[-2], self.b[-1]
        self.nc, self.kc = self.n, self.k

    def reuse(self, out: Box) -> float:
        if self.column or not out:  # no N dim: every row uses each weight element once
            return float(bx.numel(out))
        return bx.numel(out) / max(1, out[-1][1] - out[-1][0])  # rows of the box

    def configure(self, wb_budget: int) -> None:
        if 1 not in self.weight_slots:
            lhs_bytes = math.prod(self.a) * DTYPES[dtype_of(self.operands[0])].itemsize
            if 0 in self.weight_slots and lhs_bytes > wb_budget:
                raise LoweringError(f"its constant left operand ({lhs_bytes:,} "
                                    f"bytes) does not fit the {wb_budget:,}-byte weight buffer")
            return
        itemsize = DTYPES[dtype_of(self.operands[1])].itemsize  # f16, or f32 in an f32 build
        self.nc, self.kc = weight_chunks(self.n, self.k, math.prod(self.b[:-2]) * itemsize, wb_budget,
                                         "row of the right operand")

    def _full(self, out: Box) -> Box:
        """An output box in full coordinates (with the unit dims of 1-D operands)."""
        if self.scalar:  # [K] x [K]: a rank-0 result, one element
            return ((0, 1), (0, 1))
        if self.row:
            out = out[:-1] + ((0, 1),) + out[-1:]
        return out + ((0, 1),) if self.column else out

    def chunks(self, box: Box) -> list[Box]:
        """The column chunks of a tile; when the weight is chunked the first is only 32
        columns wide (a ramp): it is what every core waits for before its first command,
        passed down the tree of cores (stage.tree) copy by copy, and the bigger chunks after
        it arrive while the first computes."""
        if self.column:
            return [box]
        lo, hi = box[-1]
        cuts = sorted({lo, hi} | {c for c in range(0, hi, self.nc) if lo < c < hi})
        if self.nc < self.n and cuts[1] - cuts[0] > 32:
            cuts.insert(1, cuts[0] + 32)  # a first chunk of 32 columns (`ramp`)
        return [bx.with_dim(box, len(box) - 1, (a, b)) for a, b in zip(cuts, cuts[1:])]

    def _lhs(self, out: Box, k: tuple[int, int]) -> Box:
        """The left operand's region (in its own coordinates) for an output box."""
        region = project(self._full(out)[:-1] + (k,), self.a)
        return region[1:] if self.row else region

    def _rhs(self, out: Box, k: tuple[int, int]) -> Box:
        full = self._full(out)
        region = project(full[:-2] + (k, full[-1]), self.b)
        return region[:-1] if self.column else region

    def steps(self, out: Box) -> list[list[Box | None]]:
        whole = self.nc == self.n and self.kc == self.k
        lhs = self._lhs(out, (0, self.k))
        rhs_all = bx.full(self.b[:-1] if self.column else self.b)
        if not self.column:  # the tile's columns (its core's share of N)
            rhs_all = bx.with_dim(rhs_all, len(rhs_all) - 1, self._full(out)[-1])
        return [[lhs, rhs_all if whole and 1 in self.weight_slots else self._rhs(out, k)]
                for k in bx.chunks(0, self.k, self.kc)]

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        k = bx.chunks(0, self.k, self.kc)[step]
        last = step == len(work.steps) - 1
        full = self._full(work.out)

        r = len(full)
        units = [r - 1] if self.scalar else (  # a rank-0 result is a [1] tile
            [r - 2] * self.row + [r - 1] * self.column)

        def result(ref: Ref) -> Ref:  # the output tile in full coordinates
            return _unit(ref, units)
        extra = {"residual": result(acc.ref(work.out))} if step > 0 else {}
        lhs = frames[0].ref(self._lhs(work.out, k))
        rhs = frames[1].ref(self._rhs(work.out, k))
        em.emit(core, "matmul", lhs=_unit(lhs, [0] if self.row else []),
                rhs=_unit(rhs, [len(self.b) - 1] if self.column else []),
                output=result(out if last else acc.ref(work.out)), **extra)


def _unit(ref: Ref, at: Sequence[int]) -> Ref:
    """`ref` with a unit dim (stride 0) inserted at each position of `at` (ascending, in
    the resulting tile's dims): the same elements read with the rank the command needs."""
    if not at:
        return ref
    t = ref.tile
    shape, strides = list(t.shape), list(t.strides)
    for i in at:
        shape.insert(i, 1)
        strides.insert(i, 0)
    return Ref(Tile(t.buffer, t.offset, tuple(shape), tuple(strides), t.dtype), ref.frame, ref.box)
