"""The scheduled graph as an ONNX file for Netron: every graph op a node that carries its
schedule item (group, sub-group, mem_scope, core_bind) as node metadata.

    stc-opt sched.mlir --export-netron sched.onnx        stc-run MODEL --export-netron sched.onnx
    export(module, "sched.onnx")                         # graph- or schedule-level module

What runs is what is drawn: a group split 8 ways appears as its 8 sub-groups' ops, with the
`schedule.split` / `schedule.concat` items between them, in execution order. Graph ops are
nodes of the domain `stc.graph` (op type = our op name, properties as attributes), splits
and concats of `stc.schedule`; weights are initializers (`weights=False` leaves them out
and keeps the file small: Netron then shows them as unnamed inputs). Each node's
`metadata_props` (ONNX IR 10) hold:

    item       index of its schedule item in execution order
    item_name  "group 'group_0' sub-group 3", "split 'split_0'"
    group, sub_group ("3 of 8"), fused (the fused kernel's name), mem_scope, core_bind

and its `doc_string` says the same in one line (older Netron versions show only that).
`item_metadata` adds figures per item (keyed by `item_name`), e.g. cycles from a per-item
report, as more metadata.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.context import Context
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.passes.schedule_verify import item_names

GRAPH_DOMAIN = "stc.graph"
SCHEDULE_DOMAIN = "stc.schedule"
METADATA_KEYS = ("item", "item_name", "group", "sub_group", "fused", "mem_scope", "core_bind")


def export(module: ModuleOp, path: str | os.PathLike[str], *, weights: bool = True,
           item_metadata: Mapping[str, Mapping[str, object]] | None = None) -> onnx.ModelProto:
    """Write `module`'s function (main, or its only one) as ONNX to `path`; returns the model."""
    model = to_onnx(module, weights=weights, item_metadata=item_metadata)
    onnx.save(model, os.fspath(path))
    return model


@dataclass(frozen=True)
class ExportNetron(ModulePass):
    """Write the module as ONNX for Netron and leave it unchanged (stc-run puts it after
    schedule-verify)."""

    name = "export-netron"
    file: str = "schedule.onnx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        export(op, self.file)


def to_onnx(module: ModuleOp, *, weights: bool = True,
            item_metadata: Mapping[str, Mapping[str, object]] | None = None) -> onnx.ModelProto:
    from stc_mlir.reference import find_function

    function = find_function(module)
    builder = _Builder(weights, item_metadata or {})
    builder.function(function)
    graph = helper.make_graph(builder.nodes, function.sym_name.data, builder.inputs, builder.outputs,
                              initializer=builder.initializers, value_info=builder.value_info)
    model = helper.make_model(graph, producer_name="stc-mlir", opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid(GRAPH_DOMAIN, 1), helper.make_opsetid(SCHEDULE_DOMAIN, 1)])
    model.ir_version = max(model.ir_version, 10)  # node metadata_props
    return model


