"""The `schedule` dialect: how the chip runs the graph (DESIGN.md section 1).

A function at schedule level is a flat sequence of *scheduled items* in its body; the block
order is the execution order. There are three kinds of item, each carrying where its result
lives (`mem_scope`) and how the result is spread over the cluster's cores (`core_bind`):

- `schedule.group`: a single-output sub-DAG of graph ops, held in a region. Its activation
  inputs are explicit operands, bound to the body's block arguments; weights
  (`graph.constant`s) stay in the function and are used from above. The body ends with
  `schedule.yield` of the group's output. A group split along the batch becomes `split`
  sub-groups that share a name and differ in `index`; each operates on a batch slice.
  A single op is scheduled as a one-op group, so every item is a group, a split or a concat.
  A group split into *row stripes* (`[i of n rows]`, a spatial split for samples too big
  for L1: Vela's stripes, TreeWalker's tiles) keeps its full-size inputs and body; sub-group
  i computes rows `stripe_range(H, n, i)` of the output (axis 2 of NCHW), reading only the
  input rows they need (halos derived backwards through the body's convs and pools,
  `stripe_rows`), and its result is that stripe.
- `schedule.split`: cuts a tensor into equal slices along the batch axis (axis 0).
- `schedule.concat`: joins batch slices along axis 0, or row stripes along axis 2
  (`schedule.concat %a, %b axis 2`).

    %s:8 = schedule.split %data into 8 {mem_scope = #schedule.mem_scope<DDR>,
             core_bind = #schedule.core_bind<[[0, 1, 2, 3], [4, 5, 6, 7]]>}
             : tensor<16x3x224x224xf16> -> tensor<2x3x224x224xf16>
    %g = schedule.group "group_0" [1 of 8] (%x = %s#1 : tensor<2x3x224x224xf16>)
             -> tensor<2x512x28x28xf16> attributes {mem_scope = #schedule.mem_scope<L1>,
             core_bind = #schedule.core_bind<[[0, 1, 2, 3], [4, 5, 6, 7]]>} {
      %y = graph.conv2d %x, %w ...
      ...
      schedule.yield %z : tensor<2x512x28x28xf16>
    }
    %c = schedule.concat %g0, %g {...} : tensor<2x512x28x28xf16>, tensor<2x512x28x28xf16>
             -> tensor<4x512x28x28xf16>

`core_bind` lists batch parts, each a list of the cores sharing that part:
`[[0, 1], [2, 3]]` cuts the item's batch into two parts computed by cores 0-1 and 2-3;
a flat list `[3, 7]` means one core per part. A `fused` group (FuseTargetOps) is one
indivisible kernel; it may also appear inside another group's body.

Region-held groups (rather than outlined functions) keep a schedule in one function that
the reference interpreter and the lowering walk top to bottom, with the graph ops unchanged
inside. Capacity checks against a target are in `schedule-verify`; the verifiers here check
what holds on any chip.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from enum import IntEnum

import numpy as np
from xdsl.dialects.builtin import IntAttr, StringAttr, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, Data, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

from stc_mlir.dialects import graph as g

BATCH_AXIS = 0


# ----------------------------------------------------------------------------- attributes


class NPUMemScope(IntEnum):
    """Where a scheduled item's result lives (the seeds' `NPUMemScope`)."""

    DDR = 0
    LLB = 1
    L1 = 2


@irdl_attr_definition
class MemScopeAttr(Data[NPUMemScope]):
    """`#schedule.mem_scope<L1|LLB|DDR>`."""

    name = "schedule.mem_scope"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> NPUMemScope:
        with parser.in_angle_brackets():
            names = [s.name for s in NPUMemScope]
            return NPUMemScope[parser.parse_keyword_in(names, " in #schedule.mem_scope")]

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data.name}>")


CoreBind = tuple[tuple[int, ...], ...]


def core_bind_text(parts: CoreBind) -> str:
    """`[[0, 1], [2, 3]]`, or the flat `[0, 2]` when every part has one core."""
    if all(len(p) == 1 for p in parts):
        return str([p[0] for p in parts])
    return str([list(p) for p in parts])


@irdl_attr_definition
class CoreBindAttr(Data[CoreBind]):
    """`#schedule.core_bind<[[0, 1, 2, 3], [4, 5, 6, 7]]>` or `<[3, 7, 2, 6]>`.

    Outer list: the parts the item's batch is cut into; inner list: the cores sharing one
    part. A flat list is one core per part. Core ids are checked against the target's
    cluster size by `schedule-verify`.
    """

    name = "schedule.core_bind"

    @staticmethod
    def of(value: object) -> CoreBindAttr:
        """From a nested or flat list (or numpy array) of core ids."""
        if isinstance(value, CoreBindAttr):
            return value
        items = np.asarray(value, dtype=object).tolist() if isinstance(value, np.ndarray) else value
        if not isinstance(items, list | tuple) or not items:
            raise VerifyException(f"core_bind must be a non-empty list of core ids, got {value!r}")
        nested = all(isinstance(p, list | tuple) for p in items)
        flat = all(isinstance(p, int | np.integer) and not isinstance(p, bool) for p in items)
        if not (nested or flat):
            raise VerifyException(
                f"core_bind {value!r} mixes lists and core ids: use [[0, 1], [2, 3]] or [0, 2]"
            )
        parts = [tuple(p) for p in items] if nested else [(p,) for p in items]
        for part in parts:
            for core in part:
                if not isinstance(core, int | np.integer) or isinstance(core, bool):
                    raise VerifyException(f"core_bind {value!r}: {core!r} is not a core id")
        return CoreBindAttr(tuple(tuple(int(c) for c in p) for p in parts))

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> CoreBind:
        nested: list[bool] = []

        def element() -> tuple[int, ...]:
            inner = parser.parse_optional_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
            )
            nested.append(inner is not None)
            return tuple(inner) if inner is not None else (parser.parse_integer(allow_boolean=False),)

        with parser.in_angle_brackets():
            start = parser.pos
            parts = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, element)
            if len(set(nested)) > 1:
                parser.raise_error(
                    "core_bind mixes lists and core ids: use [[0, 1], [2, 3]] or [0, 2]", start, parser.pos
                )
        return tuple(parts)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{core_bind_text(self.data)}>")

    def verify(self) -> None:
        parts = self.data
        if not parts or any(not p for p in parts):
            raise VerifyException(f"core_bind {core_bind_text(parts)}: every part needs at least one core")
        sizes = {len(p) for p in parts}
        if len(sizes) != 1:
            raise VerifyException(
                f"core_bind {core_bind_text(parts)}: parts have different numbers of cores {sorted(sizes)}"
            )
        seen: set[int] = set()
        for core in self.cores:
            if core < 0:
                raise VerifyException(f"core_bind {core_bind_text(parts)}: core id {core} is negative")
            if core in seen:
                raise VerifyException(f"core_bind {core_bind_text(parts)}: core {core} appears twice")
            seen.add(core)

    @property
    def parts(self) -> int:
        return len(self.data)

    @property
    def cores_per_part(self) -> int:
        return len(self.data[0])

    @property
    def cores(self) -> tuple[int, ...]:
        return tuple(c for p in self.data for c in p)

    @property
    def text(self) -> str:
        return core_bind_text(self.data)


# ----------------------------------------------------------------------------- helpers


def batch_of(t: Attribute) -> int | None:
    """The batch (size of axis 0) of a ranked tensor type, None for a scalar."""
    if not isinstance(t, TensorType) or not t.get_shape():
        return None
    return t.get_shape()[BATCH_AXIS]


def _types(types: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in types)


def _is_weight(value: SSAValue) -> bool:
    return isinstance(value.owner, g.ConstantOp)


def batch_mixing(ops: Sequence[Operation], batch: int) -> str | None:
    """Why `ops` (a group body) cannot run on batch slices independently, or None.

    A value *carries the batch* if its axis 0 has size `batch`; weights do not. The body is
    separable if every op computing from batch-carrying values produces batch-carrying
    values and none of them combines elements across axis 0 (a reduction, softmax,
    transpose, concat, slice or gather along it, a matmul contracting it).
    """

    def carries(v: SSAValue) -> bool:
        return not _is_weight(v) and batch_of(v.type) == batch

    for op in ops:
        if isinstance(op, g.ConstantOp):
            continue
        inputs = [carries(v) for v in op.operands]
        if not any(inputs):
            continue  # computed from weights only: the same for every slice
        label = f"{op.name} ({', '.join(str(r.type) for r in op.results)})"
        if not all(carries(r) for r in op.results):
            return f"{label} does not keep the batch of {batch} on axis 0"
        if isinstance(op, GroupOp):
            reason = batch_mixing(op.body_ops(), batch)
            if reason is not None:
                return reason
            continue
        if not isinstance(op, g.GraphOp):
            return f"{label} is not a graph op"
        p = op.props()
        rank = len(op.operands[0].type.get_shape())  # type: ignore[attr-defined]

        def on_batch(axis: object) -> bool:
            return isinstance(axis, int) and axis % max(rank, 1) == BATCH_AXIS

        axes: tuple = ()
        if isinstance(op, g.SoftmaxOp | g.LayerNormOp | g.ConcatOp | g.SplitOp):
            axes = (p["axis"],)
        elif isinstance(op, g.GatherOp):
            axes = (p["axis"],) if inputs[0] else ()
        elif isinstance(op, g.SliceOp):
            axes = tuple(p["axes"])  # type: ignore[arg-type]
        elif isinstance(op, g.ReduceOp):
            axes = tuple(p["axes"]) or (BATCH_AXIS,)  # type: ignore[arg-type]
        elif isinstance(op, g.TransposeOp):
            axes = (BATCH_AXIS,) if p["perm"][0] != BATCH_AXIS else ()  # type: ignore[index]
        elif isinstance(op, g.MatmulOp) and inputs[1] and len(op.operands[1].type.get_shape()) == 2:  # type: ignore[attr-defined]
            axes = (BATCH_AXIS,)
        elif isinstance(op, g.GemmOp) and ((inputs[0] and p["trans_a"]) or inputs[1]):
            axes = (BATCH_AXIS,)
        if any(on_batch(a) for a in axes):
            return f"{label} combines elements across the batch axis"
    return None


# ----------------------------------------------------------------------------- row stripes

ROW_AXIS = 2
"""The axis row stripes cut: H of NCHW."""

ROW_LOCAL_OPS: tuple[type[Operation], ...] = (
    g.UnaryOp, g.BinaryOp, g.ClipOp, g.LeakyReluOp, g.CastOp, g.BatchNormOp, g.PReluOp, g.WhereOp,
)
"""Ops whose output row r needs only row r of each operand of the same height (others are
broadcast along H: height 1, or weights). Besides these: convs and pools (rows with their
window's halo) and 4-D matmuls (rows of the left operand, all of the right one)."""


def stripe_type(t: Attribute, n: int, i: int) -> Attribute:
    """The type of stripe i of n of an NCHW tensor type (`t` itself if it has no rows)."""
    rows = _rows_of(t)
    if rows is None:
        return t
    lo, hi = stripe_range(rows, n, i)
    shape = list(t.get_shape())  # type: ignore[attr-defined]
    shape[ROW_AXIS] = hi - lo
    return g.tensor(shape, t.element_type)  # type: ignore[attr-defined]


def stripe_range(rows: int, n: int, i: int) -> tuple[int, int]:
    """Rows [lo, hi) of stripe i when `rows` rows are cut into n stripes (sizes differ by at
    most one row)."""
    return i * rows // n, (i + 1) * rows // n


def window_input_rows(lo: int, hi: int, size: int, kernel: int, stride: int, pad: int,
                      dilation: int) -> tuple[int, int]:
    """Input rows [r0, r1) that window outputs [lo, hi) read (clipped to the input)."""
    start = lo * stride - pad
    end = (hi - 1) * stride - pad + dilation * (kernel - 1) + 1
    return max(start, 0), min(end, size)


def _rows_of(t: Attribute) -> int | None:
    shape = t.get_shape() if isinstance(t, TensorType) else ()
    return shape[ROW_AXIS] if len(shape) == 4 else None


def _operand_rows(op: Operation, v: SSAValue, lo: int, hi: int) -> tuple[int, int] | str:
    """Rows of operand `v` that rows [lo, hi) of `op`'s result read, or why `op` cannot be
    cut into row stripes."""
    rows = _rows_of(v.type)
    out_rows = _rows_of(op.results[0].type)
    if isinstance(op, g.Conv2DOp | g.PoolOp) and v is op.operands[0]:
        p = op.props()
        kernel = p["kernel"][0] if isinstance(op, g.PoolOp) else g.shape_of(op.operands[1].type)[2]
        assert rows is not None
        return window_input_rows(lo, hi, rows, kernel, p["strides"][0], p["pads"][0],  # type: ignore[index]
                                 p.get("dilations", (1, 1))[0])  # type: ignore[index,union-attr]
    if isinstance(op, g.Conv2DOp) and v is op.weight:
        return (0, rows) if rows is not None else (0, 0)
    if isinstance(op, g.MatmulOp) and rows is not None and out_rows is not None:
        # [N, C, M, K] x [N, C, K, L]: output rows (M, e.g. attention queries) read the same
        # rows of the left operand and all of the right one
        if v is op.operands[0] and rows == out_rows and v is not op.operands[1]:
            return lo, hi
        if v is op.operands[1] and v is not op.operands[0]:
            return 0, rows
    along_rows = isinstance(op, g.SoftmaxOp) and op.props()["axis"] % 4 == ROW_AXIS  # type: ignore[operator]
    if isinstance(op, (g.Conv2DOp, *ROW_LOCAL_OPS)) and out_rows is not None and not along_rows:
        if rows == out_rows:
            return lo, hi
        if rows in (None, 1):
            return (0, rows or 0)
    return f"{op.name} ({', '.join(str(r.type) for r in op.results)}) combines rows, it cannot be cut into row stripes"


def stripe_rows(ops: Sequence[Operation], output: SSAValue, lo: int, hi: int) -> dict[SSAValue, tuple[int, int]] | str:
    """The rows of every value `ops` use that rows [lo, hi) of `output` need (TreeWalker:
    derived backwards, a conv's or pool's window adding its halo), or why the ops cannot
    be cut into row stripes. Weights and values without rows are left out."""
    need: dict[SSAValue, tuple[int, int]] = {output: (lo, hi)}
    for op in reversed(ops):
        if isinstance(op, g.ConstantOp):
            continue
        if _rows_of(op.results[0].type) is None:
            return f"{op.name} ({op.results[0].type}) has no rows (NCHW) to cut into stripes"
        if isinstance(op, GroupOp):
            return f"a fused group ({op.label}) cannot be cut into row stripes"
        if len(op.results) != 1:
            return f"{op.name} has {len(op.results)} results"
        got = need.get(op.results[0])
        if got is None:
            continue
        for v in op.operands:
            if _is_weight(v):
                continue
            rows = _operand_rows(op, v, *got)
            if isinstance(rows, str):
                return rows
            if _rows_of(v.type) is None:
                continue
            old = need.get(v)
            need[v] = rows if old is None else (min(old[0], rows[0]), max(old[1], rows[1]))
    return need


# ----------------------------------------------------------------------------- ops


class ScheduledItem(IRDLOperation, ABC):
    """Base of the ops that are scheduled items: result placement and core binding."""

    mem_scope = opt_prop_def(MemScopeAttr)
    core_bind = opt_prop_def(CoreBindAttr)

    def props(self) -> dict[str, object]:
        """Property values (for the reference interpreter's kernel signature)."""
        return dict(self.properties)

    @property
    def batch(self) -> int | None:
        """The batch of one result (every result of a split has the same)."""
        return batch_of(self.results[0].type)

    def _placement(self) -> dict[str, Attribute]:
        return {k: v for k in ("mem_scope", "core_bind") if (v := self.properties.get(k)) is not None}

    @staticmethod
    def _parse_placement(parser: Parser, attrs: dict[str, Attribute]) -> dict[str, Attribute]:
        props = {}
        for key, kind in (("mem_scope", MemScopeAttr), ("core_bind", CoreBindAttr)):
            if key in attrs:
                if not isinstance(attrs[key], kind):
                    parser.raise_error(f"'{key}' must be a #{kind.name}<...> attribute, got {attrs[key]}")
                props[key] = attrs.pop(key)
        return props


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a group's body with the group's output."""

    name = "schedule.yield"
    value = operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(GroupOp)))

    assembly_format = "$value attr-dict `:` type($value)"



def parse_name(parser: Parser, what: str) -> str:
    """A quoted name; any characters (the printer escapes non-ASCII bytes, `"gr\\C3\\BCppe"`,
    which xDSL 0.74's lexer reads as a bytes literal: decode it as UTF-8)."""
    if (text := parser.parse_optional_str_literal()) is not None:
        return text
    at = parser._current_token.span
    data = parser.parse_bytes_literal(f" ({what})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        parser.raise_error(f"{what} is not valid UTF-8", at)

@irdl_op_definition
class GroupOp(ScheduledItem):
    """A single-output sub-DAG of graph ops (or sub-group `index` of `split`), see module doc."""

    name = "schedule.group"

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    body = region_def("single_block")
    group_name = prop_def(StringAttr, prop_name="name")
    index = opt_prop_def(IntAttr, IntAttr(0))
    split = opt_prop_def(IntAttr, IntAttr(1))
    rows = opt_prop_def(UnitAttr)
    """set: the split cuts the output into row stripes (axis 2), not the batch"""
    fused = opt_prop_def(UnitAttr)

    @staticmethod
    def make(name: str, inputs: Sequence[SSAValue], body: Block, *, index: int = 0, split: int = 1,
             fused: bool = False, rows: bool = False) -> GroupOp:
        """A group over `body` (block arguments = inputs, ends with schedule.yield); with
        `rows`, sub-group `index` of `split` row stripes (its result is the stripe)."""
        yield_op = body.last_op
        assert isinstance(yield_op, YieldOp), "a group body ends with schedule.yield"
        props: dict[str, Attribute] = {"name": StringAttr(name)}
        if split != 1 or rows:
            props.update(index=IntAttr(index), split=IntAttr(split))
        if rows:
            props["rows"] = UnitAttr()
        if fused:
            props["fused"] = UnitAttr()
        result = yield_op.value.type
        if rows:
            result = stripe_type(result, split, index)
        return GroupOp.build(operands=[list(inputs)], result_types=[result],
                             properties=props, regions=[Region(body)])

    @property
    def stripe(self) -> tuple[int, int] | None:
        """Rows [lo, hi) of the body's output this row-stripe sub-group computes, else None."""
        if self.rows is None:
            return None
        return stripe_range(g.shape_of(self.yield_op.value.type)[ROW_AXIS], self.split.data, self.index.data)

    @property
    def label(self) -> str:
        """`group 'name'` or `group 'name' sub-group i` for diagnostics."""
        text = f"group '{self.group_name.data}'"
        if self.rows is not None:
            return text + f" row stripe {self.index.data}"
        return text + (f" sub-group {self.index.data}" if self.split.data > 1 else "")

    @property
    def yield_op(self) -> YieldOp:
        op = self.body.block.last_op
        assert isinstance(op, YieldOp)
        return op

    def body_ops(self) -> list[Operation]:
        """The body's ops without the terminator."""
        return list(self.body.block.ops)[:-1]

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        input_types = [v.type for v in self.inputs]
        if arg_types != input_types:
            raise VerifyException(
                f"{self.label}: body arguments ({_types(arg_types)}) do not match the "
                f"inputs ({_types(input_types)})"
            )
        if not isinstance(block.last_op, YieldOp):
            raise VerifyException(f"{self.label}: body must end with schedule.yield")
        split, index = self.split.data, self.index.data
        if split < 1 or not 0 <= index < split:
            raise VerifyException(f"{self.label}: sub-group index {index} is not in 0..{split - 1}")
        yielded = block.last_op.value.type
        if self.rows is not None:
            self._verify_stripe(yielded)
        elif yielded != self.output.type:
            raise VerifyException(
                f"{self.label}: yields {yielded} but the group's result is {self.output.type}"
            )
        for op in block.ops:
            if isinstance(op, SplitOp | ConcatOp) or (isinstance(op, GroupOp) and op.fused is None):
                raise VerifyException(
                    f"{self.label}: {op.name} cannot be inside a group (only graph ops and fused groups)"
                )
            for v in op.operands:
                owner = v.owner
                inside = owner.parent_block() is block if isinstance(owner, Operation) else owner is block
                if not inside and not _is_weight(v):
                    raise VerifyException(
                        f"{self.label}: {op.name} uses a value defined outside the group that is not a "
                        f"graph.constant; pass activations in as group inputs"
                    )

    def _verify_stripe(self, yielded: Attribute) -> None:
        rows = _rows_of(yielded)
        if rows is None:
            raise VerifyException(f"{self.label}: row stripes need an NCHW (4-D) output, the body yields {yielded}")
        if self.split.data > rows:
            raise VerifyException(f"{self.label}: {self.split.data} row stripes of an output with {rows} rows "
                                  f"(at most one stripe per row)")
        want = stripe_type(yielded, self.split.data, self.index.data)
        if want != self.output.type:
            raise VerifyException(f"{self.label}: rows {self.stripe} of {yielded} are {want}, "
                                  f"but the group's result is {self.output.type}")
        need = stripe_rows(self.body_ops(), self.yield_op.value, *self.stripe)  # type: ignore[misc]
        if isinstance(need, str):
            raise VerifyException(f"{self.label}: {need}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.group_name.data)
        if self.rows is not None:
            printer.print_string(f" [{self.index.data} of {self.split.data} rows]")
        elif self.split.data != 1:
            printer.print_string(f" [{self.index.data} of {self.split.data}]")
        if self.fused is not None:
            printer.print_string(" fused")
        printer.print_string(" (")
        for i, (arg, value) in enumerate(zip(self.body.block.args, self.inputs)):
            if i:
                printer.print_string(", ")
            printer.print_operand(arg)
            printer.print_string(" = ")
            printer.print_operand(value)
            printer.print_string(" : ")
            printer.print_attribute(value.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.output.type)
        printer.print_op_attributes({**self._placement(), **self.attributes}, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> GroupOp:
        props: dict[str, Attribute] = {"name": StringAttr(parse_name(parser, "group name"))}
        if parser.parse_optional_punctuation("[") is not None:
            index = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_keyword("of")
            split = parser.parse_integer(allow_boolean=False, allow_negative=False)
            if parser.parse_optional_keyword("rows") is not None:
                props["rows"] = UnitAttr()
            parser.parse_punctuation("]")
            props.update(index=IntAttr(index), split=IntAttr(split))
        if parser.parse_optional_keyword("fused") is not None:
            props["fused"] = UnitAttr()

        def binding() -> tuple[Parser.Argument, SSAValue]:
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            value = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            t = parser.parse_type()
            return parser.Argument(arg.name, t), parser.resolve_operand(value, t)

        bindings = parser.parse_comma_separated_list(parser.Delimiter.PAREN, binding)
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        extra = dict(attrs.data) if attrs is not None else {}
        props.update(cls._parse_placement(parser, extra))
        region = parser.parse_region([a for a, _ in bindings])
        op = cls.build(operands=[[v for _, v in bindings]], result_types=[result_type],
                       properties=props, regions=[region])
        op.attributes.update(extra)
        return op


@irdl_op_definition
class SplitOp(ScheduledItem):
    """Cuts a tensor into equal slices along the batch axis."""

    name = "schedule.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)

    @staticmethod
    def make(value: SSAValue, parts: int) -> SplitOp:
        t = value.type
        assert isinstance(t, TensorType)
        shape = list(t.get_shape())
        shape[BATCH_AXIS] //= parts
        return SplitOp.build(operands=[value], result_types=[[g.tensor(shape, t.element_type)] * parts])

    def verify_(self) -> None:
        n = len(self.outputs)
        t = self.input.type
        batch = batch_of(t)
        if n == 0 or batch is None:
            raise VerifyException(f"schedule.split: needs a ranked input and at least one result, got {t}")
        if batch % n:
            raise VerifyException(f"schedule.split: split factor {n} does not divide the batch {batch} of {t}")
        shape = list(t.get_shape())  # type: ignore[attr-defined]
        shape[BATCH_AXIS] //= n
        want = g.tensor(shape, t.element_type)  # type: ignore[attr-defined]
        for r in self.outputs:
            if r.type != want:
                raise VerifyException(
                    f"schedule.split: {n} slices of {t} are {want}, got {r.type}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" into {len(self.outputs)}")
        printer.print_op_attributes({**self._placement(), **self.attributes})
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.outputs[0].type if self.outputs else self.input.type)

    @classmethod
    def parse(cls, parser: Parser) -> SplitOp:
        value = parser.parse_unresolved_operand()
        parser.parse_keyword("into")
        n = parser.parse_integer(allow_boolean=False, allow_negative=False)
        extra = dict(parser.parse_optional_attr_dict())
        props = cls._parse_placement(parser, extra)
        parser.parse_punctuation(":")
        input_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        op = cls.build(operands=[parser.resolve_operand(value, input_type)],
                       result_types=[[result_type] * n], properties=props)
        op.attributes.update(extra)
        return op


@irdl_op_definition
class ConcatOp(ScheduledItem):
    """Joins batch slices along the batch axis (or row stripes along axis 2)."""

    name = "schedule.concat"
    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntAttr, IntAttr(BATCH_AXIS))

    @staticmethod
    def make(values: Sequence[SSAValue], axis: int = BATCH_AXIS) -> ConcatOp:
        types = [v.type for v in values]
        (out,) = g.ConcatOp.infer(types, {"axis": axis})  # type: ignore[arg-type]
        props = {"axis": IntAttr(axis)} if axis != BATCH_AXIS else {}
        return ConcatOp.build(operands=[list(values)], result_types=[out], properties=props)

    def verify_(self) -> None:
        types = [v.type for v in self.inputs]
        if not types or any(batch_of(t) is None for t in types):
            raise VerifyException(f"schedule.concat: needs ranked inputs, got ({_types(types)})")
        if self.axis.data not in (BATCH_AXIS, ROW_AXIS):
            raise VerifyException(f"schedule.concat: axis {self.axis.data} is neither the batch (0) nor the rows (2)")
        try:
            (want,) = g.ConcatOp.infer(types, {"axis": self.axis.data})  # type: ignore[arg-type]
        except g.ShapeError as e:
            raise VerifyException(f"schedule.concat: {e}") from None
        if want != self.output.type:
            raise VerifyException(
                f"schedule.concat: joining ({_types(types)}) gives {want}, not {self.output.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        if self.axis.data != BATCH_AXIS:
            printer.print_string(f" axis {self.axis.data}")
        printer.print_op_attributes({**self._placement(), **self.attributes})
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.inputs], printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_attribute(self.output.type)

    @classmethod
    def parse(cls, parser: Parser) -> ConcatOp:
        values = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        axis = parser.parse_integer(allow_boolean=False) if parser.parse_optional_keyword("axis") else BATCH_AXIS
        extra = dict(parser.parse_optional_attr_dict())
        props = cls._parse_placement(parser, extra)
        if axis != BATCH_AXIS:
            props["axis"] = IntAttr(axis)
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        if len(types) != len(values):
            parser.raise_error(f"schedule.concat: {len(values)} operands but {len(types)} types")
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        op = cls.build(operands=[[parser.resolve_operand(v, t) for v, t in zip(values, types)]],
                       result_types=[result_type], properties=props)
        op.attributes.update(extra)
        return op


Schedule = Dialect("schedule", [GroupOp, YieldOp, SplitOp, ConcatOp], [MemScopeAttr, CoreBindAttr])


# ----------------------------------------------------------------------------- traversal


def op_kind(op: Operation) -> str:
    """An op's name without its dialect: `conv2d`, `group`, `split`, `concat`..."""
    return op.name.split(".", 1)[-1]


def post_order(block: Block) -> list[Operation]:
    """The block's ops in depth-first post-order of the data flow from its terminator.

    Operands are visited in order, and a group's body (from its yield) after its inputs,
    so the list is a topological order and, as in the seeds' `ListOps`, the ops feeding the
    first operand come first. Ops the terminator does not reach follow in block order. The
    terminator itself is left out.
    """

    def children(op: Operation) -> list[Operation]:
        values = list(op.operands)
        if isinstance(op, GroupOp):
            values += op.yield_op.operands
        return [v.owner for v in values if isinstance(v.owner, Operation)]

    order: list[Operation] = []
    seen: set[Operation] = set()
    terminator = block.last_op
    for root in [terminator, *block.ops] if terminator is not None else []:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(children(root)))]
        while stack:
            op, pending = stack[-1]
            for child in pending:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(children(child))))
                    break
            else:
                stack.pop()
                if op is not terminator:
                    order.append(op)
    return order
