"""The `npu` dialect: per-core tile command streams of the STCP920 (see docs/npu.md).

```mlir
npu.program @conv target "stcp920" {
  npu.buffer @x : ddr[1024] at 0
  npu.buffer @w : ddr[64] at 1024 = dense<...> : tensor<32xf16>
  npu.buffer @t : l1(0)[1024]                      // not allocated yet: no `at`
  npu.input "x" @x : 1x2x16x16xf16
  npu.semaphore @loaded core 0
  npu.core 0 {
    npu.dma @x[0] : 512xf16 -> @t[0] : 512xf16 {signals = [@loaded]}
    npu.unary relu @t[0] : 512xf16 -> @t[0] : 512xf16 {waits = [@loaded]}
  }
}
```

Buffers are symbols placed in a memory space (`#npu.space<l1|wb|llb|ddr>`, l1 and wb of a
given core) with a size and, after allocation, a byte offset. Commands name buffers by
symbol plus a tile (`@buf[byte offset] : SHAPExTYPE strides [...]`, strides in elements),
so an allocator only changes buffer offsets. Every command kind is generated from
`stc_mlir.isa.program.OPS`; synchronisation is by counting semaphores named in a
command's `waits` (acquired before it starts) and `signals` (released when it completes).

`npu.program`'s verifier runs `stc_mlir.isa.check.check_program` against the
program's target, so the IR verifier and the emulator enforce the same rules.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr, BytesAttr, DenseArrayBase, DenseIntOrFPElementsAttr, FloatAttr, IntAttr,
    IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr, TensorType, f16, f32, f64, i1, i32, i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, Region, TypeAttribute
from xdsl.irdl import (
    IRDLOperation, irdl_attr_definition, irdl_op_definition, opt_prop_def, prop_def,
    region_def, traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from stc_mlir.isa import program as P

# ----------------------------------------------------------------------------- attributes


class Space(StrEnum):
    L1 = "l1"
    WB = "wb"
    LLB = "llb"
    DDR = "ddr"


@irdl_attr_definition
class SpaceAttr(EnumAttribute[Space]):
    """A memory space: `#npu.space<l1>` (per-core L1 data buffer), `wb` (per-core weight
    buffer), `llb` (cluster last-level buffer) or `ddr`."""

    name = "npu.space"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            super().print_parameter(printer)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Space:
        with parser.in_angle_brackets():
            return super().parse_parameter(parser)


_ELEMENT_TYPES: dict[str, TypeAttribute] = {"f16": f16, "f32": f32, "i32": i32, "i64": i64}


def _dtype_name(t: Attribute) -> str:
    for name, attr in _ELEMENT_TYPES.items():
        if t == attr:
            return name
    raise VerifyException(f"unsupported npu element type {t} (expected f16, f32, i32 or i64)")


@irdl_attr_definition
class TileAttr(ParametrizedAttribute):
    """A strided tile of a buffer: `#npu.tile<@buf[byte offset] : 4x16xf16 strides [32, 1]>`
    (strides in elements; omitted when row-major contiguous)."""

    name = "npu.tile"

    buffer: SymbolRefAttr
    offset: IntAttr
    shape: ArrayAttr[IntAttr]
    strides: ArrayAttr[IntAttr]
    element_type: Attribute

    @staticmethod
    @functools.lru_cache(maxsize=1 << 16)
    def from_tile(t: P.Tile) -> TileAttr:
        """Memoised, and built without xDSL's per-attribute verification (building the
        attributes dominates creating a big program's IR; `npu.program`'s verifier checks
        every tile against its buffer anyway)."""
        attr = TileAttr.__new__(TileAttr)
        for name, value in zip(("buffer", "offset", "shape", "strides", "element_type"),
                               (_symbol(t.buffer), _int_attr(t.offset), _ints(t.shape),
                                _ints(t.strides), _ELEMENT_TYPES[t.dtype])):
            object.__setattr__(attr, name, value)
        return attr

    def to_tile(self) -> P.Tile:
        return P.Tile(
            self.buffer.root_reference.data, self.offset.data,
            tuple(d.data for d in self.shape), tuple(s.data for s in self.strides),
            _dtype_name(self.element_type),
        )

    def verify(self) -> None:
        if len(self.shape) != len(self.strides):
            raise VerifyException(f"tile has {len(self.shape)} dims but {len(self.strides)} strides")
        _dtype_name(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return _parse_tile(parser).parameters

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            _print_tile(printer, self)


def _parse_tile(parser: AttrParser) -> TileAttr:
    sym = parser.parse_symbol_name()
    parser.parse_punctuation("[")
    offset = parser.parse_integer(allow_boolean=False, allow_negative=False)
    parser.parse_punctuation("]")
    parser.parse_punctuation(":")
    shape, etype = parser.parse_ranked_shape()
    if parser.parse_optional_keyword("strides"):
        strides = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False))
    else:
        strides = P.contiguous_strides(shape)
    return TileAttr(SymbolRefAttr(sym), IntAttr(offset), ArrayAttr(IntAttr(d) for d in shape),
                    ArrayAttr(IntAttr(s) for s in strides), etype)


def _print_tile(printer: Printer, t: TileAttr) -> None:
    shape = [d.data for d in t.shape]
    printer.print_string(f"@{t.buffer.root_reference.data}[{t.offset.data}] : ")
    printer.print_string("".join(f"{d}x" for d in shape))
    printer.print_attribute(t.element_type)
    strides = [s.data for s in t.strides]
    if tuple(strides) != P.contiguous_strides(shape):
        printer.print_string(f" strides [{', '.join(map(str, strides))}]")


@functools.lru_cache(maxsize=1 << 14)
def _int(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


@functools.lru_cache(maxsize=1 << 16)
def _int_attr(value: int) -> IntAttr:
    return IntAttr(value)


@functools.lru_cache(maxsize=1 << 14)
def _ints(values: tuple[int, ...]) -> ArrayAttr[IntAttr]:
    return ArrayAttr(_int_attr(v) for v in values)


@functools.lru_cache(maxsize=1 << 14)
def _symbol(name: str) -> SymbolRefAttr:
    return SymbolRefAttr(name)


def _single_block_region(parser: Parser) -> Region:
    region = parser.parse_region()
    if not region.blocks:
        region.add_block(Block())
    return region


# ----------------------------------------------------------------------------- structure


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A program for one cluster: buffers, semaphores, inputs/outputs and one `npu.core`
    per core, for the target named by `target` (a built-in name or a file path)."""

    name = "npu.program"
    sym_name = prop_def(StringAttr)
    target = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), SymbolTable(), SymbolOpInterface(), IsolatedFromAbove())

    def __init__(self, sym_name: str, target: str, ops: Sequence[IRDLOperation] = ()):
        super().__init__(properties={"sym_name": StringAttr(sym_name), "target": StringAttr(target)},
                         regions=[Region(Block(ops))])

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        sym = parser.parse_symbol_name().data
        parser.parse_keyword("target")
        target = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        region = _single_block_region(parser)
        op = cls.create(properties={"sym_name": StringAttr(sym), "target": StringAttr(target)},
                        regions=[region])
        if attrs:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data} target ")
        printer.print_string_literal(self.target.data)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    def verify_(self) -> None:
        from stc_mlir import target as targets
        from stc_mlir.isa.check import ProgramError, check_program

        try:
            tgt = targets.load(self.target.data)
        except targets.TargetError as err:
            raise VerifyException(str(err)) from None
        try:
            check_program(to_program(self), tgt)
        except ProgramError as err:
            if err.core is not None and err.index is not None:
                cmd_op = self._command_op(err.core, err.index)
                cmd_op.emit_error(f"Operation does not verify: {err}", VerifyException(str(err)))
            raise VerifyException(str(err)) from None

    def _command_op(self, core: int, index: int) -> CommandOp:
        for op in self.body.ops:
            if isinstance(op, CoreOp) and op.core.value.data == core:
                return [c for c in op.body.ops if isinstance(c, CommandOp)][index]
        raise KeyError(core)


