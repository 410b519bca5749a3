"""The manual graph-schedule API of the seeds (TensorTurbo's `tb.relay.graph_schedule`).

A thin layer over rewrites of the IR into the `schedule` dialect: the handles it returns are
the IR's own ops and values, and every step leaves a module that prints, parses back and
runs in the reference interpreter. A schedule function has the seeds' shape:

    def my_schedule(mod, batch=16):
        func = GetNPUSubFunctions(mod["main"])[0]
        ops = ListOps(func)
        groups = [Group([func.params[0]], ops["add"][3]), Group([ops["add"][3]], ops["gemm"][0])]
        mod = GroupOps(groups)(mod)
        mod = SplitGroups({groups[0]: batch // 2, groups[1]: 1})(mod)
        ops = ListOps(GetNPUSubFunctions(mod["main"])[0])
        mod = Schedule([
            ScheduleInfo(ops["split"][0], NPUMemScope.DDR, [[0, 1, 2, 3], [4, 5, 6, 7]]),
            ScheduleInfo(groups[0][0], NPUMemScope.LLB, [[0, 1, 2, 3], [4, 5, 6, 7]]),
            ...
        ])(mod)
        return mod

- `mod` is an `IRModule` (a `ModuleOp` is accepted and wrapped): `mod["main"]` is a
  `Function` with `params`. Transforms return the module they were given, changed in place.
- `ListOps(func)` maps op kinds (`conv2d`, `add`, `split`, `concat`, `group`... and the
  Relay names the seeds use: `nn.conv2d`, `nn.softmax`, `concatenate`...) to ops in DFS
  post-order of the data flow, descending into groups.
- `Group(inputs, output)` or `Group(output, inputs)`: the ops between the inputs and the
  output. Weights are never inputs; function parameters and results of existing groups,
  splits and concats are added as inputs when reached. `GroupOps(groups)(mod)` creates
  them, `FuseTargetOps` creates fused (indivisible) groups.
- `SplitGroups({group: n})(mod)` cuts a group into n sub-groups along the batch (n divides
  the batch); `group[i]` is the i-th afterwards. Splits and concats are inserted at the
  group's boundary, joining or re-cutting the slices of an earlier split group directly.
- `ScheduleInfo(op_or_group, mem_scope, core_bind)`, `Schedule(infos)(mod)`: the list
  order is the execution order; every item must get one. An op outside groups is wrapped
  in a one-op group. `Schedule` verifies the result (`schedule-verify`) and raises
  `ScheduleVerifyError` with the item, the bytes and the capacity.
Misuse raises `ScheduleError` naming the group or op (as `ops['kind'][i]`) involved.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.dialects.schedule import NPUMemScope
from stc_mlir.errors import StcError
from stc_mlir.passes.schedule_verify import SPAN_ATTR, ScheduleVerifyError, item_names, verify_function

__all__ = [
    "FuseTargetOps", "Function", "GetNPUSubFunctions", "Group", "GroupOps", "IRModule", "ListItems", "ListOps",
    "NPUMemScope", "Schedule", "ScheduleError", "ScheduleInfo", "ScheduleTypeError", "ScheduleVerifyError", "SetSpanName",
    "SplitGroups", "SplitRows",
]


class ScheduleError(StcError):
    """Wrong use of the graph-schedule API; the message says what and where."""


class ScheduleIndexError(ScheduleError, IndexError):
    """An index past the end of an op list or a group's sub-groups."""


class ScheduleTypeError(ScheduleError, TypeError):
    """An argument of the wrong type given to the schedule API; the message names it."""


def _kind(x: object) -> str:
    return "None" if x is None else f"{type(x).__name__} {x!r:.60}"


def _sequence(x: object, what: str, of: str) -> list:
    """`x` as a list, if it is a list or tuple (of `of`); else `ScheduleTypeError` naming `what`."""
    if not isinstance(x, list | tuple):
        raise ScheduleTypeError(f"{what}: expected a list of {of}, got {_kind(x)}")
    return list(x)


# ----------------------------------------------------------------------------- handles


class Function:
    """A function of the module: `params` are its parameters (block arguments)."""

    def __init__(self, op: func.FuncOp):
        self.op = op

    @property
    def name(self) -> str:
        return self.op.sym_name.data

    @property
    def params(self) -> list[BlockArgument]:
        return list(self.op.body.block.args)

    @property
    def block(self) -> Block:
        return self.op.body.block

    @property
    def results(self) -> list[SSAValue]:
        """The values the function returns."""
        return list(self.block.last_op.operands)  # type: ignore[union-attr]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Function) and other.op is self.op

    def __hash__(self) -> int:
        return hash(self.op)

    def __repr__(self) -> str:
        return f"Function(@{self.name})"


