"""Reading and writing IR text with every stc-mlir dialect available.

`read_ir(path)` / `parse_ir(text)` is the one way every tool (stc-run, stc-opt's frontend,
the Python API) reads IR: decode the bytes, parse, then verify — xDSL's verifiers plus
an SSA dominance check, which xDSL 0.74 lacks (it accepts `%r = graph.relu %r` and uses
before definitions as forward references). Every failure is an `IRError` whose message
is one line `file:line:col: what is wrong`.

Importing this module also guards xDSL's lexer against exponential backtracking on an
unterminated string literal (see `_guard_lexer`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind, StringLiteral

from stc_mlir import weights
from stc_mlir.dialects.registry import DIALECTS
from stc_mlir.errors import StcError


class IRError(StcError):
    """IR that cannot be read: undecodable, unparsable or invalid. The message is one line
    naming the file, line and column."""


class IRSyntaxError(IRError, ParseError):
    """Text that does not parse; also an xDSL `ParseError` (with its `span`), printed as one
    `file:line:col: message` line."""

    def __init__(self, err: ParseError):
        ParseError.__init__(self, err.span, err.msg)
        self.line = _one_line_parse_error(err)

    def __str__(self) -> str:
        return self.line


class DominanceError(IRError, VerifyException):
    """A value used where its definition does not dominate the use (an SSA cycle, a use
    before the definition). A `VerifyException`, so `stc-opt --verify-diagnostics` prints it."""


# ----------------------------------------------------------------------------- lexer guard


def _guard_lexer() -> None:
    """Make xDSL 0.74's string-literal regex linear.

    `"(?:[^"\\\n\v\f]+|\\...)*"` nests `+` inside `*`: when the closing quote is missing,
    the regex engine tries every way of splitting the rest of the line (2^n for n
    characters; a file cut inside a 16-byte hex constant took over a minute). The two
    alternatives cannot start with the same character, so possessive quantifiers match
    exactly the same strings without backtracking.
    """
    MLIRLexer._unescaped_characters_regex = re.compile(  # type: ignore[misc]
        r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'
    )


_lex_string_literal = MLIRLexer._lex_string_literal


def _lex_utf8_string_literal(self: MLIRLexer, start_pos: int):
    """xDSL 0.74 lexes a string with escaped non-ASCII bytes as a bytes literal, although its
    own printer escapes every non-ASCII character: `"gr\\C3\\BCppe"` (a name `grüppe`) would
    not parse back as a string. Valid UTF-8 is a string literal, as in MLIR."""
    token = _lex_string_literal(self, start_pos)
    if token.kind is MLIRTokenKind.BYTES_LIT:
        try:
            StringLiteral.from_span(token.span).bytes_contents.decode("utf-8")
        except UnicodeDecodeError:
            return token
        return Token(MLIRTokenKind.STRING_LIT, token.span)
    return token


_guard_lexer()
MLIRLexer._lex_string_literal = _lex_utf8_string_literal  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- parsing


def make_context() -> Context:
    """A context with xDSL's builtin/func/arith and our dialects (loaded on first use)."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = Context()
    for dialect in (Builtin, Func, Arith):
        ctx.load_dialect(dialect)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


class _LocatingParser(Parser):
    """xDSL's parser, remembering where each operation starts (xDSL keeps no locations)."""

    def __init__(self, ctx: Context, text: str, name: str):
        super().__init__(ctx, text, name)
        self.op_spans: dict[Operation, Span] = {}
        self.value_names: dict[SSAValue, str] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self.op_spans[op] = start
        return op

    def _register_ssa_definition(self, name: str, values, span: Span) -> None:
        super()._register_ssa_definition(name, values, span)
        for i, value in enumerate(values):  # `%0` gives no name hint: keep the source's name
            if not value.name_hint:
                self.value_names[value] = f"%{name}" if len(values) == 1 else f"%{name}#{i}"