@irdl_op_definition
class BufferOp(IRDLOperation):
    """`npu.buffer @name : SPACE[size] (at offset)? (= dense<...>)?`, where SPACE is `ddr`,
    `llb`, `l1(core)` or `wb(core)`. Only DDR buffers take constant contents."""

    name = "npu.buffer"
    sym_name = prop_def(StringAttr)
    space = prop_def(SpaceAttr)
    size = prop_def(IntegerAttr)
    core = opt_prop_def(IntegerAttr)
    offset = opt_prop_def(IntegerAttr)
    init = opt_prop_def(DenseIntOrFPElementsAttr)
    traits = traits_def(SymbolOpInterface(), HasParent(ProgramOp))

    def __init__(self, name: str, space: str, size: int, core: int | None = None,
                 offset: int | None = None, init: bytes | None = None, init_dtype: str = "f16"):
        props: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name), "space": SpaceAttr(Space(space)), "size": _int(size),
            "core": None if core is None else _int(core),
            "offset": None if offset is None else _int(offset),
        }
        if init is not None:
            n = len(init) // P.DTYPES[init_dtype].itemsize
            props["init"] = DenseIntOrFPElementsAttr(
                TensorType(_ELEMENT_TYPES[init_dtype], [n]), BytesAttr(init))
        super().__init__(properties=props)

    def set_offset(self, offset: int) -> None:
        """Place the buffer (what an allocator does)."""
        self.properties["offset"] = _int(offset)

    @classmethod
    def parse(cls, parser: Parser) -> BufferOp:
        props: dict[str, Attribute] = {"sym_name": parser.parse_symbol_name()}
        parser.parse_punctuation(":")
        props["space"] = SpaceAttr(parser.parse_str_enum(Space))
        if parser.parse_optional_punctuation("("):
            props["core"] = _int(parser.parse_integer(allow_boolean=False))
            parser.parse_punctuation(")")
        parser.parse_punctuation("[")
        props["size"] = _int(parser.parse_integer(allow_boolean=False))
        parser.parse_punctuation("]")
        if parser.parse_optional_keyword("at"):
            props["offset"] = _int(parser.parse_integer(allow_boolean=False))
        if parser.parse_optional_punctuation("="):
            init = parser.parse_attribute()
            if not isinstance(init, DenseIntOrFPElementsAttr):
                parser.raise_error("expected a dense elements attribute as buffer contents")
            props["init"] = init
        op = cls.create(properties=props)
        if attrs := parser.parse_optional_attr_dict_with_keyword():
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        core = f"({self.core.value.data})" if self.core is not None else ""
        printer.print_string(f" @{self.sym_name.data} : {self.space.data.value}{core}"
                             f"[{self.size.value.data}]")
        if self.offset is not None:
            printer.print_string(f" at {self.offset.value.data}")
        if self.init is not None:
            printer.print_string(" = ")
            printer.print_attribute(self.init)
        printer.print_op_attributes(self.attributes, print_keyword=True)


