"""Vector-unit ops: elementwise (with broadcasting), activations, cast, softmax,
layer_norm and reductions (global average pooling is a mean over H and W).

Elementwise ops and activations are cut along any axis, following the distribution of
their first operand (so they run where the data is) and writing over it when it dies with
them (the footprint model's in-place rule). Broadcast operands are read through the
projection of the output region (`project`). Softmax and layer_norm keep their normalised
axes whole; a reduction keeps its reduced axes whole. Constant operands (biases, scales,
position embeddings) come from the weight buffer.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.isa.program import FLOAT_DTYPES

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref
from .placement import Frame, LoweringError
from .stage import Rule, Work, project
from .values import constant, dtype_of, shape_of

UNARY: dict[type[Operation], str] = {
    g.ReluOp: "relu", g.SigmoidOp: "sigmoid", g.TanhOp: "tanh", g.ErfOp: "erf", g.ExpOp: "exp",
    g.LogOp: "log", g.SqrtOp: "sqrt", g.RsqrtOp: "rsqrt", g.ReciprocalOp: "reciprocal",
    g.AbsOp: "abs", g.NegOp: "neg", g.GeluOp: "gelu", g.ClipOp: "clip",
    g.LeakyReluOp: "leaky_relu", g.SignOp: "sign", g.CoshOp: "cosh", g.SinhOp: "sinh",
    g.SoftplusOp: "softplus", g.MishOp: "mish", g.HardSigmoidOp: "hard_sigmoid",
    g.HardSwishOp: "hard_swish", g.NotOp: "not",
}
EXACT_UNARY = ("abs", "neg", "sign", "not")
"""Unary kinds the vector unit also computes on integer (and, for not, bool) tiles."""
BINARY: dict[type[Operation], str] = {
    g.AddOp: "add", g.SubOp: "sub", g.MulOp: "mul", g.DivOp: "div", g.PowOp: "pow",
    g.MaximumOp: "maximum", g.MinimumOp: "minimum", g.PReluOp: "prelu",
}
COMPARE: dict[type[Operation], str] = {
    g.EqualOp: "equal", g.LessOp: "less", g.LessEqualOp: "less_equal", g.GreaterOp: "greater",
    g.GreaterEqualOp: "greater_equal", g.AndOp: "and", g.OrOp: "or", g.XorOp: "xor",
}


class _Pointwise(Rule):
    follows = True

    def __init__(self, op: Operation, operands: Sequence[SSAValue], out: SSAValue):
        super().__init__(op, operands, out)
        rank = len(shape_of(out))
        # NCHW as convolutions and pools cut it (N, then H), so a chain keeps its pieces
        self.split_axes = self.tile_axes = (0, 2, 1, 3) if rank == 4 else tuple(range(rank))
        self.weight_slots = frozenset(i for i, v in enumerate(operands) if constant(v))

    def steps(self, out: Box) -> list[list[Box | None]]:
        return [[project(out, shape_of(v)) for v in self.operands]]

    def refs(self, work: Work, frames: list[Frame | None]) -> list[Ref]:
        return [f.ref(r) for f, r in zip(frames, work.steps[0]) if f is not None and r is not None]


class UnaryRule(_Pointwise):
    in_place = True
    exact = True  # checks its own element types (items.py leaves f16/f32-only to the others)

    def __init__(self, op: Operation, operands: Sequence[SSAValue], out: SSAValue):
        super().__init__(op, operands, out)
        kind = UNARY[type(op)]
        if dtype_of(operands[0]) not in FLOAT_DTYPES and kind not in EXACT_UNARY:
            raise LoweringError(f"computes {kind} on {dtype_of(operands[0])} tensors: the vector "
                                f"unit does {', '.join(EXACT_UNARY)} on integers, the rest on f16/f32")

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        p = self.op.props()  # type: ignore[attr-defined]
        kind = UNARY[type(self.op)]
        params = {}
        if kind == "clip":
            params = {"min": p["min"], "max": p["max"]}
        elif kind == "leaky_relu":
            params = {"alpha": p["alpha"]}
        elif kind == "gelu":
            params = {"approximate": p["approximate"]}
        elif kind == "hard_sigmoid":
            params = {"alpha": p["alpha"], "beta": p["beta"]}
        (x,) = self.refs(work, frames)
        em.emit(core, "unary", kind=kind, input=x, output=out, **params)


class CastRule(_Pointwise):
    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        (x,) = self.refs(work, frames)
        em.emit(core, "cast", input=x, output=out, saturate=self.op.props()["saturate"])  # type: ignore[attr-defined]


class BinaryRule(_Pointwise):
    """Arithmetic: on f16/f32, or exactly on two integer operands (the vector unit's integer
    ALU: ids plus offsets, index arithmetic); mixed operands (a float to an integer power)
    compute in f32."""

    in_place = True
    exact = True

    def __init__(self, op: Operation, operands: Sequence[SSAValue], out: SSAValue):
        super().__init__(op, operands, out)
        types = {dtype_of(v) for v in [*operands, out]}
        if "i1" in types:
            raise LoweringError(f"computes {BINARY[type(op)]} on i1 (bool) tensors")

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        a, b = self.refs(work, frames)
        em.emit(core, "binary", kind=BINARY[type(self.op)], lhs=a, rhs=b, output=out)


class _Held:
    """A stand-in frame for the value a chain computed so far: the tile it is in."""

    def __init__(self, ref: Ref):
        self._ref = ref

    def ref(self, region: Box) -> Ref:
        return self._ref


class ChainRule(_Pointwise):
    """Consecutive elementwise ops (unary, binary) of a streamed group, each feeding only
    the next, computed tile by tile in one stage: the chain's outside operands are loaded
    once per tile, every op writes over the tile in L1, and only the last result is stored
    (one pass over LLB/DDR instead of one per op: a BatchNorm's mul, add and the relu after
    it). `rules` are the ops' rules in order; each takes the previous result as an operand."""

    in_place = True

    def __init__(self, rules: Sequence[Rule]):
        first, last = rules[0], rules[-1]
        operands: list[SSAValue] = []
        for k, rule in enumerate(rules):
            for v in rule.operands:
                if (k == 0 or v is not rules[k - 1].out) and not any(v is o for o in operands):
                    operands.append(v)
        super().__init__(last.op, operands, last.out)
        self.rules = list(rules)
        self.first = first

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        held = _Held(out)
        for k, rule in enumerate(self.rules):
            regions, sub = [], []
            for v in rule.operands:
                if k and v is self.rules[k - 1].out:
                    regions.append(work.out)
                    sub.append(held)
                else:
                    i = next(j for j, o in enumerate(self.operands) if o is v)
                    regions.append(work.steps[0][i])
                    sub.append(frames[i])
            rule.emit(em, core, Work(work.out, [regions], work.chunk), 0, sub, out, acc)


