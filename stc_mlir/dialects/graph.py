"""The `graph` dialect: what the model computes.

Value-semantics ops on builtin `tensor<...>` types inside `func.func`, one op per ONNX-level
operator (the TensorTurbo operator table). Every op derives its result types from its
operand types and properties through one classmethod, `infer`, which serves both the
verifier and the builders (`Op.make(...)`), so the importer and hand-written IR obey the
same shape rules and errors name the shapes involved.

Layouts follow ONNX: activations NCHW, conv weights OIHW, 2-D pads (top, left, bottom, right).

Syntax (one generic custom form for all ops, MLIR-like):

    %y = graph.conv2d %x, %w bias %b residual %r {strides = array<i64: 2, 2>} : (...) -> T
    %z = graph.relu %y : tensor<1x64x56x56xf16>           // all types equal: short form
    %c = graph.constant dense<"0x3C00..."> : tensor<64xf16>
    %d = graph.constant #graph.extern<"model.weights.bin", 128, 18816> : tensor<64x3x7x7xf16>

Required single operands come first, comma-separated (a variadic operand is spelled the
same way); optional operands follow as `name %value`.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    IntAttr,
    Signedness,
    StringAttr,
    TensorType,
    BytesAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float8E4M3FNType,
    Float8E4M3FNUZType,
    Float8E5M2FNUZType,
    Float8E5M2Type,
    Float64Type,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    OptOperandDef,
    VarOperandDef,
    VarResultDef,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from stc_mlir import kernels, weights
from stc_mlir.errors import StcError


class ShapeError(StcError):
    """Operand types or properties that no result type can satisfy."""


# ----------------------------------------------------------------------------- helpers

Shape = tuple[int, ...]

_NUMPY_OF: dict[Attribute, type] = {
    f16: np.float16, f32: np.float32, f64: np.float64, i64: np.int64, i32: np.int32, i1: np.bool_,
    IntegerType(8): np.int8, IntegerType(16): np.int16,
    IntegerType(8, Signedness.UNSIGNED): np.uint8, IntegerType(16, Signedness.UNSIGNED): np.uint16,
    IntegerType(32, Signedness.UNSIGNED): np.uint32, IntegerType(64, Signedness.UNSIGNED): np.uint64,
}
try:  # float8 storage types (ml_dtypes comes with onnx)
    import ml_dtypes

    _NUMPY_OF.update({
        BFloat16Type(): ml_dtypes.bfloat16, Float8E4M3FNType(): ml_dtypes.float8_e4m3fn, Float8E4M3FNUZType(): ml_dtypes.float8_e4m3fnuz,
        Float8E5M2Type(): ml_dtypes.float8_e5m2, Float8E5M2FNUZType(): ml_dtypes.float8_e5m2fnuz,
    })
except ImportError:  # pragma: no cover
    pass
"""Storage of each element type: signless iN is signed, uiN unsigned, i1 is bool."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype storing elements of an IR element type."""
    try:
        return np.dtype(_NUMPY_OF[element_type])
    except KeyError:
        raise ShapeError(f"unsupported element type {element_type}") from None


def element_type_of(dtype: np.dtype | type) -> TypeAttribute:
    """The IR element type of a numpy dtype."""
    dtype = np.dtype(dtype)
    for attr, np_type in _NUMPY_OF.items():
        if np.dtype(np_type) == dtype:
            return attr  # type: ignore[return-value]
    raise ShapeError(f"unsupported numpy dtype {dtype}")


def tensor(shape: Sequence[int], element_type: Attribute) -> TensorType:
    return TensorType(element_type, [int(d) for d in shape])


def shape_of(t: Attribute) -> Shape:
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def _fmt_types(types: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in types)


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def _same_element_type(op_name: str, types: Sequence[TensorType]) -> Attribute:
    element_types = {t.element_type for t in types}
    if len(element_types) != 1:
        # no op name here: the verifier prefixes it (it used to print "graph.add: graph.add: ...")
        raise ShapeError(f"operand element types differ: {_fmt_types(types)}")
    return types[0].element_type


def broadcast_shapes(*shapes: Shape) -> Shape:
    """Numpy broadcasting of shapes, with an error naming the clashing dimension."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            shown = " and ".join("x".join(map(str, s)) or "scalar" for s in shapes)
            raise ShapeError(f"shapes {shown} do not broadcast: dimension {i} is {sorted(dims)}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _broadcasts_to(shape: Shape, target: Shape) -> bool:
    """Whether `shape` broadcasts one way to `target` (ONNX unidirectional broadcasting)."""
    return len(shape) <= len(target) and all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:  # a rank-0 tensor has no axis (ONNX: axis in [-r, r-1])
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _equal(default: object, value: object) -> bool:
    """Whether a property value is its default (and can be left out of the IR)."""
    if isinstance(default, tuple) and isinstance(value, list | tuple):
        return default == tuple(value)
    return default is not None and type(default) is type(value) and default == value


def to_python(attr: Attribute) -> object:
    """The Python value of a property: tuple of ints, int, float, bool or str."""
    if isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        return bool(value) if attr.type == i1 else int(value)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    return attr


def to_attribute(value: object) -> Attribute:
    """The property attribute for a Python value (see `to_python`)."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool | np.bool_):
        return BoolAttr.from_bool(bool(value))
    if isinstance(value, int | np.integer):
        return IntegerAttr(int(value), i64)
    if isinstance(value, float | np.floating):
        return FloatAttr(float(value), f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, tuple | list):
        if any(isinstance(v, float | np.floating) for v in value):
            return DenseArrayBase.from_list(f64, [float(v) for v in value])
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    raise TypeError(f"cannot make a property from {value!r}")


# ----------------------------------------------------------------------------- weights


@irdl_attr_definition
class ExternAttr(ParametrizedAttribute):
    """Constant data kept in a side-car file: `#graph.extern<"file", offset, nbytes>`.

    Relative paths are looked up next to the IR file that named them (see
    `stc_mlir.weights`), so a printed model and its weights move together.
    """

    name = "graph.extern"

    path: StringAttr = param_def(StringAttr)
    offset: IntAttr = param_def(IntAttr)
    nbytes: IntAttr = param_def(IntAttr)

    def __init__(self, path: str, offset: int, nbytes: int):
        super().__init__(StringAttr(path), IntAttr(offset), IntAttr(nbytes))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            path = parser.parse_str_literal()
            parser.parse_punctuation(",")
            offset = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(",")
            nbytes = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (StringAttr(path), IntAttr(offset), IntAttr(nbytes))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_string_literal(self.path.data)  # escapes '"' and '\' so the path parses back
        printer.print_string(f", {self.offset.data}, {self.nbytes.data}>")