@irdl_op_definition
class SemaphoreOp(IRDLOperation):
    """`npu.semaphore @name core C (init N)?`: a counting semaphore homed on core C."""

    name = "npu.semaphore"
    sym_name = prop_def(StringAttr)
    core = prop_def(IntegerAttr)
    init = opt_prop_def(IntegerAttr)
    traits = traits_def(SymbolOpInterface(), HasParent(ProgramOp))

    def __init__(self, name: str, core: int, init: int = 0):
        super().__init__(properties={"sym_name": StringAttr(name), "core": _int(core),
                                     "init": _int(init) if init else None})

    @classmethod
    def parse(cls, parser: Parser) -> SemaphoreOp:
        props: dict[str, Attribute] = {"sym_name": parser.parse_symbol_name()}
        parser.parse_keyword("core")
        props["core"] = _int(parser.parse_integer(allow_boolean=False))
        if parser.parse_optional_keyword("init"):
            props["init"] = _int(parser.parse_integer(allow_boolean=False))
        return cls.create(properties=props)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" @{self.sym_name.data} core {self.core.value.data}")
        if self.init is not None:
            printer.print_string(f" init {self.init.value.data}")


class _IOOp(IRDLOperation):
    """`npu.input "name" @buffer : SHAPExTYPE` (same for npu.output)."""

    io_name = prop_def(StringAttr)
    buffer = prop_def(SymbolRefAttr)
    type = prop_def(TensorType)
    traits = traits_def(HasParent(ProgramOp))

    def __init__(self, name: str, buffer: str, shape: Sequence[int], dtype: str = "f16"):
        super().__init__(properties={"io_name": StringAttr(name), "buffer": SymbolRefAttr(buffer),
                                     "type": TensorType(_ELEMENT_TYPES[dtype], shape)})

    @classmethod
    def parse(cls, parser: Parser) -> _IOOp:
        name = parser.parse_str_literal()
        buffer = parser.parse_symbol_name()
        parser.parse_punctuation(":")
        shape, etype = parser.parse_ranked_shape()
        return cls.create(properties={"io_name": StringAttr(name), "buffer": SymbolRefAttr(buffer),
                                      "type": TensorType(etype, shape)})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.io_name.data)
        printer.print_string(f" @{self.buffer.root_reference.data} : ")
        printer.print_string("".join(f"{d}x" for d in self.type.get_shape()))
        printer.print_attribute(self.type.element_type)


