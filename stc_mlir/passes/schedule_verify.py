"""schedule-verify: check a schedule against the target's capacities, with the numbers.

A function is at schedule level once it holds any `schedule` op; then every op of its body
but weights and the terminator must be a scheduled item (group, split or concat) with a
`mem_scope` and a `core_bind`, and the block order is the execution order. Checked:

- every operand of an item is produced by an earlier item (or is a function argument);
- core ids are within the cluster, the core_bind's parts divide the item's batch, and a
  group cut into several parts does not combine elements across the batch axis;
- the sub-groups of a group are complete (indices 0..split-1 once each, same split);
- the per-core L1 footprint of every item fits the L1 data buffer (a row-stripe sub-group
  counts the rows of each value its stripe needs: its output rows and, derived backwards
  through each conv's and pool's kernel, stride, padding and dilation, the halo rows of
  every input and intermediate);
- the bytes live in LLB at every item fit the LLB.

The footprint model (fp16 = 2 bytes per element; weights are in the weight buffer and do
not count):
- a group needs, per batch part, the peak over its body of the bytes live at once: its
  inputs until their last use, each intermediate from its op to its last use, the output
  from its op to the end. An op's operands and results are live together, except that an
  elementwise op (or softmax, a norm) writes over an intermediate operand of its size
  that dies with it, and reshape-like ops are views of their operand. A value carrying the
  item's batch is cut by the core_bind's parts, the others are replicated in every part;
  the cores sharing a part share its bytes equally;
- a split or concat with mem_scope L1 needs its result's share on each of its cores; one
  in LLB or DDR only moves data and needs no L1;
- while an item runs, results of earlier items kept in L1 for later items stay on their
  cores: per core, footprint = the item's share + those resident results' shares (a row
  stripe's own L1 inputs included: they stay whole for the next stripes);
- a result in LLB is live from its item to its last user (inclusive); a function result
  to the end.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.errors import StcError

SPAN_ATTR = "schedule.span"
"""The op attribute holding a unique op name (set by `SetSpanName`)."""

VIEW_OPS = (g.ReshapeOp, g.FlattenOp, g.SqueezeOp, g.UnsqueezeOp, g.IdentityOp)
"""Ops whose result is their operand's buffer seen with another shape."""

IN_PLACE_OPS = (
    g.ReluOp, g.SigmoidOp, g.TanhOp, g.ErfOp, g.ExpOp, g.LogOp, g.SqrtOp, g.RsqrtOp, g.ReciprocalOp,
    g.AbsOp, g.NegOp, g.GeluOp, g.ClipOp, g.LeakyReluOp, g.AddOp, g.SubOp, g.MulOp, g.DivOp, g.PowOp,
    g.MaximumOp, g.MinimumOp, g.PReluOp, g.SoftmaxOp, g.LayerNormOp, g.BatchNormOp,
)
"""Ops that may write their result over an operand of the same size that dies with them
(an intermediate of the group, never a group input: other items may still read those)."""


class ScheduleVerifyError(StcError, PassFailedException):
    """A schedule that cannot run on the target; the message names the item and the bytes."""


def nbytes(t: Attribute) -> int:
    assert isinstance(t, TensorType)
    return math.prod(t.get_shape()) * g.numpy_dtype(t.element_type).itemsize


def fmt(n: int) -> str:
    return f"{n:,}"


# ----------------------------------------------------------------------------- footprints


def _part_bytes(value: SSAValue, batch: int | None, parts: int) -> int:
    """Bytes of `value` in one of `parts` batch parts (values without the batch are whole)."""
    size = nbytes(value.type)
    return size // parts if parts > 1 and s.batch_of(value.type) == batch else size


def stripe_fractions(ops: Sequence[Operation], output: SSAValue, rows: tuple[int, int]) -> dict[SSAValue, float]:
    """The share of each value's rows that rows `rows` of `output` need (halos included)."""
    need = s.stripe_rows(ops, output, *rows)
    assert not isinstance(need, str), need  # the dialect verifier (or the caller) checked it
    return {v: (hi - lo) / g.shape_of(v.type)[s.ROW_AXIS] for v, (lo, hi) in need.items()}


def body_peak(group: s.GroupOp, parts: int = 1) -> int:
    """Peak bytes live at once while `group`'s body runs on one of `parts` batch parts (a
    row stripe holds only the rows it needs of each value)."""
    body, output = group.body_ops(), group.yield_op.value
    fraction = stripe_fractions(body, output, group.stripe) if group.stripe is not None else {}
    return run_peak(body, list(group.body.block.args), output, group.batch, parts, fraction)