def chains(rules: Sequence[Rule | None], outputs: set[SSAValue]) -> list[tuple[int, int]]:
    """[start, end) runs of `rules` (None: an op that is not computed) that one ChainRule
    can compute: unary and binary ops on floats of one shape and type, each result used
    only by the next op (and not in `outputs`, the values needed elsewhere)."""
    runs, start = [], 0
    for k in range(1, len(rules) + 1):
        if k < len(rules) and _links(rules[k - 1], rules[k], outputs):
            continue
        if k - start > 1:
            runs.append((start, k))
        start = k
    return runs


def _links(a: Rule | None, b: Rule | None, outputs: set[SSAValue]) -> bool:
    if type(a) not in (UnaryRule, BinaryRule) or type(b) not in (UnaryRule, BinaryRule):
        return False
    v = a.out
    if (v in outputs or shape_of(v) != shape_of(b.out) or dtype_of(v) != dtype_of(b.out)
            or dtype_of(v) not in FLOAT_DTYPES or any(dtype_of(o) != dtype_of(v) for o in b.operands)):
        return False
    return any(o is v for o in b.operands) and all(u.operation is b.op for u in v.uses)


class CompareRule(_Pointwise):
    """Comparisons and logic into an i1 mask, operands compared in their own type."""

    exact = True

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        a, b = self.refs(work, frames)
        em.emit(core, "compare", kind=COMPARE[type(self.op)], lhs=a, rhs=b, output=out)


class SelectRule(_Pointwise):
    """Where: `cond ? lhs : rhs` elementwise, all three broadcast to the result."""

    exact = True

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        c, a, b = self.refs(work, frames)
        em.emit(core, "select", cond=c, lhs=a, rhs=b, output=out)


class BatchNormRule(_Pointwise):
    """Inference batch normalisation that graph-canonicalize could not fold (its statistics
    computed by the model, or no conv before it): a per-channel scale and shift, the
    four [C] operands read for the channels of each tile."""

    def steps(self, out: Box) -> list[list[Box | None]]:
        return [[out] + [(out[1],)] * 4]

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        x, scale, bias, mean, var = self.refs(work, frames)
        em.emit(core, "batch_norm", input=x, scale=scale, bias=bias, mean=mean, var=var,
                output=out, epsilon=self.op.props()["epsilon"])  # type: ignore[attr-defined]


class _RowWise(Rule):
    """Ops normalising over the axes from `axis` on (softmax: just `axis`)."""

    follows = True
    in_place = True

    def __init__(self, op: Operation, operands: Sequence[SSAValue], out: SSAValue, whole: set[int]):
        super().__init__(op, operands, out)
        rank = len(shape_of(out))
        self.whole = whole
        self.split_axes = self.tile_axes = tuple(a for a in range(rank) if a not in whole)
        self.weight_slots = frozenset(i for i, v in enumerate(operands) if constant(v))

    def steps(self, out: Box) -> list[list[Box | None]]:
        return [[project(out, shape_of(v)) for v in self.operands]]


class SoftmaxRule(_RowWise):
    def __init__(self, op: g.SoftmaxOp, operands, out):
        rank = len(shape_of(out))
        self.axis = op.props()["axis"] % rank  # type: ignore[operator]
        super().__init__(op, operands, out, {self.axis})

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        em.emit(core, "softmax", input=frames[0].ref(work.steps[0][0]), output=out,
                axis=self.axis)