@irdl_op_definition
class InputOp(_IOOp):
    name = "npu.input"


@irdl_op_definition
class OutputOp(_IOOp):
    name = "npu.output"


@irdl_op_definition
class CoreOp(IRDLOperation):
    """`npu.core ID { commands }`: the command stream of one core, in issue order."""

    name = "npu.core"
    core = prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), HasParent(ProgramOp))

    def __init__(self, core: int, ops: Sequence[IRDLOperation] = ()):
        super().__init__(properties={"core": _int(core)}, regions=[Region(Block(ops))])

    @classmethod
    def parse(cls, parser: Parser) -> CoreOp:
        core = parser.parse_integer(allow_boolean=False)
        return cls.create(properties={"core": _int(core)}, regions=[_single_block_region(parser)])

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.core.value.data} ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


# ----------------------------------------------------------------------------- commands

_PARAM_ATTR: dict[str, type[Attribute]] = {
    "int": IntegerAttr, "ints": DenseArrayBase, "float": FloatAttr, "str": StringAttr,
    "bool": IntegerAttr,
}


def _param_to_attr(kind: str, value: Any) -> Attribute:
    match kind:
        case "int":
            return _int(value)
        case "ints":
            return DenseArrayBase.from_list(i64, list(value))
        case "float":
            return FloatAttr(value, f64)
        case "bool":
            return IntegerAttr(int(value), i1)
        case _:
            return StringAttr(value)


def _param_from_attr(kind: str, attr: Attribute, where: str) -> Any:
    if kind == "ints" and isinstance(attr, DenseArrayBase):
        return tuple(attr.get_values())
    if kind in ("int", "bool") and isinstance(attr, IntegerAttr):
        return attr.value.data if kind == "int" else bool(attr.value.data)
    if kind == "float" and isinstance(attr, FloatAttr | IntegerAttr):
        return float(attr.value.data)
    if kind == "str" and isinstance(attr, StringAttr):
        return attr.data
    raise VerifyException(f"{where}: expected a {kind} attribute, got {attr}")


