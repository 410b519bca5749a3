"""Lowering a scheduled function, item by item (see docs/lowering.md).

For every item in block order the lowering places its result (`mem_scope`), spreads the
work over its cores (`core_bind`: a batch part per core set, rows/H within a part) and
emits the commands; a cluster barrier separates items (and the ops of a group) so buffers
can be reused across them.

A group runs in one of two modes:

- **resident** (its values fit the cores' L1, as the schedule's footprint model says):
  every value of the body lives in L1, each core holding the box of it that it computes
  plus the margins its consumers on that core read (halos, filled from the neighbours
  over the NoC); inputs from DDR/LLB or other cores are staged into L1 as the first tiles
  need them; elementwise ops write over an operand that dies with them, reshapes are
  views. One phase per op.
- **streamed** (otherwise, or a single op whose operands and result are all in DDR/LLB):
  each op is its own phase, its tiles streamed through double-buffered L1 slots from
  wherever the operands are to wherever the result goes; intermediates of a streamed group
  go to LLB if they fit, else DDR.

Splits and concats in DDR/LLB are views where the data already is (a batch slice of a
buffer; producers write straight into their concat's buffer); otherwise DMAs move the
data (over the NoC between cores for L1). Model inputs and outputs are `npu.input` /
`npu.output` DDR buffers; an item whose result is a model output writes it in place.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from stc_mlir import reference
from stc_mlir.progress import counted
from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.isa.program import DTYPES
from stc_mlir.passes.schedule_verify import SPAN_ATTR, VIEW_OPS, analyse
from stc_mlir.target import Target

from . import boxes as bx
from .boxes import Box
from .conv import ConvRule, PoolRule
from .emitter import Emitter, Lowered, align
from .matmul import MatmulRule
from .movement import (
    ConcatRule, ExpandRule, GatherRule, SliceRule, SplitPartRule, TransposeRule,
)
from .placement import (
    Frame, IndexMap, LoweringError, Piece, Placement, split_box, transfer, whole,
)
from .probes import Probes
from .staging import Staging
from .stage import Job, Operand, Output, Rule, configure, run_stage
from .stripes import rebase, regions, shift
from .values import constant, dtype_of, shape_of
from . import indexing, vector
from .vector import (
    BINARY, UNARY, BinaryRule, CastRule, LayerNormRule, ReduceRule, SoftmaxRule, UnaryRule,
)

MARGIN = 0.02
"""Fraction of L1 / weight buffer / LLB the lowering leaves to the allocator (alignment,
fragmentation)."""


RULES: dict[type[Operation], type[Rule]] = {
    **dict.fromkeys(UNARY, UnaryRule), **dict.fromkeys(BINARY, BinaryRule),
    g.CastOp: CastRule, g.Conv2DOp: ConvRule, g.MaxPoolOp: PoolRule, g.AvgPoolOp: PoolRule,
    g.MatmulOp: MatmulRule, g.SoftmaxOp: SoftmaxRule, g.LayerNormOp: LayerNormRule,
    **dict.fromkeys((g.ReduceSumOp, g.ReduceMeanOp, g.ReduceMaxOp, g.GlobalAvgPoolOp), ReduceRule),
    g.TransposeOp: TransposeRule, g.SliceOp: SliceRule, g.ConcatOp: ConcatRule,
    g.ExpandOp: ExpandRule, g.GatherOp: GatherRule,
    **dict.fromkeys(vector.COMPARE, vector.CompareRule), g.WhereOp: vector.SelectRule,
    g.ReduceMinOp: ReduceRule, g.ArgMaxOp: vector.ArgReduceRule, g.ArgMinOp: vector.ArgReduceRule,
    g.BatchNormOp: vector.BatchNormRule, g.LRNOp: vector.LRNRule, **indexing.RULES,
}


def make_rule(op: Operation, out: SSAValue, operands: Sequence[SSAValue] | None = None) -> Rule:
    """The rule lowering `op` (producing `out`, reading `operands`: by default the op's);
    LoweringError if there is none."""
    operands = list(op.operands if operands is None else operands)
    if isinstance(op, g.SplitOp):
        return SplitPartRule(op, operands, out, list(op.results).index(out))
    if type(op) in indexing.RESULT_RULES:
        return indexing.RESULT_RULES[type(op)](op, operands, out, list(op.results).index(out))
    rule = RULES.get(type(op))
    if rule is not None:
        return rule(op, operands, out)
    hints = {
        g.GemmOp: "run graph-canonicalize first (it becomes matmul + add)",
        g.SumOp: "run graph-canonicalize first (it becomes adds)",
    }
    hint = hints.get(type(op), "the npu lowering has no rule for it")
    raise LoweringError(f"{op_label(op)} is not supported: {hint}")


def item_origin(item: Operation, label: str) -> tuple[str, str]:
    """(item, sub-group) of a scheduled item's `Origin`: a sub-group's group and index."""
    if isinstance(item, s.GroupOp) and item.split.data > 1:
        return f"group '{item.group_name.data}'", str(item.index.data)
    return label, ""


def computed(op: Operation) -> list[SSAValue]:
    """The results of `op` the lowering computes: all of a one-result op, the used ones of
    a multi-result op (a TopK grouped for its indices does not sort for its values)."""
    return list(op.results) if len(op.results) == 1 else [r for r in op.results if r.uses]


def op_label(op: Operation) -> str:
    span = op.attributes.get(SPAN_ATTR)
    name = getattr(span, "data", None) or (op.results[0].name_hint if op.results else None)
    return f"{op.name}" + (f" '{name}'" if name else "")


@dataclass
class ItemCtx:
    label: str
    index: int
    cores: list[int]
    parts: list[tuple[int, ...]]
    batch: int | None
    offset: int = 0  # where a value spread over fewer cores than a part has starts (ROTATE)
    used: int = 0  # the most cores a value of the item was spread over


class FunctionLowering:
    def __init__(self, f: func.FuncOp, target: Target, target_ref: str | None = None,
                 prefetch: bool = True, narrow_barriers: bool = True, fuse: bool = True,
                 stage_weights: bool = True):
        self.f = f
        self.fuse = fuse  # streamed elementwise chains in one stage (vector.ChainRule)
        self.t = target
        self.em = Emitter(target, f.sym_name.data, target_ref)
        self.em.prefetch = prefetch
        self.em.narrow = narrow_barriers
        self.em.wb_capacity = int(target.memory["wb"].size * (1 - MARGIN))
        self.env: dict[SSAValue, Placement] = {}
        self.consts: dict[Operation, Placement] = {}
        self.analysed = analyse(f)
        self.rotation: dict[tuple[int, ...], int] = {}  # a core set -> the next items' offset
        self.small_bytes = 0  # LLB bytes of the small constants' copy (_small_consts)
        self.small_bufs: list[str] = []
        self.items = [it.op for it in self.analysed]
        n = len(self.items)
        self.position = {op: i for i, op in enumerate(self.items)}
        self.last_use: dict[SSAValue, int] = {}
        self.uses: dict[SSAValue, int] = {}
        for i, op in enumerate(self.items):
            for v in op.operands:
                self.last_use[v] = i
                self.uses[v] = self.uses.get(v, 0) + 1
        self.returned = list(f.body.block.last_op.operands)  # type: ignore[union-attr]
        for v in self.returned:
            self.last_use[v] = n
            self.uses[v] = self.uses.get(v, 0) + 1
        self.dest: dict[SSAValue, Placement] = {}
        cores = sorted({c for op in self.items for c in op.core_bind.cores})  # type: ignore[union-attr]
        self.em.barrier_cores = cores or [0]
        self.probes = Probes(self.em, reference.graph_values(f), op_label)
        self.staging = Staging(self, stage_weights)
        if self.staging.weights:
            self.em.before_barrier = self.staging.flush

    # --- placements

    def const(self, v: SSAValue) -> Placement:
        op = constant(v)
        assert op is not None
        staged = self.staging.placement(op) if self.staging.by_op else None
        if self.small_bufs and self.em.phase >= 2:  # the copy is ordered before the phase a
            self.em.settled.update(self.small_bufs)  # load would be prefetched in (prefetch.py)
        return staged if staged is not None else self.ddr_const(v)

    def ddr_const(self, v: SSAValue) -> Placement:
        """The weight buffer of constant `v` in DDR (made on first use)."""
        op = constant(v)
        assert op is not None
        if op not in self.consts:
            array = np.ascontiguousarray(op.numpy())
            dtype = dtype_of(v)
            buf = self.em.buffer(v.name_hint or "const", "ddr", max(array.nbytes, 1),
                                 init=array.astype(DTYPES[dtype]).tobytes() or b"\0\0",
                                 init_dtype=dtype, pinned=True)
            self.consts[op] = whole(buf, shape_of(v), dtype)
        return self.consts[op]

    def value(self, v: SSAValue) -> Placement:
        return self.const(v) if constant(v) else self.env[v]

    def _small_consts(self, first: Operation) -> None:
        """Copy the small constants of small ops (`SMALL_CONST`) into LLB with one DMA per
        element type at the start of the program, by the first item's last core; their
        placement is then the LLB copy (40 cycles of latency instead of DDR's 200)."""
        found: dict[Operation, SSAValue] = {}
        big: set[Operation] = set()
        for item in self.items:
            for o in item.walk():
                if not isinstance(o, g.GraphOp) or isinstance(o, g.ConstantOp):
                    continue
                tiny = all(math.prod(shape_of(r)) * DTYPES[dtype_of(r)].itemsize <= SMALL_RESULT
                           for r in o.results if isinstance(r.type, g.TensorType))
                for v in o.operands:
                    c = constant(v)
                    if c is None:
                        continue
                    if tiny and math.prod(shape_of(v)) * DTYPES[dtype_of(v)].itemsize <= SMALL_CONST:
                        found.setdefault(c, v)
                    else:
                        big.add(c)
        by_dtype: dict[str, list[tuple[Operation, SSAValue]]] = {}
        for c, v in found.items():
            if c not in big and c not in self.consts:
                by_dtype.setdefault(dtype_of(v), []).append((c, v))
        core = list(first.core_bind.cores)[-1]  # type: ignore[attr-defined]
        self.em.set_origin(*item_origin(first, self.analysed[0].label), "small constants to LLB")
        for dtype, consts in sorted(by_dtype.items()):
            if len(consts) < SMALL_COUNT:
                continue
            itemsize = DTYPES[dtype].itemsize
            blob, offsets = bytearray(), []
            for c, v in consts:
                offsets.append(len(blob))
                data = np.ascontiguousarray(c.numpy()).astype(DTYPES[dtype]).tobytes()  # type: ignore[attr-defined]
                blob += data + bytes(align(max(len(data), 1)) - len(data))
            n = len(blob) // itemsize
            src = self.em.buffer(f"small_{dtype}", "ddr", len(blob), init=bytes(blob), init_dtype=dtype,
                                 pinned=True)
            dst = self.em.buffer(f"small_{dtype}_llb", "llb", len(blob), pinned=True)
            transfer(self.em, whole(src, (n,), dtype), Frame(dst, 0, ((0, n),), dtype), ((0, n),), core)
            self.small_bytes += len(blob)
            self.small_bufs.append(dst)
            for (c, v), off in zip(consts, offsets):
                self.consts[c] = whole(dst, shape_of(v), dtype, off)

    def new_whole(self, v: SSAValue, space: str, hint: str) -> Placement:
        nbytes = math.prod(shape_of(v)) * DTYPES[dtype_of(v)].itemsize
        return whole(self.em.buffer(hint, space, nbytes), shape_of(v), dtype_of(v))

    def resident_l1(self, index: int, core: int, exclude: set[SSAValue] = frozenset()) -> int:
        """L1 bytes on `core` of earlier results still needed at item `index`."""
        total = 0
        for v, p in self.env.items():
            if v in exclude or self.last_use.get(v, -1) < index:
                continue
            seen = set()
            for piece in p.pieces:
                if piece.core == core and piece.frame.buffer not in seen:
                    seen.add(piece.frame.buffer)
                    total += self.em.program.buffers[piece.frame.buffer].size
        return total

    def llb_live(self, index: int) -> int:
        total, seen = self.staging.bytes + self.small_bytes, set()  # staged weights, small constants: the whole program
        for v, p in self.env.items():
            if self.last_use.get(v, -1) < index:
                continue
            for piece in p.pieces:
                b = self.em.program.buffers[piece.frame.buffer]
                if b.space == "llb" and b.name not in seen:
                    seen.add(b.name)
                    total += b.size
        return total

    # --- the function

    def run(self) -> Lowered:
        names = reference.input_names(self.f)
        for name, arg in zip(names, self.f.args):
            nbytes = math.prod(shape_of(arg)) * DTYPES[dtype_of(arg)].itemsize
            buf = self.em.io("in", name, g.shape_of(arg.type), dtype_of(arg), nbytes)
            self.env[arg] = whole(buf, shape_of(arg), dtype_of(arg))
        outputs = []
        placed: set[SSAValue] = set()
        for name, v in zip(reference.output_names(self.f), self.returned):
            nbytes = math.prod(shape_of(v)) * DTYPES[dtype_of(v)].itemsize
            buf = self.em.io("out", name, g.shape_of(v.type), dtype_of(v), nbytes)
            out = whole(buf, shape_of(v), dtype_of(v))
            outputs.append((v, out))
            owner = v.owner
            if v not in placed and isinstance(owner, Operation) and owner in self.position:
                self.dest[v] = out
                placed.add(v)
        self._plan_concats()
        for i, op in counted(enumerate(self.items), "lower: schedule items"):
            label = self.analysed[i].label
            if i:
                self.em.barrier(label)
            self.em.set_item(label)
            if not i:
                self._small_consts(op)
            self.em.set_origin(*item_origin(op, label))
            ctx = ItemCtx(label, i, list(op.core_bind.cores), list(op.core_bind.data),
                          s.batch_of(op.results[0].type), self.rotation.get(tuple(op.core_bind.cores), 0))
            try:
                if isinstance(op, s.GroupOp):
                    GroupLowering(self, op, ctx).run()
                    if ROTATE and 0 < ctx.used < len(ctx.cores) and len(ctx.parts) == 1:
                        key = tuple(ctx.cores)
                        self.rotation[key] = (ctx.offset + ctx.used) % len(ctx.cores)
                elif isinstance(op, s.SplitOp):
                    self.split(op, ctx)
                else:
                    self.concat(op, ctx)
            except LoweringError as err:
                if str(err).startswith(f"@{self.f.sym_name.data}"):
                    raise
                raise LoweringError(f"@{self.f.sym_name.data}: {label}: {err}") from None
        copies = [(v, out) for v, out in outputs if self.value(v) is not out and math.prod(out.shape)]
        if copies:
            if self.items:
                self.em.barrier("model outputs")
            else:  # nothing scheduled (an Identity-only model): the copies are phase 0
                self.em.set_item("model outputs")
            self.em.set_origin("model outputs")
            cores = self.em.barrier_cores
            for v, out in copies:
                for core, box in split_box(bx.full(out.shape), cores, range(len(out.shape))):
                    transfer(self.em, self.value(v), out.whole, box, core)
        lowered = self.em.finish()
        lowered.program.probes = self.probes.resolve(lowered.program)
        return lowered

    def _plan_concats(self) -> None:
        """Results that only feed a DDR/LLB concat are written straight into its buffer."""
        for op in reversed(self.items):
            if not isinstance(op, s.ConcatOp) or op.mem_scope.data == s.NPUMemScope.L1:  # type: ignore[union-attr]
                continue
            space = "ddr" if op.mem_scope.data == s.NPUMemScope.DDR else "llb"  # type: ignore[union-attr]
            out = self.dest.get(op.output)
            if out is None or self.em.program.buffers[out.whole.buffer].space != space:
                out = self.new_whole(op.output, space, f"concat_{self.position[op]}")
                self.dest[op.output] = out
            frame = out.whole
            offset = 0
            axis, start = op.axis.data, 0
            for v in op.inputs:
                size = math.prod(shape_of(v)) * DTYPES[dtype_of(v)].itemsize
                producer = v.owner
                if (isinstance(producer, s.ScheduledItem) and producer in self.position
                        and producer.mem_scope.data == op.mem_scope.data  # type: ignore[union-attr]
                        and self.uses.get(v) == 1 and v not in self.dest):
                    if axis == s.BATCH_AXIS:
                        self.dest[v] = whole(frame.buffer, shape_of(v), dtype_of(v), frame.offset + offset)
                    elif frame is not None:  # rows of the concat's buffer, seen from the stripe
                        self.dest[v] = rebase(out, shape_of(v), -start, axis)
                offset += size
                start += shape_of(v)[axis]

    def result_placement(self, v: SSAValue, scope: s.NPUMemScope, hint: str) -> Placement | None:
        """A DDR/LLB result's placement (None for L1: the item decides its pieces)."""
        if scope == s.NPUMemScope.L1:
            return None
        space = "ddr" if scope == s.NPUMemScope.DDR else "llb"
        dest = self.dest.get(v)
        if dest is not None and self.em.program.buffers[dest.whole.buffer].space == space:
            return dest
        return self.new_whole(v, space, hint)

    # --- split / concat items

    def split(self, op: s.SplitOp, ctx: ItemCtx) -> None:
        src = self.value(op.input)
        scope = op.mem_scope.data  # type: ignore[union-attr]
        rank = len(shape_of(op.input))
        for j, r in enumerate(op.outputs):
            nb = shape_of(r)[0]
            frame = src.whole
            space = "ddr" if scope == s.NPUMemScope.DDR else "llb"
            if (scope != s.NPUMemScope.L1 and frame is not None and frame.box == bx.full(src.shape)
                    and self.em.program.buffers[frame.buffer].space == space):
                size = math.prod(shape_of(r)) * DTYPES[dtype_of(r)].itemsize
                self.env[r] = whole(frame.buffer, shape_of(r), dtype_of(r), frame.offset + j * size)
                continue
            imap = IndexMap(tuple((d, 1, j * nb if d == 0 else 0) for d in range(rank)), rank)
            self.env[r] = self.moved(r, scope, ctx, [(src, imap)], f"split{ctx.index}_{j}")

    def concat(self, op: s.ConcatOp, ctx: ItemCtx) -> None:
        rank = len(shape_of(op.output))
        axis = op.axis.data
        start = 0
        pending = []
        dest = self.dest.get(op.output)
        for v in op.inputs:
            nb = shape_of(v)[axis]
            p = self.value(v)
            in_place = (dest is not None and p.whole is not None and dest.whole is not None
                        and p.whole.buffer == dest.whole.buffer)
            if in_place and axis == s.BATCH_AXIS:
                in_place = p.whole.offset == dest.whole.offset + start * math.prod(  # type: ignore[union-attr]
                    shape_of(v)[1:]) * DTYPES[dtype_of(v)].itemsize
            elif in_place:  # a row stripe written into this concat's rows
                in_place = (p.whole.offset == dest.whole.offset  # type: ignore[union-attr]
                            and p.whole.box == shift(dest.whole.box, axis, -start))  # type: ignore[union-attr]
            imap = IndexMap(tuple((d, 1, -start if d == axis else 0) for d in range(rank)), rank)
            if not in_place:
                pending.append((p, imap, (start, start + nb)))
            start += nb
        scope = op.mem_scope.data  # type: ignore[union-attr]
        self.env[op.output] = self.moved(op.output, scope, ctx, pending, f"concat{ctx.index}",
                                         ranges_axis=axis)

    def moved(self, v: SSAValue, scope: s.NPUMemScope, ctx: ItemCtx, sources, hint: str,
              ranges_axis: int | None = None) -> Placement:
        """The result of a split/concat: `sources` (placement, index map[, range along
        `ranges_axis`]) copied into a new placement in `scope` by the item's cores."""
        shape = shape_of(v)
        out = self.result_placement(v, scope, hint)
        if out is None:
            out = self.l1_pieces(v, ctx, split_axes(shape), hint)
        cores = ctx.cores
        for src in sources:
            p, imap = src[0], src[1]
            region = bx.full(shape)
            if ranges_axis is not None:
                region = bx.with_dim(region, ranges_axis, src[2])
            for piece in out.pieces:
                part = bx.intersect(region, piece.owned)
                if part is None:
                    continue
                if piece.core is not None:
                    transfer(self.em, p, piece.frame, part, piece.core, imap)
                    continue
                for core, box in split_box(part, cores, range(len(shape))):
                    transfer(self.em, p, piece.frame, box, core, imap)
        return out

    def l1_pieces(self, v: SSAValue, ctx: ItemCtx, axes: Sequence[int], hint: str,
                  carries: bool = True, within: Box | None = None) -> Placement:
        """A new L1 placement of `v` (of its box `within`) spread over the item's parts and cores."""
        shape = shape_of(v)
        pieces = []
        for core, box in distribute(shape, ctx, axes, carries, within):
            frame = Frame(self.em.buffer(f"{hint}_c{core}", "l1", bx.numel(box) *
                                         DTYPES[dtype_of(v)].itemsize, core), 0, box, dtype_of(v))
            pieces.append(Piece(core, box, frame))
        return Placement(shape, dtype_of(v), pieces)


def split_axes(shape: Sequence[int]) -> list[int]:
    """How a value with no op of its own (a split or concat result) is spread in L1:
    batch, then H for NCHW, else the next axes."""
    rank = len(shape)
    return [0, 2, 1, 3] if rank == 4 else list(range(rank))


SMALL_CONST = 256
SMALL_RESULT = 4 * 1024
SMALL_COUNT = 4
"""Constants of at most SMALL_CONST bytes read only by ops whose results are at most
SMALL_RESULT bytes (a batch-2 MLP's biases) are copied to LLB at the start of the program,
if there are at least SMALL_COUNT of an element type (`FunctionLowering._small_consts`):
each small op then loads them with LLB's latency, not DDR's, which is most of what loading
a few bytes costs."""

ROTATE = True
"""A value of a one-part item spread over fewer cores than the part has (two rows of a
batch-2 lookup over 8 cores) starts at the core after the last such item's: consecutive
small items land on different cores, so with the narrowed barriers (and their tiny
results pinned, `emitter.PIN_SMALL`) independent ones run side by side instead of one
after the other on cores 0 and 1 (False: the first cores, as before)."""


def distribute(shape: Sequence[int], ctx: ItemCtx, axes: Sequence[int],
               carries: bool = True, within: Box | None = None) -> list[tuple[int, Box]]:
    """(core, box) for every core of the item: a batch part per core set (the whole value
    in every part if it does not carry the batch), spread over the part's cores; only the
    box `within` (a row stripe's rows) when given."""
    out = []
    parts = ctx.parts
    for p, cores in enumerate(parts):
        box = bx.full(shape) if within is None else within
        if carries and len(parts) > 1:
            nb = shape[0] // len(parts)
            box = bx.with_dim(box, 0, (p * nb, (p + 1) * nb))
        pieces = split_box(box, cores, axes)
        if ROTATE and len(parts) == 1 and len(pieces) < len(cores):
            ctx.used = max(ctx.used, len(pieces))
            shifted = [cores[(ctx.offset + j) % len(cores)] for j in range(len(pieces))]
            pieces = [(c, b) for c, (_, b) in zip(shifted, pieces)]
        out += pieces
    return out


# ----------------------------------------------------------------------------- groups


@dataclass
class _Plan:
    """The resident plan of a group: who owns what, which frames hold what."""

    rules: dict[Operation, Rule] = field(default_factory=dict)
    owned: dict[SSAValue, list[tuple[int, Box]]] = field(default_factory=dict)
    root: dict[SSAValue, SSAValue] = field(default_factory=dict)  # value -> buffer owner
    frames: dict[SSAValue, dict[int, Box]] = field(default_factory=dict)  # root -> core -> box
    staged: dict[SSAValue, dict[int, Box]] = field(default_factory=dict)  # value -> core -> box
    last: dict[SSAValue, int] = field(default_factory=dict)  # value -> last op index using it
    first: dict[SSAValue, int] = field(default_factory=dict)  # value -> first op index using it
    spans: dict[SSAValue, tuple[int, int]] | None = None  # root -> ops its buffer is live over


class GroupLowering:
    def __init__(self, fl: FunctionLowering, op: s.GroupOp, ctx: ItemCtx):
        self.fl, self.em, self.op, self.ctx = fl, fl.em, op, ctx
        self.alias: dict[SSAValue, SSAValue] = {}  # a fused group's arguments and result
        self.scratch_llb: list[int] = []  # bytes of the LLB scratch buffers made so far
        self.body = self._flatten(op)
        self.env: dict[SSAValue, Placement] = {}
        for arg, v in zip(op.body.block.args, op.inputs):
            self.env[arg] = fl.value(v)
        self.scope = op.mem_scope.data  # type: ignore[union-attr]
        self.output = self.resolve(op.yield_op.value)
        self.region: dict[SSAValue, Box] = {}  # a row stripe: the box of each value it computes
        if op.stripe is not None:
            self.region = regions(self.body, self.output, op.stripe, self.rule)
        t = fl.t
        self.l1 = int(t.memory["l1"].size * (1 - MARGIN))
        wb = int(t.memory["wb"].size * (1 - MARGIN))
        # an op's weight-buffer budgets, preferred first: with prefetch half of it, so the
        # next phase's first weights fit beside (prefetch.py); an op whose weights cannot
        # be chunked within half takes the whole buffer (nothing is prefetched beside it)
        self.wb = (wb // 2, wb) if fl.em.prefetch else (wb,)
        self._live_cache: dict[tuple[int, int, int], int] = {}

    def _flatten(self, group: s.GroupOp) -> list[Operation]:
        """The body's ops, a nested fused group's ops in its place (its intermediates stay
        in L1 like any other of the group's)."""
        ops = []
        for o in group.body_ops():
            if isinstance(o, g.ConstantOp):
                continue
            if isinstance(o, s.GroupOp):
                for arg, v in zip(o.body.block.args, o.inputs):
                    self.alias[arg] = self.resolve(v)
                ops += self._flatten(o)
                self.alias[o.output] = self.resolve(o.yield_op.value)
                continue
            ops.append(o)
        return ops

    def resolve(self, v: SSAValue) -> SSAValue:
        while v in self.alias:
            v = self.alias[v]
        return v

    def ins(self, o: Operation) -> list[SSAValue]:
        """An op's operands, through the fused groups' aliases."""
        return [self.resolve(v) for v in o.operands]

    def carries(self, v: SSAValue) -> bool:
        return (not constant(v) and self.ctx.batch is not None
                and shape_of(v)[0] == self.ctx.batch and len(g.shape_of(v.type)) > 0)

    def value(self, v: SSAValue) -> Placement:
        return self.fl.const(v) if constant(v) else self.env[v]

    def where(self, op: Operation) -> str:
        return op_label(op)

    def rule(self, op: Operation, out: SSAValue) -> Rule:
        try:
            rule = make_rule(op, out, self.ins(op))
            if not rule.movement and not isinstance(rule, CastRule) and not getattr(rule, "exact", False):
                for v in [*rule.operands, out]:
                    if dtype_of(v) not in ("f16", "f32"):
                        raise LoweringError(f"computes on {dtype_of(v)} tensors: the matrix and "
                                            "vector units take f16/f32 (cast first)")
            return rule
        except LoweringError as err:
            if str(err).startswith(self.where(op)):
                raise
            raise LoweringError(f"{self.where(op)}: {err}") from None

    def run(self) -> None:
        ops = self.body
        if not ops:  # a group that only passes its input through
            self.fl.env[self.op.output] = self.env[self.output]
            return
        for o in ops:
            if len(o.results) != 1 and not isinstance(o, (g.SplitOp, *indexing.RESULT_RULES)):
                raise LoweringError(f"{self.where(o)} has {len(o.results)} results")
        plan = self.plan()
        all_ddr = all(self.value(v).whole is not None for o in ops for v in self.ins(o)
                      if not isinstance(v.owner, Operation) or v.owner not in ops)
        single = len(ops) == 1 and self.scope != s.NPUMemScope.L1
        # (a one-op row stripe streams even from L1 inputs: read in place or staged per tile,
        # it needs no frame for its whole box of the input)
        streaming = plan is None or (single and (all_ddr or bool(self.region)))
        if streaming:
            self.streamed()
        else:
            self.resident(plan)
        result = self.env[self.output]
        if self.op.stripe is not None:  # the stripe in its own coordinates
            result = rebase(result, shape_of(self.op.output), -self.op.stripe[0])
        self.fl.env[self.op.output] = result

    def result_dest(self) -> Placement | None:
        """Where a DDR/LLB result goes, in the body's coordinates (None: L1)."""
        dest = self.fl.result_placement(self.op.output, self.scope, f"g{self.ctx.index}_out")
        if dest is not None and self.op.stripe is not None:
            dest = rebase(dest, shape_of(self.output), self.op.stripe[0])
        return dest

    # --- planning the resident mode

    def plan(self) -> _Plan | None:
        """The resident plan if the group's values fit the cores' L1, else None."""
        p = _Plan()
        ops = self.body
        for k, o in enumerate(ops):
            for v in self.ins(o):
                p.last[v] = k
                p.first.setdefault(v, k)
        p.last[self.output] = len(ops)
        for o in ops:
            for r in computed(o):
                if isinstance(o, VIEW_OPS) and self.ins(o)[0] in self.env:
                    view = self._map_view(self.env[self.ins(o)[0]], r)
                    if view is None:
                        return None  # an input's pieces the reshape cannot follow: stream
                    self.env[r] = view
                    continue
                if isinstance(o, VIEW_OPS):
                    src = self.ins(o)[0]
                    mapped = self._view_boxes(p, src, r)
                    if mapped is None:
                        return None  # a reshape the pieces cannot follow: stream
                    p.owned[r] = mapped
                    p.root[r] = p.root.get(src, src)
                    continue
                rule = self.rule(o, r)
                p.rules[o] = rule if len(o.results) == 1 else p.rules.get(o, rule)
                p.owned[r] = self._distribution(p, rule, r)
                p.root[r] = r
                if rule.in_place and not rule.movement:
                    src = next((v for v in self.ins(o) if not constant(v)
                                and shape_of(v) == shape_of(r) and dtype_of(v) == dtype_of(r)), None)
                    if (src is not None and p.last.get(src) == ops.index(o)
                            and src not in self.env and src in p.owned
                            and p.owned[src] == p.owned[r] and p.root.get(src, src) != self.output
                            and not isinstance(src.owner, VIEW_OPS)):
                        p.root[r] = p.root.get(src, src)
        # what each core reads of each value
        needs: dict[SSAValue, dict[int, list[Box]]] = {}
        for o in ops:
            if isinstance(o, VIEW_OPS):
                continue
            for r in computed(o):
                rule = p.rules[o] if len(o.results) == 1 else self.rule(o, r)
                for core, box in p.owned[r]:
                    for step in rule.steps(box):
                        for v, region in zip(rule.operands, step):
                            if region is not None and not constant(v):
                                needs.setdefault(v, {}).setdefault(core, []).append(region)
        # frames: owned + margins for the values of the group, staging for inputs
        for v, owned in p.owned.items():
            root = p.root[v]
            if root is not v:
                continue
            p.frames[v] = {}
        for v in p.owned:
            root = p.root[v]
            if root is not v and shape_of(root) != shape_of(v):
                continue  # a view: frames follow the root's
            for core, box in p.owned[v]:
                frame = p.frames[root].get(core, box)
                frame = bx.hull([frame, box])
                for need in needs.get(v, {}).get(core, []):
                    grown = bx.hull([frame, need])
                    if bx.numel(grown) <= 1.5 * bx.numel(box):
                        frame = grown
                p.frames[root][core] = frame
        for v in p.owned:  # a reshape must see its root's frames (margins included) as boxes
            root = p.root[v]
            if shape_of(root) != shape_of(v) and any(
                    bx.reshape_box(frame, shape_of(root), shape_of(v)) is None
                    for core, frame in p.frames[root].items()):
                return None
        for v, per_core in needs.items():  # what a core reads beyond its frame is staged
            for core, regions in per_core.items():
                frame = self._frame_box(p, v, core)
                hull = bx.hull(regions)
                if frame is None or not bx.contains(frame, hull):
                    p.staged.setdefault(v, {})[core] = hull
        return p if self._fits(p) else None

    def _frame_box(self, p: _Plan, v: SSAValue, core: int) -> Box | None:
        """The box of `v` the frame on `core` holds, if `v` has a piece there."""
        if v in self.env:
            piece = self.env[v].on(core)
            return piece.frame.box if piece is not None else None
        root = p.root[v]
        frame = p.frames[root].get(core)
        if frame is None or shape_of(root) == shape_of(v):
            return frame
        return bx.reshape_box(frame, shape_of(root), shape_of(v))

    def _distribution(self, p: _Plan, rule: Rule, r: SSAValue) -> list[tuple[int, Box]]:
        if rule.follows and not self.region:
            for v in rule.operands:
                if constant(v) or shape_of(v) != shape_of(r):
                    continue
                owned = p.owned.get(v) or self._arg_owned(v)
                if owned is not None and self._compatible(owned, rule, r):
                    return owned
        return distribute(shape_of(r), self.ctx, rule.split_axes, self.carries(r), self.region.get(r))

    def _arg_owned(self, v: SSAValue) -> list[tuple[int, Box]] | None:
        if v not in self.env:
            return None
        pieces = [pc for pc in self.env[v].pieces if pc.core is not None]
        if not pieces or sorted(pc.core for pc in pieces) != sorted(self.ctx.cores):
            return None
        return [(pc.core, pc.owned) for pc in pieces]

    def _compatible(self, owned: list[tuple[int, Box]], rule: Rule, r: SSAValue) -> bool:
        if sorted(c for c, _ in owned) != sorted(self.ctx.cores):
            return False
        full = bx.full(shape_of(r))
        allowed = set(rule.split_axes)
        return all(box[a] == full[a] or a in allowed for _, box in owned for a in range(len(full)))

    @staticmethod
    def _map_view(p: Placement, r: SSAValue) -> Placement | None:
        """`p` seen with `r`'s shape, if every piece (and its frame) maps."""
        frame = p.whole
        if frame is not None and frame.box == bx.full(p.shape):
            return whole(frame.buffer, shape_of(r), dtype_of(r), frame.offset)
        pieces = []
        for piece in p.pieces:
            owned = bx.reshape_box(piece.owned, p.shape, shape_of(r))
            fbox = bx.reshape_box(piece.frame.box, p.shape, shape_of(r))
            if owned is None or fbox is None:
                return None
            pieces.append(Piece(piece.core, owned, Frame(piece.frame.buffer, piece.frame.offset,
                                                         fbox, dtype_of(r))))
        return Placement(shape_of(r), dtype_of(r), pieces)

    def _view_boxes(self, p: _Plan, src: SSAValue, r: SSAValue) -> list[tuple[int, Box]] | None:
        owned = p.owned.get(src)
        if owned is None:
            return None
        out = []
        for core, box in owned:
            mapped = bx.reshape_box(box, shape_of(src), shape_of(r))
            if mapped is None:
                return None
            out.append((core, mapped))
        return out

    def _frame_bytes(self, v: SSAValue, box: Box) -> int:
        return align(bx.numel(box) * DTYPES[dtype_of(v)].itemsize)

    def _live(self, p: _Plan, core: int, k: int) -> int:
        """L1 bytes on `core` the plan keeps while op `k` runs (with earlier items' results
        still needed)."""
        key = (id(p), core, k)
        if key not in self._live_cache:
            self._live_cache[key] = self._count_live(p, core, k)
        return self._live_cache[key]

    def _count_live(self, p: _Plan, core: int, k: int) -> int:
        ops = self.body
        if p.spans is None:  # root -> (first op, last op) its buffer is live over
            p.spans = {}
            for v in p.root:
                root = p.root[v]
                lo, hi = p.spans.get(root, (len(ops), -1))
                start = ops.index(v.owner)
                p.spans[root] = (min(lo, start), max(hi, p.last.get(v, -1), start))
        inputs = {v: arg for arg, v in zip(self.op.body.block.args, self.op.inputs)
                  if self.fl.last_use.get(v) == self.ctx.index}
        live = self.fl.resident_l1(self.ctx.index, core, set(inputs))
        seen = set()
        for v, arg in inputs.items():  # inputs in L1 that die in this group: until their last use
            piece = self.env[arg].on(core)
            if piece is not None and k <= p.last.get(arg, -1) and piece.frame.buffer not in seen:
                seen.add(piece.frame.buffer)
                live += self.em.program.buffers[piece.frame.buffer].size
        for root, frames in p.frames.items():
            if core not in frames:
                continue
            start, end = p.spans[root]
            if start <= k <= end:
                live += self._frame_bytes(root, frames[core])
        for v, boxes in p.staged.items():
            if core in boxes and p.first.get(v, 0) <= k <= p.last.get(v, -1):
                live += self._frame_bytes(v, boxes[core])
        return live

    def _fits(self, p: _Plan) -> bool:
        ring = 2 * 64 * 1024 if self.scope != s.NPUMemScope.L1 else 0  # slots storing the result
        last = len(self.body) - 1
        return all(self._live(p, core, k) + (ring if k == last else 0) <= self.l1
                   for core in self.ctx.cores for k in range(len(self.body)))

    # --- resident mode

    def resident(self, p: _Plan) -> None:
        ops = self.body
        fl = self.fl
        # the group's values: frames per core (views share their root's buffers)
        buffers: dict[tuple[SSAValue, int], str] = {}
        placements: dict[SSAValue, Placement] = {}
        staged: dict[tuple[SSAValue, int], tuple[Frame, list[Box]]] = {}
        have: dict[tuple[SSAValue, int], list[Box]] = {}
        out_dest = self.result_dest()
        used_inside = any(self.output in self.ins(o) for o in ops)
        for k, o in enumerate(ops):
            if isinstance(o, VIEW_OPS) and o.results[0] in self.env:
                self.probe(o.results[0], self.env[o.results[0]])
                continue  # a view of an input: placed by the plan
            if k:
                self.em.barrier(self.ctx.label)
            self.em.set_op(op_label(o))
            self.fl.staging.issue(o)
            for r in computed(o):
                root = p.root[r]
                pieces = []
                for core, box in p.owned[r]:
                    if isinstance(o, VIEW_OPS) and shape_of(root) != shape_of(r):
                        src_piece = placements[self.ins(o)[0]].on(core)
                        fbox = bx.reshape_box(src_piece.frame.box, shape_of(self.ins(o)[0]),
                                              shape_of(r))
                        assert fbox is not None  # checked by the plan
                        pieces.append(Piece(core, box, Frame(src_piece.frame.buffer,
                                                             src_piece.frame.offset, fbox,
                                                             dtype_of(r))))
                        continue
                    if (root, core) not in buffers:
                        fbox = p.frames[root][core]
                        buffers[(root, core)] = self.em.buffer(
                            f"g{self.ctx.index}_{k}_c{core}", "l1", self._frame_bytes(root, fbox), core)
                    pieces.append(Piece(core, box, Frame(buffers[(root, core)], 0,
                                                         p.frames[root][core], dtype_of(r))))
                placements[r] = Placement(shape_of(r), dtype_of(r), pieces)
                self.env[r] = placements[r]
            if isinstance(o, VIEW_OPS):
                if not (o.results[0] is self.output and out_dest is not None):
                    self.probe(o.results[0], placements[o.results[0]])
                continue
            for r in computed(o):
                rule = p.rules[o] if len(o.results) == 1 else self.rule(o, r)
                budgets = configure(rule, self.wb)
                final = r is self.output and out_dest is not None
                jobs = []
                for core, box in p.owned[r]:
                    operands = []
                    for v in rule.operands:
                        if constant(v):
                            operands.append(Operand(fl.const(v)))
                            continue
                        placement = self.env[v]
                        piece = placement.on(core)
                        if v in p.staged and core in p.staged[v]:
                            key = (v, core)
                            if key not in staged:
                                fbox = p.staged[v][core]
                                buf = self.em.buffer(f"g{self.ctx.index}_in_c{core}", "l1",
                                                     self._frame_bytes(v, fbox), core)
                                staged[key] = (Frame(buf, 0, fbox, dtype_of(v)), [])
                            frame, got = staged[key]
                            operands.append(Operand(placement, frame, got))
                        elif piece is not None:
                            got = have.setdefault((v, core), [piece.owned])
                            operands.append(Operand(placement, piece.frame, got))
                        else:
                            operands.append(Operand(placement))
                    dest_piece = placements[r].on(core)
                    if rule.movement:
                        srcs = [self.value(v) for v in rule.operands]
                        rule.run(self.em, core, box, srcs, dest_piece.frame,  # type: ignore[attr-defined]
                                 self.l1 - self._live(p, core, k))
                        if final:
                            self._store(core, r, box, dest_piece, out_dest)
                        continue
                    if final and not used_inside:
                        output = Output(dest=out_dest)
                    else:
                        output = Output(frame=dest_piece.frame,
                                        also=out_dest if final else None)
                    jobs.append(Job(core, box, operands, output, self.l1 - self._live(p, core, k)))
                if jobs:
                    streams = any(op.frame is None or op.frame.buffer.startswith(
                        f"g{self.ctx.index}_in") for job in jobs for op in job.operands)
                    min_tiles = 4 if streams or any(j.output.dest for j in jobs) else 1
                    run_stage(self.em, rule, jobs, budgets, min_tiles, f"g{self.ctx.index}_{k}",
                              self.where(o))
                if not final:  # the group's result is probed where it is stored, below
                    self.probe(r, placements[r])
        if out_dest is not None:
            producer = self.output.owner
            if isinstance(producer, VIEW_OPS) and producer in ops:  # nothing stored it yet
                for piece in self.env[self.output].pieces:
                    core = piece.core if piece.core is not None else self.ctx.cores[0]
                    self._store(core, self.output, piece.owned, piece, out_dest)
            self.env[self.output] = out_dest
            self.probe(self.output, out_dest)

    def probe(self, v: SSAValue, placement: Placement) -> None:
        """`v` is complete in `placement` now (a row stripe: only its rows, `region`)."""
        self.fl.probes.record(v, placement, self.ctx.label, self.region.get(v))

    def _store(self, core, r, box, piece, dest) -> None:
        src = Placement(shape_of(r), dtype_of(r), [piece])
        transfer(self.em, src, dest.whole, box, core)

    # --- streamed mode

    def streamed(self) -> None:
        ops = self.body
        fl = self.fl
        em = self.em
        out_dest = self.result_dest()
        fused = self._chains()
        first = True
        for k, o in enumerate(ops):
            if k in fused and fused[k] is None:
                fl.staging.issue(o)  # in the chain's phase
                continue  # computed by the chain before it (vector.ChainRule)
            if not first:
                em.barrier(self.ctx.label)
            first = False
            em.set_op(op_label(o))
            fl.staging.issue(o)
            for r in computed(o):
                if isinstance(o, VIEW_OPS):
                    self.env[r] = self._view(self.ins(o)[0], r, k)
                    self.probe(r, self.env[r])
                    continue
                rule = self.rule(o, r)
                if fused.get(k) is not None:
                    rule = fused[k]
                    r = rule.out
                if r is self.output:
                    dest = out_dest if out_dest is not None else fl.l1_pieces(
                        r, self.ctx, rule.split_axes, f"g{self.ctx.index}_out", self.carries(r),
                        self.region.get(r))
                else:
                    dest = self._scratch(r, k)
                self.env[r] = dest
                budgets = configure(rule, self.wb)
                jobs = []
                for core, box in distribute(shape_of(r), self.ctx, rule.split_axes, self.carries(r),
                                            self.region.get(r)):
                    piece = dest.on(core)
                    if rule.movement:
                        srcs = [self.value(v) for v in rule.operands]
                        free = self.l1 - self.fl.resident_l1(self.ctx.index, core) - (
                            self.em.program.buffers[piece.frame.buffer].size if piece else 0)
                        if piece is not None:
                            rule.run(em, core, box, srcs, piece.frame, free)  # type: ignore[attr-defined]
                        else:
                            rule.run(em, core, box, srcs, dest.whole, free)  # type: ignore[attr-defined]
                        continue
                    operands = []
                    steps = rule.steps(box)
                    for idx, v in enumerate(rule.operands):
                        placement = self.value(v)
                        own = placement.on(core)
                        # the core's own piece of an earlier item's L1 result is read in place
                        # only if its frame holds every row the tiles read (halos included):
                        # it has no margins for this item; else it is staged like DDR data
                        regions_read = [step[idx] for step in steps if step[idx] is not None]
                        if (own is not None and not constant(v)
                                and all(bx.contains(own.frame.box, r) for r in regions_read)):
                            operands.append(Operand(placement, own.frame, [own.owned]))
                        else:
                            operands.append(Operand(placement))
                    output = Output(frame=piece.frame) if piece is not None else Output(dest=dest)
                    free = self.l1 - self.fl.resident_l1(self.ctx.index, core) - (
                        self.em.program.buffers[piece.frame.buffer].size if piece else 0)
                    jobs.append(Job(core, box, operands, output, free))
                run_stage(em, rule, jobs, budgets, 4, f"g{self.ctx.index}_{k}", self.where(o))
                self.probe(r, dest)

    def _chains(self) -> dict[int, Rule | None]:
        """Runs of elementwise ops computed as one stage (vector.chains): the index of a
        run's first op -> its ChainRule, of the others -> None. Not in row stripes (their
        values keep per-op boxes) nor with fusion off (`FunctionLowering.fuse`)."""
        if self.region or not self.fl.fuse:
            return {}
        ops = self.body
        rules: list[Rule | None] = []
        for o in ops:
            results = computed(o)
            if isinstance(o, VIEW_OPS) or len(results) != 1 or (type(o) not in UNARY and type(o) not in BINARY):
                rules.append(None)
            else:
                rules.append(self.rule(o, results[0]))
        out: dict[int, Rule | None] = {}
        for start, end in vector.chains(rules, {self.output}):
            out[start] = vector.ChainRule(rules[start:end])  # type: ignore[arg-type]
            out.update(dict.fromkeys(range(start + 1, end)))
        return out

    def _scratch(self, r: SSAValue, k: int) -> Placement:
        box = self.region.get(r, bx.full(shape_of(r)))  # a row stripe keeps only its rows
        nbytes = align(bx.numel(box) * DTYPES[dtype_of(r)].itemsize)
        llb = self.fl.t.memory["llb"].size * (1 - MARGIN)
        # with weights staged in LLB for the whole program (staging.py), this group's own
        # earlier scratch counts too, so the staged bytes never overflow LLB
        mine = sum(self.scratch_llb) if self.fl.staging.bytes else 0
        space = "llb" if self.fl.llb_live(self.ctx.index) + mine + nbytes <= llb else "ddr"
        buf = self.em.buffer(f"g{self.ctx.index}_{k}_tmp", space, nbytes)
        if space == "llb":
            self.scratch_llb.append(nbytes)
        return Placement(shape_of(r), dtype_of(r), [Piece(None, box, Frame(buf, 0, box, dtype_of(r)))])

    def _view(self, src: SSAValue, r: SSAValue, k: int) -> Placement:
        p = self.value(src)
        view = self._map_view(p, r)
        if view is not None:
            return view
        # the pieces do not map: through a scratch copy in DDR/LLB
        scratch = self._scratch(src, k)
        for core, box in split_box(bx.full(p.shape), self.ctx.cores, range(len(p.shape))):
            transfer(self.em, p, scratch.whole, box, core)
        return whole(scratch.whole.buffer, shape_of(r), dtype_of(r))
