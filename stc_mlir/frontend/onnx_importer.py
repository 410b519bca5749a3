"""ONNX -> graph dialect.

The importer walks the ONNX graph in topological order keeping, for every tensor name,
either a *known* numpy value (initializers, Constant nodes and everything computed only
from them: the Shape/Gather/Concat/Unsqueeze/Cast chains exported models carry) or an SSA
value of the function being built. Known values are folded at import time and become
`graph.constant`s only where a runtime op uses them. Per-operator conversion lives in
`onnx_ops.py`, graph rewrites on the ONNX level (decomposed LayerNorm) in `onnx_patterns.py`,
the import state in `onnx_context.py`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Region

from stc_mlir import fp16_range
from stc_mlir.dialects import graph as g
from stc_mlir.frontend import onnx_ops, onnx_patterns
from stc_mlir.frontend.onnx_validate import check_graph_inputs, check_model
from stc_mlir.frontend.onnx_context import Importer, OnnxImportError, RuntimeValueError  # noqa: F401  (re-exported)
from stc_mlir.reference import NAME_ATTR, VALID_AXIS_ATTR, VALID_COUNT_ATTR


def load_model(model_or_path: onnx.ModelProto | str | os.PathLike) -> tuple[onnx.ModelProto, str]:
    """Read an ONNX file (with its external data) with errors that name the file."""
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path, model_or_path.graph.name or "<model>"
    path = os.fspath(model_or_path)
    if not os.path.isfile(path):
        raise OnnxImportError(f"cannot open ONNX model '{path}': no such file")
    try:
        model = onnx.load(path)
    except Exception as e:  # protobuf DecodeError, truncated files, bad external data
        raise OnnxImportError(f"cannot read ONNX model '{path}': {type(e).__name__}: {e}".rstrip(": ")) from None
    if not model.graph.node and not model.graph.output:
        raise OnnxImportError(f"'{path}' is not an ONNX model (no graph found)")
    return model, path


def _input_shape(
    info: onnx.ValueInfoProto, shape: Mapping[str, Sequence[int]] | None, source: str
) -> tuple[int, ...]:
    if shape and info.name in shape:
        dims = tuple(int(d) for d in shape[info.name])
        if any(d < 1 for d in dims):
            raise OnnxImportError(f"{source}: shape {'x'.join(map(str, dims))} given for input '{info.name}' "
                                  "has a dimension < 1; every dimension must be positive")
        return dims
    tt = info.type.tensor_type
    if not tt.HasField("shape"):
        raise OnnxImportError(f"{source}: input '{info.name}' has no shape; pass shape={{'{info.name}': [...]}}")
    dims = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(d.dim_value)
        else:
            sym = d.dim_param or "?"
            raise OnnxImportError(
                f"{source}: input '{info.name}' has a dynamic dimension {i} ('{sym}'); "
                f"fix it with shape={{'{info.name}': [...]}} (stc-import --shape {info.name}=...)"
            )
    return tuple(dims)


def import_onnx(
    model_or_path: onnx.ModelProto | str | os.PathLike,
    shape: Mapping[str, Sequence[int]] | None = None,
    dtype: str = "float16",
    values: Mapping[str, np.ndarray] | None = None,
    notes: list[str] | None = None,
    source: str | None = None,
) -> ModuleOp:
    """Import an ONNX model as a graph-dialect module with one function `@main`.

    `shape` fixes input shapes by input name (dynamic or batch dimensions); `dtype`
    "float16" stores float tensors as f16 (weights converted), "float32" keeps them.
    Model input/output names are kept as `graph.name` argument/result attributes.
    `values` fixes model inputs to constant values (they stop being arguments): what a
    runtime that knows them does for inputs that determine shapes (see RuntimeValueError).
    `notes` (a list) receives what the import folded away (training-mode no-ops...).
    `source` names the model in error messages (default: the path, or the graph's name).
    An output whose size depends on the data (NonMaxSuppression, TopK with a k computed at
    run time) is a static upper bound with a `graph.valid_count` result attribute naming
    the result holding the count (and `graph.valid_axis` if it does not count rows).
    """
    model, loaded_from = load_model(model_or_path)
    source = source or loaded_from
    imp = Importer(model, dtype, source)
    graph = model.graph
    check_graph_inputs(source, graph)
    fixed = dict(values or {})
    unknown_values = set(fixed) - {i.name for i in graph.input}
    if unknown_values:
        raise OnnxImportError(f"{source}: values given for unknown input(s) {sorted(unknown_values)}")
    for name, array in fixed.items():
        imp.known[name] = np.asarray(array)
    for init in graph.initializer:
        try:
            imp.known[init.name] = numpy_helper.to_array(init, base_dir=os.path.dirname(source))
        except Exception as e:
            raise OnnxImportError(f"{source}: cannot read initializer '{init.name}': {e}") from None
    unknown_shapes = set(shape or {}) - {i.name for i in graph.input}
    if unknown_shapes:
        raise OnnxImportError(
            f"{source}: shape given for unknown input(s) {sorted(unknown_shapes)}; "
            f"inputs are {[i.name for i in graph.input if i.name not in imp.known]}"
        )
    arg_types, arg_names = [], []
    for info in graph.input:
        if info.name in imp.known:
            continue  # old exporters list initializers as inputs too
        imp.graph_inputs.add(info.name)
        if not info.type.HasField("tensor_type"):
            kind = info.type.WhichOneof("value") or "untyped"
            raise OnnxImportError(f"{source}: input '{info.name}' has type {kind.removesuffix('_type')}, "
                                  "not tensor; only tensors are supported")
        elem = info.type.tensor_type.elem_type
        try:
            np_dtype = onnx.helper.tensor_dtype_to_np_dtype(elem) if elem else np.dtype(np.float32)
        except (KeyError, ValueError):
            np_dtype = None
        if np_dtype is None or np.dtype(np_dtype) == object:
            raise OnnxImportError(f"{source}: input '{info.name}' has ONNX element type "
                                  f"{onnx.TensorProto.DataType.Name(elem)}, which is not supported")
        arg_types.append(g.tensor(_input_shape(info, shape, source),
                                  imp.element_type(np_dtype, f"input '{info.name}'")))
        arg_names.append(info.name)
    for name, t in zip(arg_names, arg_types):
        arg = imp.block.insert_arg(t, len(imp.block.args))
        imp.bind(name, arg)

    masks = _saturate_masks(imp) if imp.float_type == g.f16 else {}
    nodes = onnx_patterns.fuse_decomposed_layer_norm(
        list(graph.node), imp.known, {o.name for o in graph.output}
    )
    for node in nodes:
        imp.node = node
        if node.domain not in ("", "ai.onnx", onnx_patterns.DOMAIN):
            raise imp.error(f"operator domain '{node.domain}' is not supported")
        onnx_ops.convert(imp, node)
        if node.op_type == "Constant" and node.output[0] in masks:
            _saturate(imp, node.output[0], masks[node.output[0]])
    imp.node = None

    if notes is not None:
        notes.extend(imp.notes)
    results = [imp.value(o.name) for o in graph.output]
    names = [o.name for o in graph.output]
    found = {n: g.shape_of(v.type) for n, v in [*zip(arg_names, imp.block.args), *zip(names, results)]}
    check_model(source, model, found)  # after our per-node checks: their messages are more precise
    extra = {}
    for name in list(names):
        if name in imp.bounded:
            count, axis = imp.bounded[name]
            extra[name] = (count, axis)
            if count not in names:
                results.append(imp.value(count))
                names.append(count)
    imp.builder.insert(func.ReturnOp(*results))
    function = func.FuncOp(
        "main", ([a.type for a in imp.block.args], [r.type for r in results]), Region(imp.block),
        arg_attrs=_name_attrs(arg_names), res_attrs=_name_attrs(names, extra),
    )
    return ModuleOp([function])


def _saturate_masks(imp: Importer) -> dict[str, str]:
    """Saturate the initializers that are additive attention masks beyond fp16's range
    (`fp16_range.additive_masks`: -1e30 becomes -10000); returns every such constant (the
    Constant nodes among them are saturated when the node is imported)."""
    graph = imp.model.graph
    constants = [("initializer", i.name, imp.known[i.name]) for i in graph.initializer]
    constants += [("constant", n.output[0], numpy_helper.to_array(a.t)) for n in graph.node
                  if n.op_type == "Constant" for a in n.attribute if a.name == "value" and a.HasField("t")]
    masks = fp16_range.additive_masks(imp.model, constants)
    for name, softmax in masks.items():
        if name in imp.known:
            _saturate(imp, name, softmax)
    return masks


def _saturate(imp: Importer, name: str, softmax: str) -> None:
    array = imp.known[name]
    largest = float(np.abs(array[np.isfinite(array)]).max())
    imp.known[name] = fp16_range.saturate_mask(array)
    imp.note(f"'{name}' (largest magnitude {largest:.6g}) is an additive attention mask of Softmax "
             f"'{softmax}': its values beyond fp16's range are saturated to "
             f"+/-{fp16_range.MASK_FILL:g} (exp underflows to 0 all the same)")


def _name_attrs(names: Sequence[str], bounded: Mapping[str, tuple[str, int]] | None = None):
    attrs = []
    for n in names:
        d = {NAME_ATTR: StringAttr(n)}
        if bounded and n in bounded:
            count, axis = bounded[n]
            d[VALID_COUNT_ATTR] = StringAttr(count)
            if axis:
                d[VALID_AXIS_ATTR] = IntegerAttr(axis, 64)
        attrs.append(DictionaryAttr(d))
    return ArrayAttr(attrs)