class IRModule:
    """The module handle of the seeds: `mod["main"]` is the function `@main`."""

    def __init__(self, module: ModuleOp):
        if isinstance(module, IRModule):
            module = module.module
        if not isinstance(module, ModuleOp):
            raise ScheduleTypeError(f"IRModule(module): expected a builtin.module (ModuleOp, e.g. from "
                                    f"stc_mlir.ir.read_ir), got {_kind(module)}")
        self.module = module

    @staticmethod
    def of(mod: IRModule | ModuleOp) -> IRModule:
        return mod if isinstance(mod, IRModule) else IRModule(mod)

    def functions(self) -> list[Function]:
        return [Function(op) for op in self.module.ops if isinstance(op, func.FuncOp)]

    def __getitem__(self, name: str) -> Function:
        if not isinstance(name, str):
            raise ScheduleTypeError(f"IRModule[name]: a function name is a string such as 'main', got {_kind(name)}")
        for f in self.functions():
            if f.name == name:
                return f
        names = ", ".join("@" + f.name for f in self.functions()) or "none"
        raise ScheduleError(f"the module has no function '@{name}' (functions: {names})")

    def __repr__(self) -> str:
        return f"IRModule({', '.join('@' + f.name for f in self.functions())})"


def _module_op(mod: IRModule | ModuleOp) -> ModuleOp:
    if isinstance(mod, IRModule):
        return mod.module
    if isinstance(mod, ModuleOp):
        return mod
    raise ScheduleError(f"expected a module (IRModule or ModuleOp), got {type(mod).__name__}")


def _check_module(module: ModuleOp, f: func.FuncOp, what: str) -> None:
    if f.parent_op() is not module:
        raise ScheduleError(f"{what}: @{f.sym_name.data} is not a function of the module this transform is applied to")


def _func_op(function: Function | func.FuncOp) -> func.FuncOp:
    if isinstance(function, Function):
        return function.op
    if isinstance(function, func.FuncOp):
        return function
    raise ScheduleError(f"expected a function (mod['main']), got {type(function).__name__}")


def GetNPUSubFunctions(function: Function | func.FuncOp) -> list[Function]:  # noqa: N802
    """The NPU kernel functions of `function`, in DFS post-order of its calls.

    A function that calls others (`func.call`) after partitioning into NPU kernels and host
    code has its callees as kernels; a function that calls none is itself the one kernel.
    """
    f = _func_op(function)
    callees: list[Function] = []
    for op in s.post_order(f.body.block):
        if isinstance(op, func.CallOp):
            callee = SymbolTable.lookup_symbol(f, op.callee)
            if isinstance(callee, func.FuncOp) and Function(callee) not in callees:
                callees.append(Function(callee))
    return callees or [Function(f)]


# ----------------------------------------------------------------------------- ListOps

RELAY_NAMES: Mapping[str, str] = {
    "nn.conv2d": "conv2d", "nn.dense": "gemm", "nn.matmul": "matmul", "nn.batch_matmul": "matmul",
    "nn.relu": "relu", "nn.leaky_relu": "leaky_relu", "nn.prelu": "prelu", "nn.softmax": "softmax",
    "nn.layer_norm": "layer_norm", "nn.batch_norm": "batch_norm", "nn.max_pool2d": "max_pool",
    "nn.avg_pool2d": "avg_pool", "nn.global_avg_pool2d": "global_avg_pool",
    "nn.batch_flatten": "flatten", "concatenate": "concat", "multiply": "mul", "subtract": "sub",
    "divide": "div", "power": "pow", "sum": "reduce_sum", "mean": "reduce_mean", "max": "reduce_max",
    "take": "gather", "strided_slice": "slice", "expand_dims": "unsqueeze", "broadcast_to": "expand",
}
"""Relay op names the seeds use -> our op kinds."""


@functools.cache
def _known_kinds() -> set[str]:
    return {s.op_kind(op) for op in (*g.Graph.operations, *s.Schedule.operations)}


class OpList(list):
    """The ops of one kind; indexing past the end says which kind and how many there are."""

    def __init__(self, kind: str, ops: Iterable[Operation] = ()):
        super().__init__(ops)
        self.kind = kind

    def __getitem__(self, index):  # type: ignore[override]
        if not isinstance(index, int | slice) or isinstance(index, bool):
            raise ScheduleTypeError(f"ListOps(...)['{self.kind}'][index]: index must be an integer, got {_kind(index)}")
        try:
            return super().__getitem__(index)
        except IndexError:
            raise ScheduleIndexError(
                f"ListOps: no '{self.kind}' op {index}: the function has {len(self)} '{self.kind}' ops"
            ) from None


