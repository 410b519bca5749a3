"""graph-canonicalize: bring imported graphs to the small op set later passes expect.

ONNX graphs arrive with training-time and convenience operators (BatchNormalization, Gemm,
Sum, Identity, no-op reshapes) and with weight preprocessing left as ops on constants.
Folding and decomposing them here means fusion, partitioning and lowering only ever see
conv2d / matmul / add / mul and constants, and the NPU never spends time on work whose
result was known at compile time. Every rewrite keeps the computed values, up to fp16
rounding of the intermediate results it moves.

All data work is numpy on the constants' buffers; each pattern looks only at an op and
its direct operands or single user, so the pass is linear in the size of the graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from stc_mlir import reference
from stc_mlir.dialects import graph as g
from stc_mlir.passes.coalesce_dims import COALESCE_PATTERNS, NPU_RANK

DEFAULT_FOLD_LIMIT = 1 << 20
"""Largest constant (bytes) constant folding may create, unless it only re-lays out a weight."""

LAYOUT_OPS = (g.TransposeOp, g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp, g.IdentityOp)
"""Ops that only move data: folding them into a single-use constant keeps the IR size."""

RESHAPE_LIKE = (g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp)


# ----------------------------------------------------------------------------- helpers


def constant_of(value: SSAValue) -> g.ConstantOp | None:
    """The graph.constant defining `value`, if any."""
    owner = value.owner
    return owner if isinstance(owner, g.ConstantOp) else None


def nbytes(t: TensorType) -> int:
    return math.prod(g.shape_of(t)) * g.numpy_dtype(t.element_type).itemsize


def may_rewrite_constant(value: SSAValue, result_bytes: int, limit: int) -> bool:
    """Whether a new constant of `result_bytes` derived from constant `value` is affordable.

    It is when it is small, or when `value` has no other user, so the new constant
    replaces the old one instead of adding a second copy of a weight.
    """
    return result_bytes <= limit or value.has_one_use()


def explicit_props(op: g.GraphOp) -> dict[str, object]:
    """The op's properties as Python values, without defaults filled in."""
    return {k: g.to_python(v) for k, v in op.properties.items() if k != "operandSegmentSizes"}


def scalar_constant(value: float, element_type) -> g.ConstantOp:
    return g.ConstantOp.from_numpy(np.asarray(value, dtype=g.numpy_dtype(element_type)))


# ----------------------------------------------------------------------------- patterns


@dataclass
class FoldConstants(RewritePattern):
    """An op of constants becomes a constant, computed by the reference interpreter.

    Only when the result is at most `limit` bytes, or the op only re-lays out constants
    that have no other user (a transposed or reshaped weight), so folding never grows the IR.
    """

    limit: int = DEFAULT_FOLD_LIMIT

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if (
            not isinstance(op, g.GraphOp)
            or isinstance(op, g.ConstantOp)
            or not op.operands
            or type(op) not in reference.KERNELS
        ):
            return
        constants = [constant_of(v) for v in op.operands]
        if any(c is None for c in constants):
            return
        size = sum(nbytes(r.type) for r in op.results)  # type: ignore[arg-type]
        if size > self.limit and not (
            isinstance(op, LAYOUT_OPS) and all(v.has_one_use() for v in op.operands)
        ):
            return
        env: dict[SSAValue, np.ndarray] = {v: c.numpy() for v, c in zip(op.operands, constants)}  # type: ignore[union-attr]
        reference.run_ops([op], env)
        new_ops = [g.ConstantOp.from_numpy(env[r]) for r in op.results]
        rewriter.replace(op, new_ops, [c.output for c in new_ops])


def _has_no_elements(value: SSAValue) -> bool:
    shape = g.shape_of(value.type)  # type: ignore[arg-type]
    return len(shape) > 0 and 0 in shape


def empty_fold(op: Operation) -> list[g.ConstantOp] | None:
    """Constants for the results of a graph op that computes nothing from data: a result
    has no elements, or every non-constant operand has none (a reduction over an empty axis
    gives its identity); None for any other op. The reference kernels run on the (empty)
    operands."""
    if not isinstance(op, g.GraphOp) or isinstance(op, g.ConstantOp) or type(op) not in reference.KERNELS:
        return None
    data = [v for v in op.operands if constant_of(v) is None]
    if not (any(_has_no_elements(r) for r in op.results) or (data and all(_has_no_elements(v) for v in data))):
        return None
    env = {v: (c.numpy() if (c := constant_of(v)) is not None
               else np.zeros(g.shape_of(v.type), g.numpy_dtype(v.type.element_type)))  # type: ignore[attr-defined,arg-type]
           for v in op.operands}
    reference.run_ops([op], env)
    constants = []
    for r in op.results:
        constants.append(const := g.ConstantOp.from_numpy(np.ascontiguousarray(env[r])))
        const.output.name_hint = r.name_hint
    return constants


