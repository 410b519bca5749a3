"""Rank lowering by dim coalescing: ops on tensors of more than 4 dims rewritten, exactly, on
at most 4 dims (npu tiles have 1 to 4), with reshapes around them.

The standard trick of elementwise code generators: two adjacent dims can be traversed as one
when every operand treats them alike. Exporters write such chains for adaptive pooling with
uneven bins (torchvision vgg11 at 64 x 64: 7 x 2 x 7 x 2 index grids, 6-D masks, gathers).

- elementwise ops (unary, binary, comparisons, where): unit dims of the result are dropped,
  and adjacent dims merge when, in every operand, both are full or both are broadcast;
- gather along an axis: data viewed as [before, n, after], indices flattened;
- reductions: adjacent reduced axes merge, and adjacent kept axes;
- transpose: dims that stay adjacent (and in order) in the permutation merge.

A rewrite happens only when it brings the op to at most 4 dims. The reshapes it inserts
compose with their neighbours (graph-canonicalize's reshape-of-reshape), so a chain of
rewritten ops keeps one reshape between two of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from stc_mlir.dialects import graph as g

NPU_RANK = 4
"""npu tiles have 1 to 4 dims."""

NOT_ELEMENTWISE = (g.SoftmaxOp, g.LRNOp)
"""UnaryOp subclasses that mix elements along an axis."""


def _props(op: Operation) -> dict[str, object]:
    return {k: g.to_python(v) for k, v in op.properties.items() if k != "operandSegmentSizes"}


def _groups(flags: Sequence[tuple]) -> list[list[int]]:
    """Runs of consecutive positions with equal flags."""
    runs: list[list[int]] = []
    for i, f in enumerate(flags):
        if runs and flags[runs[-1][-1]] == f:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _reshaped(value: SSAValue, shape: Sequence[int], new_ops: list[Operation]) -> SSAValue:
    if tuple(g.shape_of(value.type)) == tuple(shape):
        return value
    new_ops.append(r := g.ReshapeOp.make(value, shape=tuple(shape)))
    return r.output


def _finish(op: Operation, new_ops: list[Operation], value: SSAValue, rewriter: PatternRewriter) -> None:
    """Reshape `value` to `op`'s result shape and replace `op`; the last op takes its name."""
    value = _reshaped(value, g.shape_of(op.results[0].type), new_ops)
    new_ops[-1].attributes.update(op.attributes)
    rewriter.replace(op, new_ops, [value])


class CoalesceElementwise(RewritePattern):
    """unary / binary / compare / logical / where of more than 4 dims -> the same op on the
    merged dims."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, (g.UnaryOp, g.BinaryOp, g.WhereOp)) or isinstance(op, NOT_ELEMENTWISE):
            return
        out = g.shape_of(op.results[0].type)
        rank = len(out)
        if rank <= NPU_RANK or not all(isinstance(v.type, TensorType) for v in op.operands):
            return
        aligned = [(1,) * (rank - len(s)) + tuple(s) for s in (g.shape_of(v.type) for v in op.operands)]
        dims = [i for i in range(rank) if out[i] != 1]
        flags = [tuple(a[i] == 1 for a in aligned) for i in dims]
        runs = [[dims[i] for i in run] for run in _groups(flags)]
        if len(runs) > NPU_RANK:
            return
        if not runs:
            runs = [[]]
        new_ops: list[Operation] = []
        operands = []
        for v, a in zip(op.operands, aligned):
            if not g.shape_of(v.type):  # a scalar broadcasts to any shape
                operands.append(v)
                continue
            operands.append(_reshaped(v, [math.prod(a[i] for i in run) for run in runs], new_ops))
        new_ops.append(new := type(op).make(*operands, **_props(op)))
        _finish(op, new_ops, new.results[0], rewriter)


class CoalesceGather(RewritePattern):
    """gather(data, indices, axis) of more than 4 dims -> gather of data viewed as
    [before, n, after] (outer dims omitted when empty) with indices flattened."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, g.GatherOp):
            return
        data, idx = g.shape_of(op.input.type), g.shape_of(op.indices.type)
        out = g.shape_of(op.output.type)
        if max(len(data), len(out)) <= NPU_RANK or not idx:
            return
        axis = op.props()["axis"] % len(data)  # type: ignore[operator]
        view = ([math.prod(data[:axis])] if axis else []) + [data[axis]] + (
            [math.prod(data[axis + 1:])] if axis < len(data) - 1 else [])
        new_ops: list[Operation] = []
        source = _reshaped(op.input, view, new_ops)
        indices = _reshaped(op.indices, [math.prod(idx)], new_ops)
        new_ops.append(new := g.GatherOp.make(source, indices, axis=1 if axis else 0))
        _finish(op, new_ops, new.output, rewriter)


class CoalesceReduction(RewritePattern):
    """a reduction of more than 4 dims -> the reduction of the merged runs of reduced and of
    kept dims (unit dims dropped), keepdims, reshaped to the result."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, g.ReduceOp):
            return
        shape = g.shape_of(op.input.type)
        rank = len(shape)
        if rank <= NPU_RANK:
            return
        axes = {a % rank for a in op.props()["axes"]} or set(range(rank))  # type: ignore[union-attr]
        dims = [i for i in range(rank) if shape[i] != 1]
        if not any(i in axes for i in dims):
            return  # reduces only unit dims: DropUnitDims' identity
        runs = [[dims[i] for i in run] for run in _groups([(d in axes,) for d in dims])]
        if len(runs) > NPU_RANK:
            return
        new_ops: list[Operation] = []
        source = _reshaped(op.input, [math.prod(shape[i] for i in run) for run in runs], new_ops)
        reduced = tuple(k for k, run in enumerate(runs) if run[0] in axes)
        new_ops.append(new := type(op).make(source, axes=reduced, keepdims=True))
        _finish(op, new_ops, new.output, rewriter)


class CoalesceTranspose(RewritePattern):
    """a transpose of more than 4 dims -> the transpose of the runs of dims that stay adjacent
    in the permutation (unit dims dropped)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, g.TransposeOp):
            return
        shape = g.shape_of(op.input.type)
        if len(shape) <= NPU_RANK:
            return
        perm = [a for a in op.props()["perm"] if shape[a] != 1]  # type: ignore[union-attr]
        runs: list[list[int]] = []  # in output order, each a run of input axes
        for a in perm:
            if runs and _next_kept(perm, runs[-1][-1]) == a:
                runs[-1].append(a)
            else:
                runs.append([a])
        if len(runs) > NPU_RANK or not runs:
            return
        by_input = sorted(range(len(runs)), key=lambda k: runs[k][0])
        view = [math.prod(shape[a] for a in runs[k]) for k in by_input]
        new_perm = tuple(by_input.index(k) for k in range(len(runs)))
        new_ops: list[Operation] = []
        source = _reshaped(op.input, view, new_ops)
        new_ops.append(new := g.TransposeOp.make(source, perm=new_perm))
        _finish(op, new_ops, new.output, rewriter)


def _next_kept(perm: Sequence[int], axis: int) -> int | None:
    """The smallest kept input axis after `axis` (unit axes are not in `perm`)."""
    later = [a for a in perm if a > axis]
    return min(later) if later else None


COALESCE_PATTERNS = (CoalesceElementwise, CoalesceGather, CoalesceReduction, CoalesceTranspose)
