"""What the search needs to know about a graph-level function, without touching the IR.

`GraphView(f)` lists the top-level graph ops of `f` in block order (a topological order),
and answers, for a run of consecutive ops `[i, j)` (a candidate group):

- `single_output(i, j)`: whether only the last op's result is used after the run (a group
  has one output);
- `inputs(i, j)`: the activation values it reads from outside (weights excluded);
- `peak(i, j, samples, parts)`: the bytes live at once in one of `parts` batch parts when it
  runs on `samples` samples, by the footprint model of `schedule-verify` (inputs until their
  last use, intermediates from their op to their last use, the output to the end; views
  alias their operand; elementwise ops, softmax and norms write over an intermediate operand
  of their size that dies with them). Values carrying the batch scale with `samples`, the
  others are whole in every part;
- `mixing(i, j)`: why the run cannot be cut along the batch (or None), by the search's test
  (every op keeps the function's batch on axis 0 and combines nothing across it) and the
  verifier's, whose batch is the group's own, its output's axis 0 (`schedule-verify`): a
  gather over a flattened batch (2 x 16 -> 32 rows) reads no value with the batch of 2,
  but to the verifier its group has a batch of 32 and the gather combines rows along it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.passes.schedule_verify import IN_PLACE_OPS, VIEW_OPS, nbytes

NEVER = 1 << 60


def is_weight(v: SSAValue) -> bool:
    return isinstance(v.owner, g.ConstantOp)


def output_of(op: Operation) -> SSAValue:
    """The value `op` hands on: its one used result. (`auto_schedule` first leaves every
    multi-result op with one used result, as the default schedule does: a group boundary is
    one value.) An op nobody uses hands on its first."""
    used = [r for r in op.results if r.uses]
    return used[0] if len(used) == 1 else op.results[0]


@dataclass
class Profile:
    """Bytes live at each step of a run, as `carried * samples / (batch * parts) + whole`."""

    carried: list[int]
    whole: list[int]

    def peak(self, samples: int, batch: int, parts: int) -> int:
        scale = samples / (batch * parts)
        return max(int(math.ceil(c * scale)) + w for c, w in zip(self.carried, self.whole))


class GraphView:
    def __init__(self, f: func.FuncOp):
        self.func = f
        block = f.body.block
        self.ops: list[Operation] = [op for op in list(block.ops)[:-1] if not isinstance(op, g.ConstantOp)]
        self.position = {op: i for i, op in enumerate(self.ops)}
        params = list(block.args)
        self.batch = s.batch_of(params[0].type) if params else None
        results = set(block.last_op.operands) if block.last_op is not None else set()  # type: ignore[union-attr]
        self.results = results
        self.escape: list[int] = []
        """position of the last top-level user of any result of each op (NEVER: a function result)"""
        for i, op in enumerate(self.ops):
            last = -1
            for r in op.results:
                if r in results:
                    last = NEVER
                for use in r.uses:
                    user = self.position.get(use.operation)
                    if user is not None:
                        last = max(last, user)
            self.escape.append(last)
        self._profiles: dict[tuple[int, int], Profile] = {}
        self._values: dict[SSAValue, tuple[int, bool]] = {}
        self.acts = [[v for v in op.operands if not is_weight(v)] for op in self.ops]
        """each op's activation operands"""
        self._kinds = ["view" if isinstance(op, VIEW_OPS) else "in_place" if isinstance(op, IN_PLACE_OPS) else ""
                       for op in self.ops]
        self._mixing = [s.batch_mixing([op], self.batch) if self.batch else "no batch" for op in self.ops]
        self._own_batch = [s.batch_of(output_of(op).type) for op in self.ops]
        """each op's output's axis 0: the batch of a group it ends, to the verifier"""
        self._mixing_at: dict[int, list[str | None]] = {}
        """per group batch other than the function's, why each op mixes it"""

    def __len__(self) -> int:
        return len(self.ops)

    def carries(self, v: SSAValue) -> bool:
        return not is_weight(v) and self.batch is not None and s.batch_of(v.type) == self.batch

    def single_output(self, i: int, j: int) -> bool:
        """[i, j) can be one group: one result leaves it, the last op's."""
        last = self.ops[j - 1]
        if sum(bool(r.uses) for r in last.results) > 1:
            return False
        for k in range(i, j - 1):
            if self.escape[k] >= j or self.escape[k] == -1:  # used after the run, or dead
                return False
        return True

    def inputs(self, i: int, j: int) -> list[SSAValue]:
        """Activation values [i, j) reads from outside, in order of first use."""
        position = self.position
        seen: dict[SSAValue, None] = {}
        for k in range(i, j):
            for v in self.acts[k]:
                p = position.get(v.owner)  # type: ignore[arg-type]
                if p is None or not i <= p < j:
                    seen.setdefault(v, None)
        return list(seen)

    def mixing(self, i: int, j: int) -> str | None:
        """Why ops[i:j] cannot be cut along the batch (the first op that mixes), or None. The
        search cuts the function's batch (n sub-groups, p parts: n * p divides it); the
        verifier cuts a group's own batch, its output's axis 0, and tests the ops with it:
        both must take the cut."""
        first = next((self._mixing[k] for k in range(i, j) if self._mixing[k] is not None), None)
        own = self._own_batch[j - 1]
        if first is not None or own == self.batch:
            return first
        if own is None or own % self.batch:  # (self.batch is set: else every op says "no batch")
            last = self.ops[j - 1]
            return f"{last.name} ({output_of(last).type}) hands on no batch that {self.batch} divides on axis 0"
        if own not in self._mixing_at:
            self._mixing_at[own] = [s.batch_mixing([op], own) for op in self.ops]
        at = self._mixing_at[own]
        return next((at[k] for k in range(i, j) if at[k] is not None), None)

    def profile(self, i: int, j: int) -> Profile:
        key = (i, j)
        if key not in self._profiles:
            self._profiles[key] = self._profile(i, j)
        return self._profiles[key]

    def peak(self, i: int, j: int, samples: int, parts: int = 1) -> int:
        return self.profile(i, j).peak(samples, self.batch or 1, parts)

    def _info(self, v: SSAValue) -> tuple[int, bool]:
        """(bytes, carries the batch) of a value, computed once."""
        info = self._values.get(v)
        if info is None:
            info = self._values[v] = (nbytes(v.type), self.carries(v))
        return info

    def _profile(self, i: int, j: int) -> Profile:
        ops = self.ops[i:j]
        n = len(ops)
        acts = self.acts
        last: dict[SSAValue, int] = {}
        for k in range(i, j):
            for v in acts[k]:
                last[v] = k - i
        output = output_of(ops[-1])
        last[output] = n
        root: dict[SSAValue, SSAValue] = {}
        start: dict[SSAValue, int] = {}
        end: dict[SSAValue, int] = {}
        inputs = set(self.inputs(i, j))
        info = self._info

        def alias(v: SSAValue, buffer: SSAValue, at: int) -> None:
            root[v] = buffer
            end[buffer] = max(end[buffer], last.get(v, at))

        def define(v: SSAValue, at: int) -> None:
            root[v] = v
            start[v] = end[v] = at
            alias(v, v, at)

        for v in inputs:
            define(v, -1)
        for k, op in enumerate(ops):
            kind = self._kinds[i + k]
            if kind == "view" and op.operands[0] in root:
                alias(output_of(op), root[op.operands[0]], k)
                continue
            result = output_of(op)
            if kind == "in_place":
                shape = info(result)
                reusable = [root[v] for v in acts[i + k] if v in root and root[v] not in inputs
                            and end[root[v]] <= k and info(root[v]) == shape]
                if reusable:
                    alias(result, reusable[0], k)
                    continue
            for r in op.results:
                define(r, k)
        carried, whole = [0] * (n + 3), [0] * (n + 3)  # differences, step k at index k + 1
        for b in set(root.values()):
            size, carries = info(b)
            into = carried if carries else whole
            into[start[b] + 1] += size
            into[end[b] + 2] -= size
        return Profile(_running(carried)[1:n + 2], _running(whole)[1:n + 2])


def _running(deltas: list[int]) -> list[int]:
    total, out = 0, []
    for d in deltas:
        total += d
        out.append(total)
    return out