class FoldEmpty(RewritePattern):
    """An op that computes nothing from data (`empty_fold`) becomes constants: ONNX's
    empty-tensor cases (a Concat with an empty part, a ReduceSum over a zero-length axis)
    leave nothing for the npu to compute, and no later pass sees an empty tensor."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        constants = empty_fold(op)
        if constants is not None:
            rewriter.replace(op, constants, [c.output for c in constants])


def split_to_slices(op: g.SplitOp) -> list[tuple[SSAValue, g.SliceOp]]:
    """One graph.slice of `op`'s input per used result of a graph.split (not inserted)."""
    p = op.props()
    parts = []
    start = 0
    for r, size in zip(op.results, p["sizes"]):  # type: ignore[call-overload]
        if r.uses:
            part = g.SliceOp.make(op.input, starts=(start,), ends=(start + size,), axes=(p["axis"],))
            part.output.name_hint = r.name_hint
            parts.append((r, part))
        start += size
    return parts


class SplitToSlices(RewritePattern):
    """graph.split -> one graph.slice per used result: every later op (and every schedule
    item) has one result, and an unused part costs nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.SplitOp, rewriter: PatternRewriter, /):
        parts = split_to_slices(op)
        for _, part in parts:
            rewriter.insert(part, InsertPoint.before(op))
        for r, part in parts:
            r.replace_all_uses_with(part.output)
        rewriter.erase(op)


class FoldBatchNormIntoConv(RewritePattern):
    """batch_norm(conv2d(x, w, b)) -> conv2d(x, w * s, (b - mean) * s + beta), s = gamma / sqrt(var + eps).

    Needs constant weights, bias and statistics, a conv without epilogue, and no other user
    of the conv result; computed in float32 and stored in the constants' element type.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.BatchNormOp, rewriter: PatternRewriter, /):
        conv = op.input.owner
        if not isinstance(conv, g.Conv2DOp) or not op.input.has_one_use():
            return
        if conv.residual is not None or conv.props()["activation"] != "none":
            return
        weight = constant_of(conv.weight)
        bias = constant_of(conv.bias) if conv.bias is not None else None
        params = [constant_of(v) for v in (op.scale, op.bias, op.mean, op.var)]
        if weight is None or (conv.bias is not None and bias is None) or any(c is None for c in params):
            return
        gamma, beta, mean, var = (c.numpy().astype(np.float32) for c in params)  # type: ignore[union-attr]
        scale = gamma / np.sqrt(var + np.float32(op.props()["epsilon"]))
        w = weight.numpy()
        new_w = w.astype(np.float32) * scale.reshape(-1, 1, 1, 1)
        b = bias.numpy().astype(np.float32) if bias is not None else np.float32(0)
        new_b = (b - mean) * scale + beta
        w_const = g.ConstantOp.from_numpy(new_w.astype(w.dtype))
        b_const = g.ConstantOp.from_numpy(new_b.astype(w.dtype))
        new_conv = g.Conv2DOp.make(conv.input, w_const.output, b_const.output, **explicit_props(conv))
        new_conv.attributes.update(conv.attributes)
        rewriter.replace(op, [w_const, b_const, new_conv])
        rewriter.erase(conv)


