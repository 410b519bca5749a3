"""Row-stripe sub-groups (`schedule.group "g" [i of n rows]`): what a stripe computes.

A stripe's body keeps the full-size types; the lowering restricts every value to the box
of rows the stripe needs. The output's box is the stripe's rows; an operand's box is the
hull of what the op's tiles read for that box (the rule's own `steps`, so the halo rows of
a conv or pool window are exactly the ones its commands read: TreeWalker's tiles derived
backwards). Cores then share each value's box instead of the whole value, intermediates
hold only their box, and the stripe's result is the output box moved to the stripe's own
coordinates (`rebase`): a frame keeps its memory layout when its box is shifted, so a
stripe written into its row-concat's buffer is read back there without a copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from stc_mlir.dialects import schedule as s

from . import boxes as bx
from .boxes import Box
from .placement import Frame, Piece, Placement
from .values import constant, shape_of


def shift(box: Box, axis: int, delta: int) -> Box:
    lo, hi = box[axis]
    return bx.with_dim(box, axis, (lo + delta, hi + delta))


def rebase(p: Placement, shape: Sequence[int], delta: int, axis: int = s.ROW_AXIS) -> Placement:
    """`p` with every box moved by `delta` along `axis`, seen as a value of `shape` (the
    same bytes: a stripe in its group's coordinates and in its own)."""
    pieces = [Piece(pc.core, shift(pc.owned, axis, delta),
                    Frame(pc.frame.buffer, pc.frame.offset, shift(pc.frame.box, axis, delta), pc.frame.dtype))
              for pc in p.pieces]
    return Placement(tuple(shape), p.dtype, pieces)


def regions(ops: Sequence[Operation], output: SSAValue, rows: tuple[int, int],
            rule_of: Callable[[Operation, SSAValue], object]) -> dict[SSAValue, Box]:
    """The box of every non-weight value of `ops` that rows `rows` of `output` need."""
    need: dict[SSAValue, Box] = {output: bx.with_dim(bx.full(shape_of(output)), s.ROW_AXIS, rows)}
    for op in reversed(ops):
        r = op.results[0]
        if r not in need:
            continue
        rule = rule_of(op, r)
        for step in rule.steps(need[r]):  # type: ignore[attr-defined]
            for v, region in zip(rule.operands, step):  # type: ignore[attr-defined]
                if region is None or constant(v):
                    continue
                need[v] = region if v not in need else bx.hull([need[v], region])
    return need