class OpIndex(dict):
    """`ListOps`'s result: op kind (ours or the Relay name) -> ops in DFS post-order."""

    def __getitem__(self, key: str) -> OpList:
        if not isinstance(key, str):
            raise ScheduleTypeError(f"ListOps(...)[kind]: an op kind is a string such as 'relu', got {_kind(key)}")
        return super().__getitem__(key)

    def __missing__(self, key: str) -> OpList:
        kind = RELAY_NAMES.get(key, key)
        if kind in self:
            return self[kind]
        if kind not in _known_kinds():
            raise ScheduleError(f"ListOps: unknown op kind '{key}' (present: {', '.join(sorted(self))})")
        return OpList(kind)


def ListOps(function: Function | func.FuncOp) -> OpIndex:  # noqa: N802
    """Ops of `function` by kind, in depth-first post-order of the data flow (not the
    execution order), including the ops inside groups; weights are left out."""
    index = OpIndex()
    for op in s.post_order(_func_op(function).body.block):
        if not isinstance(op, g.ConstantOp):
            kind = s.op_kind(op)
            if kind not in index:
                index[kind] = OpList(kind)
            list.append(index[kind], op)
    return index


def ListItems(function: Function | func.FuncOp) -> list[Operation]:  # noqa: N802
    """The items a schedule orders, in block order: groups (and sub-groups), splits, concats
    and the ops outside groups; weights are left out. A default schedule is one
    `ScheduleInfo` per item: `[ScheduleInfo(op, NPUMemScope.DDR, [list(range(8))]) for op in
    ListItems(func)]`."""
    body = list(_func_op(function).body.block.ops)[:-1]
    return [op for op in body if not isinstance(op, g.ConstantOp)]


def _where(op: Operation) -> str:
    """`ops['add'][15] (%name)`: how ListOps reaches `op`, for messages."""
    f = _function_of(op)
    kind = s.op_kind(op)
    if f is not None:
        same = [o for o in s.post_order(f.body.block) if s.op_kind(o) == kind]
        if op in same:
            text = f"ops['{kind}'][{same.index(op)}]"
            if isinstance(op, s.GroupOp):
                text += f" ({op.label})"
            elif op.results and op.results[0].name_hint:
                text += f" (%{op.results[0].name_hint})"
            return text
    return f"{op.name} (no longer in the IR: ops from ListOps are invalid after IR changes, call ListOps again)"


def _function_of(op: Operation) -> func.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def _top_level(op: Operation) -> func.FuncOp | None:
    """The function whose body holds `op` directly, or None."""
    parent = op.parent_op()
    return parent if isinstance(parent, func.FuncOp) else None


# ----------------------------------------------------------------------------- groups


class Group:
    """A single-output sub-DAG: `Group(inputs, output)` or `Group(output, inputs)`.

    After `GroupOps` it is a `schedule.group` in the IR; after `SplitGroups`, `group[i]` is
    its i-th sub-group (`len(group)` of them).
    """

    def __init__(self, first, second, name: str | None = None):
        if name is not None and not isinstance(name, str):
            raise ScheduleTypeError(f"Group(name=...): expected a string, got {_kind(name)}")
        if isinstance(first, list | tuple):
            self.inputs, self.output = list(first), second
        else:
            self.output, self.inputs = first, list(second) if isinstance(second, list | tuple) else [second]
        self.name = name
        self.sub_groups: list[s.GroupOp] = []

    def __getitem__(self, index: int) -> s.GroupOp:
        if not self.sub_groups:
            raise ScheduleError(f"{self}: not created yet; apply GroupOps first")
        if not -len(self.sub_groups) <= index < len(self.sub_groups):
            raise ScheduleIndexError(
                f"{self}: has {len(self.sub_groups)} sub-group(s) (0..{len(self.sub_groups) - 1}); "
                f"sub-group {index} does not exist"
            )
        return self.sub_groups[index]

    def __len__(self) -> int:
        return len(self.sub_groups)

    def __iter__(self) -> Iterator[s.GroupOp]:
        return iter(self.sub_groups)

    def __repr__(self) -> str:
        return f"Group '{self.name}'" if self.name else "Group"