class BatchNormToScaleShift(RewritePattern):
    """batch_norm(x) that follows no foldable conv -> x * s + (beta - mean * s), s = gamma / sqrt(var + eps).

    DenseNet's pre-activation blocks (BN -> ReLU -> conv) and BNs after concats or pools:
    two per-channel vector ops with constants of shape [C, 1, ...] (rank-matched to x).
    Needs constant statistics; computed in float32 and stored in x's element type.
    Listed after FoldBatchNormIntoConv, which wins where both apply.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.BatchNormOp, rewriter: PatternRewriter, /):
        params = [constant_of(v) for v in (op.scale, op.bias, op.mean, op.var)]
        if any(c is None for c in params):
            return
        gamma, beta, mean, var = (c.numpy().astype(np.float32) for c in params)  # type: ignore[union-attr]
        scale = gamma / np.sqrt(var + np.float32(op.props()["epsilon"]))
        shift = beta - mean * scale
        x_type = op.input.type
        dtype = g.numpy_dtype(x_type.element_type)  # type: ignore[attr-defined]
        shape = (-1,) + (1,) * (len(g.shape_of(x_type)) - 2)  # type: ignore[arg-type]
        s_const = g.ConstantOp.from_numpy(scale.reshape(shape).astype(dtype))
        b_const = g.ConstantOp.from_numpy(shift.reshape(shape).astype(dtype))
        mul = g.MulOp.make(op.input, s_const.output)
        add = g.AddOp.make(mul.output, b_const.output)
        add.attributes.update(op.attributes)
        rewriter.replace(op, [s_const, mul, b_const, add])


class ScalarGatherToReshape(RewritePattern):
    """gather(x, i) with a scalar index -> reshape(gather(x, [i])) dropping the gathered axis.

    PyTorch's `x[:, i]` and `x[0]` (DLRM's per-field slices, ViT's class token) export as
    scalar-index Gathers; with a one-element index the npu gather rule takes them, and
    the reshape only renames the layout.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GatherOp, rewriter: PatternRewriter, /):
        if g.shape_of(op.indices.type):
            return
        new_ops: list[Operation] = []
        index_const = constant_of(op.indices)
        if index_const is not None:
            new_ops.append(index := g.ConstantOp.from_numpy(index_const.numpy().reshape(1)))
        else:
            new_ops.append(index := g.ReshapeOp.make(op.indices, shape=(1,)))
        new_ops.append(gather := g.GatherOp.make(op.input, index.results[0], **explicit_props(op)))
        new_ops.append(reshape := g.ReshapeOp.make(gather.output, shape=g.shape_of(op.output.type)))
        reshape.attributes.update(op.attributes)
        rewriter.replace(op, new_ops)


@dataclass
class DecomposeGemm(RewritePattern):
    """gemm -> matmul(op(a), op(b)) [* alpha] [+ c [* beta]].

    Transposition and alpha are applied to a constant `b` in numpy (a new constant), and
    beta to a constant `c`, when that keeps the IR size (see `may_rewrite_constant`);
    otherwise they become transpose / mul ops. A zero beta drops `c`, as in ONNX.
    """

    limit: int = DEFAULT_FOLD_LIMIT

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.GemmOp, rewriter: PatternRewriter, /):
        p = op.props()
        alpha, beta = float(p["alpha"]), float(p["beta"])  # type: ignore[arg-type]
        element_type = op.output.type.element_type  # type: ignore[attr-defined]
        new_ops: list[Operation] = []

        a = op.a
        if p["trans_a"]:
            new_ops.append(t := g.TransposeOp.make(a, perm=(1, 0)))
            a = t.output

        b = op.b
        b_const = constant_of(b)
        if b_const is not None and (p["trans_b"] or alpha != 1.0) and may_rewrite_constant(
            b, nbytes(b.type), self.limit  # type: ignore[arg-type]
        ):
            w = b_const.numpy()
            w = w.T if p["trans_b"] else w
            if alpha != 1.0:
                w = (w.astype(np.float32) * np.float32(alpha)).astype(w.dtype)
            new_ops.append(c := g.ConstantOp.from_numpy(w))
            b, alpha = c.output, 1.0
        elif p["trans_b"]:
            new_ops.append(t := g.TransposeOp.make(b, perm=(1, 0)))
            b = t.output

        new_ops.append(mm := g.MatmulOp.make(a, b))
        result = mm.output
        if alpha != 1.0:
            new_ops.append(s := scalar_constant(alpha, element_type))
            new_ops.append(m := g.MulOp.make(result, s.output))
            result = m.output

        if op.c is not None and beta != 0.0:
            c = op.c
            if beta != 1.0:
                c_const = constant_of(c)
                if c_const is not None and may_rewrite_constant(c, nbytes(c.type), self.limit):  # type: ignore[arg-type]
                    data = c_const.numpy()
                    scaled = (data.astype(np.float32) * np.float32(beta)).astype(data.dtype)
                    new_ops.append(k := g.ConstantOp.from_numpy(scaled))
                    c = k.output
                else:
                    new_ops.append(s := scalar_constant(beta, element_type))
                    new_ops.append(m := g.MulOp.make(c, s.output))
                    c = m.output
            new_ops.append(add := g.AddOp.make(result, c))
            result = add.output
        rewriter.replace(op, new_ops, [result])