class CommandOp(IRDLOperation):
    """Base of all commands: `npu.OP [kind] INS (KEYWORD TILE)* -> OUTS {params, waits, signals}`
    (`npu.fence {waits, signals}` has no operands)."""

    SPEC: ClassVar[P.OpSpec]

    @classmethod
    def parse(cls, parser: Parser) -> CommandOp:
        spec = cls.SPEC
        props: dict[str, Attribute] = {}
        if "kind" in spec.params:
            props["kind"] = StringAttr(parser.parse_identifier())
        for i, slot in enumerate(spec.ins):
            if i:
                parser.parse_punctuation(",")
            props[slot] = _parse_tile(parser)
        while (kw := parser.parse_optional_keyword_in(spec.optional)) is not None:
            props[kw] = _parse_tile(parser)
        if spec.outs:  # npu.fence has no operands and no arrow
            parser.parse_punctuation("->")
        for i, slot in enumerate(spec.outs):
            if i:
                parser.parse_punctuation(",")
            props[slot] = _parse_tile(parser)
        attrs = parser.parse_optional_attr_dict()
        known = set(spec.params) | {"waits", "signals"}
        for key in list(attrs):
            if key in known:
                props[key] = attrs.pop(key)
        op = cls.create(properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        spec = self.SPEC
        props = self.properties
        if "kind" in spec.params:
            printer.print_string(f" {props['kind'].data}")  # type: ignore[attr-defined]
        for i, slot in enumerate(spec.ins):
            printer.print_string(", " if i else " ")
            _print_tile(printer, props[slot])  # type: ignore[arg-type]
        for slot in spec.optional:
            if slot in props:
                printer.print_string(f" {slot} ")
                _print_tile(printer, props[slot])  # type: ignore[arg-type]
        if spec.outs:
            printer.print_string(" ->")
        for i, slot in enumerate(spec.outs):
            printer.print_string(", " if i else " ")
            _print_tile(printer, props[slot])  # type: ignore[arg-type]
        rest = {k: v for k, v in props.items() if k in spec.params and k != "kind"}
        for key in ("waits", "signals"):
            if key in props:
                rest[key] = props[key]
        printer.print_op_attributes(rest | dict(self.attributes))

    def to_command(self) -> P.Command:
        spec = self.SPEC
        props = self.properties
        where = f"npu.{spec.op}"
        tiles = {s: props[s].to_tile() for s in spec.ins + spec.optional + spec.outs  # type: ignore[attr-defined]
                 if s in props}
        params = {k: _param_from_attr(kind, props[k], where)
                  for k, (kind, _) in spec.params.items() if k in props}
        try:
            params = spec.fill(params)
        except ValueError as err:
            raise VerifyException(str(err)) from None
        sync = [tuple(r.root_reference.data for r in props[k]) if k in props else ()  # type: ignore[attr-defined]
                for k in ("waits", "signals")]
        return P.Command(spec.op, tiles, params, sync[0], sync[1])

    @classmethod
    def from_command(cls, cmd: P.Command) -> CommandOp:
        spec = cls.SPEC
        props: dict[str, Attribute] = {s: TileAttr.from_tile(t) for s, t in cmd.tiles.items()}
        for k, (kind, default) in spec.params.items():
            if cmd.params[k] != default:
                props[k] = _param_to_attr(kind, cmd.params[k])
        for key, names in (("waits", cmd.waits), ("signals", cmd.signals)):
            if names:
                props[key] = ArrayAttr(_symbol(n) for n in names)
        return cls.create(properties=props)


def _command_op(spec: P.OpSpec) -> type[CommandOp]:
    body: dict[str, Any] = {
        "name": f"npu.{spec.op}",
        "SPEC": spec,
        "__annotations__": {"SPEC": ClassVar[P.OpSpec]},
        "__doc__": f"npu.{spec.op} ({spec.unit} unit): inputs {', '.join(spec.ins)}"
                   + (f", optional {', '.join(spec.optional)}" if spec.optional else "")
                   + f"; outputs {', '.join(spec.outs)}; parameters "
                   + (", ".join(spec.params) or "none") + ".",
        "traits": traits_def(HasParent(CoreOp)),
        "waits": opt_prop_def(ArrayAttr[SymbolRefAttr]),
        "signals": opt_prop_def(ArrayAttr[SymbolRefAttr]),
    }
    for slot in spec.ins + spec.outs:
        body[slot] = prop_def(TileAttr)
    for slot in spec.optional:
        body[slot] = opt_prop_def(TileAttr)
    for p, (kind, default) in spec.params.items():
        body[p] = (prop_def if default is P.REQUIRED else opt_prop_def)(_PARAM_ATTR[kind])
    camel = "".join(w.capitalize() for w in spec.op.split("_"))
    return irdl_op_definition(type(f"{camel}Op", (CommandOp,), body))


COMMAND_OPS: dict[str, type[CommandOp]] = {op: _command_op(spec) for op, spec in P.OPS.items()}


def command_op(op: str, waits: Sequence[str] = (), signals: Sequence[str] = (),
               **operands: Any) -> CommandOp:
    """Build a command op: tiles (`stc_mlir.isa.program.tile`) and parameters by name,
    e.g. `command_op("dma", src=tile("x", (64,)), dst=tile("t", (64,)), signals=["s"])`."""
    return COMMAND_OPS[op].from_command(P.command(op, waits, signals, **operands))
DmaOp = COMMAND_OPS["dma"]
Conv2dOp = COMMAND_OPS["conv2d"]
MatmulOp = COMMAND_OPS["matmul"]


# ----------------------------------------------------------------------------- conversion


def _program_op(op: ModuleOp | ProgramOp) -> ProgramOp:
    if isinstance(op, ProgramOp):
        return op
    found = [o for o in op.walk() if isinstance(o, ProgramOp)]
    if len(found) != 1:
        raise ValueError(f"expected one npu.program in the module, found {len(found)}")
    return found[0]


def to_program(op: ModuleOp | ProgramOp) -> P.Program:
    """The plain-Python `Program` of an `npu.program` (or of the module holding one)."""
    prog_op = _program_op(op)
    prog = P.Program(name=prog_op.sym_name.data, target=prog_op.target.data)
    for child in prog_op.body.ops:
        if isinstance(child, BufferOp):
            init = child.init
            prog.buffers[child.sym_name.data] = P.Buffer(
                child.sym_name.data, child.space.data.value, child.size.value.data,
                None if child.core is None else child.core.value.data,
                None if child.offset is None else child.offset.value.data,
                None if init is None else init.data.data,
                "f16" if init is None else _dtype_name(init.get_element_type()),
            )
        elif isinstance(child, SemaphoreOp):
            prog.semaphores[child.sym_name.data] = P.Semaphore(
                child.sym_name.data, child.core.value.data,
                0 if child.init is None else child.init.value.data)
        elif isinstance(child, _IOOp):
            io = P.IOSpec(child.io_name.data, child.buffer.root_reference.data,
                          tuple(child.type.get_shape()), _dtype_name(child.type.element_type))
            (prog.inputs if isinstance(child, InputOp) else prog.outputs).append(io)
        elif isinstance(child, CoreOp):
            core = child.core.value.data
            if core in prog.cores:
                raise VerifyException(f"npu.core {core} is defined twice")
            prog.cores[core] = [c.to_command() for c in child.body.ops if isinstance(c, CommandOp)]
        else:
            raise VerifyException(f"unexpected op {child.name} in npu.program")
    return prog


def from_program(prog: P.Program) -> ModuleOp:
    """`prog` as a `builtin.module` holding one `npu.program`."""
    ops: list[IRDLOperation] = [
        BufferOp(b.name, b.space, b.size, b.core, b.offset, b.init, b.init_dtype)
        for b in prog.buffers.values()
    ]
    ops += [SemaphoreOp(s.name, s.core, s.init) for s in prog.semaphores.values()]
    ops += [InputOp(io.name, io.buffer, io.shape, io.dtype) for io in prog.inputs]
    ops += [OutputOp(io.name, io.buffer, io.shape, io.dtype) for io in prog.outputs]
    for core in sorted(prog.cores):
        ops.append(CoreOp(core, [COMMAND_OPS[c.op].from_command(c) for c in prog.cores[core]]))
    return ModuleOp([ProgramOp(prog.name, prog.target, ops)])


Npu = Dialect(
    "npu",
    [ProgramOp, BufferOp, SemaphoreOp, InputOp, OutputOp, CoreOp, *COMMAND_OPS.values()],
    [SpaceAttr, TileAttr],
)