class LRNRule(_RowWise):
    """Local response normalisation across channels: cut along every axis but C."""

    def __init__(self, op: g.LRNOp, operands, out):
        super().__init__(op, operands, out, {1})

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        p = self.op.props()  # type: ignore[attr-defined]
        em.emit(core, "lrn", input=frames[0].ref(work.steps[0][0]), output=out, size=p["size"],
                alpha=p["alpha"], beta=p["beta"], bias=p["bias"])


class LayerNormRule(_RowWise):
    def __init__(self, op: g.LayerNormOp, operands, out):
        rank = len(shape_of(out))
        p = op.props()
        self.axis, self.epsilon = p["axis"] % rank, p["epsilon"]  # type: ignore[operator]
        self.slots = ["input"] + [k for k in ("scale", "bias") if getattr(op, k) is not None]
        super().__init__(op, operands, out, set(range(self.axis, rank)))

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        x = frames[0].ref(work.steps[0][0])
        tiles = {}
        for slot, frame, region in zip(self.slots[1:], frames[1:], work.steps[0][1:]):
            ref = frame.ref(region)
            want = x.tile.shape[self.axis:]
            if ref.tile.shape != want:  # scale/bias broadcast to the normalised shape
                ref = _broadcast(ref, want)
            tiles[slot] = ref
        em.emit(core, "layer_norm", input=x, output=out, axis=self.axis, epsilon=self.epsilon,
                **tiles)


def _broadcast(ref: Ref, shape: tuple[int, ...]) -> Ref:
    """A tile read with zero strides over the dims it lacks or has of extent 1."""
    from stc_mlir.isa.program import Tile

    t = ref.tile
    lead = len(shape) - len(t.shape)
    strides = []
    for i, d in enumerate(shape):
        j = i - lead
        strides.append(0 if j < 0 or t.shape[j] == 1 else t.strides[j])
    return Ref(Tile(t.buffer, t.offset, shape, tuple(strides), t.dtype), ref.frame, ref.box)


class ReduceRule(Rule):
    """reduce_sum / reduce_mean / reduce_max and global_avg_pool (a mean over H, W)."""

    KINDS = {g.ReduceSumOp: "sum", g.ReduceMeanOp: "mean", g.ReduceMaxOp: "max",
             g.ReduceMinOp: "min", g.GlobalAvgPoolOp: "mean"}
    exact = True  # sum, max and min of integers are exact; a mean is f16/f32 only

    def __init__(self, op: Operation, operands, out):
        super().__init__(op, operands, out)
        in_rank = len(shape_of(operands[0]))
        if isinstance(op, g.GlobalAvgPoolOp):
            axes, self.keepdims = tuple(range(2, in_rank)), True
        else:
            p = op.props()  # type: ignore[attr-defined]
            axes = tuple(a % in_rank for a in p["axes"]) or tuple(range(in_rank))
            self.keepdims = bool(p["keepdims"])
        self.axes = tuple(sorted(axes))
        if isinstance(op, (g.ReduceMeanOp, g.GlobalAvgPoolOp)) and dtype_of(out) not in FLOAT_DTYPES:
            raise LoweringError(f"a mean of {dtype_of(out)} tensors is not supported (cast to f16 first)")
        self._cut(in_rank, out)

    def _cut(self, in_rank: int, out: SSAValue) -> None:
        """Spread and tile along the kept axes."""
        self.kept = [a for a in range(in_rank) if a not in self.axes]  # out dim -> in dim
        out_rank = len(shape_of(out))
        if self.keepdims:
            self.split_axes = self.tile_axes = tuple(self.kept)
        elif self.kept:
            self.split_axes = self.tile_axes = tuple(range(out_rank))
        # a full reduction without keepdims has a 1-element result: one tile

    def in_region(self, out: Box) -> Box:
        dims = shape_of(self.operands[0])
        res = list(bx.full(dims))
        for i, a in enumerate(self.kept):
            res[a] = out[a] if self.keepdims else out[i]
        return tuple(res)

    def steps(self, out: Box) -> list[list[Box | None]]:
        return [[self.in_region(out)]]

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        x = frames[0].ref(work.steps[0][0])
        em.emit(core, "reduce", kind=self.KINDS[type(self.op)], input=x, output=out,
                axes=self.axes, keepdims=self.keepdims)


class ArgReduceRule(ReduceRule):
    """ArgMax / ArgMin along one axis into i64 indices (first or last on ties)."""

    def __init__(self, op: g.ArgReduceOp, operands, out):
        Rule.__init__(self, op, operands, out)
        in_rank = len(shape_of(operands[0]))
        p = op.props()
        self.axes = (p["axis"] % in_rank,)  # type: ignore[operator]
        self.keepdims, self.last = bool(p["keepdims"]), bool(p["select_last_index"])
        self._cut(in_rank, out)

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        em.emit(core, "arg_reduce", kind="argmax" if isinstance(self.op, g.ArgMaxOp) else "argmin",
                input=frames[0].ref(work.steps[0][0]), output=out, axis=self.axes[0],
                keepdims=self.keepdims, select_last_index=self.last)