class Locations:
    """Where the ops of a parsed module start, as `file:line:col` (`?` for ops made later)."""

    def __init__(self, name: str, spans: Mapping[Operation, Span] | None = None, line_offset: int = 0,
                 value_names: Mapping[SSAValue, str] | None = None):
        self.name = name
        self._spans = dict(spans or {})
        self._line_offset = line_offset
        self.value_names = dict(value_names or {})

    def __call__(self, op: Operation | None) -> str:
        while op is not None and op not in self._spans:  # ops made by passes: their parent's place
            op = op.parent_op()
        if op is None:
            return f"{self.name}:?"
        loc = self._spans[op].get_location()
        return f"{loc.file}:{loc.line + self._line_offset}:{loc.col}"


def decode(data: bytes, name: str, line_offset: int = 0) -> str:
    """`data` as UTF-8, or an `IRError` naming the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1 + line_offset
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise IRError(f"{name}:{line}:{col}: invalid UTF-8 (byte 0x{data[err.start]:02x}): "
                      f"IR files are UTF-8 text") from None


def parse_for_opt(data: bytes | str, name: str, ctx: Context, implicit_module: bool,
                  check_ssa: bool, line_offset: int = 0) -> ModuleOp:
    """stc-opt's frontend: like `parse_ir`, but xDSL's own `ParseError` and verification
    are left to xdsl-opt (for `--parsing-diagnostics` / `--verify-diagnostics`); the
    dominance check raises a `VerifyException` naming the place."""
    text = decode(data, name, line_offset) if isinstance(data, bytes) else data
    parser = _LocatingParser(ctx, text, name)
    module = parser.parse_module(implicit_module)
    if check_ssa:
        check_dominance(module, Locations(name, parser.op_spans, line_offset, parser.value_names))
    return module


def parse_ir(text: str | bytes, name: str = "<string>", *, verify: bool = True,
             ctx: Context | None = None, implicit_module: bool = True) -> ModuleOp:
    """Parse (and by default verify) IR text; `IRError` with file:line:col on any failure."""
    if isinstance(text, bytes):
        text = decode(text, name)
    parser = _LocatingParser(ctx or make_context(), text, name)
    try:
        module = parser.parse_module(implicit_module)
    except ParseError as err:
        raise IRSyntaxError(err) from None
    if verify:
        verify_module(module, Locations(name, parser.op_spans, value_names=parser.value_names))
    return module


def _one_line_parse_error(err: ParseError) -> str:
    loc = err.span.get_location()
    # xDSL 0.74 forgets an f-string prefix in one message
    message = err.msg.replace("{first_char}", repr(str(err.span.text)[:1]))
    undefined = re.match(r"values used but not defined: \[(%[^],]+)", message)
    if undefined:  # xDSL points at the end of the region: point at the first use instead
        content = err.span.input.content
        function = max(content.rfind("func.func", 0, err.span.start), 0)  # names are per function
        use = re.compile(re.escape(undefined.group(1)) + r"(?![\w$.-])").search(content, function)
        if use is not None:
            loc = Span(use.start(), use.end(), err.span.input, err.span.line_offset).get_location()
    if message[:1].isspace() or not message:  # xDSL appends context to an empty message
        message = f"unexpected {str(err.span.text)[:20]!r}" if err.span.text else "unexpected end of file"
        message += f" ({err.msg.strip()})" if err.msg.strip() else ""
    return f"{loc.file}:{loc.line}:{loc.col}: {message}"


def read_ir(path: str | os.PathLike[str], *, verify: bool = True) -> ModuleOp:
    """Read, parse and verify the IR file at `path`; weight files it names are looked up
    next to it."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IRError(f"{path}: is a directory, not an IR file")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise IRError(f"{path}: cannot read: {err.strerror}") from None
    weights.add_search_dir(os.path.dirname(os.path.abspath(path)))
    return parse_ir(data, path, verify=verify)


def parse_text(text: str, name: str = "<string>") -> ModuleOp:
    """Parse IR text without verifying it (for tests that build IR piecewise)."""
    return parse_ir(text, name, verify=False)


parse_file = read_ir


def print_module(module: ModuleOp, stream: IO[str]) -> None:
    Printer(stream=stream).print_op(module)
    stream.write("\n")


# ----------------------------------------------------------------------------- verification


