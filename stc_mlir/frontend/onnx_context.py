"""The state of one ONNX import, shared by the driver (`onnx_importer`) and the
per-operator converters (`onnx_ops`): known values, SSA values, the builder, errors.

Element types: float tensors are stored at the import's float type (f16 or f32), except
bfloat16 and the float8 types, which are kept (their rounding is part of the model);
integers keep their width and signedness (i8...i64, ui8...ui64) and bool is i1, so
integer arithmetic stays exact at graph level. 2- and 4-bit integers are stored in 8 bits. Strings are refused, and casts to float4 and float8e8m0 (their rounding is not modelled).
"""

from __future__ import annotations

import re

import numpy as np
import onnx
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.errors import StcError

MIN_OPSET = 1
"""Opsets below 7 are read only for operators whose version is the same as at opset 7."""
FIRST_FULL_OPSET = 7
MAX_OPSET = onnx.defs.onnx_opset_version()
"""The newest default-domain opset the installed onnx package defines."""
DTYPES = ("float16", "float32")


class OnnxImportError(StcError):
    """The model cannot be imported; the message names the node, op type and opset."""


class RuntimeValueError(OnnxImportError):
    """A value that fixes a shape (Reshape's shape, TopK's k...) is computed at run time.

    `input` names the model input it is, when it is one: a caller that knows that input's
    value (the ONNX backend at run time) can import again with it fixed (`values=`)."""

    def __init__(self, message: str, input: str | None):
        super().__init__(message)
        self.input = input


KEPT_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
"""Narrow float types kept as they are (not widened to the import float type)."""


WIDENED_FLOATS = ("float8_e8m0fnu", "float4_e2m1fn")
"""Float types ONNX only casts from and to: widened exactly on input, refused as Cast targets."""


def is_float(dtype: np.dtype) -> bool:
    """Float of any width, including ml_dtypes' bfloat16 and float8 types."""
    dtype = np.dtype(dtype)
    return np.issubdtype(dtype, np.floating) or dtype.name.startswith(("bfloat16", "float8"))


class Importer:
    """State of one import: known constants, SSA values and the function body builder."""

    def __init__(self, model: onnx.ModelProto, dtype: str, source: str):
        if dtype not in DTYPES:
            raise OnnxImportError(f"dtype must be one of {DTYPES}, got '{dtype}'")
        self.model = model
        self.source = source
        self.float_type = g.f16 if dtype == "float16" else g.f32
        self.opset = default_opset(model, source)
        self.known: dict[str, np.ndarray] = {}
        self.values: dict[str, SSAValue] = {}
        self.graph_inputs: set[str] = set()
        # id(array) -> (the array, kept alive so that its id is not reused; its constant)
        self.constants: dict[int, tuple[np.ndarray, SSAValue]] = {}
        self.block = Block()
        self.builder = Builder(InsertPoint.at_end(self.block))
        self.node: onnx.NodeProto | None = None
        self.bounded: dict[str, tuple[str, int]] = {}
        """Data-dependent outputs: tensor name -> (name of its valid count, the axis it counts)."""
        self.notes: list[str] = []
        """What the import dropped or changed on the way (inference-only no-ops)."""

    # -- values ---------------------------------------------------------------

    def element_type(self, dtype: np.dtype, what: str = "tensor"):
        """IR element type for a numpy dtype: floats map to the import float type, 2- and
        4-bit integers are stored in 8 bits."""
        dtype = np.dtype(dtype)
        if dtype.name in KEPT_FLOATS:
            return g.element_type_of(dtype)  # kept: its rounding is part of the model
        if is_float(dtype) or dtype.name in WIDENED_FLOATS:
            return self.float_type
        if dtype.name in ("int4", "int2"):
            return g.element_type_of(np.int8)
        if dtype.name in ("uint4", "uint2"):
            return g.element_type_of(np.uint8)
        try:
            return g.element_type_of(dtype)
        except g.ShapeError:
            raise self.error(f"{what} has element type {dtype}, which is not supported "
                             f"(supported: bool, int8-64, uint8-64, float16/32/64)") from None

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
                stored = array.astype(g.numpy_dtype(self.element_type(array.dtype, f"'{name}'")), copy=False)
                op = self.builder.insert(g.ConstantOp.from_numpy(stored))
                op.output.name_hint = hint(name)
                self.constants[key] = (array, op.output)
            return self.constants[key][1]
        raise self.error(f"input '{name}' is not produced by any earlier node, initializer or graph input")

    def tensor_type(self, name: str) -> TensorType:
        if name in self.values:
            t = self.values[name].type
            assert isinstance(t, TensorType)
            return t
        array = self.known[name]
        return g.tensor(array.shape, self.element_type(array.dtype, f"'{name}'"))

    def shape(self, name: str) -> tuple[int, ...]:
        return g.shape_of(self.tensor_type(name))

    def const(self, name: str, what: str) -> np.ndarray:
        """A value that must be known at import time (a shape, axes, pads...)."""
        if name not in self.known:
            origin = "it is a model input" if name in self.graph_inputs else "it is computed at run time"
            raise RuntimeValueError(
                self.error(f"{what} ('{name}') must be known at import time because it determines a "
                           f"shape, but {origin}").args[0],
                name if name in self.graph_inputs else None,
            )
        return self.known[name]

    def bind(self, name: str, value: SSAValue | np.ndarray) -> None:
        if isinstance(value, np.ndarray):
            self.known[name] = value
        else:
            if value.name_hint is None:
                value.name_hint = hint(name)
            self.values[name] = value

    def emit(self, op_class: type[g.GraphOp], *operands, **props):
        """Build a graph op with inferred types; shape errors name the ONNX node."""
        try:
            op = op_class.make(*operands, **props)
        except g.ShapeError as e:
            raise self.error(str(e)) from None
        return self.builder.insert(op)

    def note(self, message: str) -> None:
        self.notes.append(self.where() + ": " + message)

    def where(self) -> str:
        node = self.node
        if node is None:
            return "graph"
        return f"node '{node.name or node.output[0]}' ({node.op_type}, opset {self.opset})"

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"{self.source}: {self.where()}: {message}")


def hint(name: str) -> str | None:
    text = re.sub(r"[^\w$.-]", "_", name)
    if not text:
        return None
    return text if re.match(r"[A-Za-z_$.-]", text) else f"v{text}"


def default_opset(model: onnx.ModelProto, source: str) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            if not MIN_OPSET <= imp.version <= MAX_OPSET:
                raise OnnxImportError(
                    f"{source}: opset {imp.version} is not supported (supported: {MIN_OPSET} to {MAX_OPSET})"
                )
            return imp.version
    raise OnnxImportError(f"{source}: the model imports no default-domain (ai.onnx) opset")
