"""The default graph schedule: every op its own item, its result in DDR, spread over all the
cluster's cores (TensorTurbo's graph_schedule_level 0, "everything in DDR").

    default_schedule(mod)                   # a graph-level module: schedule all of it
    default_schedule(manual_schedule(mod))  # complete a manual schedule that left items out

Every item without a placement gets `ScheduleInfo(item, NPUMemScope.DDR, [list(range(8))])`:
one batch part shared by the 8 cores, which divides any batch. An item that already has a
mem_scope and a core_bind (placed by a manual schedule) keeps them, and the block order
stays the execution order. A single op whose share of its inputs and output does not fit
the cores' L1 at the model's batch (ResNet-50's first conv at batch 16 needs 3.8 MB per
core) is cut along the batch into the fewest sub-groups that fit, run one after the other,
each over all cores; the splits and concats between them stay in DDR. One that does not
fit even with one sample (a 512 x 512 image, VGG's 224 x 224 layers) is cut into the
fewest row stripes that fit (`split_rows`), joined by a concat along the rows. Groups made by a
manual schedule are never re-cut: `schedule-verify` reports one that does not fit.

An op whose result has no elements, or whose non-constant operands all have none (a
reduction over an empty axis gives its identity), computes nothing from data:
graph-canonicalize made it a `graph.constant` (`fold_empty` does it again for graphs
scheduled by hand without that pass), so no item holds an empty tensor.

A group has one output, so a top-level op with several results is first made into
one-result items (`one_result_items`): a graph.split into one graph.slice per result that
is used (as graph-canonicalize does), any other (TopK's values and indices, NonMaxSuppression's rows and count) into a
one-op group per used result, each holding its own copy of the op (the lowering computes
only that result's command; a model using both results of a TopK sorts twice).
"""

from __future__ import annotations

import math

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.dialects.schedule import batch_of
from stc_mlir.graph_schedule import (  # the group helpers the manual API builds groups with
    GetNPUSubFunctions,
    IRModule,
    ListItems,
    NPUMemScope,
    Schedule,
    ScheduleError,
    ScheduleInfo,
    _fresh_name,
    _group_names,
    _outline,
    split_group,
    split_rows,
)
from stc_mlir.passes.graph_canonicalize import empty_fold, split_to_slices
from stc_mlir.passes.schedule_verify import analyse, body_peak, fewest_stripes, fmt


def default_schedule(mod, batch: int | None = None, *, target: str | targets.Target = "stcp920"):
    """Schedule what `mod` leaves unscheduled with the default (see the module doc).

    `batch`, when given, must be the model's batch (the same check as the manual schedules,
    so `schedule(mod, batch=...)` can be either). Returns `mod`, changed in place."""
    t = target if isinstance(target, targets.Target) else targets.load(target)
    mod = IRModule.of(mod)
    for function in GetNPUSubFunctions(mod["main"]):
        f = function.op
        model_batch = batch_of(function.params[0].type) if function.params else None
        if batch is not None and model_batch is not None and batch != model_batch:
            raise ScheduleError(
                f"default_schedule(batch={batch}) is applied to a model with batch {model_batch}: "
                f"pass batch={model_batch} or import the model with batch {batch}"
            )
        fold_empty(f)
        one_result_items(f)
        placed = {op for op in ListItems(f) if _placed(op)}
        if len(placed) == len(ListItems(f)):
            continue  # fully scheduled already
        Schedule(_infos(f, t), target=t, verify=False)(mod)
        _cut_to_fit(f, placed, t)
        Schedule(_infos(f, t), target=t)(mod)
    return mod


def fold_empty(f: func.FuncOp) -> None:
    """Replace the top-level graph ops that compute nothing from data (see the module doc)
    by constants (graph-canonicalize's `empty_fold`; here for graphs scheduled by hand
    without that pass)."""
    for op in list(f.body.block.ops):
        if isinstance(op, s.ScheduledItem) or (constants := empty_fold(op)) is None:
            continue
        for const in constants:
            f.body.block.insert_op_before(const, op)
        for r, const in zip(op.results, constants):
            r.replace_all_uses_with(const.output)
        op.detach()
        op.erase()


def one_result_items(f: func.FuncOp) -> None:
    """Give every top-level multi-result graph op's used results an item of their own (see
    the module doc); results nobody uses are dropped with the op."""
    taken = _group_names(f)
    for copy, result in one_result_ops(f):
        inputs = list(dict.fromkeys(v for v in copy.operands if not isinstance(v.owner, g.ConstantOp)))
        name = _fresh_name(taken, result.name_hint or copy.name.removeprefix("graph."))
        taken.add(name)
        _outline(name, inputs, [copy], result)