class DecomposeSum(RewritePattern):
    """sum(x0, x1, x2, ...) -> add(add(x0, x1), x2) ...; sum(x) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.SumOp, rewriter: PatternRewriter, /):
        inputs = list(op.inputs)
        if len(inputs) == 1:
            rewriter.replace(op, [], [inputs[0]])
            return
        new_ops: list[Operation] = []
        acc = inputs[0]
        for x in inputs[1:]:
            new_ops.append(add := g.AddOp.make(acc, x))
            acc = add.output
        rewriter.replace(op, new_ops)


def scalar_value(value: SSAValue) -> float | None:
    """The value of a one-element constant, else None."""
    c = constant_of(value)
    if c is None or math.prod(g.shape_of(c.output.type)) != 1:
        return None
    return float(c.numpy().reshape(-1)[0])


def _near(value: float | None, expected: float) -> bool:
    return value is not None and abs(value - expected) <= 2e-3 * abs(expected)  # fp16 constants


def _product_factors(op: g.MulOp) -> list[SSAValue]:
    """The factors of a tree of muls whose inner muls have no other use."""
    factors: list[SSAValue] = []
    for v in (op.lhs, op.rhs):
        inner = v.owner
        if isinstance(inner, g.MulOp) and v.has_one_use():
            factors += _product_factors(inner)
        else:
            factors.append(v)
    return factors


def _erf_gelu_input(one_plus_erf: SSAValue) -> SSAValue | None:
    """x when `one_plus_erf` is 1 + erf(x / sqrt(2)) (or x * 1/sqrt(2)), all single-use."""
    add = one_plus_erf.owner
    if not isinstance(add, g.AddOp) or not one_plus_erf.has_one_use():
        return None
    for erf_v, one in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        erf = erf_v.owner
        if not (isinstance(erf, g.ErfOp) and erf_v.has_one_use() and _near(scalar_value(one), 1.0)):
            continue
        scaled, scale = erf.input, erf.input.owner
        if not scaled.has_one_use():
            return None
        if isinstance(scale, g.DivOp) and _near(scalar_value(scale.rhs), math.sqrt(2.0)):
            return scale.lhs
        if isinstance(scale, g.MulOp):
            for x, c in ((scale.lhs, scale.rhs), (scale.rhs, scale.lhs)):
                if _near(scalar_value(c), math.sqrt(0.5)):
                    return x
    return None


class FuseErfGelu(RewritePattern):
    """x * (1 + erf(x / sqrt(2))) * 0.5, exact GELU as PyTorch exports it, -> gelu(x).

    One vector op instead of five, and no full-size intermediates: the decomposed form
    keeps two extra activation-sized tensors live, which matters for L1 footprints.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MulOp, rewriter: PatternRewriter, /):
        factors = _product_factors(op)
        if len(factors) != 3:
            return
        half = [f for f in factors if _near(scalar_value(f), 0.5)]
        if len(half) != 1:
            return
        rest = [f for f in factors if f is not half[0]]
        for x, one_plus_erf in ((rest[0], rest[1]), (rest[1], rest[0])):
            if _erf_gelu_input(one_plus_erf) is x and x.type == op.output.type:
                rewriter.replace(op, g.GeluOp.make(x))
                return


class RemoveIdentity(RewritePattern):
    """identity, and reshape / expand / cast / transpose that change nothing, forward their input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, g.IdentityOp):
            rewriter.replace(op, [], [op.input])
        elif isinstance(op, (*RESHAPE_LIKE, g.ExpandOp, g.CastOp)):
            if op.input.type == op.output.type:
                rewriter.replace(op, [], [op.input])
        elif isinstance(op, g.TransposeOp):
            if tuple(op.props()["perm"]) == tuple(range(len(g.shape_of(op.input.type)))):  # type: ignore[arg-type]
                rewriter.replace(op, [], [op.input])


class ComposeLayoutChains(RewritePattern):
    """reshape(reshape(x)) -> reshape(x) (any of reshape/flatten/squeeze/unsqueeze);
    transpose(transpose(x)) -> one transpose with the composed permutation."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, RESHAPE_LIKE) and isinstance(inner := op.input.owner, RESHAPE_LIKE):
            shape = g.shape_of(op.output.type)
            rewriter.replace(op, g.ReshapeOp.make(inner.input, shape=shape))
        elif isinstance(op, g.TransposeOp) and isinstance(inner := op.input.owner, g.TransposeOp):
            outer_perm, inner_perm = op.props()["perm"], inner.props()["perm"]
            perm = tuple(inner_perm[i] for i in outer_perm)  # type: ignore[index,union-attr]
            rewriter.replace(op, g.TransposeOp.make(inner.input, perm=perm))



