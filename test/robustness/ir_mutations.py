"""Malformed IR made from real IR: each mutator turns a valid module's text into text that
must be refused (a guaranteed-invalid change), deterministically from a seed.

Sources are the round-trip lit inputs of the graph and schedule dialects and a small
network compiled to schedule and npu level, printed by our printer; the mutations are
textual, so they follow whatever syntax the dialects print.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

from stc_mlir import ir

TESTS = Path(__file__).resolve().parents[1]

NET = """
func.func @main(%x: tensor<8x4x16xf16>) -> tensor<8x4x16xf16> {
  %w = graph.constant dense<0.5> : tensor<16x16xf16>
  %mm = graph.matmul %x, %w : (tensor<8x4x16xf16>, tensor<16x16xf16>) -> tensor<8x4x16xf16>
  %r = graph.relu %mm : tensor<8x4x16xf16>
  %e = graph.exp %r : tensor<8x4x16xf16>
  %a = graph.add %e, %r : tensor<8x4x16xf16>
  %s = graph.softmax %a {axis = 2 : i64} : tensor<8x4x16xf16>
  func.return %s : tensor<8x4x16xf16>
}
"""

GRAPH_FILES = ("conv", "data_movement", "elementwise", "matmul", "normalization", "pooling", "reduction")


def _printed(module) -> str:
    out = StringIO()
    ir.print_module(module, out)
    return out.getvalue()


def sources() -> dict[str, str]:
    """name -> valid IR text (printed by our printer, so in the canonical syntax)."""
    from stc_mlir.pipeline import compile_module

    found = {}
    for stem in GRAPH_FILES:
        path = TESTS / "dialects" / "graph" / f"{stem}.mlir"
        if path.is_file():
            found[f"graph/{stem}"] = _printed(ir.parse_ir(path.read_text(), str(path)))
    path = TESTS / "dialects" / "schedule" / "ops.mlir"
    if path.is_file():
        found["schedule/ops"] = _printed(ir.parse_ir(path.read_text(), str(path)))
    found["graph/net"] = _printed(ir.parse_ir(NET))
    scheduled = ir.parse_ir(NET)
    compile_module(scheduled, stop_after="schedule-verify")
    found["schedule/net"] = _printed(scheduled)
    program = ir.parse_ir(NET)
    compile_module(program)
    found["npu/net"] = _printed(program)
    return found


@dataclass(frozen=True)
class Mutant:
    name: str  # source/mutation/index
    text: str | bytes
    expect: str  # a regex the one-line message must contain


_OP_LINE = re.compile(r"^(\s*(?:%[\w.$-]+(?::\d+)?(?:, %[\w.$-]+)* = )?)([a-z_]+\.[a-z_0-9]+)\b", re.M)
_DEF = re.compile(r"^\s*(%[\w.$-]+) = ", re.M)
_USE = re.compile(r"(?<=[ (,])%[\w.$-]+\b")
_AXIS = re.compile(r"\baxis = (-?\d+) : i64")


def _pick(rng: random.Random, items: list, n: int) -> list:
    return items if len(items) <= n else rng.sample(items, n)


def truncate(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """A file cut short: every strict prefix of a `builtin.module { ... }` leaves it open."""
    end = len(text.rstrip())
    for cut in sorted(rng.sample(range(1, end - 1), min(n, end - 2))):
        yield text[:cut], r""


def stray_quote(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """A `"` inserted anywhere: that line now has an odd number of quotes (printed strings
    escape theirs), so some string literal on it is unterminated."""
    for pos in sorted(rng.sample(range(len(text)), min(n, len(text)))):
        if text[pos] == "\n":
            pos += 1
        yield text[:pos] + '"' + text[pos:], r""


def unknown_op(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    for m in _pick(rng, list(_OP_LINE.finditer(text)), n):
        yield text[:m.start(2)] + m.group(2) + "_bogus" + text[m.end(2):], rf"{re.escape(m.group(2))}_bogus"


def undefined_value(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    for m in _pick(rng, list(_operands(text)), n):
        yield text[:m.start()] + "%never_defined" + text[m.end():], r"never_defined"


def self_use(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """An op's first operand replaced by its own result: an SSA cycle (or a type clash)."""
    candidates = []
    for m in _DEF.finditer(text):
        line_end = text.index("\n", m.end())
        use = _USE.search(text, m.end(), line_end)
        if use is not None:
            candidates.append((m.group(1), use))
    for name, use in _pick(rng, candidates, n):
        yield text[:use.start()] + name + text[use.end():], r""


