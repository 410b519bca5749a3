"""Validation of an ONNX model on import, so malformed models are refused with the node and
the values instead of being silently reinterpreted (an axis taken modulo the rank, a
`kernel_shape` that disagrees with the weight) or failing inside a converter.

`check_node` runs on every node before it is converted: against the operator schema the
model's opset selects, the number of inputs and outputs and the type of every known
attribute; against the operand shapes, `axis` attributes in range and the window
attributes of convolutions and pools against the weight and the spatial rank.
`check_model` runs `onnx.checker`'s full check (type constraints, unknown attributes,
strict shape inference) after the import, on the model without its weight data.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto

from stc_mlir.frontend.onnx_context import Importer, OnnxImportError

_TYPE_NAMES = {v: k for k, v in AttributeProto.AttributeType.items()}

AXIS_ON_OUTPUT_RANK = {"OneHot"}
"""Ops whose `axis` may also name the new axis they add: range [-rank-1, rank]."""
AXIS_UP_TO_RANK = {"Flatten"}
"""Ops whose `axis` may equal the rank: range [-rank, rank]."""
WINDOW_OPS = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "MaxPool", "AveragePool", "LpPool"}
WEIGHT_INPUT = {"Conv": 1, "ConvTranspose": 1, "ConvInteger": 1, "QLinearConv": 3}


def check_node(imp: Importer, node: onnx.NodeProto) -> None:
    """Refuse a node that its schema or its operand shapes make invalid."""
    try:
        schema = onnx.defs.get_schema(node.op_type, imp.opset, node.domain or "")
    except onnx.defs.SchemaError:
        return  # unknown operator: the converter lookup refuses it by name
    _check_arity(imp, node, schema)
    _check_attribute_types(imp, node, schema)
    if node.op_type in ("Cast", "EyeLike", "RandomNormal", "RandomUniform"):
        _check_element_type(imp, node)
    rank = _rank(imp, node.input[0]) if node.input and node.input[0] else None
    if rank is None:
        return
    _check_axis(imp, node, rank)
    if node.op_type in WINDOW_OPS:
        _check_window(imp, node, rank)
    if node.op_type in ("Gather", "GatherElements") and len(node.input) > 1:
        _check_constant_indices(imp, node, rank)


def _check_element_type(imp: Importer, node: onnx.NodeProto) -> None:
    """A `to` / `dtype` attribute must name an ONNX element type."""
    for attr in node.attribute:
        if attr.name in ("to", "dtype") and attr.type == AttributeProto.INT \
                and attr.i not in TensorProto.DataType.values():
            raise imp.error(f"attribute '{attr.name}' is {attr.i}, which is not an ONNX element type "
                            f"(TensorProto.DataType: 1 to {max(TensorProto.DataType.values())})")


def _check_constant_indices(imp: Importer, node: onnx.NodeProto, rank: int) -> None:
    """Constant indices must lie in [-d, d-1] of the gathered axis (ONNX leaves the result of
    an out-of-range index undefined; the chip would read another tensor's bytes)."""
    indices = imp.known.get(node.input[1])
    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
    if indices is None or indices.size == 0 or not np.issubdtype(np.asarray(indices).dtype, np.integer):
        return
    dim = _shape(imp, node.input[0])[axis % rank]
    lo, hi = int(np.min(indices)), int(np.max(indices))
    bad = hi if hi >= dim else lo if lo < -dim else None
    if bad is not None:
        raise imp.error(f"index {bad} in '{node.input[1]}' is out of range for axis {axis} of "
                        f"'{node.input[0]}' (size {dim}); valid: {-dim} to {dim - 1}")


def _check_arity(imp: Importer, node: onnx.NodeProto, schema) -> None:
    n_in, n_out = len(node.input), len(node.output)
    if not schema.min_input <= n_in <= schema.max_input:
        raise imp.error(f"has {n_in} input(s); {node.op_type}-{schema.since_version} takes "
                        f"{_range(schema.min_input, schema.max_input)}")
    for i, formal in enumerate(schema.inputs[:n_in]):
        if formal.option == formal.option.Single and node.input[i] == "":
            raise imp.error(f"required input {i} ('{formal.name}') is empty")
    if not schema.min_output <= n_out <= schema.max_output:
        raise imp.error(f"has {n_out} output(s); {node.op_type}-{schema.since_version} produces "
                        f"{_range(schema.min_output, schema.max_output)}")


def _range(lo: int, hi: int) -> str:
    if lo == hi:
        return str(lo)
    return f"at least {lo}" if hi >= 2**31 - 1 else f"{lo} to {hi}"


def _check_attribute_types(imp: Importer, node: onnx.NodeProto, schema) -> None:
    for attr in node.attribute:
        formal = schema.attributes.get(attr.name)
        if formal is None or attr.type == AttributeProto.UNDEFINED:
            continue
        expected = int(formal.type)
        if attr.type != expected:
            value = onnx.helper.get_attribute_value(attr)
            raise imp.error(f"attribute '{attr.name}' is {_TYPE_NAMES[attr.type]} {_show(value)}; "
                            f"{node.op_type}-{schema.since_version} expects {_TYPE_NAMES[expected]}")


def _show(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, bytes):
        return repr(value.decode(errors="replace"))
    return repr(value) if isinstance(value, (int, float, str)) else type(value).__name__


def _shape(imp: Importer, name: str) -> tuple[int, ...] | None:
    """The shape of a tensor seen so far (None: not produced yet, the converter says so);
    a known value's own, whatever its element type (folded strings have no IR type)."""
    if name in imp.known:
        return imp.known[name].shape
    if name in imp.values:
        return imp.shape(name)
    return None


def _rank(imp: Importer, name: str) -> int | None:
    shape = _shape(imp, name)
    return None if shape is None else len(shape)


def _check_axis(imp: Importer, node: onnx.NodeProto, rank: int) -> None:
    attr = next((a for a in node.attribute if a.name == "axis" and a.type == AttributeProto.INT), None)
    if attr is None:
        return
    lo, hi = -rank, rank - 1
    if node.op_type in AXIS_ON_OUTPUT_RANK:
        lo, hi = -rank - 1, rank
    elif node.op_type in AXIS_UP_TO_RANK:
        hi = rank
    if not lo <= attr.i <= hi:
        shape = "x".join(map(str, _shape(imp, node.input[0]))) or "scalar"
        raise imp.error(f"axis {attr.i} is out of range for input '{node.input[0]}' of rank {rank} "
                        f"({shape}); valid: {lo} to {hi}")


def _check_window(imp: Importer, node: onnx.NodeProto, rank: int) -> None:
    """kernel_shape against the weight; strides/dilations/pads lengths against the spatial rank."""
    spatial = rank - 2
    if spatial < 1:
        raise imp.error(f"input '{node.input[0]}' has rank {rank}; {node.op_type} needs at least 3 "
                        "(batch, channels, spatial)")
    attrs = {a.name: list(a.ints) for a in node.attribute if a.type == AttributeProto.INTS}
    kernel = attrs.get("kernel_shape")
    w = WEIGHT_INPUT.get(node.op_type)
    if w is not None and len(node.input) > w and node.input[w]:
        weight = _shape(imp, node.input[w])
        if weight is not None:
            if len(weight) != rank:
                raise imp.error(f"weight '{node.input[w]}' has rank {len(weight)} "
                                f"({'x'.join(map(str, weight))}); input '{node.input[0]}' has rank {rank}")
            if kernel is not None and list(weight[2:]) != kernel:
                raise imp.error(f"kernel_shape {kernel} does not match weight '{node.input[w]}' "
                                f"({'x'.join(map(str, weight))}: kernel {list(weight[2:])})")
    for name, length in (("kernel_shape", spatial), ("strides", spatial), ("dilations", spatial),
                         ("pads", 2 * spatial), ("output_padding", spatial)):
        value = attrs.get(name)
        if value is not None and len(value) != length:
            raise imp.error(f"{name} {value} has {len(value)} values; input '{node.input[0]}' has "
                            f"{spatial} spatial dims, so it needs {length}")
    for name in ("kernel_shape", "strides", "dilations"):
        if any(v < 1 for v in attrs.get(name, ())):
            raise imp.error(f"{name} {attrs[name]} must be positive")
    if any(v < 0 for v in attrs.get("pads", ())):
        raise imp.error(f"pads {attrs['pads']} must not be negative")


def check_graph_inputs(source: str, graph: onnx.GraphProto) -> None:
    """Every graph input named once (a duplicate would silently bind the first)."""
    seen: set[str] = set()
    for info in graph.input:
        if info.name in seen:
            raise OnnxImportError(f"{source}: graph input '{info.name}' is declared twice")
        seen.add(info.name)


SMALL_INITIALIZER = 64
"""Initializers up to this many elements stay in the model the checker sees (shape
inference may need their values: Reshape shapes, axes); larger ones become typed inputs."""


def check_model(source: str, model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """`onnx.checker.check_model(full_check=True)` (schemas, type constraints, strict shape
    inference) on the model without its weight data, so a ResNet-50 costs ~10 ms, not the
    ~250 ms of serialising 100 MB of weights. Refusals become one line naming the file.

    The checker insists on a shape for every graph input and output, which ONNX files often
    leave out; `shapes` (what the import found, by tensor name) fills them in."""
    try:
        onnx.checker.check_model(_skeleton(model, shapes), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        text = " ".join(str(e).replace("==> Context:", ";").split())
        raise OnnxImportError(f"{source}: rejected by onnx.checker: {text}") from None


def _with_shape(info: onnx.ValueInfoProto, shapes: dict[str, tuple[int, ...]]) -> onnx.ValueInfoProto:
    tt = info.type.tensor_type
    if not info.type.HasField("tensor_type") or tt.HasField("shape") or info.name not in shapes:
        return info
    return onnx.helper.make_tensor_value_info(info.name, tt.elem_type, shapes[info.name])


def _skeleton(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> onnx.ModelProto:
    graph = model.graph
    declared = {i.name for i in graph.input}
    small, large = [], []
    for t in graph.initializer:
        size = 1
        for d in t.dims:
            size *= d
        inline = size <= SMALL_INITIALIZER and t.data_location != onnx.TensorProto.EXTERNAL
        (small if inline else large).append(t)
    inputs = [_with_shape(i, shapes) for i in graph.input] + [onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                                  for t in large if t.name not in declared]
    out = onnx.ModelProto(ir_version=model.ir_version, producer_name=model.producer_name)
    out.opset_import.extend(model.opset_import)
    out.functions.extend(model.functions)
    out.graph.CopyFrom(onnx.helper.make_graph(graph.node, graph.name, inputs,
                                              [_with_shape(o, shapes) for o in graph.output], small,
                                              value_info=graph.value_info,
                                              sparse_initializer=graph.sparse_initializer))
    return out
