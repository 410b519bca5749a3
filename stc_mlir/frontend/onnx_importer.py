"""ONNX -> graph dialect.

The importer walks the ONNX graph in topological order keeping, for every tensor name,
either a *known* numpy value (initializers, Constant nodes and everything computed only
from them: the Shape/Gather/Concat/Unsqueeze/Cast chains exported models carry) or an SSA
value of the function being built. Known values are folded at import time and become
`graph.constant`s only where a runtime op uses them. Per-operator conversion lives in
`onnx_ops.py`, graph rewrites on the ONNX level (decomposed LayerNorm) in `onnx_patterns.py`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Region, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.errors import StcError
from stc_mlir.reference import NAME_ATTR

MIN_OPSET, MAX_OPSET = 9, 21
DTYPES = ("float16", "float32")


class OnnxImportError(StcError):
    """The model cannot be imported; the message names the node, op type and opset."""


class Importer:
    """State of one import: known constants, SSA values and the function body builder."""

    def __init__(self, model: onnx.ModelProto, dtype: str, source: str):
        if dtype not in DTYPES:
            raise OnnxImportError(f"dtype must be one of {DTYPES}, got '{dtype}'")
        self.model = model
        self.source = source
        self.float_type = g.f16 if dtype == "float16" else g.f32
        self.opset = _default_opset(model, source)
        self.known: dict[str, np.ndarray] = {}
        self.values: dict[str, SSAValue] = {}
        self.constants: dict[int, SSAValue] = {}  # id(array) -> materialised constant
        self.block = Block()
        self.builder = Builder(InsertPoint.at_end(self.block))
        self.node: onnx.NodeProto | None = None

    # -- values ---------------------------------------------------------------

    def element_type(self, dtype: np.dtype):
        """IR element type for a numpy dtype, mapping float32/64 to the import float type."""
        if np.issubdtype(dtype, np.floating):
            return self.float_type
        return g.element_type_of(np.int64 if dtype == np.int32 else dtype)

    def is_known(self, name: str) -> bool:
        return name in self.known

    def value(self, name: str) -> SSAValue:
        """The SSA value for a tensor name, materialising a known constant if needed."""
        if name in self.values:
            return self.values[name]
        if name in self.known:
            array = self.known[name]
            key = id(array)
            if key not in self.constants:
                stored = array.astype(g.numpy_dtype(self.element_type(array.dtype)), copy=False)
                op = self.builder.insert(g.ConstantOp.from_numpy(stored))
                op.output.name_hint = _hint(name)
                self.constants[key] = op.output
            return self.constants[key]
        raise self.error(f"input '{name}' is not produced by any earlier node, initializer or graph input")

    def tensor_type(self, name: str) -> TensorType:
        if name in self.values:
            t = self.values[name].type
            assert isinstance(t, TensorType)
            return t
        array = self.known[name]
        return g.tensor(array.shape, self.element_type(array.dtype))

    def shape(self, name: str) -> tuple[int, ...]:
        return g.shape_of(self.tensor_type(name))

    def const(self, name: str, what: str) -> np.ndarray:
        """A value that must be known at import time (a shape, axes, pads...)."""
        if name not in self.known:
            raise self.error(f"{what} ('{name}') must be a constant, but it is computed at run time")
        return self.known[name]

    def bind(self, name: str, value: SSAValue | np.ndarray) -> None:
        if isinstance(value, np.ndarray):
            self.known[name] = value
        else:
            if value.name_hint is None:
                value.name_hint = _hint(name)
            self.values[name] = value

    def emit(self, op_class: type[g.GraphOp], *operands, **props):
        """Build a graph op with inferred types; shape errors name the ONNX node."""
        try:
            op = op_class.make(*operands, **props)
        except g.ShapeError as e:
            raise self.error(str(e)) from None
        return self.builder.insert(op)

    def error(self, message: str) -> OnnxImportError:
        node = self.node
        where = f"node '{node.name or node.output[0]}' ({node.op_type}, opset {self.opset})" if node else "graph"
        return OnnxImportError(f"{self.source}: {where}: {message}")


def _hint(name: str) -> str | None:
    text = re.sub(r"[^\w$.-]", "_", name)
    if not text:
        return None
    return text if re.match(r"[A-Za-z_$.-]", text) else f"v{text}"


def _default_opset(model: onnx.ModelProto, source: str) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            if not MIN_OPSET <= imp.version <= MAX_OPSET:
                raise OnnxImportError(
                    f"{source}: opset {imp.version} is not supported (supported: {MIN_OPSET} to {MAX_OPSET})"
                )
            return imp.version
    raise OnnxImportError(f"{source}: the model imports no default-domain (ai.onnx) opset")


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
        return tuple(int(d) for d in shape[info.name])
    tt = info.type.tensor_type
    if not tt.HasField("shape"):
        raise OnnxImportError(f"{source}: input '{info.name}' has no shape; pass shape={{'{info.name}': [...]}}")
    dims = []
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
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
) -> ModuleOp:
    """Import an ONNX model as a graph-dialect module with one function `@main`.

    `shape` fixes input shapes by input name (dynamic or batch dimensions); `dtype`
    "float16" stores float tensors as f16 (weights converted), "float32" keeps them.
    Model input/output names are kept as `graph.name` argument/result attributes.
    """
    from stc_mlir.frontend import onnx_ops, onnx_patterns

    model, source = load_model(model_or_path)
    imp = Importer(model, dtype, source)
    graph = model.graph
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
        elem = info.type.tensor_type.elem_type
        np_dtype = onnx.helper.tensor_dtype_to_np_dtype(elem) if elem else np.dtype(np.float32)
        arg_types.append(g.tensor(_input_shape(info, shape, source), imp.element_type(np_dtype)))
        arg_names.append(info.name)
    for name, t in zip(arg_names, arg_types):
        arg = imp.block.insert_arg(t, len(imp.block.args))
        imp.bind(name, arg)

    nodes = onnx_patterns.fuse_decomposed_layer_norm(
        list(graph.node), imp.known, {o.name for o in graph.output}
    )
    for node in nodes:
        imp.node = node
        if node.domain not in ("", "ai.onnx", onnx_patterns.DOMAIN):
            raise imp.error(f"operator domain '{node.domain}' is not supported")
        onnx_ops.convert(imp, node)
    imp.node = None

    results = [imp.value(o.name) for o in graph.output]
    imp.builder.insert(func.ReturnOp(*results))
    function = func.FuncOp(
        "main", ([a.type for a in imp.block.args], [r.type for r in results]), Region(imp.block),
        arg_attrs=_name_attrs(arg_names), res_attrs=_name_attrs([o.name for o in graph.output]),
    )
    return ModuleOp([function])


def _name_attrs(names: Sequence[str]):
    from xdsl.dialects.builtin import ArrayAttr

    return ArrayAttr([DictionaryAttr({NAME_ATTR: StringAttr(n)}) for n in names])