def _operands(text: str) -> Iterator[re.Match]:
    """Value uses: after the ` = ` of their line (or on a line without one)."""
    for m in _USE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        eq = text.find(" = ", line_start)
        if (eq == -1 or eq < m.start()) and text[m.end():m.end() + 3] != " = ":
            yield m


def use_before_def(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """An operand replaced by a value defined further down in the same function."""
    defs = [(m.start(), m.group(1)) for m in _DEF.finditer(text)]
    candidates = []
    for m in _operands(text):
        end = text.find("func.func", m.end())
        later = [name for pos, name in defs if m.end() < pos < (end if end != -1 else len(text))
                 and name != m.group(0)]
        if later:
            candidates.append((m, later[-1]))
    for m, name in _pick(rng, candidates, n):
        yield text[:m.start()] + name + text[m.end():], r""


def bad_axis(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    for m in _pick(rng, list(_AXIS.finditer(text)), n):
        yield text[:m.start(1)] + "99" + text[m.end(1):], r"99"


_OFFSET = re.compile(r"\] at (\d+)")  # an allocated npu buffer: `ddr[1024] at 2048`
_CORE = re.compile(r"\b(?:l1|wb)\((\d+)\)")  # a per-core npu buffer: `l1(3)[128]`


def huge_offset(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """An npu buffer placed beyond the end of its memory."""
    for m in _pick(rng, list(_OFFSET.finditer(text)), n):
        yield text[:m.start(1)] + "99999999999" + text[m.end(1):], r"99,?999,?999,?999|beyond|exceed"


def bad_core(text: str, rng: random.Random, n: int) -> Iterator[tuple[str, str]]:
    """A per-core npu buffer on a core the target does not have."""
    for m in _pick(rng, list(_CORE.finditer(text)), n):
        yield text[:m.start(1)] + "9" + text[m.end(1):], r"\b9\b"


def invalid_utf8(text: str, rng: random.Random, n: int) -> Iterator[tuple[bytes, str]]:
    data = text.encode()
    for pos in sorted(rng.sample(range(len(data)), min(n, len(data)))):
        yield data[:pos] + b"\xff" + data[pos:], r"invalid UTF-8 \(byte 0xff\)"


MUTATORS: dict[str, tuple[Callable, int]] = {
    # name: (mutator, mutants per source)
    "truncate": (truncate, 6),
    "stray-quote": (stray_quote, 4),
    "unknown-op": (unknown_op, 2),
    "undefined-value": (undefined_value, 2),
    "self-use": (self_use, 2),
    "use-before-def": (use_before_def, 2),
    "bad-axis": (bad_axis, 2),
    "huge-offset": (huge_offset, 3),
    "bad-core": (bad_core, 3),
    "invalid-utf8": (invalid_utf8, 1),
}


def mutants(srcs: dict[str, str], seed: int = 0) -> list[Mutant]:
    out = []
    for src_name, text in srcs.items():
        for mut_name, (mutate, n) in MUTATORS.items():
            rng = random.Random(f"{seed}/{src_name}/{mut_name}")
            for i, (mutated, expect) in enumerate(mutate(text, rng, n)):
                out.append(Mutant(f"{src_name}/{mut_name}/{i}", mutated, expect))
    return out