def dense_from_numpy(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array`'s bytes (one copy into an immutable `bytes`)."""
    shape = np.shape(array)  # np.ascontiguousarray turns a 0-d array into shape (1,)
    array = np.ascontiguousarray(array)
    return DenseIntOrFPElementsAttr(
        tensor(shape, element_type_of(array.dtype)), BytesAttr(array.tobytes())
    )


# ----------------------------------------------------------------------------- op base


def _group_results(cls: type[IRDLOperation], result_types: Sequence[Attribute]) -> list:
    """Result types as `build` wants them: one list for a variadic result definition."""
    definition = cls.get_irdl_definition()
    if definition.results and isinstance(definition.results[0][1], VarResultDef):
        return [list(result_types)]
    return list(result_types)


class GraphOp(IRDLOperation, ABC):
    """Base of all graph ops: shared verification, builder and textual form."""

    DEFAULTS: ClassVar[Mapping[str, object]] = {}

    @classmethod
    def infer(cls, types: Sequence[TensorType], p: Mapping[str, object]) -> list[TensorType]:
        """Result types from operand types and Python property values."""
        return [types[0]]

    def props(self) -> dict[str, object]:
        """Property values as Python objects, defaults filled in."""
        values = dict(self.DEFAULTS)
        for name, attr in self.properties.items():
            if name != "operandSegmentSizes":
                values[name] = to_python(attr)
        return values

    @classmethod
    def make(cls, *operands: SSAValue | Sequence[SSAValue] | None, **props: object):
        """Build the op with inferred result types; raises ShapeError on bad operands."""
        prop_names = cls.get_irdl_definition().properties.keys()
        types = [
            v.type for arg in operands if arg is not None
            for v in ((arg,) if isinstance(arg, SSAValue) else arg)
        ]
        p = {**cls.DEFAULTS, **props}
        result_types = cls.infer(types, p)  # type: ignore[arg-type]
        properties = {
            k: to_attribute(v) for k, v in props.items()
            if k in prop_names and v is not None and not _equal(cls.DEFAULTS.get(k), v)
        }
        return cls._build(list(operands), result_types, properties)

    @classmethod
    def _build(cls, operands, result_types, properties):
        """Create the op; ops with optional operands override this to wrap them in lists."""
        return cls.build(
            operands=operands, result_types=_group_results(cls, result_types), properties=properties
        )

    def verify_(self) -> None:
        types = [o.type for o in self.operands]
        try:
            expected = self.infer(types, self.props())  # type: ignore[arg-type]
        except ShapeError as e:
            raise VerifyException(f"{self.name}: {e}") from None
        actual = [r.type for r in self.results]
        if list(expected) != actual:
            raise VerifyException(
                f"{self.name}: result type {_fmt_types(actual)} does not match "
                f"{_fmt_types(expected)} inferred from operands ({_fmt_types(types)})"
            )

    # -- textual form ---------------------------------------------------------

    def print(self, printer: Printer) -> None:
        definition = self.get_irdl_definition()
        positional: list[SSAValue] = []
        keyword: list[tuple[str, SSAValue]] = []
        for (name, d), values in zip(definition.operands, self._operand_groups(), strict=True):
            if isinstance(d, OptOperandDef):
                keyword.extend((name, v) for v in values)
            else:
                positional.extend(values)
        if positional:
            printer.print_string(" ")
            printer.print_list(positional, printer.print_operand)
        for name, value in keyword:
            printer.print_string(f" {name} ")
            printer.print_operand(value)
        attrs = {k: v for k, v in self.properties.items() if k != "operandSegmentSizes"}
        attrs.update(self.attributes)
        if attrs:
            printer.print_string(" ")
            printer.print_attr_dict(attrs)
        printer.print_string(" : ")
        operand_types = [o.type for o in self.operands]
        result_types = [r.type for r in self.results]
        everything = operand_types + result_types
        if len(result_types) == 1 and all(t == result_types[0] for t in everything):
            printer.print_attribute(result_types[0])
            return
        printer.print_string("(")
        printer.print_list(operand_types, printer.print_attribute)
        printer.print_string(") -> ")
        if len(result_types) == 1:
            printer.print_attribute(result_types[0])
        else:
            printer.print_string("(")
            printer.print_list(result_types, printer.print_attribute)
            printer.print_string(")")

    def _operand_groups(self) -> list[Sequence[SSAValue]]:
        definition = self.get_irdl_definition()
        sizes = self.properties.get("operandSegmentSizes")
        groups: list[Sequence[SSAValue]] = []
        start = 0
        variadic = [d for _, d in definition.operands if isinstance(d, VarOperandDef)]
        for i, (_, d) in enumerate(definition.operands):
            if sizes is not None:
                n = to_python(sizes)[i]  # type: ignore[index]
            elif isinstance(d, VarOperandDef):
                n = len(self.operands) - (len(definition.operands) - len(variadic))
            else:
                n = 1
            groups.append(self.operands[start : start + n])
            start += n
        return groups

    @classmethod
    def parse(cls, parser: Parser):
        definition = cls.get_irdl_definition()
        start = parser.pos
        unresolved = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
        ) or []
        optional_names = [n for n, d in definition.operands if isinstance(d, OptOperandDef)]
        keyword_values: dict[str, object] = {}
        while (kw := parser.parse_optional_keyword_in(optional_names)) is not None:
            if kw in keyword_values:
                parser.raise_error(f"{cls.name}: operand '{kw}' is given twice", start, parser.pos)
            keyword_values[kw] = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":", f" before the types of {cls.name}" + (
            f" (its optional operands are {', '.join(optional_names)})" if optional_names else ""))
        if parser.parse_optional_punctuation("(") is not None:
            operand_types = []
            if parser.parse_optional_punctuation(")") is None:
                operand_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
                parser.parse_punctuation(")")
            parser.parse_punctuation("->")
            if parser.parse_optional_punctuation("(") is not None:
                result_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
                parser.parse_punctuation(")")
            else:
                result_types = [parser.parse_type()]
        else:
            t = parser.parse_type()
            n_operands = len(unresolved) + len(keyword_values)
            operand_types, result_types = [t] * n_operands, [t]
        ordered = list(unresolved) + list(keyword_values.values())  # the written order, as the types are
        if len(ordered) != len(operand_types):
            parser.raise_error(
                f"{cls.name}: {len(ordered)} operands but {len(operand_types)} operand types",
                start, parser.pos,
            )
        values = [parser.resolve_operand(u, t) for u, t in zip(ordered, operand_types)]  # type: ignore[arg-type]
        # regroup into the op definition's operand order
        operands: list = []
        positional = iter(values[: len(unresolved)])
        keyword = dict(zip(keyword_values, values[len(unresolved):]))
        n_required = sum(1 for _, d in definition.operands if not isinstance(d, VarOperandDef))
        n_variadic = len(unresolved) - n_required
        for name, d in definition.operands:
            if isinstance(d, OptOperandDef):
                operands.append([keyword[name]] if name in keyword else [])
            elif isinstance(d, VarOperandDef):
                operands.append([next(positional) for _ in range(max(n_variadic, 0))])
            else:
                value = next(positional, None)
                if value is None:
                    parser.raise_error(f"{cls.name}: expected operand '{name}'", start, parser.pos)
                operands.append(value)
        if next(positional, None) is not None:
            parser.raise_error(f"{cls.name}: too many operands ({len(unresolved)})", start, parser.pos)
        prop_names = definition.properties.keys()
        properties = {k: v for k, v in attrs.items() if k in prop_names}
        attributes = {k: v for k, v in attrs.items() if k not in prop_names}
        op = cls.build(
            operands=operands, result_types=_group_results(cls, result_types), properties=properties
        )
        op.attributes.update(attributes)
        return op


# ----------------------------------------------------------------------------- constant


def _finite(value: DenseIntOrFPElementsAttr, raw: bytes) -> bool:
    """False if float bytes hold NaN/Inf: xDSL prints those as bit patterns (`0x7fc00000`)
    that its parser reads back as integers, so such constants are printed as hex bytes."""
    np_type = _NUMPY_OF.get(value.get_element_type())
    if np_type is None or not _is_float(value.get_element_type()):
        return True
    return bool(np.isfinite(np.frombuffer(raw, np_type)).all())


@irdl_op_definition
class ConstantOp(GraphOp):
    """A weight or other constant tensor, inline (`dense<...>`) or in a side-car file."""

    name = "graph.constant"

    value = prop_def(DenseIntOrFPElementsAttr | ExternAttr)
    output = result_def(TensorType)

    traits = traits_def(Pure(), ConstantLike())

    INLINE_LIST_LIMIT: ClassVar[int] = 16

    @staticmethod
    def from_numpy(array: np.ndarray) -> ConstantOp:
        attr = dense_from_numpy(array)
        return ConstantOp.build(properties={"value": attr}, result_types=[attr.type])

    @staticmethod
    def from_extern(attr: ExternAttr, result_type: TensorType) -> ConstantOp:
        return ConstantOp.build(properties={"value": attr}, result_types=[result_type])

    def numpy(self) -> np.ndarray:
        """The constant's value; zero-copy view of the attribute bytes or the mapped file."""
        t = self.output.type
        assert isinstance(t, TensorType)
        dtype = numpy_dtype(t.element_type)
        shape = shape_of(t)
        if isinstance(self.value, ExternAttr):
            return weights.read(self.value.path.data, self.value.offset.data, dtype, shape)
        data = self.value.data.data
        count = math.prod(shape)
        array = np.frombuffer(data, dtype=dtype)
        if array.size == 1 and count != 1:
            return np.broadcast_to(array.reshape(()), shape)
        return array.reshape(shape)

    def verify_(self) -> None:
        t = self.output.type
        assert isinstance(t, TensorType)
        if isinstance(self.value, DenseIntOrFPElementsAttr):
            if self.value.type != t:
                raise VerifyException(
                    f"graph.constant: value type {self.value.type} does not match result type {t}"
                )
        else:
            try:
                expected = math.prod(shape_of(t)) * numpy_dtype(t.element_type).itemsize
            except ShapeError as e:
                raise VerifyException(f"graph.constant: {self.value}: {e}") from None
            if self.value.nbytes.data != expected:
                raise VerifyException(
                    f"graph.constant: {self.value} holds {self.value.nbytes.data} bytes "
                    f"but {t} needs {expected}"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        value = self.value
        if (writer := weights.active_writer()) is not None and (data := self._data_to_write()) is not None:
            # weights go to the side-car file the printer writes (stc_mlir.weights)
            value = ExternAttr(writer.name, writer.put(data), len(data))
        if isinstance(value, DenseIntOrFPElementsAttr) and len(value) > self.INLINE_LIST_LIMIT:
            raw = value.data.data
            head = raw[: len(raw) // len(value)]
            if raw[len(head) : 2 * len(head)] == head and raw == head * len(value):
                # a splat stays one element: `dense<v>`, or its hex bytes for NaN/Inf
                if _finite(value, head):
                    DenseIntOrFPElementsAttr(tensor((), value.get_element_type()), BytesAttr(head)).print_without_type(printer)
                    printer.print_string(" : ")
                else:
                    printer.print_string(f'dense<"0x{head.hex().upper()}"> : ')
            else:
                # Hex straight from the bytes: printing element by element is far too slow for weights.
                printer.print_string(f'dense<"0x{raw.hex().upper()}"> : ')
            printer.print_attribute(value.type)
        elif isinstance(value, DenseIntOrFPElementsAttr) and not _finite(value, value.data.data):
            printer.print_string(f'dense<"0x{value.data.data.hex().upper()}"> : ')
            printer.print_attribute(value.type)
        elif isinstance(value, DenseIntOrFPElementsAttr):
            printer.print_attribute(value)
        else:
            printer.print_attribute(value)
            printer.print_string(" : ")
            printer.print_attribute(self.output.type)
        if self.attributes:
            printer.print_string(" ")
            printer.print_attr_dict(self.attributes)

    def _data_to_write(self) -> bytes | None:
        """The bytes a weight writer takes: an extern constant's, or an inline constant's of
        more than `weights.INLINE_LIMIT` bytes that is not a splat."""
        if isinstance(self.value, ExternAttr):
            return self.numpy().tobytes()
        raw = self.value.data.data
        if len(raw) <= weights.INLINE_LIMIT:
            return None
        count = len(self.value)
        return None if raw[: len(raw) // count] * count == raw else raw

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        start = parser.pos
        value = parser.parse_attribute()
        if isinstance(value, DenseIntOrFPElementsAttr):
            result_type = value.type
        elif isinstance(value, ExternAttr):
            parser.parse_punctuation(":", " and the result type after a #graph.extern value")
            result_type = parser.parse_type()
        else:
            parser.raise_error("graph.constant expects a dense<...> or #graph.extern<...> value", start, parser.pos)
        attrs = parser.parse_optional_attr_dict()
        op = cls.build(properties={"value": value}, result_types=[result_type])
        op.attributes.update(attrs)
        return op


# ----------------------------------------------------------------------------- elementwise


class UnaryOp(GraphOp, ABC):
    """Elementwise op of one tensor: the result has the operand's type.

    `ACCEPTS` says which element types: "float", "number" (integers too), "bool" or "any"."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())
    ACCEPTS: ClassVar[str] = "float"

    @classmethod
    def infer(cls, types, p):
        (t,) = types
        _check_accepts(cls.ACCEPTS, t)
        return [t]


def _is_bool(t: Attribute) -> bool:
    return t == i1


def _check_accepts(accepts: str, t: TensorType) -> None:
    e = t.element_type
    if accepts == "float" and not _is_float(e):
        raise ShapeError(f"expects a floating-point tensor, got {t}")
    if accepts == "number" and _is_bool(e):
        raise ShapeError(f"expects a numeric (not bool) tensor, got {t}")
    if accepts == "bool" and not _is_bool(e):
        raise ShapeError(f"expects a bool (i1) tensor, got {t}")


@irdl_op_definition
class IdentityOp(UnaryOp):
    name = "graph.identity"
    ACCEPTS: ClassVar[str] = "any"


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "graph.relu"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "graph.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "graph.tanh"


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "graph.erf"


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "graph.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "graph.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "graph.rsqrt"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "graph.reciprocal"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "graph.abs"
    ACCEPTS: ClassVar[str] = "number"


@irdl_op_definition
class NegOp(UnaryOp):
    name = "graph.neg"
    ACCEPTS: ClassVar[str] = "number"


@irdl_op_definition
class SignOp(UnaryOp):
    name = "graph.sign"
    ACCEPTS: ClassVar[str] = "number"


@irdl_op_definition
class CoshOp(UnaryOp):
    name = "graph.cosh"


@irdl_op_definition
class SinhOp(UnaryOp):
    name = "graph.sinh"


@irdl_op_definition
class SoftplusOp(UnaryOp):
    name = "graph.softplus"


@irdl_op_definition
class MishOp(UnaryOp):
    """x * tanh(softplus(x))."""

    name = "graph.mish"


@irdl_op_definition
class HardSwishOp(UnaryOp):
    """x * max(0, min(1, x / 6 + 1 / 2)) (MobileNetV3)."""

    name = "graph.hard_swish"


@irdl_op_definition
class HardSigmoidOp(UnaryOp):
    """max(0, min(1, alpha * x + beta))."""

    name = "graph.hard_sigmoid"
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {"alpha": 0.2, "beta": 0.5}


@irdl_op_definition
class NotOp(UnaryOp):
    name = "graph.not"
    ACCEPTS: ClassVar[str] = "bool"


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU, exact (`approximate = "none"`, erf based) or the tanh approximation."""

    name = "graph.gelu"
    approximate = opt_prop_def(StringAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {"approximate": "none"}

    @classmethod
    def infer(cls, types, p):
        if p["approximate"] not in ("none", "tanh"):
            raise ShapeError(f"approximate must be \"none\" or \"tanh\", got \"{p['approximate']}\"")
        return super().infer(types, p)


@irdl_op_definition
class ClipOp(UnaryOp):
    """Clamp to [min, max]; ReLU6 is clip{min = 0, max = 6}."""

    name = "graph.clip"
    min = prop_def(FloatAttr)
    max = prop_def(FloatAttr)

    @classmethod
    def infer(cls, types, p):
        if p["min"] > p["max"]:  # type: ignore[operator]
            raise ShapeError(f"min {p['min']} is greater than max {p['max']}")
        return super().infer(types, p)


@irdl_op_definition
class LeakyReluOp(UnaryOp):
    name = "graph.leaky_relu"
    alpha = opt_prop_def(FloatAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {"alpha": 0.01}


class BinaryOp(GraphOp, ABC):
    """Elementwise op of two tensors with numpy broadcasting."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        a, b = types
        element_type = _same_element_type(cls.name, types)
        return [tensor(broadcast_shapes(shape_of(a), shape_of(b)), element_type)]


@irdl_op_definition
class AddOp(BinaryOp):
    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    name = "graph.div"


@irdl_op_definition
class PowOp(BinaryOp):
    """Power; the exponent may have another element type (ONNX Pow-12 and later)."""

    name = "graph.pow"

    @classmethod
    def infer(cls, types, p):
        a, b = types
        if _is_bool(a.element_type) or _is_bool(b.element_type):
            raise ShapeError(f"expects numeric operands, got {_fmt_types(types)}")
        return [tensor(broadcast_shapes(shape_of(a), shape_of(b)), a.element_type)]


@irdl_op_definition
class MaximumOp(BinaryOp):
    name = "graph.maximum"


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "graph.minimum"


class CompareOp(BinaryOp, ABC):
    """Elementwise comparison of two tensors of one element type: a bool (i1) result."""

    @classmethod
    def infer(cls, types, p):
        (t,) = super().infer(types, p)
        return [tensor(shape_of(t), i1)]


@irdl_op_definition
class EqualOp(CompareOp):
    name = "graph.equal"


@irdl_op_definition
class LessOp(CompareOp):
    name = "graph.less"


@irdl_op_definition
class LessEqualOp(CompareOp):
    name = "graph.less_equal"


@irdl_op_definition
class GreaterOp(CompareOp):
    name = "graph.greater"


@irdl_op_definition
class GreaterEqualOp(CompareOp):
    name = "graph.greater_equal"


class LogicalOp(BinaryOp, ABC):
    """Elementwise logic of two bool (i1) tensors."""

    @classmethod
    def infer(cls, types, p):
        for t in types:
            _check_accepts("bool", t)
        return super().infer(types, p)


@irdl_op_definition
class AndOp(LogicalOp):
    name = "graph.and"


@irdl_op_definition
class OrOp(LogicalOp):
    name = "graph.or"


@irdl_op_definition
class XorOp(LogicalOp):
    name = "graph.xor"


@irdl_op_definition
class WhereOp(GraphOp):
    """`condition ? lhs : rhs` elementwise, all three broadcast (ONNX Where)."""

    name = "graph.where"
    condition = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        c, a, b = types
        _check_accepts("bool", c)
        element_type = _same_element_type(cls.name, [a, b])
        return [tensor(broadcast_shapes(shape_of(c), shape_of(a), shape_of(b)), element_type)]


@irdl_op_definition
class PReluOp(GraphOp):
    """x if x >= 0 else slope * x, slope broadcast to x."""

    name = "graph.prelu"
    input = operand_def(TensorType)
    slope = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        x, slope = types
        _same_element_type(cls.name, types)
        if not _broadcasts_to(shape_of(slope), shape_of(x)):
            raise ShapeError(f"slope {slope} does not broadcast to input {x}")
        return [x]


class VariadicOp(GraphOp, ABC):
    """An op of one or more tensors of one element type (`make` takes them as a list)."""

    inputs = var_operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def make(cls, inputs, **props):  # type: ignore[override]
        return super().make(list(inputs), **props)

    @classmethod
    def element_type(cls, types) -> Attribute:
        """The operands' common element type; ShapeError if there is none."""
        if not types:
            raise ShapeError("needs at least one operand")
        return _same_element_type(cls.name, types)


@irdl_op_definition
class SumOp(VariadicOp):
    """Sum of any number of tensors (ONNX Sum); canonicalised to a chain of adds."""

    name = "graph.sum"

    @classmethod
    def infer(cls, types, p):
        element_type = cls.element_type(types)
        return [tensor(broadcast_shapes(*(shape_of(t) for t in types)), element_type)]


# ----------------------------------------------------------------------------- matrix ops


@irdl_op_definition
class Conv2DOp(GraphOp):
    """2-D convolution (NCHW, OIHW) with an optional fused epilogue.

    The epilogue is the seeds' FuseConvAddBnRelu: `bias` (per output channel), then
    `residual` (a tensor of the result's shape), then `activation` ("none", "relu", "relu6").
    """

    name = "graph.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    residual = opt_operand_def(TensorType)
    output = result_def(TensorType)

    strides = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    dilations = opt_prop_def(DenseArrayBase)
    group = opt_prop_def(IntegerAttr)
    activation = opt_prop_def(StringAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1), "group": 1, "activation": "none"}
    ACTIVATIONS: ClassVar[tuple[str, ...]] = ("none", "relu", "relu6")

    @classmethod
    def make(cls, input, weight, bias=None, residual=None, **props):  # type: ignore[override]
        return super().make(input, weight, bias, residual, **props)

    @classmethod
    def _build(cls, operands, result_types, properties):
        x, w, b, r = operands
        return cls.build(
            operands=[x, w, [b] if b is not None else [], [r] if r is not None else []],
            result_types=result_types, properties=properties,
        )

    @classmethod
    def infer(cls, types, p):
        x, w = types[0], types[1]
        element_type = _same_element_type(cls.name, types)
        xs, ws = shape_of(x), shape_of(w)
        if len(xs) != 4 or len(ws) != 4:
            raise ShapeError(f"expects a 4-D input and weight, got {x} and {w}")
        strides, pads, dilations, group = p["strides"], p["pads"], p["dilations"], p["group"]
        if len(strides) != 2 or len(dilations) != 2 or len(pads) != 4:  # type: ignore[arg-type]
            raise ShapeError(f"strides {strides} and dilations {dilations} need 2 values, pads {pads} 4")
        if min(strides) < 1 or min(dilations) < 1 or min(pads) < 0:  # type: ignore[type-var]
            raise ShapeError(f"strides {strides} and dilations {dilations} must be >= 1, pads {pads} >= 0")
        n, c, h, wd = xs
        o, cg, kh, kw = ws
        if group < 1 or o % group:  # type: ignore[operator]
            raise ShapeError(f"group {group} must be >= 1 and divide the {o} output channels of weight {w}")
        if c != cg * group:  # type: ignore[operator]
            raise ShapeError(
                f"input {x} has {c} channels but weight {w} with group {group} expects "
                f"{cg} x {group} = {cg * group}"  # type: ignore[operator]
            )
        ho = kernels.window_output_size(h, kh, strides[0], pads[0], pads[2], dilations[0])  # type: ignore[index]
        wo = kernels.window_output_size(wd, kw, strides[1], pads[1], pads[3], dilations[1])  # type: ignore[index]
        if ho < 1 or wo < 1:
            raise ShapeError(f"kernel {kh}x{kw} does not fit input {x} with pads {pads}")
        out = tensor((n, o, ho, wo), element_type)
        if p["activation"] not in cls.ACTIVATIONS:
            raise ShapeError(f"activation must be one of {cls.ACTIVATIONS}, got \"{p['activation']}\"")
        for t in types[2:]:
            if shape_of(t) not in ((o,), shape_of(out)):
                raise ShapeError(f"bias must have {o} values and residual be {out}, got {t}")
        return [out]

    def verify_(self) -> None:
        super().verify_()
        if self.bias is not None and shape_of(self.bias.type) != (shape_of(self.output.type)[1],):
            raise VerifyException(f"graph.conv2d: bias {self.bias.type} must have one value per output channel")
        if self.residual is not None and self.residual.type != self.output.type:
            raise VerifyException(
                f"graph.conv2d: residual {self.residual.type} must match the result {self.output.type}"
            )


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """numpy.matmul's result shape (batched, broadcasting, 1-D promotion)."""
    if not a or not b:
        raise ShapeError("matmul operands must have rank >= 1")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ShapeError(f"contraction dimensions differ: {a2[-1]} (lhs {a}) vs {b2[-2]} (rhs {b})")
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2])
    except ShapeError as e:  # name the operands, not just their batch parts
        raise ShapeError(f"lhs {a} and rhs {b}: batch {e}") from None
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


@irdl_op_definition
class MatmulOp(GraphOp):
    """Matrix product with numpy.matmul semantics (batched, broadcasting)."""

    name = "graph.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        a, b = types
        element_type = _same_element_type(cls.name, types)
        return [tensor(matmul_shape(shape_of(a), shape_of(b)), element_type)]


@irdl_op_definition
class GemmOp(GraphOp):
    """ONNX Gemm: alpha * op(a) @ op(b) + beta * c; canonicalised to matmul + add."""

    name = "graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    output = result_def(TensorType)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    trans_a = opt_prop_def(BoolAttr)
    trans_b = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"alpha": 1.0, "beta": 1.0, "trans_a": False, "trans_b": False}

    @classmethod
    def make(cls, a, b, c=None, **props):  # type: ignore[override]
        return super().make(a, b, c, **props)

    @classmethod
    def _build(cls, operands, result_types, properties):
        a, b, c = operands
        return cls.build(operands=[a, b, [c] if c is not None else []],
                         result_types=result_types, properties=properties)

    @classmethod
    def infer(cls, types, p):
        element_type = _same_element_type(cls.name, types)
        a, b = shape_of(types[0]), shape_of(types[1])
        if len(a) != 2 or len(b) != 2:
            raise ShapeError(f"expects 2-D operands, got {types[0]} and {types[1]}")
        m, k = a[::-1] if p["trans_a"] else a
        k2, n = b[::-1] if p["trans_b"] else b
        if k != k2:
            raise ShapeError(f"contraction dimensions differ: {k} vs {k2} ({types[0]}, {types[1]})")
        if len(types) == 3 and not _broadcasts_to(shape_of(types[2]), (m, n)):
            raise ShapeError(f"c {types[2]} does not broadcast to {m}x{n}")
        return [tensor((m, n), element_type)]


# ----------------------------------------------------------------------------- normalisation


@irdl_op_definition
class SoftmaxOp(UnaryOp):
    name = "graph.softmax"
    axis = opt_prop_def(IntegerAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": -1}

    @classmethod
    def infer(cls, types, p):
        _axis(p["axis"], len(shape_of(types[0])))  # type: ignore[arg-type]
        return super().infer(types, p)


@irdl_op_definition
class LayerNormOp(GraphOp):
    """Normalise over the axes from `axis` to the end, then `* scale + bias`."""

    name = "graph.layer_norm"
    input = operand_def(TensorType)
    scale = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    epsilon = opt_prop_def(FloatAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": -1, "epsilon": 1e-5}

    @classmethod
    def make(cls, input, scale=None, bias=None, **props):  # type: ignore[override]
        return super().make(input, scale, bias, **props)

    @classmethod
    def _build(cls, operands, result_types, properties):
        x, s, b = operands
        return cls.build(operands=[x, [s] if s is not None else [], [b] if b is not None else []],
                         result_types=result_types, properties=properties)

    @classmethod
    def infer(cls, types, p):
        x = types[0]
        _same_element_type(cls.name, types)
        xs = shape_of(x)
        axis = _axis(p["axis"], len(xs))  # type: ignore[arg-type]
        for t in types[1:]:
            if not _broadcasts_to(shape_of(t), xs[axis:]):
                raise ShapeError(f"scale/bias {t} does not broadcast to the normalised shape {xs[axis:]}")
        return [x]


@irdl_op_definition
class BatchNormOp(GraphOp):
    """Inference batch normalisation over axis 1; folded into convs by graph-canonicalize."""

    name = "graph.batch_norm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    output = result_def(TensorType)
    epsilon = opt_prop_def(FloatAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"epsilon": 1e-5}

    @classmethod
    def infer(cls, types, p):
        x = types[0]
        _same_element_type(cls.name, types)
        xs = shape_of(x)
        if len(xs) < 2:
            raise ShapeError(f"expects rank >= 2, got {x}")
        for t in types[1:]:
            if shape_of(t) != (xs[1],):
                raise ShapeError(f"parameter {t} must have {xs[1]} values (channels of {x})")
        return [x]


# ----------------------------------------------------------------------------- pooling


class PoolOp(GraphOp, ABC):
    input = operand_def(TensorType)
    output = result_def(TensorType)
    kernel = prop_def(DenseArrayBase)
    strides = opt_prop_def(DenseArrayBase)
    pads = opt_prop_def(DenseArrayBase)
    ceil_mode = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        kernel, strides, pads = p["kernel"], p["strides"], p["pads"]
        dilations = p.get("dilations", (1, 1))
        if len(xs) != 4 or len(kernel) != 2 or len(strides) != 2 or len(pads) != 4:  # type: ignore[arg-type]
            raise ShapeError(f"expects a 4-D input, 2-D kernel/strides and 4 pads, got {x}, {kernel}, {strides}, {pads}")
        if len(dilations) != 2 or min(kernel) < 1 or min(strides) < 1 or min(dilations) < 1 or min(pads) < 0:  # type: ignore[arg-type,type-var]
            raise ShapeError(f"kernel {kernel}, strides {strides} and dilations {dilations} need 2 values >= 1, pads {pads} >= 0")
        n, c, h, w = xs
        ho = kernels.window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], p["ceil_mode"])  # type: ignore[index,arg-type]
        wo = kernels.window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], p["ceil_mode"])  # type: ignore[index,arg-type]
        if ho < 1 or wo < 1:
            raise ShapeError(f"window {kernel} does not fit input {x}")
        return [tensor((n, c, ho, wo), x.element_type)]


@irdl_op_definition
class MaxPoolOp(PoolOp):
    name = "graph.max_pool"
    dilations = opt_prop_def(DenseArrayBase)
    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "strides": (1, 1), "pads": (0, 0, 0, 0), "ceil_mode": False, "dilations": (1, 1)}


@irdl_op_definition
class AvgPoolOp(PoolOp):
    name = "graph.avg_pool"
    count_include_pad = opt_prop_def(BoolAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "strides": (1, 1), "pads": (0, 0, 0, 0), "ceil_mode": False, "count_include_pad": False}


@irdl_op_definition
class GlobalAvgPoolOp(GraphOp):
    name = "graph.global_avg_pool"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        if len(xs) < 3:
            raise ShapeError(f"expects rank >= 3, got {x}")
        return [tensor(xs[:2] + (1,) * (len(xs) - 2), x.element_type)]


# ----------------------------------------------------------------------------- reductions


class ReduceOp(GraphOp, ABC):
    """Reduce over `axes` (all axes if empty)."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = opt_prop_def(DenseArrayBase)
    keepdims = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axes": (), "keepdims": True}

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        axes = {_axis(a, len(xs)) for a in p["axes"]} or set(range(len(xs)))  # type: ignore[union-attr]
        shape = tuple(1 if i in axes else d for i, d in enumerate(xs) if p["keepdims"] or i not in axes)
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    name = "graph.reduce_mean"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    name = "graph.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    name = "graph.reduce_min"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    name = "graph.reduce_prod"


@irdl_op_definition
class ReduceL1Op(ReduceOp):
    name = "graph.reduce_l1"


@irdl_op_definition
class ReduceL2Op(ReduceOp):
    name = "graph.reduce_l2"


@irdl_op_definition
class ReduceSumSquareOp(ReduceOp):
    name = "graph.reduce_sum_square"


@irdl_op_definition
class ReduceLogSumOp(ReduceOp):
    name = "graph.reduce_log_sum"


@irdl_op_definition
class ReduceLogSumExpOp(ReduceOp):
    name = "graph.reduce_log_sum_exp"


class ArgReduceOp(GraphOp, ABC):
    """Index (i64) of the extreme value along `axis`; the last one on ties if
    `select_last_index`."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    keepdims = opt_prop_def(BoolAttr)
    select_last_index = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": 0, "keepdims": True, "select_last_index": False}

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        _check_accepts("number", x)
        xs = shape_of(x)
        axis = _axis(p["axis"], len(xs))  # type: ignore[arg-type]
        if xs[axis] == 0:
            raise ShapeError(f"axis {axis} of {x} is empty")
        shape = tuple(1 if i == axis else d for i, d in enumerate(xs) if p["keepdims"] or i != axis)
        return [tensor(shape, i64)]


@irdl_op_definition
class ArgMaxOp(ArgReduceOp):
    name = "graph.argmax"


@irdl_op_definition
class ArgMinOp(ArgReduceOp):
    name = "graph.argmin"


@irdl_op_definition
class TopKOp(GraphOp):
    """The `k` largest (or smallest) values along `axis` and their i64 indices, sorted;
    ties keep the lower index first."""

    name = "graph.topk"
    input = operand_def(TensorType)
    values = result_def(TensorType)
    indices = result_def(TensorType)
    k = prop_def(IntegerAttr)
    axis = opt_prop_def(IntegerAttr)
    largest = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": -1, "largest": True}

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        _check_accepts("number", x)
        xs = shape_of(x)
        axis = _axis(p["axis"], len(xs))  # type: ignore[arg-type]
        if not 0 <= p["k"] <= xs[axis]:  # type: ignore[operator]
            raise ShapeError(f"k {p['k']} is out of range for axis {axis} of {x}")
        shape = xs[:axis] + (p["k"],) + xs[axis + 1 :]  # type: ignore[operator]
        return [tensor(shape, x.element_type), tensor(shape, i64)]


# ----------------------------------------------------------------------------- data movement


class ResultShapedOp(GraphOp, ABC):
    """An op whose result type is spelled out; `shape`/`dtype` come from it."""

    input = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def props(self):
        p = super().props()
        p["shape"] = shape_of(self.output.type)
        p["dtype"] = self.output.type.element_type  # type: ignore[attr-defined]
        return p


@irdl_op_definition
class ReshapeOp(ResultShapedOp):
    name = "graph.reshape"

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        shape = tuple(p["shape"])  # type: ignore[arg-type]
        if math.prod(shape) != math.prod(shape_of(x)):
            raise ShapeError(f"cannot reshape {x} ({math.prod(shape_of(x))} elements) to "
                             f"{'x'.join(map(str, shape))} ({math.prod(shape)} elements)")
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class ExpandOp(ResultShapedOp):
    """Broadcast to a larger shape (ONNX Expand)."""

    name = "graph.expand"

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        shape = broadcast_shapes(shape_of(x), tuple(p["shape"]))  # type: ignore[arg-type]
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class CastOp(ResultShapedOp):
    """Convert to the result's element type; to a float8 type out-of-range values clamp to
    its largest finite value if `saturate` (ONNX Cast-19)."""

    name = "graph.cast"
    saturate = opt_prop_def(BoolAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {"saturate": True}

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        numpy_dtype(p["dtype"])  # type: ignore[arg-type]
        return [tensor(shape_of(x), p["dtype"])]  # type: ignore[arg-type]


@irdl_op_definition
class FlattenOp(GraphOp):
    name = "graph.flatten"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": 1}

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        axis = p["axis"] + len(xs) if p["axis"] < 0 else p["axis"]  # type: ignore[operator]  # ONNX: [-r, r]
        if not 0 <= axis <= len(xs):  # type: ignore[operator]
            raise ShapeError(f"axis {p['axis']} is out of range for {x}")
        return [tensor((math.prod(xs[:axis]), math.prod(xs[axis:])), x.element_type)]  # type: ignore[misc]


@irdl_op_definition
class SqueezeOp(GraphOp):
    name = "graph.squeeze"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        axes = {_axis(a, len(xs)) for a in p["axes"]}  # type: ignore[union-attr]
        for a in axes:
            if xs[a] != 1:
                raise ShapeError(f"cannot squeeze dimension {a} of size {xs[a]} in {x}")
        return [tensor([d for i, d in enumerate(xs) if i not in axes], x.element_type)]


@irdl_op_definition
class UnsqueezeOp(GraphOp):
    name = "graph.unsqueeze"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = list(shape_of(x))
        rank = len(xs) + len(p["axes"])  # type: ignore[arg-type]
        axes = sorted(_axis(a, rank) for a in p["axes"])  # type: ignore[union-attr]
        if len(set(axes)) != len(axes):
            raise ShapeError(f"repeated axes {p['axes']}")
        for a in axes:
            xs.insert(a, 1)
        return [tensor(xs, x.element_type)]


@irdl_op_definition
class TransposeOp(GraphOp):
    name = "graph.transpose"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    perm = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        perm = tuple(p["perm"])  # type: ignore[arg-type]
        if sorted(perm) != list(range(len(xs))):
            raise ShapeError(f"perm {list(perm)} is not a permutation of the {len(xs)} axes of {x}")
        return [tensor([xs[i] for i in perm], x.element_type)]


@irdl_op_definition
class ConcatOp(VariadicOp):
    name = "graph.concat"
    axis = prop_def(IntegerAttr)

    @classmethod
    def infer(cls, types, p):
        element_type = cls.element_type(types)
        first = shape_of(types[0])
        axis = _axis(p["axis"], len(first))  # type: ignore[arg-type]
        for t in types[1:]:
            s = shape_of(t)
            if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first)) if i != axis):
                raise ShapeError(f"operands {_fmt_types(types)} differ outside axis {axis}")
        total = sum(shape_of(t)[axis] for t in types)
        return [tensor(first[:axis] + (total,) + first[axis + 1 :], element_type)]


@irdl_op_definition
class SplitOp(GraphOp):
    name = "graph.split"
    input = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    axis = prop_def(IntegerAttr)
    sizes = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs = shape_of(x)
        axis = _axis(p["axis"], len(xs))  # type: ignore[arg-type]
        sizes = tuple(p["sizes"])  # type: ignore[arg-type]
        if sum(sizes) != xs[axis] or min(sizes, default=0) < 0:  # ONNX allows empty parts
            raise ShapeError(f"sizes {list(sizes)} do not partition dimension {axis} ({xs[axis]}) of {x}")
        return [tensor(xs[:axis] + (s,) + xs[axis + 1 :], x.element_type) for s in sizes]


def slice_bounds(dim: int, start: int, end: int, step: int) -> range:
    """The indices an ONNX Slice selects along one axis (negative and clamped bounds).

    Not Python's slice: with a negative step ONNX clamps a start below -dim to 0 (Python to
    "before 0"), so x[-5::-1] of 4 elements selects element 0 in ONNX and nothing in Python.
    """
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        return range(min(max(start, 0), dim), min(max(end, 0), dim), step)
    return range(min(max(start, 0), dim - 1), min(max(end, -1), dim - 1), step)


@irdl_op_definition
class SliceOp(GraphOp):
    """ONNX Slice with static starts/ends/axes/steps."""

    name = "graph.slice"
    input = operand_def(TensorType)
    output = result_def(TensorType)
    starts = prop_def(DenseArrayBase)
    ends = prop_def(DenseArrayBase)
    axes = prop_def(DenseArrayBase)
    steps = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        shape = list(shape_of(x))
        steps = p.get("steps") or (1,) * len(p["axes"])  # type: ignore[arg-type]
        if not len(p["starts"]) == len(p["ends"]) == len(p["axes"]) == len(steps):  # type: ignore[arg-type]
            raise ShapeError(f"starts {list(p['starts'])}, ends {list(p['ends'])}, axes {list(p['axes'])} "  # type: ignore[call-overload]
                             f"and steps {list(steps)} must have the same length")
        if len({_axis(a, len(shape)) for a in p["axes"]}) != len(p["axes"]):  # type: ignore[union-attr,arg-type]
            raise ShapeError(f"axes {list(p['axes'])} repeat an axis of {x}")  # type: ignore[call-overload]
        for start, end, axis, step in zip(p["starts"], p["ends"], p["axes"], steps):  # type: ignore[call-overload]
            if step == 0:
                raise ShapeError("step 0 is not allowed")
            a = _axis(axis, len(shape))
            shape[a] = len(slice_bounds(shape[a], start, end, step))
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class GatherOp(GraphOp):
    """ONNX Gather: take `indices` along `axis` (embedding lookup when axis = 0)."""

    name = "graph.gather"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": 0}

    @classmethod
    def infer(cls, types, p):
        data, idx = types
        if not isinstance(idx.element_type, IntegerType):
            raise ShapeError(f"indices must be integers, got {idx}")
        ds = shape_of(data)
        axis = _axis(p["axis"], len(ds))  # type: ignore[arg-type]
        return [tensor(ds[:axis] + shape_of(idx) + ds[axis + 1 :], data.element_type)]


# ----------------------------------------------------------------------------- indexing


@irdl_op_definition
class GatherElementsOp(GraphOp):
    """ONNX GatherElements: out[i][j] = data[indices[i][j]][j] along `axis` (torch.gather)."""

    name = "graph.gather_elements"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    axis = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": 0}

    @classmethod
    def infer(cls, types, p):
        data, idx = types
        if not isinstance(idx.element_type, IntegerType) or _is_bool(idx.element_type):
            raise ShapeError(f"indices must be integers, got {idx}")
        ds, js = shape_of(data), shape_of(idx)
        _axis(p["axis"], len(ds))  # type: ignore[arg-type]
        if len(ds) != len(js):
            raise ShapeError(f"indices {idx} must have the rank of data {data}")
        return [tensor(js, data.element_type)]


@irdl_op_definition
class GatherNDOp(GraphOp):
    """ONNX GatherND: index the leading dimensions of `input` (after `batch_dims`) with
    the last axis of `indices`."""

    name = "graph.gather_nd"
    input = operand_def(TensorType)
    indices = operand_def(TensorType)
    output = result_def(TensorType)
    batch_dims = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"batch_dims": 0}

    @classmethod
    def infer(cls, types, p):
        data, idx = types
        if not isinstance(idx.element_type, IntegerType) or _is_bool(idx.element_type):
            raise ShapeError(f"indices must be integers, got {idx}")
        ds, js = shape_of(data), shape_of(idx)
        b = p["batch_dims"]
        if not js or not 0 <= b < min(len(ds), len(js)) or ds[:b] != js[:b]:  # type: ignore[operator,misc]
            raise ShapeError(f"batch_dims {b} does not fit data {data} and indices {idx}")
        depth = js[-1]
        if b + depth > len(ds):  # type: ignore[operator]
            raise ShapeError(f"indices {idx} index {depth} dimensions, data {data} has {len(ds) - b} after the batch")  # type: ignore[operator]
        return [tensor(js[:-1] + ds[b + depth :], data.element_type)]  # type: ignore[operator]


@irdl_op_definition
class OneHotOp(GraphOp):
    """ONNX OneHot: `values[1]` where the index (negative counts from `depth`) is, else
    `values[0]`, in a new axis `axis` of size `depth`."""

    name = "graph.one_hot"
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    output = result_def(TensorType)
    depth = prop_def(IntegerAttr)
    axis = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"axis": -1}

    @classmethod
    def infer(cls, types, p):
        idx, values = types
        _check_accepts("number", idx)
        if shape_of(values) != (2,):
            raise ShapeError(f"values must hold 2 elements (off, on), got {values}")
        js = list(shape_of(idx))
        if p["depth"] < 1:  # type: ignore[operator]
            raise ShapeError(f"depth {p['depth']} must be >= 1")
        axis = _axis(p["axis"], len(js) + 1)  # type: ignore[arg-type]
        js.insert(axis, p["depth"])  # type: ignore[arg-type]
        return [tensor(js, values.element_type)]


def einsum_shape(equation: str, shapes: Sequence[Shape]) -> Shape:
    """The result shape of an explicit or implicit einsum equation (with `...`)."""
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ShapeError(f"equation '{equation}' has {len(terms)} operands, got {len(shapes)}")
    sizes: dict[str, int] = {}
    ellipsis: Shape = ()
    for term, shape in zip(terms, shapes):
        letters = term.replace("...", "")
        n_ell = len(shape) - len(letters)
        if ("..." not in term and n_ell != 0) or n_ell < 0:
            raise ShapeError(f"term '{term}' of '{equation}' does not match rank {len(shape)}")
        pos = term.find("...")
        if pos >= 0:
            ellipsis = broadcast_shapes(ellipsis, tuple(shape[pos : pos + n_ell]))
            shape = tuple(shape[:pos]) + tuple(shape[pos + n_ell :])
        for c, d in zip(letters, shape):
            if not c.isalpha():
                raise ShapeError(f"bad subscript '{c}' in '{equation}'")
            if sizes.get(c, d) != d and 1 not in (d, sizes[c]):
                raise ShapeError(f"subscript '{c}' is {sizes[c]} and {d} in '{equation}'")
            sizes[c] = max(sizes.get(c, d), d)
    if not _:
        counts = {c: lhs.count(c) for c in sizes}
        rhs = ("..." if ellipsis or "..." in lhs else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    out: list[int] = []
    head, dots, tail = rhs.partition("...")
    for c in head:
        if c not in sizes:
            raise ShapeError(f"output subscript '{c}' of '{equation}' is not an input subscript")
        out.append(sizes[c])
    if dots:
        out.extend(ellipsis)
    for c in tail:
        if c not in sizes:
            raise ShapeError(f"output subscript '{c}' of '{equation}' is not an input subscript")
        out.append(sizes[c])
    return tuple(out)


@irdl_op_definition
class EinsumOp(VariadicOp):
    """Einstein summation (numpy.einsum semantics) of operands of one element type."""

    name = "graph.einsum"
    equation = prop_def(StringAttr)

    @classmethod
    def infer(cls, types, p):
        element_type = cls.element_type(types)
        return [tensor(einsum_shape(str(p["equation"]), [shape_of(t) for t in types]), element_type)]


# ----------------------------------------------------------------------------- resampling


@irdl_op_definition
class ResizeOp(ResultShapedOp):
    """ONNX Resize to the result's shape: separable nearest / linear / cubic interpolation
    per axis. `scales` (one per axis) enter the coordinate transformation as ONNX says;
    `roi` (begins then ends, one per axis) is used by "tf_crop_and_resize" only."""

    name = "graph.resize"
    scales = prop_def(DenseArrayBase)
    mode = opt_prop_def(StringAttr)
    coordinate_transformation_mode = opt_prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)
    cubic_coeff_a = opt_prop_def(FloatAttr)
    exclude_outside = opt_prop_def(BoolAttr)
    extrapolation_value = opt_prop_def(FloatAttr)
    antialias = opt_prop_def(BoolAttr)
    roi = opt_prop_def(DenseArrayBase)
    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "mode": "nearest", "coordinate_transformation_mode": "half_pixel",
        "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75, "exclude_outside": False,
        "extrapolation_value": 0.0, "antialias": False, "roi": ()}
    MODES: ClassVar[tuple[str, ...]] = ("nearest", "linear", "cubic")
    COORDINATES: ClassVar[tuple[str, ...]] = (
        "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_crop_and_resize")
    NEAREST: ClassVar[tuple[str, ...]] = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

    @classmethod
    def infer(cls, types, p):
        (x,) = types
        xs, shape = shape_of(x), tuple(p["shape"])  # type: ignore[arg-type]
        for key, allowed in (("mode", cls.MODES), ("coordinate_transformation_mode", cls.COORDINATES),
                             ("nearest_mode", cls.NEAREST)):
            if p[key] not in allowed:
                raise ShapeError(f"{key} must be one of {', '.join(allowed)}, got \"{p[key]}\"")
        if len(shape) != len(xs) or len(p["scales"]) != len(xs):  # type: ignore[arg-type]
            raise ShapeError(f"scales {list(p['scales'])} and the result shape need one value per axis of {x}")  # type: ignore[call-overload]
        if p["coordinate_transformation_mode"] == "tf_crop_and_resize" and len(p["roi"]) != 2 * len(xs):  # type: ignore[arg-type]
            raise ShapeError(f"tf_crop_and_resize needs a roi of {2 * len(xs)} values, got {list(p['roi'])}")  # type: ignore[call-overload]
        if min(p["scales"], default=1) <= 0:  # type: ignore[type-var]
            raise ShapeError(f"scales {list(p['scales'])} must be > 0")  # type: ignore[call-overload]
        return [tensor(shape, x.element_type)]


@irdl_op_definition
class LRNOp(UnaryOp):
    """Local response normalisation across channels (AlexNet, GoogLeNet)."""

    name = "graph.lrn"
    size = prop_def(IntegerAttr)
    alpha = opt_prop_def(FloatAttr)
    beta = opt_prop_def(FloatAttr)
    bias = opt_prop_def(FloatAttr)
    DEFAULTS: ClassVar[Mapping[str, object]] = {"alpha": 1e-4, "beta": 0.75, "bias": 1.0}

    @classmethod
    def infer(cls, types, p):
        if len(shape_of(types[0])) < 3 or p["size"] < 1:  # type: ignore[operator]
            raise ShapeError(f"expects rank >= 3 and size >= 1, got {types[0]} and size {p['size']}")
        return super().infer(types, p)


# ----------------------------------------------------------------------------- detection


@irdl_op_definition
class RoiAlignOp(GraphOp):
    """ONNX RoiAlign: average or max of bilinear samples in each bin of each box
    (x1, y1, x2, y2 in input coordinates times `spatial_scale`)."""

    name = "graph.roi_align"
    input = operand_def(TensorType)
    rois = operand_def(TensorType)
    batch_indices = operand_def(TensorType)
    output = result_def(TensorType)
    output_height = opt_prop_def(IntegerAttr)
    output_width = opt_prop_def(IntegerAttr)
    sampling_ratio = opt_prop_def(IntegerAttr)
    spatial_scale = opt_prop_def(FloatAttr)
    mode = opt_prop_def(StringAttr)
    half_pixel = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "output_height": 1, "output_width": 1, "sampling_ratio": 0, "spatial_scale": 1.0,
        "mode": "avg", "half_pixel": True}

    @classmethod
    def infer(cls, types, p):
        x, rois, idx = types
        xs, rs, js = shape_of(x), shape_of(rois), shape_of(idx)
        if len(xs) != 4 or len(rs) != 2 or rs[1] != 4 or js != (rs[0],):
            raise ShapeError(f"expects a 4-D input, rois Nx4 and N batch indices, got {_fmt_types(types)}")
        if p["mode"] not in ("avg", "max"):
            raise ShapeError(f"mode must be \"avg\" or \"max\", got \"{p['mode']}\"")
        _same_element_type(cls.name, [x, rois])
        return [tensor((rs[0], xs[1], p["output_height"], p["output_width"]), x.element_type)]


@irdl_op_definition
class MaxRoiPoolOp(GraphOp):
    """ONNX MaxRoiPool: max over each bin of each roi (batch, x1, y1, x2, y2), rounded."""

    name = "graph.max_roi_pool"
    input = operand_def(TensorType)
    rois = operand_def(TensorType)
    output = result_def(TensorType)
    pooled_shape = prop_def(DenseArrayBase)
    spatial_scale = opt_prop_def(FloatAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {"spatial_scale": 1.0}

    @classmethod
    def infer(cls, types, p):
        x, rois = types
        xs, rs = shape_of(x), shape_of(rois)
        if len(xs) != 4 or len(rs) != 2 or rs[1] != 5 or len(p["pooled_shape"]) != 2:  # type: ignore[arg-type]
            raise ShapeError(f"expects a 4-D input, rois Nx5 and a 2-D pooled_shape, got {_fmt_types(types)}")
        _same_element_type(cls.name, types)
        return [tensor((rs[0], xs[1], *p["pooled_shape"]), x.element_type)]  # type: ignore[misc]


@irdl_op_definition
class NonMaxSuppressionOp(GraphOp):
    """ONNX NonMaxSuppression with a static upper bound: `selected` has room for every box
    that could be kept (batches x classes x min(boxes, max_output_boxes_per_class) rows of
    (batch, class, box)), its first `count` rows are the result, the rest are -1."""

    name = "graph.non_max_suppression"
    boxes = operand_def(TensorType)
    scores = operand_def(TensorType)
    selected = result_def(TensorType)
    count = result_def(TensorType)
    max_output_boxes_per_class = prop_def(IntegerAttr)
    iou_threshold = opt_prop_def(FloatAttr)
    score_threshold = opt_prop_def(FloatAttr)
    center_point_box = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())
    DEFAULTS: ClassVar[Mapping[str, object]] = {
        "iou_threshold": 0.0, "score_threshold": float("-inf"), "center_point_box": False}

    @staticmethod
    def bound(boxes: Shape, scores: Shape, max_per_class: int) -> int:
        return scores[0] * scores[1] * min(boxes[1], max(max_per_class, 0))

    @classmethod
    def infer(cls, types, p):
        boxes, scores = types
        bs, ss = shape_of(boxes), shape_of(scores)
        if len(bs) != 3 or bs[2] != 4 or len(ss) != 3 or ss[0] != bs[0] or ss[2] != bs[1]:
            raise ShapeError(f"expects boxes BxNx4 and scores BxCxN, got {_fmt_types(types)}")
        n = cls.bound(bs, ss, p["max_output_boxes_per_class"])  # type: ignore[arg-type]
        return [tensor((n, 3), i64), tensor((), i64)]


Graph = Dialect(
    "graph",
    [
        ConstantOp,
        IdentityOp, ReluOp, SigmoidOp, TanhOp, ErfOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
        ReciprocalOp, AbsOp, NegOp, GeluOp, ClipOp, LeakyReluOp,
        SignOp, CoshOp, SinhOp, SoftplusOp, MishOp, HardSwishOp, HardSigmoidOp, NotOp,
        AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, PReluOp, SumOp,
        EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, AndOp, OrOp, XorOp, WhereOp,
        Conv2DOp, MatmulOp, GemmOp,
        SoftmaxOp, LayerNormOp, BatchNormOp,
        MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp,
        ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceL1Op, ReduceL2Op,
        ReduceSumSquareOp, ReduceLogSumOp, ReduceLogSumExpOp, ArgMaxOp, ArgMinOp, TopKOp,
        ReshapeOp, ExpandOp, CastOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp,
        ConcatOp, SplitOp, SliceOp, GatherOp,
        GatherElementsOp, GatherNDOp, OneHotOp, EinsumOp, ResizeOp, LRNOp,
        RoiAlignOp, MaxRoiPoolOp, NonMaxSuppressionOp,
    ],
    [ExternAttr],
)