def _value(x: object, what: str) -> SSAValue:
    """An SSA value from an op with one result, a value, a parameter or a created group."""
    if isinstance(x, Group):
        if not x.sub_groups:
            raise ScheduleError(f"{what}: {x} is not created yet; apply GroupOps first")
        if len(x.sub_groups) > 1:
            raise ScheduleError(f"{what}: {x} is split into {len(x)} sub-groups; use the concat joining them")
        return x.sub_groups[0].output
    if isinstance(x, SSAValue):
        return x
    if isinstance(x, Operation):
        if len(x.results) != 1:
            raise ScheduleError(f"{what}: {_where(x)} has {len(x.results)} results; a group boundary is one value")
        return x.results[0]
    raise ScheduleError(f"{what}: expected an op, a function parameter or a group, got {type(x).__name__}")


def _stops_group_walk(op: Operation) -> bool:
    """Ops a group never swallows: scheduled units (splits, concats, unfused groups)."""
    return isinstance(op, s.SplitOp | s.ConcatOp) or (isinstance(op, s.GroupOp) and op.fused is None)


@dataclass
class _Plan:
    group: Group
    number: int
    function: func.FuncOp
    output: SSAValue
    inputs: list[SSAValue]
    members: list[Operation]  # in block order


def _plan(group: Group, number: int, boundaries: set[SSAValue]) -> _Plan:
    if not isinstance(group, Group):
        raise ScheduleError(f"GroupOps: item {number} is a {type(group).__name__}, not a Group")
    what = f"Group {number}" + (f" '{group.name}'" if group.name else "")
    if group.sub_groups:
        raise ScheduleError(f"{what}: already created")
    output = _value(group.output, f"{what} output")
    out_op = output.owner
    if not isinstance(out_op, Operation) or _stops_group_walk(out_op) or isinstance(out_op, g.ConstantOp):
        raise ScheduleError(f"{what}: the output must be a graph op, got {getattr(out_op, 'name', 'a parameter')}")
    f = _top_level(out_op)
    if f is None:
        where = _function_of(out_op)
        raise ScheduleError(f"{what}: the output {_where(out_op)} is "
                            + ("already inside a group" if where is not None else "not in the IR"))
    inputs = [_value(x, f"{what} input {i}") for i, x in enumerate(group.inputs)]
    listed, stop = set(inputs), boundaries - {output}
    members: set[Operation] = set()
    extra: list[SSAValue] = []
    pending = [out_op]
    while pending:
        op = pending.pop()
        if op in members:
            continue
        members.add(op)
        for v in op.operands:
            owner = v.owner
            if v in listed or isinstance(owner, g.ConstantOp):
                continue
            if v in stop or isinstance(owner, Block) or _stops_group_walk(owner):  # type: ignore[arg-type]
                if v not in extra:
                    extra.append(v)
            else:
                pending.append(owner)  # type: ignore[arg-type]
    order = {op: i for i, op in enumerate(f.body.block.ops)}
    body = sorted(members, key=order.__getitem__)
    used = {v for op in body for v in op.operands}
    for i, v in enumerate(inputs):
        if v not in used:
            raise ScheduleError(f"{what}: input {i} ({_describe_value(v)}) is not used by the ops between the "
                                f"inputs and the output {_where(out_op)}")
    for op in body:
        for r in op.results:
            if r is output:
                continue
            for use in r.uses:
                if use.operation not in members:
                    raise ScheduleError(
                        f"{what} has two outputs: {_where(op)} is used by {_where(use.operation)} outside the "
                        f"group besides the output {_where(out_op)}; a group has a single output"
                    )
    extra = sorted(extra, key=lambda v: min(order[u.operation] for u in v.uses if u.operation in members))
    return _Plan(group, number, f, output, list(dict.fromkeys(inputs)) + extra, body)


def _describe_value(v: SSAValue) -> str:
    if isinstance(v, BlockArgument):
        return f"parameter {v.index} (%{v.name_hint or v.index})"
    return _where(v.owner)  # type: ignore[arg-type]


def _group_names(f: func.FuncOp) -> set[str]:
    return {op.group_name.data for op in f.walk() if isinstance(op, s.GroupOp)}


def _fresh_name(taken: set[str], prefix: str) -> str:
    i = 0
    while f"{prefix}_{i}" in taken:
        i += 1
    return f"{prefix}_{i}"