def verify_module(module: Operation, locations: Locations | None = None) -> None:
    """Check SSA dominance, then run xDSL's verifiers; `IRError` naming the failing op's place."""
    where = locations or Locations("<module>")
    check_dominance(module, where)
    try:
        module.verify()
    except (VerifyException, DiagnosticException, ValueError) as err:
        op, message = _first_failing_op(module)
        if op is None:
            raise IRError(f"{where(None)}: {_first_line(str(err))}") from None
        message = message.removeprefix(op.name + ": ")
        if _LOCATED.match(message):  # the op's verifier located it more precisely (npu.program's body)
            raise IRError(message) from None
        raise IRError(f"{where(op)}: {op.name}: {message}") from None


_LOCATED = re.compile(r"^[^\s:][^:\n]*:\d+:\d+: ")


def _first_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else text


def _first_failing_op(module: Operation) -> tuple[Operation | None, str]:
    """The op whose own checks fail first (children before parents, like xDSL), and its
    message without the printed module xDSL wraps it in."""
    for op in module.walk(reverse=False, region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException, ValueError) as err:
            cause = err.__cause__ if isinstance(err.__cause__, Exception) else err
            text = str(cause)
            return op, _strip_prefix(_first_line(text) if text.count("\n") < 2 else _underlined(text))
    return None, ""


def _strip_prefix(text: str) -> str:
    return text.removeprefix("Operation does not verify: ")


def _underlined(text: str) -> str:
    """The message under xDSL's caret line (`^^^^ message`), or the first line."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("^"):
            return stripped.lstrip("^-").strip() or _first_line(text)
    return _first_line(text)


def value_name(value: SSAValue, locations: Locations | None = None) -> str:
    """`%name` as written in the source (or what the value is when it has no name)."""
    if locations is not None and value in locations.value_names:
        return locations.value_names[value]
    if value.name_hint:
        return f"%{value.name_hint}"
    if isinstance(value, OpResult):
        return f"result #{value.index} of {value.op.name}"
    if isinstance(value, BlockArgument):
        return f"block argument #{value.index}"
    return "a value"


def check_dominance(module: Operation, locations: Locations | None = None) -> None:
    """Raise `DominanceError` for the first use of a value its definition does not dominate.

    MLIR's rule: a value defined by op D in block B is visible to a use U if D is before
    U's ancestor in B, or B dominates the block of U's ancestor in B's region; a block
    argument is visible inside its block (and the regions nested in it). Graph regions do
    not occur in our dialects, so the rule applies everywhere.
    """
    where = locations or Locations("<module>")
    order: dict[Block, dict[Operation, int]] = {}
    dominance: dict[object, DominanceInfo] = {}

    def index_in(block: Block, op: Operation) -> int:
        if block not in order:
            order[block] = {o: i for i, o in enumerate(block.ops)}
        return order[block][op]

    for user in module.walk():
        for number, value in enumerate(user.operands):
            problem = _dominance_problem(value, user, index_in, dominance, where)
            if problem is not None:
                raise DominanceError(f"{where(user)}: {user.name} operand #{number} {value_name(value, where)}: {problem}")


def _dominance_problem(value: SSAValue, user: Operation, index_in, dominance, where: Locations) -> str | None:
    if isinstance(value, BlockArgument):
        block = value.block
        anc: Operation | None = user
        while anc is not None:
            if anc.parent is block:
                return None
            anc = anc.parent_op()
        return "is an argument of a block that does not enclose this use"
    if not isinstance(value, OpResult):
        return "is not defined anywhere (an unresolved forward reference)"
    definer = value.op
    block = definer.parent
    if block is None:
        return f"is defined by {definer.name}, which is not in the IR"
    if definer is user:
        return "is this op's own result (an SSA cycle)"
    region = block.parent
    anc = user
    while anc is not None and (anc.parent is None or anc.parent.parent is not region):
        if anc is definer:
            return f"is used inside the region of {definer.name}, which defines it"
        anc = anc.parent_op()
    if anc is None:
        return f"is defined by {definer.name} in a region that does not enclose this use"
    if anc is definer:
        return f"is used inside the region of {definer.name}, which defines it"
    if anc.parent is block:
        if index_in(block, definer) < index_in(block, anc):
            return None
        return f"is used before its definition ({definer.name} at {where(definer)})"
    if region not in dominance:
        dominance[region] = DominanceInfo(region)
    if dominance[region].dominates(block, anc.parent):
        return None
    return f"is defined by {definer.name} at {where(definer)}, in a block that does not dominate this use"
