"""From the search's groups to schedule IR, with the manual API (`stc_mlir.graph_schedule`).

`build(mod, f, segments, level, target)` makes the groups (`Group` / `GroupOps`), cuts them
(`SplitGroups`), then decides what the seeds' steps 5-7 decide by hand:

- **order** (level 3): a topological order that runs an item as soon as its inputs are
  ready, the deepest item (longest chain of producers) first, so a group's sub-groups interleave with their consumers
  (the seeds' ResNet-50 listing: group_0 sub-groups 0, 1, their concat, group_1 sub-group
  0, then group_0 sub-groups 2, 3 ...) and results are consumed while they are in L1;
  levels 1-2 keep the block order;
- **core binds** (level 3): per sub-group, the parts the search chose; parts of several
  cores get the cores that already hold their samples in L1 when an input is there (fewest
  NoC moves; the seeds' "scheme 2"), else the nearest free cores; one core per part keeps
  the cores in order; splits and concats take their consumer's
  bind; levels 1-2 use all cores as one part, as level 0;
- **mem scopes** by liveness: each result, in item order, goes to the first scope of the
  level's preference (level 1: LLB, DDR; levels 2-3: L1, LLB, DDR) that holds it on every
  core for its whole life next to everything else live (the footprint model of
  `schedule-verify`); function results go to DDR. A split stays where its input is.

`Schedule` then verifies the result; the items and their handles are returned so the same
schedule can be written as a Python script (`emit.py`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.dialects.schedule import NPUMemScope
from stc_mlir.graph_schedule import (
    Group,
    GroupOps,
    IRModule,
    ListItems,
    ListOps,
    Schedule,
    ScheduleInfo,
    SplitGroups,
    SplitRows,
)
from stc_mlir.passes.schedule_verify import analyse, body_peak, item_names, nbytes

from .graph import GraphView, output_of
from .search import FILL, AutoScheduleError, Segment

PREFERENCE = {1: (NPUMemScope.LLB, NPUMemScope.DDR), 2: (NPUMemScope.L1, NPUMemScope.LLB, NPUMemScope.DDR),
              3: (NPUMemScope.L1, NPUMemScope.LLB, NPUMemScope.DDR)}


@dataclass
class Built:
    """The schedule made: groups (with the ops' ListOps handles) and items in order."""

    groups: list[tuple[Group, str, list[str]]] = field(default_factory=list)
    """(group, output handle, input handles) in creation order"""
    one_result_ops: bool = False
    """the graph was first rewritten by `fold_empty` and `one_result_ops` (the script does it too)"""
    sunk: bool = False
    """its ops were moved next to their first users (`sink_to_first_use`: the script does it too)"""
    splits: dict[int, int] = field(default_factory=dict)
    """group number -> split factor (> 1)"""
    stripes: dict[int, int] = field(default_factory=dict)
    """group number -> row stripes (> 1)"""
    items: list[tuple[str, NPUMemScope, list[list[int]]]] = field(default_factory=list)
    """(item handle, mem_scope, core_bind) in execution order"""


def _handles(f: func.FuncOp) -> dict[SSAValue, str]:
    """Python expressions naming each value through ListOps (`ops["conv2d"][3]`)."""
    names: dict[SSAValue, str] = {a: f"func.params[{a.index}]" for a in f.body.block.args}
    for kind, ops in ListOps(f).items():
        for k, op in enumerate(ops):
            for r in op.results:
                names[r] = f'ops["{kind}"][{k}]' + (f".results[{r.index}]" if len(op.results) > 1 else "")
    return names


def build(mod: IRModule, f: func.FuncOp, segments: list[Segment], level: int, target: targets.Target,
          fill: float = FILL, llb_fill: float | None = None) -> Built:
    """Make the schedule of `segments` in `f` by `level`'s rules; results fill at most `fill`
    of L1 and `llb_fill` (default `fill`) of LLB."""
    view = GraphView(f)
    handles = _handles(f)
    op_names = item_names(f.body.block)
    built = Built()
    groups: list[Group] = []
    multi = 0
    for seg in segments:
        ops = view.ops[seg.start:seg.stop]
        if len(ops) == 1:
            name = op_names[ops[0]]
        else:
            name = f"group_{multi}"
            multi += 1
        inputs = view.inputs(seg.start, seg.stop)
        output = output_of(ops[-1])
        grp = Group(inputs, output, name=name)
        groups.append(grp)
        built.groups.append((grp, handles[output], [handles[v] for v in inputs]))
    GroupOps(groups)(mod)
    factors = {grp: seg.split for grp, seg in zip(groups, segments) if seg.split > 1 and not seg.rows}
    built.splits = {k: seg.split for k, seg in enumerate(segments) if seg.split > 1 and not seg.rows}
    SplitGroups(factors)(mod)
    built.stripes = {k: seg.split for k, seg in enumerate(segments) if seg.split > 1 and seg.rows}
    SplitRows({grp: seg.split for grp, seg in zip(groups, segments) if seg.split > 1 and seg.rows})(mod)

    items = ListItems(f)
    parts, narrow = {}, {}
    for grp, seg in zip(groups, segments):
        for sub in grp:
            parts[sub] = seg.parts
            narrow[sub] = (seg.cores, seg.cycles / seg.split)
    if level == 3:
        # with groups on one core beside the others, the longest way to the end first (the
        # MLP whose weights stream from DDR before the lookups beside it), else the deepest
        longest = {op: cycles for op, (cores, cycles) in narrow.items()} if any(
            seg.cores for seg in segments) else None
        items = _ready_order(items, longest)
    binds = (_binds(items, parts, target, narrow) if level == 3
             else {op: [list(range(target.cores))] for op in items})
    scopes = _scopes(f, items, binds, PREFERENCE[level], target, fill, fill if llb_fill is None else llb_fill)
    infos = [ScheduleInfo(op, scopes[op], binds[op]) for op in items]
    Schedule(infos, target=target, verify=False)(mod)
    _repair(f, target)

    handle = {}
    for k, grp in enumerate(groups):
        for i, sub in enumerate(grp):
            handle[sub] = f"groups[{k}][{i}]" if len(grp) > 1 else f"groups[{k}]"
    after = ListOps(f)
    for op in ListItems(f):
        if op not in handle:
            kind = "split" if isinstance(op, s.SplitOp) else "concatenate"
            handle[op] = f'ops["{kind}"][{after[kind].index(op)}]'
        built.items.append((handle[op], op.mem_scope.data, [list(p) for p in op.core_bind.data]))  # type: ignore[union-attr]
    return built


# ----------------------------------------------------------------------------- order


def _ready_order(items: list[Operation], cycles: dict[Operation, float] | None = None) -> list[Operation]:
    """Run an item once its inputs are ready, the deepest (longest chain of producers) first,
    then in block order; with `cycles` (estimates per group), the one with the most cycles
    on its way to the end first."""
    position = {op: i for i, op in enumerate(items)}
    depth: dict[Operation, float] = {}
    for op in items:
        depth[op] = 1 + max((depth[v.owner] for v in op.operands if v.owner in depth), default=0)  # type: ignore[index]
    waiting = {op: len({v.owner for v in op.operands if v.owner in position}) for op in items}
    users: dict[Operation, list[Operation]] = {op: [] for op in items}
    for op in items:
        for producer in {v.owner for v in op.operands if v.owner in position}:
            users[producer].append(op)  # type: ignore[index]
    if cycles is not None:
        for op in reversed(items):
            depth[op] = cycles.get(op, 0.0) + max((depth[u] for u in users[op]), default=0.0)
    ready = [(-depth[op], position[op]) for op in items if waiting[op] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, i = heapq.heappop(ready)
        op = items[i]
        out.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (-depth[user], position[user]))
    return out


# ----------------------------------------------------------------------------- core binds


def _binds(items: list[Operation], parts: dict[Operation, int], target: targets.Target,
           narrow: dict[Operation, tuple[int, float]] | None = None) -> dict[Operation, list]:
    """Core binds: each group part on the cores holding its samples, splits/concats as their
    consumer. Sample locations flow through splits and concats. A group of `narrow` (its
    cores, its estimated cycles) on fewer cores than all takes the cores free soonest by the
    estimates of the items before it, so independent small groups run side by side."""
    cores = target.cores
    holders: dict[SSAValue, list[tuple[int, ...] | None]] = {}  # value -> cores holding each sample
    binds: dict[Operation, list] = {}
    narrow = narrow or {}
    clock = [0.0] * cores  # when each core is free, by the estimates
    done: dict[SSAValue, float] = {}  # when each value is ready
    for op in items:
        if isinstance(op, s.GroupOp):
            width, cycles = narrow.get(op, (0, 0.0))
            ready = max((done.get(v, 0.0) for v in op.operands), default=0.0)
            if 0 < width < cores:
                pick = sorted(range(cores), key=lambda c: (max(clock[c], ready), c))[:width]
                start = max(ready, *(clock[c] for c in pick))
                for c in pick:
                    clock[c] = start + cycles
                binds[op] = [sorted(pick)]
                holders[op.output] = [tuple(sorted(pick))] * (op.batch or 1)
                done[op.output] = start + cycles
                continue
            start = max(ready, *clock)
            clock = [start + cycles] * cores
            done[op.output] = start + cycles
        else:
            for r in op.results:
                done[r] = max((done.get(v, 0.0) for v in op.operands), default=0.0)
        if isinstance(op, s.SplitOp):
            src = holders.get(op.operands[0])
            if src is not None:
                k = len(src) // len(op.results)
                for i, r in enumerate(op.results):
                    holders[r] = src[i * k:(i + 1) * k]
            continue
        if isinstance(op, s.ConcatOp) and op.axis.data != s.BATCH_AXIS:  # row stripes: spread over cores
            holders[op.results[0]] = [None] * (op.batch or 1)
            continue
        if isinstance(op, s.ConcatOp):
            joined: list = []
            for v in op.operands:
                joined += holders.get(v) or [None] * (s.batch_of(v.type) or 1)
            holders[op.results[0]] = joined
            continue
        assert isinstance(op, s.GroupOp)
        p = parts.get(op, 1)
        batch = op.batch or 1
        per_part = cores // p
        known = next((holders[v] for v in op.operands if v in holders and s.batch_of(v.type) == batch), None)
        # one core per part: the cores in order (the lowering's streamed groups need a
        # sample's slices where its neighbours' are); several: the cores holding the samples
        chosen = _assign(p, per_part, batch, known, target) if per_part > 1 else [[c] for c in range(cores)]
        binds[op] = chosen
        holders[op.output] = [tuple(chosen[i * p // batch]) for i in range(batch)]
    for op in items:  # splits and concats: their first consumer's bind when its parts divide them
        if op in binds:
            continue
        consumer = next((u.operation for r in op.results for u in r.uses if u.operation in binds), None)
        bind = binds.get(consumer) if consumer is not None else None
        batch = op.batch or 1  # type: ignore[attr-defined]
        binds[op] = bind if bind is not None and batch % len(bind) == 0 else [list(range(cores))]
    return binds


def _assign(p: int, per_part: int, batch: int, known, target: targets.Target) -> list[list[int]]:
    """p disjoint sets of `per_part` cores, part k preferring the cores holding its samples."""
    free = list(range(target.cores))
    out: list[list[int] | None] = [None] * p
    wanted: list[set[int]] = [set() for _ in range(p)]
    if known is not None:
        for i, holder in enumerate(known):
            if holder is not None:
                wanted[i * p // batch].update(holder)
    for k in sorted(range(p), key=lambda k: -len(wanted[k])):
        def rank(c: int) -> tuple:
            near = min((target.hops(c, w) for w in wanted[k]), default=0)
            return (c not in wanted[k], near, c)
        pick = sorted(free, key=rank)[:per_part]
        out[k] = sorted(pick)
        free = [c for c in free if c not in pick]
    return [list(x) for x in out]  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- mem scopes


def _scopes(f: func.FuncOp, items: list[Operation], binds: dict[Operation, list], preference,
            target: targets.Target, fill: float, llb_fill: float) -> dict[Operation, NPUMemScope]:
    """Each result in the first scope of `preference` that holds it for its whole life."""
    l1 = target.memory["l1"].size * fill
    llb = target.memory["llb"].size * llb_fill
    position = {op: i for i, op in enumerate(items)}
    n = len(items)
    results = set(f.body.block.last_op.operands)  # type: ignore[union-attr]
    last = {}
    for i, op in enumerate(items):
        for v in op.operands:
            if v.owner in position:
                last[v.owner] = i
    l1_used = [[0.0] * target.cores for _ in range(n)]
    llb_used = [0.0] * n
    # (a row stripe's L1 inputs stay whole in L1 for the next stripes: counted as resident)
    operands = [set() if isinstance(op, s.GroupOp) and op.stripe is not None else set(v.owner for v in op.operands)
                for op in items]
    for i, op in enumerate(items):  # each group's own share
        if isinstance(op, s.GroupOp):
            bind = s.CoreBindAttr.of(binds[op])
            share = -(-body_peak(op, bind.parts) // bind.cores_per_part)
            for c in bind.cores:
                l1_used[i][c] += share
    scopes: dict[Operation, NPUMemScope] = {}
    for i, op in enumerate(items):
        size = sum(nbytes(r.type) for r in op.results)
        end = n - 1 if any(r in results for r in op.results) else last.get(op, i)
        cores = s.CoreBindAttr.of(binds[op]).cores
        per_core = -(-size // len(cores))
        if any(r in results for r in op.results):
            choices = (NPUMemScope.DDR,)
        elif isinstance(op, s.SplitOp):
            src = op.operands[0].owner
            where = scopes.get(src, NPUMemScope.DDR)  # type: ignore[arg-type]
            choices = (where,) if where != NPUMemScope.L1 else preference
        else:
            choices = preference
        for scope in choices:
            if scope == NPUMemScope.L1 and _halo_across_items(op, binds):
                continue
            if scope == NPUMemScope.L1:
                own = 0 if isinstance(op, s.GroupOp) else per_core  # a group's share holds its output
                span = range(i, end + 1)
                if all(l1_used[k][c] + (own if k == i else (per_core if op not in operands[k] else 0)) <= l1
                       for k in span for c in cores):
                    for k in span:
                        for c in cores:
                            l1_used[k][c] += own if k == i else (per_core if op not in operands[k] else 0)
                    scopes[op] = scope
                    break
            elif scope == NPUMemScope.LLB:
                if all(llb_used[k] + size <= llb for k in range(i, end + 1)):
                    for k in range(i, end + 1):
                        llb_used[k] += size
                    scopes[op] = scope
                    break
            else:
                scopes[op] = scope
                break
        else:
            scopes[op] = NPUMemScope.DDR
    return scopes


def _windowed(op: Operation) -> bool:
    """Whether an op reads rows around its output rows (a halo)."""
    if isinstance(op, g.Conv2DOp):
        return any(k > 1 for k in _shape(op.operands[1])[2:])
    return isinstance(op, g.PoolOp) and any(k > 1 for k in op.props()["kernel"])  # type: ignore[union-attr]


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())  # type: ignore[attr-defined]


def _halo_across_items(op: Operation, binds: dict[Operation, list]) -> bool:
    """A result a later item reads with a halo while one of the two spreads a sample over
    several cores: kept in L1, the lowering would need rows from a neighbour's frame that
    holds no margin for a consumer in another item (not supported), so it goes to LLB/DDR."""
    spread = any(len(part) > 1 for part in binds[op])
    for r in op.results:
        for use in r.uses:
            user = use.operation
            if isinstance(user, s.SplitOp | s.ConcatOp):
                if _halo_across_items(user, binds) if user in binds else False:
                    return True
                continue
            if not isinstance(user, s.GroupOp):
                continue
            arg = user.body.block.args[use.index]
            if any(_windowed(u.operation) for u in arg.uses) and (
                    spread or any(len(part) > 1 for part in binds.get(user, [[0]]))):
                return True
    return False


def _repair(f: func.FuncOp, target: targets.Target) -> None:
    """Demote results kept in L1 (then LLB) while an item overflows, as the verifier counts."""
    l1, llb = target.memory["l1"].size, target.memory["llb"].size
    for _ in range(4 * len(ListItems(f)) + 4):
        analysed = analyse(f)
        over = next((it for it in analysed if it.l1_peak[1] > l1 or it.llb > llb), None)
        if over is None:
            return
        items = [it.op for it in analysed]
        i = items.index(over.op)
        live_l1, live_llb = [], []
        for j, op in enumerate(items[: i + 1]):
            users = [items.index(u.operation) for r in op.results for u in r.uses if u.operation in items]
            if users and max(users) >= i or j == i:
                if op.mem_scope.data == NPUMemScope.L1 and (j < i or not isinstance(op, s.GroupOp)):  # type: ignore[union-attr]
                    live_l1.append(op)
                elif op.mem_scope.data == NPUMemScope.LLB:  # type: ignore[union-attr]
                    live_llb.append(op)
        if over.l1_peak[1] > l1 and live_l1:
            victim = max(live_l1, key=lambda o: sum(nbytes(r.type) for r in o.results))
            victim.properties["mem_scope"] = s.MemScopeAttr(NPUMemScope.LLB)
        elif live_llb:
            victim = max(live_llb, key=lambda o: sum(nbytes(r.type) for r in o.results))
            victim.properties["mem_scope"] = s.MemScopeAttr(NPUMemScope.DDR)
        else:
            raise AutoScheduleError(f"{over.label}: needs {over.l1_peak[1]:,} bytes of L1 per core on its own, "
                                    f"more than the {l1:,}-byte L1 data buffer")
    raise AutoScheduleError("could not place the results within L1 and LLB")