def one_result_ops(f: func.FuncOp) -> list[tuple[Operation, SSAValue]]:
    """Leave no top-level graph op with more than one used result: a graph.split becomes one
    graph.slice per used result, any other multi-result op one copy per used result, of
    which only that result is used. Returns the copies with their used result (the
    automatic scheduler groups them like any op; the default outlines each)."""
    copies = []
    for op in list(f.body.block.ops):
        if isinstance(op, s.ScheduledItem | g.ConstantOp) or len(op.results) < 2 or not op.name.startswith("graph."):
            continue
        if isinstance(op, g.SplitOp):  # (graph-canonicalize did it unless scheduled by hand)
            for r, part in split_to_slices(op):
                f.body.block.insert_op_before(part, op)
                r.replace_all_uses_with(part.output)
        else:
            for i, r in enumerate(op.results):
                if not r.uses:
                    continue
                copy = op.clone()
                f.body.block.insert_op_before(copy, op)
                for mine, theirs in zip(copy.results, op.results):
                    mine.name_hint = theirs.name_hint
                r.replace_all_uses_with(copy.results[i])
                copies.append((copy, copy.results[i]))
        for r in op.results:
            assert not r.uses
        op.detach()
        op.erase()
    return copies


def sink_to_first_use(f: func.FuncOp) -> bool:
    """Move every top-level graph op (constants aside) to just before the first op that uses
    it, keeping the block topologically ordered; True if anything moved. A value is then
    computed as late as it can be, so it lives in memory for as short a time as it can, and
    a chain feeding one consumer sits next to it (BERT's V projection, which exporters write
    before the attention scores, next to the matmul that multiplies the scores by it).
    The automatic scheduler's level 3 groups consecutive ops: this is its op order."""
    block = f.body.block
    order = {o: k for k, o in enumerate(block.ops)}
    moved = False
    for op in reversed(list(block.ops)):
        if isinstance(op, g.ConstantOp) or not op.name.startswith("graph.") or not op.results:
            continue
        users = [use.operation for r in op.results for use in r.uses]
        if not users or any(u not in order for u in users):  # unused, or used inside a region
            continue
        first = min(users, key=order.__getitem__)
        between = list(block.ops)[order[op] + 1:order[first]]
        if all(isinstance(o, g.ConstantOp) for o in between):  # already next to it
            continue
        op.detach()
        block.insert_op_before(op, first)
        order = {o: k for k, o in enumerate(block.ops)}  # (a few hundred moves at most)
        moved = True
    return moved


def _placed(op: Operation) -> bool:
    return isinstance(op, s.ScheduledItem) and op.mem_scope is not None and op.core_bind is not None


def _infos(f: func.FuncOp, t: targets.Target) -> list[ScheduleInfo]:
    """Every item in block order: its own placement, or DDR over all cores."""
    everywhere = [list(range(t.cores))]
    return [
        ScheduleInfo(op, op.mem_scope.data, op.core_bind) if _placed(op)  # type: ignore[union-attr]
        else ScheduleInfo(op, NPUMemScope.DDR, everywhere)
        for op in ListItems(f)
    ]


def _cut_to_fit(f: func.FuncOp, manual: set[Operation], t: targets.Target) -> None:
    """Cut each defaulted one-op group that overflows L1 into the fewest batch slices that fit."""
    l1 = t.memory["l1"].size
    for item in analyse(f):
        op = item.op
        used = item.l1_peak[1]
        if op in manual or not isinstance(op, s.GroupOp) or used <= l1:
            continue
        resident = used - item.share  # results of earlier items kept in L1 (manual items only)
        batch = op.batch or 1
        cores = len(item.core_bind.cores)  # type: ignore[union-attr]
        mixing = s.batch_mixing(op.body_ops(), batch)
        factors = divisors(batch)[1:] if mixing is None else []
        fits = [n for n in factors if -(-body_peak(op, n) // cores) + resident <= l1]
        stripes = None if fits else fewest_stripes(op.body_ops(), list(op.body.block.args), op.yield_op.value,
                                                   op.batch, (l1 - resident) * cores)
        if stripes is not None:
            split_rows(op, stripes)  # even one sample does not fit: row stripes (a spatial split)
            continue
        if not fits:
            graph_op = next(iter(op.body_ops()))
            smallest = factors[-1] if factors else 1
            why = f"; it cannot be cut along the batch: {mixing}" if mixing else ""
            raise ScheduleError(
                f"default schedule: {graph_op.name} '{op.group_name.data}' needs "
                f"{fmt(-(-body_peak(op, smallest) // cores) + resident)} bytes of L1 per core with "
                f"{batch // smallest} sample(s) over {cores} cores, more than the {fmt(l1)}-byte L1 data "
                f"buffer{why}, and it cannot be cut into row stripes that fit"
            )
        split_group(op, fits[0])


def divisors(n: int) -> list[int]:
    """The divisors of `n` in increasing order, in O(sqrt(n)) steps (a batch may be huge)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]