class _Builder:
    def __init__(self, weights: bool, item_metadata: Mapping[str, Mapping[str, object]]):
        self.weights, self.item_metadata = weights, item_metadata
        self.nodes: list[onnx.NodeProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []
        self.names: dict[SSAValue, str] = {}
        self.used: set[str] = set()

    # --- names and types

    def name(self, value: SSAValue) -> str:
        if value not in self.names:
            owner = value.owner
            base = value.name_hint or (owner.name.split(".")[-1] if isinstance(owner, Operation) else "v")
            name, i = base, 1
            while name in self.used:
                name, i = f"{base}_{i}", i + 1
            self.used.add(name)
            self.names[value] = name
        return self.names[value]

    def typed(self, value: SSAValue, name: str | None = None) -> onnx.ValueInfoProto:
        t = value.type
        if not isinstance(t, TensorType):
            return helper.make_empty_tensor_value_info(name or self.name(value))
        return helper.make_tensor_value_info(name or self.name(value), _onnx_dtype(t), list(g.shape_of(t)))

    # --- the function

    def function(self, f: func.FuncOp) -> None:
        block = f.body.block
        for i, arg in enumerate(block.args):
            self.names[arg] = _arg_name(f, i)
            self.used.add(self.names[arg])
            self.inputs.append(self.typed(arg))
        labels = item_names(block)
        item = 0
        for op in block.ops:
            if isinstance(op, g.ConstantOp):
                self.constant(op)
            elif isinstance(op, func.ReturnOp):
                self.outputs.extend(self.typed(v) for v in op.operands)
            elif isinstance(op, s.ScheduledItem):
                self.item(op, item, _item_label(op, labels))
                item += 1
            else:  # a graph op outside any group (a graph-level module)
                self.node(op, {})

    def constant(self, op: g.ConstantOp) -> None:
        name = self.name(op.output)
        if self.weights:
            self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(op.numpy()), name))
        else:
            self.value_info.append(self.typed(op.output))

    def item(self, op: s.ScheduledItem, index: int, label: str) -> None:
        meta: dict[str, object] = {"item": index, "item_name": label}
        if isinstance(op, s.GroupOp):
            meta["group"] = op.group_name.data
            if op.split.data > 1:
                meta["sub_group"] = f"{op.index.data} of {op.split.data}"
        if (scope := op.properties.get("mem_scope")) is not None:
            meta["mem_scope"] = scope.data.name  # type: ignore[attr-defined]
        if (bind := op.properties.get("core_bind")) is not None:
            meta["core_bind"] = s.core_bind_text(bind.data)  # type: ignore[attr-defined]
        meta.update(self.item_metadata.get(label, {}))
        if isinstance(op, s.GroupOp):
            self.group_body(op, meta)
        else:
            self.node(op, meta)

    def group_body(self, op: s.GroupOp, meta: dict[str, object]) -> None:
        for arg, value in zip(op.body.block.args, op.inputs):
            self.names[arg] = self.name(value)
        for inner in op.body_ops():
            if isinstance(inner, s.GroupOp):  # a fused kernel inside the group
                self.group_body(inner, {**meta, "fused": inner.group_name.data})
            else:
                self.node(inner, meta)
        self.names[op.output] = self.name(op.yield_op.value)

    def node(self, op: Operation, meta: dict[str, object]) -> None:
        domain = SCHEDULE_DOMAIN if op.name.startswith("schedule.") else GRAPH_DOMAIN
        op_type = op.name.split(".", 1)[1]
        outputs = [self.name(r) for r in op.results]
        node = helper.make_node(op_type, [self.name(v) for v in op.operands], outputs,
                                name=f"{meta.get('item_name', 'graph')}/{outputs[0] if outputs else op_type}",
                                domain=domain, **_attributes(op))
        for key, value in meta.items():
            entry = node.metadata_props.add()
            entry.key, entry.value = key, str(value)
        if meta:
            node.doc_string = ", ".join(f"{k} {v}" for k, v in meta.items() if k != "item")
        self.nodes.append(node)
        self.value_info.extend(self.typed(r) for r in op.results)


def _item_label(op: s.ScheduledItem, labels: Mapping[Operation, str]) -> str:
    if isinstance(op, s.GroupOp):
        return op.label
    return f"{s.op_kind(op)} '{labels[op]}'"


def _arg_name(f: func.FuncOp, i: int) -> str:
    """The model input's name (`graph.name`), else the argument's SSA name."""
    attrs = f.arg_attrs.data[i].data if f.arg_attrs is not None else {}  # type: ignore[union-attr]
    name = attrs.get("graph.name")
    if name is not None:
        return name.data  # type: ignore[attr-defined]
    return f.body.block.args[i].name_hint or f"arg{i}"


def _onnx_dtype(t: TensorType) -> int:
    return helper.np_dtype_to_tensor_dtype(g.numpy_dtype(t.element_type)) or TensorProto.UNDEFINED


def _attributes(op: Operation) -> dict[str, object]:
    """An op's properties as ONNX attributes (ints, floats, strings and their lists)."""
    if isinstance(op, g.GraphOp):
        values = op.props()
    elif isinstance(op, s.SplitOp):
        values = {"parts": len(op.outputs)}
    else:
        values = {}
    out: dict[str, object] = {}
    for key, value in values.items():
        if value is None or key in ("mem_scope", "core_bind"):
            continue
        if isinstance(value, bool | np.bool_):
            out[key] = int(value)
        elif isinstance(value, int | float | str):
            out[key] = value
        elif isinstance(value, list | tuple) and all(isinstance(v, int | float) for v in value) and value:
            out[key] = list(value)
        else:
            out[key] = str(value)
    return out
