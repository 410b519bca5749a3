"""The `npu` dialect: per-core tile command streams of the STCP920 (see docs/npu.md).

```mlir
npu.program @conv target "stcp920" {
  npu.buffer @x : ddr[1024] at 0
  npu.buffer @w : ddr[64] at 1024 = dense<...> : tensor<32xf16>
  npu.buffer @t : l1(0)[1024]                      // not allocated yet: no `at`
  npu.input "x" @x : 1x2x16x16xf16
  npu.semaphore @loaded core 0
  npu.core 0 {
    dma @x : 512xf16 -> @t : 512xf16 {signals = [@loaded]}      // in a core, `npu.` may be left out
    unary relu @t : 512xf16 -> @t : 512xf16 {waits = [@loaded]}
  }
}
```

One op, `npu.program`, whose payload is the plain `stc_mlir.isa.program.Program` (held by
the `#npu.body` property): commands name buffers and semaphores by symbol and have no SSA
values, so nothing of xDSL's use-def or rewriting machinery applies to them, and an xDSL op
per command cost seconds on a real model. Its body is printed and parsed by
`stc_mlir.isa.text` in the syntax above; the generic form holds the same text:
`"npu.program"() <{sym_name = "conv", target = "stcp920", body = #npu.body<{ ... }>}> : () -> ()`.
Passes read and replace `ProgramOp.program`.

The verifier runs `stc_mlir.isa.check.check_program` against the program's target, so the IR
verifier and the emulator enforce the same rules; for a parsed program its messages start
with the file, line and column of the buffer or command at fault.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Data, Dialect
from xdsl.irdl import IRDLOperation, irdl_attr_definition, irdl_op_definition, prop_def, traits_def
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Input

from stc_mlir.isa import text
from stc_mlir.isa.program import Program

PHASES_ATTR = "npu.phases"


class ProgramBody:
    """The payload of `#npu.body`: a `Program`, and where its parts were in the source text
    (`locations`, `source`, `start`) when it was parsed."""

    __slots__ = ("program", "locations", "source", "start")

    def __init__(self, program: Program, locations: text.Locations | None = None,
                 source: Input | None = None, start: int = 0):
        self.program, self.locations, self.source, self.start = program, locations, source, start

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProgramBody) and other.program == self.program

    def __hash__(self) -> int:
        return hash((self.program.name, len(self.program.buffers), len(self.program.cores)))

    def where(self, offset: int) -> str:
        """`file:line:col: ` of character `offset` of the parsed body text."""
        if self.source is None or self.locations is None:
            return ""
        content = self.source.content
        if isinstance(content, bytes):
            absolute = self.start + len(self.locations.text[:offset].encode())
            line = content.count(b"\n", 0, absolute) + 1
            col = absolute - (content.rfind(b"\n", 0, absolute) + 1) + 1
        else:
            absolute = self.start + offset
            line = content.count("\n", 0, absolute) + 1
            col = absolute - (content.rfind("\n", 0, absolute) + 1) + 1
        return f"{self.source.name}:{line}:{col}: "


def _parse_body(parser: AttrParser, name: str, target: str, phases: tuple[str, ...]) -> ProgramBody:
    """Read the `{ ... }` at the parser's position with `stc_mlir.isa.text` and move the
    parser past it."""
    token = parser._current_token  # noqa: SLF001 - the body is handed to a parser of its own
    if token.text != "{":
        parser.raise_error("Expected '{' (the body of npu.program)")
    source = parser.lexer.input
    content = source.content
    start = token.span.start
    end = text.find_block_end(content, start)
    if end < 0:
        parser.raise_error("Expected '}' to close npu.program")
    raw = content[start:end]
    body = raw.decode() if isinstance(raw, bytes) else raw
    try:
        program, locations, _ = text.parse_body(body, name, target, 0, phases)
    except text.TextError as err:
        at = start + (len(body[:err.pos].encode()) if isinstance(raw, bytes) else err.pos)
        parser.raise_error(err.message, at, at + 1)
    parser._resume_from(end)  # noqa: SLF001
    return ProgramBody(program, locations, source, start)


def _indent(printer: Printer) -> str:
    return " " * (printer._indent * printer.indent_num_spaces)  # noqa: SLF001


@irdl_attr_definition
class ProgramBodyAttr(Data[ProgramBody]):
    """The body of an `npu.program`: `#npu.body<phases ["..."] { npu.buffer ... }>` (phases
    optional), the same text as the op's custom form."""

    name = "npu.body"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> ProgramBody:
        parser.parse_punctuation("<")
        phases: tuple[str, ...] = ()
        if parser.parse_optional_keyword("phases"):
            phases = tuple(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_str_literal))
        body = _parse_body(parser, "main", "stcp920", phases)
        parser.parse_punctuation(">")
        return body

    def print_parameter(self, printer: Printer) -> None:
        program = self.data.program
        head = "<" + (f"phases [{', '.join(map(text.string_literal, program.phases))}] " if program.phases else "")
        printer.print_string(head + text.format_body(program, _indent(printer)) + ">", indent=0)


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """A program for one cluster: buffers, semaphores, inputs/outputs and one command stream
    per core, for the target named by `target` (a built-in name or a file path)."""

    name = "npu.program"
    sym_name = prop_def(StringAttr)
    target = prop_def(StringAttr)
    body = prop_def(ProgramBodyAttr)
    traits = traits_def(SymbolOpInterface())

    def __init__(self, program: Program):
        super().__init__(properties=_properties(ProgramBody(program)))

    @property
    def program(self) -> Program:
        """The program (name and target as the op's properties say)."""
        program = self.body.data.program
        if program.name != self.sym_name.data or program.target != self.target.data:
            program = dataclasses.replace(program, name=self.sym_name.data, target=self.target.data)
        return program

    @program.setter
    def program(self, program: Program) -> None:
        self.properties.update(_properties(ProgramBody(program)))

    @classmethod
    def parse(cls, parser: Parser) -> ProgramOp:
        name = parser.parse_symbol_name().data
        parser.parse_keyword("target")
        target = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        extra = dict(attrs.data) if attrs else {}
        phases: tuple[str, ...] = ()
        if PHASES_ATTR in extra:
            value = extra.pop(PHASES_ATTR)
            if not isinstance(value, ArrayAttr) or not all(isinstance(v, StringAttr) for v in value.data):
                parser.raise_error(f"{PHASES_ATTR} must be a list of strings")
            phases = tuple(v.data for v in value.data)  # type: ignore[attr-defined]
        op = cls.create(properties=_properties(_parse_body(parser, name, target, phases)))
        op.attributes |= extra
        return op

    def print(self, printer: Printer) -> None:
        program = self.body.data.program
        printer.print_string(f" @{self.sym_name.data} target ")
        printer.print_string_literal(self.target.data)
        if program.phases or self.attributes:
            printer.print_string(" attributes {")
            items = [text.format_phases(program.phases)] if program.phases else []
            printer.print_string(", ".join(items))
            for i, (key, value) in enumerate(self.attributes.items()):
                printer.print_string(", " if items or i else "")
                printer.print_identifier_or_string_literal(key)
                printer.print_string(" = ")
                printer.print_attribute(value)
            printer.print_string("}")
        printer.print_string(" " + text.format_body(program, _indent(printer)), indent=0)

    def verify_(self) -> None:
        from stc_mlir import target as targets
        from stc_mlir.isa.check import ProgramError, check_program

        program = self.program
        try:
            tgt = targets.load(program.target)
        except targets.TargetError as err:
            body = self.body.data
            raise VerifyException(body.where(body.locations.program if body.locations else 0) + str(err)) from None
        try:
            check_program(program, tgt)
        except ProgramError as err:
            raise VerifyException(self._where(err) + str(err)) from None

    def _where(self, err: Any) -> str:
        """`file:line:col: ` of what a ProgramError is about, for a parsed program."""
        body = self.body.data
        where = body.locations
        if where is None:
            return ""
        message = str(err)
        offset: int | None = None
        if err.core is not None and err.index is not None:
            positions = where.commands.get(err.core, [])
            offset = positions[err.index] if err.index < len(positions) else None
        elif m := re.match(r"(buffer|semaphore) @(\S+?)[ :(]", message):
            offset = (where.buffers if m.group(1) == "buffer" else where.semaphores).get(m.group(2))
        elif m := re.match(r"(input|output) '(.*?)'", message):
            offset = where.ios.get((m.group(1), m.group(2)))
        elif m := re.match(r"core id (\d+)", message):
            offset = where.cores.get(int(m.group(1)))
        return body.where(where.program if offset is None else offset)


def _properties(body: ProgramBody) -> dict[str, Attribute]:
    return {"sym_name": StringAttr(body.program.name), "target": StringAttr(body.program.target),
            "body": ProgramBodyAttr(body)}


# ----------------------------------------------------------------------------- modules


def program_op(op: ModuleOp | ProgramOp) -> ProgramOp:
    """The `npu.program` op itself, or the one in `op` (a module holding exactly one)."""
    if isinstance(op, ProgramOp):
        return op
    found = [o for o in op.ops if isinstance(o, ProgramOp)]
    if len(found) != 1:
        raise ValueError(f"expected one npu.program in the module, found {len(found)}")
    return found[0]


def program_from_module(op: ModuleOp | ProgramOp) -> Program:
    """The `Program` of an `npu.program` (or of the module holding one): no conversion."""
    return program_op(op).program


def program_to_module(program: Program) -> ModuleOp:
    """A `builtin.module` holding `program` as an `npu.program`."""
    return ModuleOp([ProgramOp(program)])


Npu = Dialect("npu", [ProgramOp], [ProgramBodyAttr])