def _outline(name: str, inputs: Sequence[SSAValue], members: Sequence[Operation], output: SSAValue,
             fused: bool = False) -> s.GroupOp:
    """Move `members` (top-level ops in block order, the output's op last) into a new group
    placed where the output's op was."""
    block = Block(arg_types=[v.type for v in inputs])
    args = dict(zip(inputs, block.args))
    for arg, v in zip(block.args, inputs):
        arg.name_hint = v.name_hint
    parent, after = members[-1].parent_block(), members[-1].next_op
    assert parent is not None and after is not None
    for op in members:
        op.detach()
        block.add_op(op)
        for i, v in enumerate(op.operands):
            if v in args:
                op.operands[i] = args[v]
    block.add_op(s.YieldOp.create(operands=[output]))
    group = s.GroupOp.make(name, inputs, block, fused=fused)
    parent.insert_op_before(group, after)
    output.replace_uses_with_if(group.output, lambda use: use.operation.parent_block() is not block)
    return group


class GroupOps:
    """Create the groups (as `schedule.group` ops) in the module."""

    FUSED = False
    PREFIX = "group"

    def __init__(self, groups: Sequence[Group]):
        self.groups = _sequence(groups, f"{type(self).__name__}(groups)", "Group")

    def __call__(self, mod: IRModule | ModuleOp):
        module = _module_op(mod)
        boundaries = {_value(grp.output, f"Group {i} output") for i, grp in enumerate(self.groups)
                      if isinstance(grp, Group) and not grp.sub_groups}
        plans = [_plan(grp, i, boundaries) for i, grp in enumerate(self.groups)]
        for plan in plans:
            _check_module(module, plan.function, f"Group {plan.number}")
        owner: dict[Operation, int] = {}
        for plan in plans:
            for op in plan.members:
                if op in owner:
                    raise ScheduleError(f"{_where(op)} is in both Group {owner[op]} and Group {plan.number}")
                owner[op] = plan.number
        taken = {plan.function: _group_names(plan.function) for plan in plans}
        names = []
        for plan in plans:
            name = plan.group.name or _fresh_name(taken[plan.function], self.PREFIX)
            if name in taken[plan.function]:
                raise ScheduleError(f"Group {plan.number}: the name '{name}' is already used by another group")
            taken[plan.function].add(name)
            names.append(name)
        replaced: dict[SSAValue, SSAValue] = {}
        for plan, name in zip(plans, names):
            inputs = [replaced.get(v, v) for v in plan.inputs]
            op = _outline(name, inputs, plan.members, plan.output, self.FUSED)
            replaced[plan.output] = op.output
            plan.group.name = name
            plan.group.sub_groups = [op]
        return mod


class FuseTargetOps(GroupOps):
    """Create fused groups: indivisible kernels whose intermediates never leave the core.
    A fused group may later be swallowed by a larger group."""

    FUSED = True
    PREFIX = "fused"


# ----------------------------------------------------------------------------- splitting


def _rebatch_block(src: Block, arg_types: Sequence, old: int, new: int,
                   values: dict[SSAValue, SSAValue]) -> Block:
    block = Block(arg_types=arg_types)
    for a, b in zip(src.args, block.args):
        values[a] = b
        b.name_hint = a.name_hint
    for op in src.ops:
        block.add_op(_rebatch_op(op, old, new, values))
    return block


def _rebatch_op(op: Operation, old: int, new: int, values: dict[SSAValue, SSAValue]) -> Operation:
    """A copy of `op` computing on batch `new` instead of `old` (types re-inferred)."""
    operands = [values.get(v, v) for v in op.operands]
    if isinstance(op, g.ConstantOp):
        clone = op.clone()
    elif isinstance(op, s.YieldOp):
        clone = s.YieldOp.create(operands=operands)
    elif isinstance(op, s.GroupOp):
        body = _rebatch_block(op.body.block, [v.type for v in operands], old, new, values)
        clone = s.GroupOp.create(operands=operands, result_types=[body.last_op.value.type],  # type: ignore[union-attr]
                                 properties=dict(op.properties), attributes=dict(op.attributes),
                                 regions=[Region(body)])
    else:
        assert isinstance(op, g.GraphOp)
        p = op.props()
        shape = p.get("shape")
        if isinstance(shape, tuple) and shape and shape[0] == old:
            p["shape"] = (new, *shape[1:])
        types = type(op).infer([v.type for v in operands], p)  # type: ignore[arg-type]
        clone = type(op).create(operands=operands, result_types=types,
                                properties=dict(op.properties), attributes=dict(op.attributes))
    for a, b in zip(op.results, clone.results):
        values[a] = b
        b.name_hint = a.name_hint
    return clone