def run_peak(body: Sequence[Operation], inputs: Sequence[SSAValue], output: SSAValue, batch: int | None,
             parts: int = 1, fraction: dict[SSAValue, float] | None = None) -> int:
    """Peak bytes live at once while `body` (ops reading `inputs`, producing `output`) runs
    on one of `parts` batch parts; `fraction`: the share of a value's bytes held (a row
    stripe's rows)."""
    fraction = fraction or {}
    ops: list[Operation | None] = [*body, None]  # None: the end, where `output` is handed over
    last: dict[SSAValue, int] = {output: len(body)}
    for i, op in enumerate(body):
        for v in op.operands:
            last[v] = i
    last[output] = len(body)
    outside = set(inputs)
    root: dict[SSAValue, SSAValue] = {}  # value -> the value owning its buffer
    size: dict[SSAValue, int] = {}
    start: dict[SSAValue, int] = {}
    end: dict[SSAValue, int] = {}

    def alias(v: SSAValue, buffer: SSAValue, at: int) -> None:
        root[v] = buffer
        end[buffer] = max(end[buffer], last.get(v, at))

    def define(v: SSAValue, at: int) -> None:
        root[v] = v
        size[v] = math.ceil(_part_bytes(v, batch, parts) * fraction.get(v, 1))
        start[v] = end[v] = at
        alias(v, v, at)

    for arg in inputs:
        define(arg, -1)
    extra = [0] * len(ops)
    for i, op in enumerate(body):
        if isinstance(op, g.ConstantOp):
            continue
        if isinstance(op, VIEW_OPS):
            alias(op.results[0], root[op.operands[0]], i)
            continue
        result = op.results[0]
        reusable = [
            root[v] for v in op.operands
            if isinstance(op, IN_PLACE_OPS) and v in root and root[v] not in outside
            and end[root[v]] <= i and size[root[v]] == math.ceil(_part_bytes(result, batch, parts) * fraction.get(result, 1))
        ]
        if reusable:
            alias(result, reusable[0], i)
            continue
        for r in op.results:
            define(r, i)
        if isinstance(op, s.GroupOp):
            boundary = sum(size[root[v]] for v in op.operands if v in root) + size[result]
            extra[i] = max(0, body_peak(op, parts) - boundary)
    buffers = set(root.values())
    return max(
        sum(size[b] for b in buffers if start[b] <= i <= end[b]) + extra[i] for i in range(len(ops))
    )


