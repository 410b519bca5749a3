"""graph-fuse-conv-add-relu: the seeds' FuseConvAddBnRelu.

The NPU's matrix unit applies bias, a residual add and relu / relu6 to a convolution's
accumulator before it leaves the core, so conv + bias + residual + relu written as
separate ops would cost three extra round trips of a full feature map through memory.
This pass moves each such op into the producing `graph.conv2d`'s epilogue (`bias`,
`residual`, `activation`). Run it after graph-canonicalize, which folds BatchNorm into
the conv first. Each step needs the conv result to have no other user, and keeps the
epilogue order bias -> residual -> activation that the hardware applies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from stc_mlir.dialects import graph as g


def _fusable_conv(value: SSAValue) -> g.Conv2DOp | None:
    """The conv2d producing `value`, if `value` has no other user."""
    conv = value.owner
    return conv if isinstance(conv, g.Conv2DOp) and value.has_one_use() else None


def _constant_of(value: SSAValue | None) -> g.ConstantOp | None:
    return value.owner if value is not None and isinstance(value.owner, g.ConstantOp) else None


def per_channel_values(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
    """Whether a tensor of `shape` added to an NCHW `out_shape` varies only along C.

    Numpy broadcasting aligns shapes on the right, so [1,C,1,1], [C,1,1], [1] and scalars
    qualify, but a [C] vector would be added along W and does not.
    """
    if len(shape) > len(out_shape):
        return False
    offset = len(out_shape) - len(shape)
    return all(d == 1 or (offset + i == 1 and d == out_shape[1]) for i, d in enumerate(shape))


ACTIVATION_AFTER = {
    # (conv's activation, applied activation) -> combined; relu and relu6 are idempotent
    # and relu6 absorbs relu in either order.
    ("none", "relu"): "relu", ("none", "relu6"): "relu6",
    ("relu", "relu"): "relu", ("relu", "relu6"): "relu6",
    ("relu6", "relu"): "relu6", ("relu6", "relu6"): "relu6",
}


def _replace_with_conv(
    rewriter: PatternRewriter, op: Operation, conv: g.Conv2DOp, new_ops: list[Operation],
    bias: SSAValue | None, residual: SSAValue | None, **changes: object,
) -> None:
    """Replace `op` (the conv's only user) by a conv with a new epilogue; erase what died.

    The new conv is placed at `op`, where every operand (the conv's and `op`'s) is defined.
    """
    props = {k: g.to_python(v) for k, v in conv.properties.items() if k != "operandSegmentSizes"}
    props.update(changes)
    new_conv = g.Conv2DOp.make(conv.input, conv.weight, bias, residual, **props)
    new_conv.attributes.update(conv.attributes)
    dead = [o for o in op.operands if o is not conv.output]
    rewriter.replace(op, [*new_ops, new_conv])
    old_bias = conv.bias
    rewriter.erase(conv)
    # Constants that only fed the fused ops (the add's per-channel term, the old bias).
    for value in [*dead, old_bias]:
        if (c := _constant_of(value)) is not None and c.output.first_use is None:
            rewriter.erase(c)


class FuseAdd(RewritePattern):
    """add(conv, per-channel constant) -> conv with bias; add(conv, r) -> conv with residual r."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.AddOp, rewriter: PatternRewriter, /):
        for value, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            conv = _fusable_conv(value)
            if conv is None or conv.props()["activation"] != "none":
                continue
            out_shape = g.shape_of(conv.output.type)
            constant = _constant_of(other)
            if constant is not None and per_channel_values(g.shape_of(other.type), out_shape):
                if conv.bias is not None and _constant_of(conv.bias) is None:
                    continue
                channels = out_shape[1]
                term = constant.numpy()
                term = term.reshape((1,) * (4 - term.ndim) + term.shape)
                term = np.broadcast_to(term, (1, channels, 1, 1)).reshape(channels).astype(np.float32)
                if conv.bias is not None:
                    term = term + _constant_of(conv.bias).numpy().astype(np.float32)  # type: ignore[union-attr]
                bias = g.ConstantOp.from_numpy(term.astype(g.numpy_dtype(other.type.element_type)))  # type: ignore[attr-defined]
                _replace_with_conv(rewriter, op, conv, [bias], bias.output, conv.residual)
                return
            if conv.residual is None and other.type == conv.output.type == op.output.type:
                _replace_with_conv(rewriter, op, conv, [], conv.bias, other)
                return


class FuseActivation(RewritePattern):
    """relu(conv) -> conv{activation = "relu"}; clip(conv, 0, 6) -> conv{activation = "relu6"}."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, g.ReluOp):
            activation = "relu"
        elif isinstance(op, g.ClipOp) and op.props()["min"] == 0.0 and op.props()["max"] == 6.0:
            activation = "relu6"
        else:
            return
        conv = _fusable_conv(op.input)
        if conv is None:
            return
        combined = ACTIVATION_AFTER[(str(conv.props()["activation"]), activation)]
        _replace_with_conv(rewriter, op, conv, [], conv.bias, conv.residual, activation=combined)


@dataclass(frozen=True)
class GraphFuseConvAddRelu(ModulePass):
    """Fuse per-channel bias adds, residual adds and relu / relu6 into graph.conv2d epilogues."""

    name = "graph-fuse-conv-add-relu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # No general DCE: fusion removes only what it made dead, never unrelated ops.
        applier = GreedyRewritePatternApplier([FuseAdd(), FuseActivation()], dce_enabled=False)
        PatternRewriteWalker(applier).rewrite_module(op)