def _slices(value: SSAValue, n: int, before: Operation) -> list[SSAValue]:
    """`value` cut into n batch slices, reusing the pieces of the concat that made it (along
    the batch: a concat of row stripes holds no batch slices)."""
    join = value.owner
    if isinstance(join, s.ConcatOp) and join.axis.data == s.BATCH_AXIS and len({v.type for v in join.inputs}) == 1:
        pieces, m = list(join.inputs), len(join.inputs)
        if m == n:
            return pieces
        if m % n == 0:
            k = m // n
            ops = [s.ConcatOp.make(pieces[i * k:(i + 1) * k]) for i in range(n)]
        elif n % m == 0:
            ops = [s.SplitOp.make(p, n // m) for p in pieces]
        else:
            ops = [s.SplitOp.make(value, n)]
        before.parent_block().insert_ops_before(ops, before)  # type: ignore[union-attr]
        return [r for op in ops for r in op.results]
    for use in value.uses:
        if isinstance(use.operation, s.SplitOp) and len(use.operation.outputs) == n:
            return list(use.operation.outputs)
    split = s.SplitOp.make(value, n)
    before.parent_block().insert_op_before(split, before)  # type: ignore[union-attr]
    return list(split.outputs)


def check_split(op: s.GroupOp, n: object, what: str) -> None:
    """Raise if `op` cannot be cut into n sub-groups along the batch."""
    if op.split.data != 1:
        raise ScheduleError(f"{what}: {op.label} is already a sub-group of a group split {op.split.data} ways")
    batch = op.batch
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ScheduleError(f"{what}: the split factor must be a positive integer, got {n!r}")
    if batch is None or batch % n:
        raise ScheduleError(f"{what}: split factor {n} does not divide the batch {batch} of {op.label}")
    reason = s.batch_mixing(op.body_ops(), batch) if n > 1 else None
    if reason is not None:
        raise ScheduleError(f"{what}: {op.label} cannot be split along the batch: {reason}")


def split_group(op: s.GroupOp, n: int) -> list[s.GroupOp]:
    """Replace a top-level group by n sub-groups on batch slices (see `check_split`)."""
    if n == 1:
        return [op]
    batch = op.batch
    assert batch is not None
    sliced = [
        _slices(v, n, op) if s.batch_of(v.type) == batch else [v] * n
        for v in op.inputs
    ]
    name = op.group_name.data
    subs = []
    for i in range(n):
        inputs = [pieces[i] for pieces in sliced]
        body = _rebatch_block(op.body.block, [v.type for v in inputs], batch, batch // n, {})
        sub = s.GroupOp.make(name, inputs, body, index=i, split=n, fused=op.fused is not None)
        sub.attributes.update(op.attributes)
        op.parent_block().insert_op_before(sub, op)  # type: ignore[union-attr]
        subs.append(sub)
    join = s.ConcatOp.make([sub.output for sub in subs])
    op.parent_block().insert_op_before(join, op)  # type: ignore[union-attr]
    op.output.replace_all_uses_with(join.output)
    old_inputs = list(op.inputs)
    block = op.parent_block()
    assert block is not None
    block.erase_op(op)
    for v in old_inputs:
        owner = v.owner
        if isinstance(owner, s.ConcatOp | s.SplitOp) and owner.parent is block and all(not r.uses for r in owner.results):
            block.erase_op(owner)
    return subs


class SplitGroups:
    """Cut each group into `factor` sub-groups along the batch: `{group: factor}`."""

    check = staticmethod(check_split)
    split = staticmethod(split_group)

    def __init__(self, factors: Mapping[Group | s.GroupOp, int]):
        if not isinstance(factors, Mapping):
            raise ScheduleTypeError(f"{type(self).__name__}(factors): expected a dict {{group: split factor}}, got {_kind(factors)}")
        self.factors = dict(factors)

    def __call__(self, mod: IRModule | ModuleOp):
        module = _module_op(mod)
        work = []
        for i, (grp, n) in enumerate(self.factors.items()):
            what = f"{type(self).__name__} item {i}" + (f" ({grp})" if isinstance(grp, Group) else "")
            if isinstance(grp, Group):
                if len(grp) > 1:
                    raise ScheduleError(f"{what}: already split into {len(grp)} sub-groups")
                op = grp[0]
            elif isinstance(grp, s.GroupOp):
                op = grp
            else:
                raise ScheduleError(f"{what}: expected a Group or a schedule.group, got {type(grp).__name__}")
            f = _top_level(op)
            if f is None:
                raise ScheduleError(f"{what}: {op.label} is no longer in the IR (a stale handle)")
            _check_module(module, f, what)
            self.check(op, n, what)
            if any(op is w[1] for w in work):
                raise ScheduleError(f"{what}: {op.label} is given twice")
            work.append((list(f.body.block.ops).index(op), op, grp, n))
        for _, op, grp, n in sorted(work, key=lambda w: w[0]):
            subs = self.split(op, n)
            if isinstance(grp, Group):
                grp.sub_groups = subs
        return mod


def check_split_rows(op: s.GroupOp, n: object, what: str) -> None:
    """Raise if `op` cannot be cut into n row stripes."""
    if op.split.data != 1:
        raise ScheduleError(f"{what}: {op.label} is already a sub-group of a group split {op.split.data} ways")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ScheduleError(f"{what}: the number of row stripes must be a positive integer, got {n!r}")
    if op.fused is not None:
        raise ScheduleError(f"{what}: {op.label} is a fused group, one indivisible kernel")
    out = op.yield_op.value
    shape = g.shape_of(out.type)
    if len(shape) != 4:
        raise ScheduleError(f"{what}: {op.label} yields {out.type}: row stripes need an NCHW output")
    if n > shape[s.ROW_AXIS]:
        raise ScheduleError(f"{what}: {n} row stripes of {op.label}, whose output has {shape[s.ROW_AXIS]} rows")
    reason = s.stripe_rows(op.body_ops(), out, 0, shape[s.ROW_AXIS])
    if isinstance(reason, str):
        raise ScheduleError(f"{what}: {op.label} cannot be cut into row stripes: {reason}")


def split_rows(op: s.GroupOp, n: int) -> list[s.GroupOp]:
    """Replace a top-level group by n row-stripe sub-groups joined by a concat along the
    rows (see `check_split_rows`). Every stripe reads the group's inputs whole; the rows it
    needs (halos included) are derived from its body."""
    if n == 1:
        return [op]
    batch = op.batch or 1
    name = op.group_name.data
    subs = []
    for i in range(n):
        body = _rebatch_block(op.body.block, [v.type for v in op.inputs], batch, batch, {})
        sub = s.GroupOp.make(name, list(op.inputs), body, index=i, split=n, rows=True)
        sub.attributes.update(op.attributes)
        op.parent_block().insert_op_before(sub, op)  # type: ignore[union-attr]
        subs.append(sub)
    join = s.ConcatOp.make([sub.output for sub in subs], axis=s.ROW_AXIS)
    op.parent_block().insert_op_before(join, op)  # type: ignore[union-attr]
    op.output.replace_all_uses_with(join.output)
    op.parent_block().erase_op(op)  # type: ignore[union-attr]
    return subs


class SplitRows(SplitGroups):
    """Cut each group into `n` row stripes (a spatial split along H, for samples too big for
    L1): `{group: n}`. Sub-group i computes rows `stripe_range(H, n, i)` of the output."""

    check = staticmethod(check_split_rows)
    split = staticmethod(split_rows)


# ----------------------------------------------------------------------------- scheduling


@dataclass
class ScheduleInfo:
    """Where an item's result lives and how it is spread over the cores; see the module doc."""

    op_or_group: object
    mem_scope: NPUMemScope | str
    core_bind: object


def _scope(value: NPUMemScope | str | int, what: str) -> s.MemScopeAttr:
    try:
        if isinstance(value, str):
            return s.MemScopeAttr(NPUMemScope[value.upper()])
        return s.MemScopeAttr(NPUMemScope(value))
    except (KeyError, ValueError):
        raise ScheduleError(f"{what}: mem_scope must be NPUMemScope.DDR, LLB or L1, got {value!r}") from None


def _item(x: object, what: str) -> Operation:
    if isinstance(x, Group):
        if len(x) > 1:
            raise ScheduleError(f"{what}: {x} is split into {len(x)} sub-groups; schedule each as group[i]")
        return x[0]
    if isinstance(x, SSAValue) and isinstance(x.owner, Operation):
        x = x.owner
    if not isinstance(x, Operation) or isinstance(x, g.ConstantOp | func.FuncOp) or x.name.startswith("func."):
        raise ScheduleError(f"{what}: expected a group, sub-group, split, concat or graph op, got {x!r:.80}")
    if _top_level(x) is None:
        inside = x.parent_op()
        if isinstance(inside, s.GroupOp):
            raise ScheduleError(f"{what}: {_where(x)} is inside {inside.label}; schedule the group")
        raise ScheduleError(f"{what}: {_where(x)}")
    return x


def wrap_op(op: Operation, name: str) -> s.GroupOp:
    """Put a single top-level graph op (with one result) into a one-op group of its own."""
    inputs = list(dict.fromkeys(v for v in op.operands if not isinstance(v.owner, g.ConstantOp)))
    return _outline(name, inputs, [op], op.results[0])


class Schedule:
    """Put the items in the list's order with their mem_scope and core_bind, then verify."""

    def __init__(self, infos: Sequence[ScheduleInfo], target: str | targets.Target = "stcp920",
                 verify: bool = True):
        self.infos = _sequence(infos, "Schedule(infos)", "ScheduleInfo")
        if not isinstance(target, str | os.PathLike | targets.Target):
            raise ScheduleTypeError(f"Schedule(target=...): expected a target name, a .toml path or a Target, "
                                    f"got {_kind(target)}")
        try:
            self.target = targets.load(target)
        except targets.TargetError as e:
            raise ScheduleError(f"Schedule(target=...): {e}") from None
        self.verify = verify

    def __call__(self, mod: IRModule | ModuleOp):
        module = _module_op(mod)
        items: list[Operation] = []
        seen: dict[Operation, int] = {}
        placements = []
        for i, info in enumerate(self.infos):
            what = f"ScheduleInfo {i}"
            if not isinstance(info, ScheduleInfo):
                raise ScheduleError(f"{what}: expected a ScheduleInfo, got {type(info).__name__}")
            op = _item(info.op_or_group, what)
            if not isinstance(op, s.ScheduledItem) and len(op.results) != 1:
                raise ScheduleError(f"{what}: {_where(op)} has {len(op.results)} results, but a one-op group has "
                                    f"one output: group it with its users")
            if op in seen:
                raise ScheduleError(f"{what}: {_where(op)} is already scheduled by ScheduleInfo {seen[op]}")
            seen[op] = i
            try:
                bind = s.CoreBindAttr.of(info.core_bind)
            except (VerifyException, TypeError, ValueError) as e:
                raise ScheduleError(f"{what} ({_where(op)}): {e}") from None
            items.append(op)
            placements.append((_scope(info.mem_scope, what), bind))
        if not items:
            return mod
        f = _top_level(items[0])
        assert f is not None
        _check_module(module, f, "Schedule")
        for i, op in enumerate(items):
            if _top_level(op) is not f:
                raise ScheduleError(f"ScheduleInfo {i}: {_where(op)} is not in @{f.sym_name.data} like ScheduleInfo 0")
        body = list(f.body.block.ops)
        missing = [op for op in body[:-1] if op not in seen and not isinstance(op, g.ConstantOp)]
        if missing:
            shown = ", ".join(_where(op) for op in missing[:4]) + (", ..." if len(missing) > 4 else "")
            raise ScheduleError(f"Schedule: {len(missing)} item(s) of @{f.sym_name.data} have no ScheduleInfo: {shown}")
        for i, op in enumerate(items):
            for v in op.operands:
                j = seen.get(v.owner)  # type: ignore[arg-type]
                if j is not None and j >= i:
                    raise ScheduleError(f"ScheduleInfo {i}: {_where(op)} uses the result of {_where(v.owner)}, "  # type: ignore[arg-type]
                                        f"which ScheduleInfo {j} puts later: every use must come after its producer")
        names, taken = item_names(f.body.block), _group_names(f)
        for i, op in enumerate(items):
            if not isinstance(op, s.ScheduledItem):
                name = names[op] if names[op] not in taken else _fresh_name(taken, names[op])
                taken.add(name)
                items[i] = op = wrap_op(op, name)
            scope, bind = placements[i]
            op.properties["mem_scope"] = scope
            op.properties["core_bind"] = bind
        block = f.body.block
        terminator = block.last_op
        assert terminator is not None
        for op in items:
            op.detach()
            block.insert_op_before(op, terminator)
        if self.verify:
            verify_function(f, targets.load(self.target))
        return mod


# ----------------------------------------------------------------------------- names


class SetSpanName:
    """Give every op (but weights and groups) a unique name in the `schedule.span`
    attribute: its existing one, else `kind_i` with i its ListOps index."""

    def __call__(self, mod: IRModule | ModuleOp):
        for f in IRModule.of(_module_op(mod)).functions():
            taken: set[str] = set()
            for op, name in item_names(f.block).items():
                if isinstance(op, g.ConstantOp | s.GroupOp):
                    continue
                base, n = name, 0
                while name in taken:
                    n += 1
                    name = f"{base}.{n}"
                taken.add(name)
                op.attributes[SPAN_ATTR] = StringAttr(name)
        return mod