def stripes_peak(body: Sequence[Operation], inputs: Sequence[SSAValue], output: SSAValue, batch: int | None,
                 parts: int, n: int) -> int:
    """The largest `run_peak` of the n row stripes of `body` (row-local ops, see
    `schedule.stripe_rows`); beyond 32 stripes, of 32 spread over them (stripes differ by a
    row at most, and only the first and last have clipped halos)."""
    rows = g.shape_of(output.type)[s.ROW_AXIS]
    picks = range(n) if n <= 32 else sorted({0, n - 1, *(i * (n - 1) // 31 for i in range(32))})
    return max(run_peak(body, inputs, output, batch, parts,
                        stripe_fractions(body, output, s.stripe_range(rows, n, i))) for i in picks)


def fewest_stripes(body: Sequence[Operation], inputs: Sequence[SSAValue], output: SSAValue, batch: int | None,
                   room: float) -> int | None:
    """The fewest row stripes of `body` (one batch part) whose `stripes_peak` is at most
    `room` bytes, or None: not row-local, or one row per stripe is still too big. Found by
    doubling, then bisection (the peak shrinks as stripes are added)."""
    shape = g.shape_of(output.type)
    if len(shape) != 4 or isinstance(s.stripe_rows(body, output, 0, shape[s.ROW_AXIS]), str):
        return None
    rows = shape[s.ROW_AXIS]

    def fits(n: int) -> bool:
        return stripes_peak(body, inputs, output, batch, 1, n) <= room

    n = 2
    while n < rows and not fits(n):
        n *= 2
    n = min(n, rows)
    if not fits(n):
        return None
    lo = n // 2  # does not fit (or is 1): the fewest is in (lo, n]
    while n - lo > 1:
        mid = (lo + n) // 2
        lo, n = (lo, mid) if fits(mid) else (mid, n)
    return n


@dataclass
class Item:
    """One scheduled item and what it needs."""

    op: Operation
    position: int
    label: str
    mem_scope: s.NPUMemScope | None
    core_bind: s.CoreBindAttr | None
    batch: int | None
    graph_ops: int
    share: int = 0
    """L1 bytes the item itself needs on each of its cores"""
    l1_per_core: dict[int, int] = field(default_factory=dict)
    """core -> L1 bytes while the item runs (its share + results resident for later items)"""
    llb: int = 0
    """LLB bytes live while the item runs"""

    @property
    def l1_peak(self) -> tuple[int, int]:
        """(core, bytes) of the fullest core."""
        if not self.l1_per_core:
            return (-1, 0)
        core = max(self.l1_per_core, key=lambda c: (self.l1_per_core[c], -c))
        return core, self.l1_per_core[core]

    @property
    def split_text(self) -> str:
        if isinstance(self.op, s.GroupOp) and (self.op.split.data > 1 or self.op.rows is not None):
            rows = " rows" if self.op.rows is not None else ""
            return f"{self.op.index.data}/{self.op.split.data}{rows}"
        return "-"


def item_names(block) -> dict[Operation, str]:
    """Diagnostic names of split/concat (and other) ops: their span name, else `kind_i`
    with i their index in `ListOps` order."""
    counts: dict[str, int] = defaultdict(int)
    names = {}
    for op in s.post_order(block):
        kind = s.op_kind(op)
        span = op.attributes.get(SPAN_ATTR)
        names[op] = span.data if isinstance(span, StringAttr) else f"{kind}_{counts[kind]}"
        counts[kind] += 1
    return names


def describe(op: Operation, names: dict[Operation, str]) -> str:
    if isinstance(op, s.GroupOp):
        return op.label
    return f"{s.op_kind(op)} '{names.get(op, op.name)}'"


def is_scheduled(f: func.FuncOp) -> bool:
    return any(isinstance(op, s.ScheduledItem) for op in f.body.block.ops)


def _error(f: func.FuncOp, message: str) -> ScheduleVerifyError:
    return ScheduleVerifyError(f"@{f.sym_name.data}: {message}")


def _items(f: func.FuncOp) -> tuple[list[Operation], dict[Operation, str]]:
    names = item_names(f.body.block)
    items = []
    for op in list(f.body.block.ops)[:-1]:
        if isinstance(op, g.ConstantOp):
            continue
        if not isinstance(op, s.ScheduledItem):
            raise _error(f, f"{op.name} '{names.get(op, op.name)}' is not scheduled: put it in a group "
                            f"(ScheduleInfo on an op wraps it in a one-op group)")
        if op.mem_scope is None or op.core_bind is None:
            missing = " and ".join(k for k in ("mem_scope", "core_bind") if op.properties.get(k) is None)
            raise _error(f, f"{describe(op, names)} has no {missing}")
        items.append(op)
    return items, names


def analyse(f: func.FuncOp) -> list[Item]:
    """The items of a scheduled function with their L1 and LLB needs (no capacity checks)."""
    items, names = _items(f)
    last_use: dict[SSAValue, int] = {}
    for i, op in enumerate(items):
        for v in op.operands:
            last_use[v] = i
    for v in f.body.block.last_op.operands:  # type: ignore[union-attr]
        last_use[v] = len(items)
    # every result of an item with the span of items it is live over and where it lives
    results = [
        (r, j, last_use.get(r, j), op.mem_scope.data, op.core_bind.cores)  # type: ignore[union-attr]
        for j, op in enumerate(items) for r in op.results
    ]
    out: list[Item] = []
    for i, op in enumerate(items):
        assert isinstance(op, s.ScheduledItem)
        bind, scope = op.core_bind, op.mem_scope
        assert bind is not None and scope is not None
        graph_ops = sum(1 for o in op.walk() if isinstance(o, g.GraphOp) and not isinstance(o, g.ConstantOp))
        item = Item(op, i, describe(op, names), scope.data, bind, op.batch, graph_ops)
        if isinstance(op, s.GroupOp):
            item.share = -(-body_peak(op, bind.parts) // bind.cores_per_part)
        elif scope.data == s.NPUMemScope.L1:
            item.share = -(-sum(nbytes(r.type) for r in op.results) // len(bind.cores))
        per_core = dict.fromkeys(bind.cores, item.share) if item.share else {}
        # a row stripe's inputs kept in L1 stay there whole for the next stripes: they count
        # in full as resident results (above the stripe's rows its own share counts)
        operands = set() if isinstance(op, s.GroupOp) and op.stripe is not None else set(op.operands)
        for r, j, end, where, cores in results:
            if not j <= i <= end:
                continue
            if where == s.NPUMemScope.LLB:  # written, read or waiting for a later item
                item.llb += nbytes(r.type)
            elif where == s.NPUMemScope.L1 and j < i and r not in operands:  # resident for later
                for c in cores:
                    per_core[c] = per_core.get(c, 0) + -(-nbytes(r.type) // len(cores))
        item.l1_per_core = per_core
        out.append(item)
    return out


# ----------------------------------------------------------------------------- checks


def _check_order(f: func.FuncOp, items: Sequence[Operation], names: dict[Operation, str]) -> None:
    position = {op: i for i, op in enumerate(items)}
    for i, op in enumerate(items):
        for v in op.operands:
            j = position.get(v.owner)  # type: ignore[arg-type]
            if j is not None and j >= i:
                raise _error(
                    f, f"{describe(op, names)} (item {i}) uses the result of {describe(v.owner, names)}, "  # type: ignore[arg-type]
                       f"which is scheduled later (item {j}): every use must come after its producer"
                )


def _check_placement(f: func.FuncOp, item: Item, target: targets.Target) -> None:
    op, bind = item.op, item.core_bind
    assert bind is not None
    for core in bind.cores:
        if not 0 <= core < target.cores:
            raise _error(f, f"{item.label}: core_bind {bind.text} uses core {core}, outside the cluster's "
                            f"cores 0-{target.cores - 1}")
    batch = item.batch
    if (batch is None and bind.parts > 1) or (batch is not None and batch % bind.parts):  # a scalar: one part
        raise _error(f, f"{item.label}: core_bind {bind.text} cuts the batch into {bind.parts} parts, which do "
                        f"not divide its batch of {batch}")
    if bind.parts > 1 and isinstance(op, s.GroupOp):
        reason = s.batch_mixing(op.body_ops(), batch)
        if reason is not None:
            raise _error(f, f"{item.label}: core_bind {bind.text} cuts the batch into {bind.parts} parts, but {reason}")


def _check_sub_groups(f: func.FuncOp, items: Sequence[Operation]) -> None:
    subs: dict[str, list[s.GroupOp]] = defaultdict(list)
    for op in items:
        if isinstance(op, s.GroupOp):
            subs[op.group_name.data].append(op)
    for name, ops in subs.items():
        if len({op.rows is None for op in ops}) > 1:
            raise _error(f, f"group '{name}': mixes row-stripe and batch sub-groups")
        splits = {op.split.data for op in ops}
        indices = sorted(op.index.data for op in ops)
        if len(splits) != 1 or indices != list(range(splits.pop())):
            shown = ", ".join(f"{op.index.data} of {op.split.data}" for op in ops)
            raise _error(f, f"group '{name}': sub-groups [{shown}] do not make up the group once each")


def verify_function(f: func.FuncOp, target: targets.Target) -> list[Item]:
    """Check a scheduled function; returns its analysed items, raises ScheduleVerifyError."""
    items, names = _items(f)
    _check_order(f, items, names)
    _check_sub_groups(f, items)
    analysed = analyse(f)
    l1, llb = target.memory["l1"].size, target.memory["llb"].size
    for item in analysed:
        _check_placement(f, item, target)
        core, used = item.l1_peak
        if used > l1:
            own = item.share if core in item.core_bind.cores else 0  # type: ignore[union-attr]
            detail = f"core {core}" + (
                f": {fmt(own)} bytes of its own, {fmt(used - own)} of earlier results kept in L1 for later items"
                if used != own else ""
            )
            raise _error(f, f"{item.label}: L1 footprint {fmt(used)} bytes per core exceeds the {fmt(l1)}-byte "
                            f"L1 data buffer ({detail})")
        if item.llb > llb:
            raise _error(f, f"{item.label}: {fmt(item.llb)} bytes live in LLB exceed the {fmt(llb)}-byte LLB")
    return analysed


def scheduled_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and is_scheduled(op)]


@dataclass(frozen=True)
class ScheduleVerify(ModulePass):
    """Verify every scheduled function against the target (a built-in name or a path)."""

    name = "schedule-verify"

    target: str = "stcp920"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        t = targets.load(self.target)
        for f in scheduled_functions(op):
            verify_function(f, t)