UNIT_REDUCTIONS = (g.ReduceSumOp, g.ReduceMeanOp, g.ReduceMaxOp, g.ReduceMinOp, g.ReduceProdOp)


class DropUnitDims(RewritePattern):
    """A sum / mean / max / min / prod of more than 4 dims over axes of size 1 only is the
    identity: a reshape (torch's adaptive pooling with even bins exports 6-D index grids,
    6x1x6x1x2x256, reduced over their unit axes; their transposes: `coalesce_dims.py`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.ReduceOp, rewriter: PatternRewriter, /):
        if not isinstance(op, UNIT_REDUCTIONS):
            return
        shape = g.shape_of(op.input.type)
        axes = tuple(op.props()["axes"])  # type: ignore[arg-type]
        if len(shape) > NPU_RANK and axes and all(shape[a % len(shape)] == 1 for a in axes):  # type: ignore[operator]
            rewriter.replace(op, g.ReshapeOp.make(op.input, shape=g.shape_of(op.output.type)))


class ScalarEinsumOperand(RewritePattern):
    """einsum with a rank-0 operand -> that operand reshaped to [1] under a fresh subscript
    (summed over: a size-1 axis). `einsum('->', x)` of a scalar is then `'a->'`; npu tiles
    have 1 to 4 dims."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.EinsumOp, rewriter: PatternRewriter, /):
        equation = op.props()["equation"].replace(" ", "")  # type: ignore[union-attr]
        if "->" not in equation or "..." in equation:
            return
        lhs, out = equation.split("->")
        terms = lhs.split(",")
        if len(terms) != len(op.operands) or all(g.shape_of(v.type) for v in op.operands):
            return
        fresh = next(c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation)
        new_ops: list[Operation] = []
        operands = []
        for i, v in enumerate(op.operands):
            if g.shape_of(v.type):
                operands.append(v)
                continue
            new_ops.append(one := g.ReshapeOp.make(v, shape=(1,)))
            operands.append(one.output)
            terms[i] = fresh  # (several scalars share it: a product over one size-1 axis)
        new_ops.append(einsum := g.EinsumOp.make(operands, equation=",".join(terms) + "->" + out))
        einsum.attributes.update(op.attributes)
        rewriter.replace(op, new_ops)


class NegativeStepSlice(RewritePattern):
    """slice with negative steps -> slice of the positive-step axes, then one gather per
    negative-step axis taking its (descending) indices.

    ONNX's `x[::-1]` reverses; the npu's DMA engines take non-negative strides only, and a
    gather of constant indices is what a reversed copy is.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.SliceOp, rewriter: PatternRewriter, /):
        p = op.props()
        shape = g.shape_of(op.input.type)
        steps = tuple(p.get("steps") or (1,) * len(p["axes"]))  # type: ignore[arg-type]
        if all(step > 0 for step in steps):
            return
        rank = len(shape)
        parts = list(zip(p["starts"], p["ends"], (a % rank for a in p["axes"]), steps))  # type: ignore[call-overload]
        new_ops: list[Operation] = []
        value = op.input
        forward = [t for t in parts if t[3] > 0]
        if forward:
            starts, ends, axes, fsteps = zip(*forward)
            new_ops.append(part := g.SliceOp.make(value, starts=starts, ends=ends, axes=axes, steps=fsteps))
            value = part.output
        for start, end, axis, step in parts:
            if step > 0:
                continue
            picked = np.array(g.slice_bounds(shape[axis], start, end, step), np.int64)
            new_ops.append(index := g.ConstantOp.from_numpy(picked))
            new_ops.append(gather := g.GatherOp.make(value, index.output, axis=axis))
            value = gather.output
        new_ops[-1].attributes.update(op.attributes)
        rewriter.replace(op, new_ops)


class OneHotToCompare(RewritePattern):
    """one_hot(i, [off, on], depth D, axis a) with integer indices and constant values ->
    where(unsqueeze(i', a) == arange(D) along a, on, off), i' = i + D where i < 0.

    Elementwise ops tile over the cores (the one_hot command is one whole-tensor command on
    one core: XLNet's S128 segment one-hot, 128 x 128 x 2 x 2 int64, does not fit one
    core's L1); out-of-range indices give all `off`, as ONNX says.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.OneHotOp, rewriter: PatternRewriter, /):
        values = constant_of(op.values)
        index_type = op.indices.type.element_type  # type: ignore[attr-defined]
        if values is None or not np.issubdtype(g.numpy_dtype(index_type), np.signedinteger):
            return
        p = op.props()
        depth = int(p["depth"])  # type: ignore[arg-type]
        rank = len(g.shape_of(op.output.type))  # type: ignore[arg-type]
        axis = int(p["axis"]) % rank  # type: ignore[arg-type]
        off, on = values.numpy()
        index_dtype = g.numpy_dtype(index_type)
        new_ops: list[Operation] = [
            zero := g.ConstantOp.from_numpy(np.array(0, index_dtype)),
            d := g.ConstantOp.from_numpy(np.array(depth, index_dtype)),
            negative := g.LessOp.make(op.indices, zero.output),
            wrapped := g.AddOp.make(op.indices, d.output),
            index := g.WhereOp.make(negative.output, wrapped.output, op.indices),
            column := g.UnsqueezeOp.make(index.output, axes=(axis,)),
            positions := g.ConstantOp.from_numpy(
                np.arange(depth, dtype=index_dtype).reshape((depth,) + (1,) * (rank - axis - 1))),
            hit := g.EqualOp.make(column.output, positions.output),
            on_c := g.ConstantOp.from_numpy(np.array(on)),
            off_c := g.ConstantOp.from_numpy(np.array(off)),
            out := g.WhereOp.make(hit.output, on_c.output, off_c.output),
        ]
        out.attributes.update(op.attributes)
        rewriter.replace(op, new_ops)


NPU_POOL_TYPES = {np.dtype(np.int8): np.float16, np.dtype(np.uint8): np.float16,
                  np.dtype(np.int16): np.float32, np.dtype(np.uint16): np.float32}
"""Integer element types whose max pool is computed exactly in a float type (every value is
representable: fp16 holds integers up to 2048, fp32 up to 2**24)."""


class IntegerMaxPool(RewritePattern):
    """max_pool on 8/16-bit integers -> cast to f16/f32, max_pool, cast back (exact: the max
    of exactly represented values is one of them). The pool units compute in floats."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.MaxPoolOp, rewriter: PatternRewriter, /):
        element = op.input.type.element_type  # type: ignore[attr-defined]
        wide = NPU_POOL_TYPES.get(g.numpy_dtype(element))
        if wide is None:
            return
        to_float = g.CastOp.make(op.input, dtype=g.element_type_of(wide))
        pool = g.MaxPoolOp.make(to_float.output, **explicit_props(op))
        back = g.CastOp.make(pool.output, dtype=element)
        back.attributes.update(op.attributes)
        rewriter.replace(op, [to_float, pool, back])


class WideEinsum(RewritePattern):
    """einsum on bf16 -> cast the operands to f32, einsum, cast the result back to bf16.

    The matrix unit computes f16/f32; f32 holds every bf16 exactly and the one rounding at
    the end is the one a bf16 einsum accumulating in f32 makes.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.EinsumOp, rewriter: PatternRewriter, /):
        element = op.output.type.element_type  # type: ignore[attr-defined]
        if element != BFloat16Type() or not op.operands:
            return
        casts = [g.CastOp.make(v, dtype=g.f32) for v in op.operands]
        einsum = g.EinsumOp.make([c.output for c in casts], **explicit_props(op))
        back = g.CastOp.make(einsum.output, dtype=element)
        back.attributes.update(op.attributes)
        rewriter.replace(op, [*casts, einsum, back])


class EinsumToMatmul(RewritePattern):
    """A two-operand einsum that is a (batched) matrix product -> transposes, reshapes and
    one matmul, as tensordot does it: labels in both operands and the result are batch
    dims, in both operands only are contracted (K), in one operand and the result are its
    free dims (M of the left, N of the right). The matmul tiles over every core and reads
    a constant operand from the weight buffer; an einsum is one whole-tensor command
    (XLNet's projections `ibh,hnd->ibnd` at S128 fit no core). Equations with an
    ellipsis, a repeated label in one operand, a label summed within one operand or a
    broadcast batch dim stay einsums. An implicit equation's result is its labels used
    once, in alphabetical order (numpy's rule)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.EinsumOp, rewriter: PatternRewriter, /):
        equation = str(op.props()["equation"]).replace(" ", "")
        inputs, arrow, out = equation.partition("->")
        terms = inputs.split(",")
        if len(op.operands) != 2 or "." in equation or len(terms) != 2:
            return
        if op.output.type.element_type == BFloat16Type():  # type: ignore[attr-defined]
            return  # WideEinsum computes it in f32 first
        if not arrow:  # implicit: the labels used once, in alphabetical order
            out = "".join(sorted(c for c in set(inputs) if inputs.count(c) == 1 and c != ","))
        a, b = terms
        if len(set(a)) != len(a) or len(set(b)) != len(b) or len(set(out)) != len(out):
            return
        if any(c not in b and c not in out for c in a) or any(c not in a and c not in out for c in b):
            return
        shapes = [g.shape_of(v.type) for v in op.operands]
        size = {**dict(zip(b, shapes[1])), **dict(zip(a, shapes[0]))}
        batch = [c for c in out if c in a and c in b]
        if any(shapes[0][a.index(c)] != shapes[1][b.index(c)] for c in batch):
            return
        k = [c for c in a if c in b and c not in out]
        m = [c for c in a if c not in b]
        n = [c for c in b if c not in a]
        dims = lambda labels: tuple(size[c] for c in labels)  # noqa: E731
        lead = (math.prod(dims(batch)),) if batch else ()
        ops: list[Operation] = []

        def arrange(value: SSAValue, term: str, order: list[str], shape: tuple[int, ...]) -> SSAValue:
            perm = tuple(term.index(c) for c in order)
            if perm != tuple(range(len(perm))):
                ops.append(t := g.TransposeOp.make(value, perm=perm))
                value = t.output
            if g.shape_of(value.type) != shape:
                ops.append(r := g.ReshapeOp.make(value, shape=shape))
                value = r.output
            return value

        left = arrange(op.operands[0], a, batch + m + k, lead + (math.prod(dims(m)), math.prod(dims(k))))
        right = arrange(op.operands[1], b, batch + k + n, lead + (math.prod(dims(k)), math.prod(dims(n))))
        ops.append(product := g.MatmulOp.make(left, right))
        result = product.output
        grouped = batch + m + n
        if g.shape_of(result.type) != dims(grouped):
            ops.append(r := g.ReshapeOp.make(result, shape=dims(grouped)))
            result = r.output
        perm = tuple(grouped.index(c) for c in out)
        if perm != tuple(range(len(perm))):
            ops.append(t := g.TransposeOp.make(result, perm=perm))
            result = t.output
        rewriter.replace(op, ops, [result])


# ----------------------------------------------------------------------------- pass


@dataclass(frozen=True)
class GraphCanonicalize(ModulePass):
    """Fold BatchNorm into convs (elsewhere: a per-channel scale and shift), give scalar-index
    gathers a one-element index, decompose Gemm and Sum, fuse exported GELU, drop identities,
    fold constants and ops on empty tensors, split into slices, remove dead ops; reversing slices become gathers, integer max pools and
    bf16 einsums computed in a float type the npu units take; unit dims dropped from
    transposes and reductions of more than 4 dims.

    `fold_limit` (bytes) caps the constants that folding may create (layout changes of
    single-use weights are exempt); `-p graph-canonicalize{fold-limit=0}` disables growing folds.
    """

    name = "graph-canonicalize"

    fold_limit: int = DEFAULT_FOLD_LIMIT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [
            FoldConstants(self.fold_limit),
            FoldEmpty(),
            SplitToSlices(),
            RemoveIdentity(),
            ComposeLayoutChains(),
            DropUnitDims(),
            *(pattern() for pattern in COALESCE_PATTERNS),
            FoldBatchNormIntoConv(),
            BatchNormToScaleShift(),
            ScalarGatherToReshape(),
            DecomposeGemm(self.fold_limit),
            DecomposeSum(),
            FuseErfGelu(),
            NegativeStepSlice(),
            IntegerMaxPool(),
            WideEinsum(),
            EinsumToMatmul(),
            ScalarEinsumOperand(),
            OneHotToCompare(),
        ]
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=True)).rewrite_module(op)
