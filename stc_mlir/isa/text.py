"""The npu dialect's text, printed and parsed straight from / into a `Program`, without xDSL.

The body of an `npu.program` (docs/npu.md):

    {
      #l0 = 4x64xf16 strides [128, 1]
      #s0 = {waits = [@ready], signals = [@done]}
      npu.origin 0 item "group 'conv'" op "graph.conv2d 'conv1'"
      npu.buffer @x : ddr[1024] at 0
      npu.buffer @w : ddr[576] at 1024 = #graph.extern<"m.weights.bin", 0, 576> : tensor<288xf16>
      npu.buffer @t : l1(0)[512] live 0..1
      npu.input "x" @x : 1x4x16x8xf16
      npu.semaphore @ready core 0
      npu.core 0 {
        dma @x : 256xf16 -> @t[64] : 256xf16 {signals = [@ready], origin = 0, expects = "host"}
        dma @x[128] : #l0 -> @t : #l0 {sync = #s0, expects = "-1"}
        pool max @t : 1x4x4x4xf16 -> @t[128] : 1x4x2x2xf16 {kernel = [2, 2], strides = [2, 2], expects = "-2, -1"}
      }
    }

The text is dense where a big program repeats itself (ResNet-50 b16: 66k commands, 173k
tiles, 9.0 MB; it was 16.6 MB), and stays readable:

- aliases at the top: a tile's layout (`#lN = SHAPExTYPE (strides [...])?`) and a command's
  waits and signals together (`#sN = {waits = [...], signals = [...]}`, used as
  `sync = #sN`). The printer aliases what is used often enough for the alias to save twice
  its definition line, the most used first; any text may use them or write things out;
- a tile's byte offset 0 is left out (`@t : 4xf16`), as are row-major strides;
- origins (`Program.origins`, what each command lowers: schedule item, sub-group, graph op,
  phase) are a table, `npu.origin N item "..." (subgroup "...")? (op "...")? (phase P)?` with
  N counting from 0; a command names its entry with `origin = N`, and one without `origin`
  has the origin of the command before it on its core (the first: none, -1; `origin = -1`
  says none again). The printer writes it where it changes;
- the expected writers of a command's reads (`expects`) are positional when every read
  operand has an entry (`"-4..-1; -6; host"`: input, weight, bias, in the order the command
  writes them), else named (`"input: -1; bias: host"`); four or more writers at a constant
  step are a stepped range (`-33..-21 by 4`);
- a command inside `npu.core` is written without the dialect's `npu.` prefix (`dma ...`), and
  list parameters as `[1, 1, 0, 1]`. The parser also reads `npu.dma ...` and
  `array<i64: 1, 1, 0, 1>` / `array<f64: ...>`.

`format_body` prints it, `parse_body` reads it back into an equal `Program` and records where
every buffer, semaphore, input/output, core and command starts (`Locations`), so parse errors
(`TextError`, with the offset: a bad or undefined alias among them) and verifier errors point
at the right line. A big program is tens of thousands of commands: both run over plain strings
and regular expressions (a command in the printer's form is one match; a tile or an `expects`
string seen before is not parsed again) with the cyclic garbage collector paused; xDSL's
parser, one op per command, took ~1 ms per command.

Buffer contents: a splat or a constant of at most `weights.INLINE_LIMIT` bytes prints inline
(`dense<...>`); a larger one goes to the active `weights.WeightWriter` and prints as
`#graph.extern<"file", offset, nbytes>` (the graph level's side-car reference), or, with no
writer, names the file it was read from (`weights.ExternBytes`) or prints as hex.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stc_mlir import weights
from stc_mlir.isa.program import (
    DTYPES, HOST, OPS, SPACES, Buffer, Command, IOSpec, OpSpec, Origin, Program, Semaphore,
    Tile, Writer, contiguous_strides, symbol,
)

# ----------------------------------------------------------------------------- printing


def string_literal(text: str) -> str:
    """`text` as an MLIR string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def format_float(value: float, dtype: np.dtype = np.dtype(np.float64)) -> str:
    """`value` in MLIR's `%e` style, with more digits when six do not give it back in `dtype`."""
    text = f"{float(value):e}"
    if np.array(float(text), dtype) != np.array(value, dtype):
        text = f"{float(value):.17e}"
    return text


def format_param(kind: str, value: Any) -> str:
    match kind:
        case "int":
            return f"{value} : i64"
        case "ints":
            return f"[{', '.join(map(str, value))}]"
        case "floats":
            return f"[{', '.join(map(format_float, value))}]"
        case "float":
            if not np.isfinite(value):  # MLIR spells inf and nan by their bits
                return f"0x{np.array(value, np.float64).view(np.uint64).item():016X} : f64"
            return f"{format_float(value)} : f64"
        case "bool":
            return "true" if value else "false"
    return string_literal(value)


def format_command(c: Command, core: int = 0, index: int = 0) -> str:
    """One command in the dialect's syntax, on its own (no aliases, its `origin` unless -1):
    parameters, waits and signals, and the writers its reads expect, written relative to its
    place (command `index` of `core`). `format_body` prints the denser form."""
    return "npu." + _Printer().command(c, core, index, -1)


def format_expects(expects: Mapping[str, tuple[Writer, ...]], core: int, index: int,
                   slots: tuple[str, ...] | None = None) -> str:
    """`Command.expects` of command `index` of `core`, compactly: `input: -1; weight: host`.
    A writer on the same core is `-k` (k commands back), on another `c2#40`, the host
    `host`; consecutive commands of one core are a range (`-9..-6`, `c2#40..43`). Given the
    command's read operands (`slots`: those it has, in the order its text writes them) and an
    entry for each of them, the entries are positional, without the names: `-1; host`."""
    positional = slots is not None and len(expects) == len(slots) and all(s in expects for s in slots)
    if positional:
        return "; ".join(_refs_text(expects[slot], core, index) for slot in slots)  # type: ignore[union-attr]
    return "; ".join(f"{slot}: {_refs_text(writers, core, index)}" for slot, writers in expects.items())


def _refs_text(writers: tuple[Writer, ...], core: int, index: int) -> str:
    """One entry of an `expects`: the writers, consecutive ones as a range."""
    if len(writers) == 1:
        on, i = writers[0]
        if on == core and 0 <= i < index:
            return f"-{index - i}"
        return "host" if writers[0] == HOST else f"c{on}#{i}"
    refs: list[str] = []
    ws = sorted(writers)
    i = 0
    while i < len(ws):
        on, step, j = ws[i][0], 1, i + 1
        while j < len(ws) and ws[j] == (on, ws[j - 1][1] + 1):
            j += 1
        if j == i + 1 and j < len(ws) and ws[j][0] == on != HOST[0]:  # no range: one with a step?
            step = ws[j][1] - ws[i][1]
            while j < len(ws) and ws[j] == (on, ws[j - 1][1] + step):
                j += 1
            if j - i < _STEPPED_RUN:
                step, j = 1, i + 1
        first, last = _writer_ref(ws[i], core, index), _writer_ref(ws[j - 1], core, index)
        refs.append(first if j == i + 1 else f"{first}..{last.split('#')[-1]}" + (f" by {step}" if step > 1 else ""))
        i = j
    return ", ".join(refs)


_STEPPED_RUN = 4
"""Writers at a constant step (every third command: a strided loop's loads) are written as
`-16..-7 by 3` from this many on (three are no shorter as a list)."""


def _writer_ref(w: Writer, core: int, index: int) -> str:
    if w == HOST:
        return "host"
    return f"-{index - w[1]}" if w[0] == core and w[1] < index else f"c{w[0]}#{w[1]}"


_NAMED_EXPECTS = re.compile(r"\s*[A-Za-z_]\w*\s*:")
_EXPECTS_ENTRY = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*([^;]*?)\s*(?:;|$)")
_WRITER_REF = re.compile(r"\s*(?:(host)|-(\d+)(?:\.\.-(\d+))?|c(\d+)#(\d+)(?:\.\.(\d+))?)(?:\s+by\s+\d+)?\s*(?:,|$)")


def parse_expects(text: str, core: int, index: int,
                  slots: tuple[str, ...] | None = None) -> dict[str, tuple[Writer, ...]]:
    """The inverse of `format_expects` (`slots`: the command's read operands, which a
    positional form needs); ValueError says what is wrong (whether the writers exist and
    write what is read is `check_program`'s job)."""
    key = (text, slots)
    parsed = _expects_forms.get(key)
    if parsed is None:
        if len(_expects_forms) > 1 << 16:
            _expects_forms.clear()
        parsed = _expects_forms[key] = _expects_form(text, slots)
    expects: dict[str, tuple[Writer, ...]] = {}
    for slot, refs in parsed:
        writers: list[Writer] = []
        for on, lo, hi, step in refs:
            if on is None:  # -lo..-hi (by step)
                if lo > index:
                    raise ValueError(f"expects: {slot}: -{lo} is not an earlier command of "
                                     f"core {core} (this is command #{index})")
                pairs = _WRITERS.get(core)
                if pairs is None or len(pairs) < index:
                    pairs = _writers_of(core, index)
                writers += pairs[index - lo:index - hi + 1:step]
            elif on == -1:
                writers.append(HOST)
            else:  # another core's: any index (the verifier checks it exists)
                writers += [(on, i) for i in range(lo, hi + 1, step)]
        expects[slot] = tuple(writers)
    return expects


def _writers_of(core: int, count: int) -> list[Writer]:
    """[(core, 0), (core, 1), ...], at least `count` long (shared: writers of earlier
    commands on the same core are slices of it; `count` is at most the parsed command's
    index)."""
    pairs = _WRITERS.get(core)
    if pairs is None:
        pairs = _WRITERS[core] = []
    if len(pairs) < count:
        pairs += [(core, i) for i in range(len(pairs), max(count, 2 * len(pairs)))]
    return pairs


_WRITERS: dict[int, list[Writer]] = {}


_Ref = tuple[int | None, int, int, int]
"""A writer reference as written: (None, k, j, step) for -k..-j (by step), (-1, -1, -1, 1)
for the host, (core, first, last, step) for cN#first..last (by step)."""
_expects_forms: dict[tuple[str, tuple[str, ...] | None], tuple[tuple[str, tuple[_Ref, ...]], ...]] = {}
_REF = r"(?:(host)|-(\d+)(?:\.\.-(\d+))?|c(\d+)#(\d+)(?:\.\.(\d+))?)(?:\s+by\s+(\d+))?"
_REF_NC = r"(?:host|-\d+(?:\.\.-\d+)?|c\d+#\d+(?:\.\.\d+)?)(?:\s+by\s+\d+)?"
_REF_LIST = r"\s*(?:" + _REF_NC + r"\s*(?:,\s*" + _REF_NC + r"\s*)*,?\s*)?"
_REF_ENTRY = re.compile(_REF_LIST)
_POSITIONAL = re.compile(_REF_LIST + r"(?:;" + _REF_LIST + r")*")
_REF_ITEM = re.compile(r"(;)|" + _REF)


def _expects_form(text: str, slots: tuple[str, ...] | None) -> tuple[tuple[str, tuple[_Ref, ...]], ...]:
    """`text` as (slot, references) pairs, not yet placed at a command."""
    if not _NAMED_EXPECTS.match(text):
        if slots is None:
            raise ValueError("expects: expected 'slot: writers'")
        entries = text.count(";") + 1 if slots or text.strip() else 0
        if entries != len(slots):
            reads = f" ({', '.join(slots)})" if slots else ""
            raise ValueError(f"expects: {entries} positional entries for {len(slots)} read "
                             f"operands{reads}; or name them ('slot: writers; ...')")
        if _POSITIONAL.fullmatch(text) is None:  # say which entry is wrong
            for slot, refs in zip(slots, text.split(";")):
                _references(slot, refs.strip())
        form, refs, i = [], [], 0
        for sep, *ref in _REF_ITEM.findall(text):
            if sep:
                form.append((slots[i], tuple(refs)))
                refs, i = [], i + 1
            else:
                refs.append(_reference(slots[i], *ref))
        if slots:
            form.append((slots[i], tuple(refs)))
        return tuple(form)
    named: dict[str, tuple[_Ref, ...]] = {}
    pos = 0
    while pos < len(text):
        m = _EXPECTS_ENTRY.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"expects: expected 'slot: writers' at {text[pos:pos + 20]!r}")
        pos = m.end()
        slot, refs_text = m.groups()
        if slot in named:
            raise ValueError(f"expects: operand '{slot}' is given twice")
        named[slot] = _references(slot, refs_text)
    return tuple(named.items())


def _references(slot: str, refs: str) -> tuple[_Ref, ...]:
    """The writer references of one `expects` entry."""
    if _REF_ENTRY.fullmatch(refs) is None:
        at = 0  # find the first bad one
        while at < len(refs):
            r = _WRITER_REF.match(refs, at)
            if r is None or r.end() == at:
                break
            at = r.end()
        raise ValueError(f"expects: {slot}: expected a writer (-k, cN#i, a range "
                         f"-k..-j / cN#i..j, one with a step -k..-j by s, or host) at {refs[at:at + 20]!r}")
    return tuple(_reference(slot, *ref) for sep, *ref in _REF_ITEM.findall(refs))


def _reference(slot: str, host: str, back: str, back_to: str, other: str, first: str, last: str,
               by: str) -> _Ref:
    step = int(by or 1)
    if by and (step == 0 or not (back_to or last)):  # `host by 2`, `-3 by 2`, `-6..-3 by 0`
        raise ValueError(f"expects: {slot}: 'by {by}' needs a range and a step of at least 1")
    if host:
        return (-1, -1, -1, 1)
    lo, hi = (int(back), int(back_to or back)) if back else (int(first), int(last or first))
    if back and (lo == 0 or hi == 0):
        raise ValueError(f"expects: {slot}: -0 is not an earlier command")
    if (hi > lo) if back else (hi < lo):
        raise ValueError(f"expects: {slot}: empty writer range")
    if abs(hi - lo) % step:
        raise ValueError(f"expects: {slot}: range {'-' if back else ''}{lo}..{'-' if back else ''}{hi} "
                         f"by {step} does not end on a step")
    return (None if back else int(other), lo, hi, step)


Layout = tuple[tuple[int, ...], str, tuple[int, ...]]
"""A tile's shape, element type and strides: what a layout alias stands for."""


def layout_text(shape: tuple[int, ...], dtype: str, strides: tuple[int, ...]) -> str:
    """A tile's layout: `4x8xf16`, with ` strides [...]` when they are not row-major."""
    text = "".join(f"{d}x" for d in shape) + dtype
    if strides != contiguous_strides(shape):
        text += f" strides [{', '.join(map(str, strides))}]"
    return text


def sync_text(waits: tuple[str, ...], signals: tuple[str, ...]) -> str:
    """`waits = [@a], signals = [@b]` (each only if not empty)."""
    parts = []
    if waits:
        parts.append(f"waits = [{', '.join(map(symbol, waits))}]")
    if signals:
        parts.append(f"signals = [{', '.join(map(symbol, signals))}]")
    return ", ".join(parts)


class _Printer:
    """Prints commands, with the aliases `choose_aliases` picked for a program's body."""

    def __init__(self) -> None:
        self.layouts: dict[Layout, str] = {}  # the aliased layouts and their names
        self.syncs: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
        self.definitions: list[str] = []
        self._tiles: dict[int, str] = {}  # by id: the program keeps its tiles alive
        self._params: dict[tuple[Any, ...], list[str]] = {}

    def choose_aliases(self, program: Program, indent: str) -> None:
        """Alias the layouts and (waits, signals) pairs whose uses save more than twice the
        text the alias's definition line costs (what a small program uses a few times stays
        in place), the most used first: `#l0` is the most used layout, `#s0` the most used
        pair (ties in the order of their text)."""
        tiles: dict[int, tuple[Tile, int]] = {}
        sync_uses: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
        for stream in program.cores.values():
            for c in stream:
                for t in c.tiles.values():
                    seen = tiles.get(id(t))
                    tiles[id(t)] = (t, 1) if seen is None else (t, seen[1] + 1)
                if c.waits or c.signals:
                    key = (c.waits, c.signals)
                    sync_uses[key] = sync_uses.get(key, 0) + 1
        layout_uses: dict[Layout, int] = {}
        for t, n in tiles.values():
            key = (t.shape, t.dtype, t.strides)
            layout_uses[key] = layout_uses.get(key, 0) + n
        line = len(indent) + len(" = \n")
        for n, text, layout in sorted((-n, layout_text(*k), k) for k, n in layout_uses.items()):
            name = f"#l{len(self.layouts)}"
            if -n * (len(text) - len(name)) > 2 * (line + len(name) + len(text)):
                self.layouts[layout] = name
                self.definitions.append(f"{name} = {text}")
        for n, text, sync in sorted((-n, sync_text(*k), k) for k, n in sync_uses.items()):
            name = f"#s{len(self.syncs)}"
            if -n * (len(text) - len(name) - len("sync = ")) > 2 * (line + len(name) + len(text) + len("{}")):
                self.syncs[sync] = name
                self.definitions.append(f"{name} = {{{text}}}")

    def tile(self, t: Tile) -> str:
        text = self._tiles.get(id(t))
        if text is None:
            layout = (t.shape, t.dtype, t.strides)
            text = self._tiles[id(t)] = (f"{symbol(t.buffer)}{f'[{t.offset}]' if t.offset else ''} : "
                                         f"{self.layouts.get(layout) or layout_text(*layout)}")
        return text

    def sync(self, waits: tuple[str, ...], signals: tuple[str, ...]) -> str:
        name = self.syncs.get((waits, signals))
        return f"sync = {name}" if name else sync_text(waits, signals)

    def command(self, c: Command, core: int, index: int, previous_origin: int) -> str:
        """Command `index` of `core` as its `npu.core` region spells it (without the dialect's
        `npu.` prefix); its origin is written if it is not `previous_origin`."""
        spec = OPS[c.op]
        tiles, tile = c.tiles, self.tile
        text = f"{c.op} {c.params['kind']}" if "kind" in spec.params else c.op
        if spec.outs:
            opts = "".join(f" {s} {tile(tiles[s])}" for s in spec.optional if s in tiles)
            text += (f" {', '.join(tile(tiles[s]) for s in spec.ins)}{opts} -> "
                     f"{', '.join(tile(tiles[s]) for s in spec.outs)}")
        key = (c.op, *c.params.items())
        attrs = self._params.get(key)
        if attrs is None:
            attrs = self._params[key] = [
                f"{k} = {format_param(kind, c.params[k])}" for k, (kind, default) in spec.params.items()
                if k != "kind" and c.params[k] != default]
        attrs = list(attrs)
        if c.waits or c.signals:
            attrs.append(self.sync(c.waits, c.signals))
        if c.origin != previous_origin:
            attrs.append(f"origin = {c.origin}")
        if c.expects is not None:
            slots = spec.reads if len(tiles) == len(spec.slots) else tuple(s for s in spec.reads if s in tiles)
            attrs.append(f'expects = "{format_expects(c.expects, core, index, slots)}"')
        return f"{text} {{{', '.join(attrs)}}}" if attrs else text


def format_init(data: bytes, dtype: str) -> str:
    """Constant buffer contents: `dense<...> : tensor<NxT>` or a side-car reference."""
    np_dtype = DTYPES[dtype]
    count = len(data) // np_dtype.itemsize
    type_text = f"tensor<{count}x{dtype}>"
    head = data[: np_dtype.itemsize]
    values = np.frombuffer(head, np_dtype)
    if count and head * count == data and np.all(np.isfinite(values)):  # a splat: one value
        return f"dense<{_literal(values[0], np_dtype)}> : {type_text}"
    if len(data) <= weights.INLINE_LIMIT:
        values = np.frombuffer(data, np_dtype)
        if np.all(np.isfinite(values)):
            return f"dense<[{', '.join(_literal(v, np_dtype) for v in values)}]> : {type_text}"
    elif (writer := weights.active_writer()) is not None:
        return f"#graph.extern<{string_literal(writer.name)}, {writer.put(data)}, {len(data)}> : {type_text}"
    elif isinstance(data, weights.ExternBytes):
        return f"#graph.extern<{string_literal(data.path)}, {data.offset}, {len(data)}> : {type_text}"
    return f'dense<"0x{data.hex().upper()}"> : {type_text}'


def _literal(value: Any, dtype: np.dtype) -> str:
    return format_float(value, dtype) if dtype.kind == "f" else str(int(value))


def format_buffer(b: Buffer) -> str:
    core = f"({b.core})" if b.core is not None else ""
    text = f"npu.buffer {symbol(b.name)} : {b.space}{core}[{b.size}]"
    if b.offset is not None:
        text += f" at {b.offset}"
    if b.init is not None:
        text += " = " + format_init(b.init, b.init_dtype)
    if b.live is not None:
        text += f" live {b.live[0]}..{b.live[1]}"
    return text


def format_origin(index: int, origin: Origin) -> str:
    text = f"npu.origin {index} item {string_literal(origin.item)}"
    if origin.subgroup:
        text += f" subgroup {string_literal(origin.subgroup)}"
    if origin.op:
        text += f" op {string_literal(origin.op)}"
    return text + (f" phase {origin.phase}" if origin.phase != -1 else "")


def format_phases(phases: tuple[str, ...]) -> str:
    """The `npu.phases` attribute of the program header."""
    return f"npu.phases = [{', '.join(map(string_literal, phases))}]"


def format_body(program: Program, indent: str = "") -> str:
    """The program's body, `{` to `}`, its lines indented by `indent` plus two spaces: the
    aliases, origins, buffers, inputs, outputs, semaphores, then the cores' commands (a
    command's `origin` written where it differs from the command's before it)."""
    with _without_gc():
        return _format_body(program, indent)


def _format_body(program: Program, indent: str) -> str:
    inner, deeper = indent + "  ", indent + "    "
    printer = _Printer()
    printer.choose_aliases(program, inner)
    lines = [inner + d for d in printer.definitions]
    lines += [inner + format_origin(i, o) for i, o in enumerate(program.origins)]
    lines += [inner + format_buffer(b) for b in program.buffers.values()]
    for keyword, ios in (("input", program.inputs), ("output", program.outputs)):
        lines += [f"{inner}npu.{keyword} {string_literal(io.name)} {symbol(io.buffer)} : "
                  f"{''.join(f'{d}x' for d in io.shape)}{io.dtype}" for io in ios]
    for s in program.semaphores.values():
        lines.append(f"{inner}npu.semaphore {symbol(s.name)} core {s.core}" + (f" init {s.init}" if s.init else ""))
    for core in sorted(program.cores):
        lines.append(f"{inner}npu.core {core} {{")
        previous = -1
        for i, c in enumerate(program.cores[core]):
            lines.append(deeper + printer.command(c, core, i, previous))
            previous = c.origin
        lines.append(inner + "}")
    return "{\n" + "".join(line + "\n" for line in lines) + indent + "}"


# ----------------------------------------------------------------------------- parsing


class TextError(ValueError):
    """A syntax error at character `pos` of the parsed text."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message, self.pos = message, pos


@dataclass
class Locations:
    """Where each part of a parsed program starts: character offsets into `text`."""

    text: str
    program: int = 0
    buffers: dict[str, int] = field(default_factory=dict)
    semaphores: dict[str, int] = field(default_factory=dict)
    ios: dict[tuple[str, str], int] = field(default_factory=dict)
    cores: dict[int, int] = field(default_factory=dict)
    commands: dict[int, list[int]] = field(default_factory=dict)


_WS = re.compile(r"(?:\s+|//[^\n]*)+")
_NAME = r'@(?:([A-Za-z_][\w$.\-]*)|"((?:[^"\\]|\\.)*)")'
_SYM = re.compile(_NAME)
_ALIAS = r"#[A-Za-z_]\w*"
_ALIAS_NAME = re.compile(_ALIAS)
_TILE = re.compile(_NAME + r"\s*(?:\[\s*(\d+)\s*\])?\s*:\s*(?:(" + _ALIAS + r")|((?:\d+\s*x\s*)*)([A-Za-z]\w*)"
                   r"(?:\s*strides\s*\[\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\])?)")
_STRIDES = re.compile(r"strides\s*\[\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\]")
_KEYWORD = re.compile(r"[A-Za-z_][\w$.]*")
_INT = re.compile(r"\d+")
_NUMBER = re.compile(r"-?(?:0x[0-9a-fA-F]+|\d+(\.\d*)?(?:[eE][-+]?\d+)?)")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_SHAPE = re.compile(r"((?:\d+x)*)([A-Za-z]\w*)")
_FLOAT_BITS = {"f16": (np.uint16, np.float16), "f32": (np.uint32, np.float32), "f64": (np.uint64, np.float64)}
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r'\\(n|t|"|\\|[0-9a-fA-F]{2})',
                  lambda m: _ESCAPES.get(m.group(1)) or chr(int(m.group(1), 16)), text)


class _Symbol(str):
    """A symbol reference (`@name`) among attribute values."""


class _Alias(str):
    """An alias reference (`#name`) among attribute values."""


class _Scanner:
    def __init__(self, text: str, pos: int = 0):
        self.text, self.pos = text, pos
        self.layouts: dict[str, Layout] = {}  # the body's aliases, by name (with the '#')
        self.syncs: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.tiles: dict[str, Tile] = {}  # tiles by their text in the printer's form

    def error(self, message: str, pos: int | None = None) -> TextError:
        return TextError(message, self.pos if pos is None else pos)

    def skip(self) -> int:
        m = _WS.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return self.pos

    def match(self, regex: re.Pattern[str]) -> re.Match[str] | None:
        self.skip()
        m = regex.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def expect(self, regex: re.Pattern[str], what: str) -> re.Match[str]:
        m = self.match(regex)
        if m is None:
            raise self.error(f"Expected {what}")
        return m

    def punct(self, text: str) -> bool:
        self.skip()
        if self.text.startswith(text, self.pos):
            self.pos += len(text)
            return True
        return False

    def expect_punct(self, text: str) -> None:
        if not self.punct(text):
            raise self.error(f"Expected '{text}'")

    def keyword(self, word: str) -> bool:
        self.skip()
        m = _KEYWORD.match(self.text, self.pos)
        if m and m.group() == word:
            self.pos = m.end()
            return True
        return False

    def integer(self) -> int:
        return int(self.expect(_INT, "integer literal").group())

    def symbol(self) -> str:
        m = self.expect(_SYM, "symbol reference")
        return m.group(1) if m.group(1) is not None else _unescape(m.group(2))

    def string(self) -> str:
        return _unescape(self.expect(_STRING, "string literal").group(1))

    def shape(self) -> tuple[tuple[int, ...], str]:
        start = self.skip()
        m = self.expect(_SHAPE, "a shape and element type (e.g. 4x16xf16)")
        dtype = m.group(2)
        if dtype not in DTYPES:
            raise self.error(f"unsupported npu element type {dtype} (expected {_or(DTYPES)})", start)
        return tuple(int(d) for d in m.group(1).split("x")[:-1]), dtype

    def tile(self) -> Tile:
        start = self.skip()
        m = _TILE.match(self.text, start)
        if m is None:
            self._tile_error()
        self.pos = m.end()
        name = m.group(1) if m.group(1) is not None else _unescape(m.group(2))
        if m.group(4) is not None:
            shape, dtype, strides = self.layout_alias(m.group(4), m.start(4))
            return Tile(name, int(m.group(3) or 0), shape, strides, dtype)
        dtype = m.group(6)
        if dtype not in DTYPES:
            raise self.error(f"unsupported npu element type {dtype} (expected {_or(DTYPES)})",
                             m.start(6))
        shape = tuple(int(d) for d in re.split(r"\s*x\s*", m.group(5))[:-1])
        strides = (contiguous_strides(shape) if m.group(7) is None
                   else tuple(int(s) for s in m.group(7).split(",")))
        return Tile(name, int(m.group(3) or 0), shape, strides, dtype)

    def layout_alias(self, name: str, at: int) -> Layout:
        return self._alias(name, at, self.layouts, self.syncs, "layout", "sync", "SHAPExTYPE (strides [...])?")

    def sync_alias(self, name: str, at: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self._alias(name, at, self.syncs, self.layouts, "sync", "layout",
                           "{waits = [...], signals = [...]}")

    def _alias(self, name: str, at: int, table: dict, other: dict, kind: str, other_kind: str, form: str) -> Any:
        """The definition of alias `name` in `table`, or an error at `at` saying why not."""
        value = table.get(name)
        if value is None:
            raise self.error(f"{name} is a {other_kind} alias, not a {kind}" if name in other else
                             f"undefined {kind} alias {name} (define it before its first use: "
                             f"{name} = {form})", at)
        return value

    def _tile_error(self) -> None:
        """Say exactly what is wrong with a tile the fast expression did not match."""
        self.symbol()
        if self.punct("["):
            self.integer()
            self.expect_punct("]")
        self.expect_punct(":")
        if self.text.startswith("#", self.skip()):
            self.expect(_ALIAS_NAME, "a layout alias (#name)")
        else:
            self.shape()
            if self.keyword("strides"):
                self.expect_punct("[")
                self.expect(re.compile(r"-?\d+"), "integer literal")
        raise self.error("Expected a tile: @buffer([byte offset])? : SHAPExTYPE (strides [...])? or "
                         "@buffer([byte offset])? : #layout")

    def value(self) -> Any:
        """An attribute value: integer, float, bool, string, symbol, array<i64: ...> or [list]."""
        start = self.skip()
        text = self.text
        if text.startswith("array<", start):
            self.pos = start + len("array<")
            element = self.expect(re.compile(r"[if]64\b"), "'i64' or 'f64' (array<i64: ...>, array<f64: ...>)")
            read = self._signed if element.group() == "i64" else self._real
            values: list[Any] = []
            if self.punct(":"):
                values.append(read())
                while self.punct(","):
                    values.append(read())
            self.expect_punct(">")
            return tuple(values)
        if text.startswith('"', start):
            return self.string()
        if text.startswith("@", start):
            return _Symbol(self.symbol())
        if text.startswith("#", start):
            return _Alias(self.expect(_ALIAS_NAME, "an alias (#name)").group())
        if text.startswith("[", start):
            self.pos = start + 1
            items = []
            if not self.punct("]"):
                items.append(self.value())
                while self.punct(","):
                    items.append(self.value())
                self.expect_punct("]")
            return items
        if self.keyword("true"):
            return True
        if self.keyword("false"):
            return False
        m = self.expect(_NUMBER, "an attribute value")
        literal = m.group()
        number: Any
        if literal.lstrip("-").lower().startswith("0x"):
            number = int(literal, 16)
        elif m.group(1) is not None or "e" in literal.lower():
            number = float(literal)
        else:
            number = int(literal)
        if self.punct(":"):
            type_start = self.skip()
            t = self.expect(_KEYWORD, "a type").group()
            if t == "i1":
                return bool(number)
            if t in _FLOAT_BITS and literal.lstrip("-").lower().startswith("0x"):
                return float(np.array(number, _FLOAT_BITS[t][0]).view(_FLOAT_BITS[t][1]))
            if t.startswith("f"):
                return float(number)
            if not t.startswith(("i", "si", "ui")) and t != "index":
                raise self.error(f"unexpected type {t}", type_start)
        return number

    def _real(self) -> float:
        return float(self.expect(_NUMBER, "a float literal").group())

    def _signed(self) -> int:
        m = self.expect(re.compile(r"-?\d+"), "integer literal")
        return int(m.group())

    def attr_dict(self) -> dict[str, tuple[Any, int, int]]:
        """`{key = value, ...}`: each value with the offsets where it and its key start."""
        self.expect_punct("{")
        items: dict[str, tuple[Any, int, int]] = {}
        if self.punct("}"):
            return items
        while True:
            key_start = self.skip()
            key = self.string() if self.text.startswith('"', key_start) else \
                self.expect(_KEYWORD, "attribute name").group()
            if key in items:
                raise self.error(f"attribute '{key}' is given twice", key_start)
            self.expect_punct("=")
            at = self.skip()
            items[key] = (self.value(), at, key_start)
            if not self.punct(","):
                break
        self.expect_punct("}")
        return items


def _or(names: Any) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def find_block_end(content: str | bytes, start: int) -> int:
    """The offset just past the `}` matching the `{` at `start` (strings and `//` comments
    skipped), or -1."""
    pattern = _BLOCK_BYTES if isinstance(content, bytes) else _BLOCK
    depth = 0
    for m in pattern.finditer(content, start):  # type: ignore[arg-type]
        c = m.group()[:1]
        if c in ("{", b"{"):
            depth += 1
        elif c in ("}", b"}"):
            depth -= 1
            if depth == 0:
                return m.end()
    return -1


_BLOCK = re.compile(r'[{}]|"(?:[^"\\\n]|\\.)*"|//[^\n]*')
_BLOCK_BYTES = re.compile(rb'[{}]|"(?:[^"\\\n]|\\.)*"|//[^\n]*')


def parse_body(text: str, name: str = "main", target: str = "stcp920", pos: int = 0,
               phases: tuple[str, ...] = ()) -> tuple[Program, Locations, int]:
    """Parse the body `{ ... }` starting at `text[pos]`: the program, where its parts are,
    and the offset just past the closing `}`. Raises `TextError`."""
    with _without_gc():
        return _parse_body(text, name, target, pos, phases)


@contextlib.contextmanager
def _without_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: reading or printing a big program makes
    hundreds of thousands of objects and no cycles, and the collections their allocation
    triggers (each walking the young objects, now and then all of them) took ~40% of the
    parse of ResNet-50 b16. Reference counting still frees everything as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _parse_body(text: str, name: str, target: str, pos: int,
                phases: tuple[str, ...]) -> tuple[Program, Locations, int]:
    s = _Scanner(text, pos)
    program = Program(name=name, target=target, phases=tuple(phases))
    where = Locations(text, program=pos)
    s.expect_punct("{")
    while not s.punct("}"):
        start = s.skip()
        if start >= len(text):
            raise s.error("Expected '}' to close npu.program")
        if text.startswith("#", start):
            _alias(s, start)
            continue
        m = s.expect(_KEYWORD, "an npu op (npu.buffer, npu.semaphore, npu.input, npu.output or npu.core)")
        op = m.group()
        statement = _STATEMENTS.get(op)
        if statement is None:
            if op in _COMMANDS:
                raise s.error(f"'{op}' expects parent op 'npu.core'", start)
            raise s.error(f"unexpected '{op}' in npu.program: expected npu.buffer, npu.semaphore, "
                          "npu.input, npu.output or npu.core", start)
        statement(s, program, where, start)
    return program, where, s.pos


def parse_phases(s_text: str, pos: int) -> tuple[tuple[str, ...], int]:
    """`phases ["...", ...]` (the generic form's spelling of npu.phases), if present at `pos`."""
    s = _Scanner(s_text, pos)
    if not s.keyword("phases"):
        return (), pos
    value = s.value()
    if not isinstance(value, list) or not all(isinstance(v, str) and not isinstance(v, (_Symbol, _Alias)) for v in value):
        raise s.error("phases must be a list of strings", pos)
    return tuple(value), s.pos


def _alias(s: _Scanner, start: int) -> None:
    """`#name = SHAPExTYPE (strides [...])?` (a layout) or `#name = {waits = [...],
    signals = [...]}` (a sync)."""
    name = s.expect(_ALIAS_NAME, "an alias name (#name)").group()
    if name in s.layouts or name in s.syncs:
        raise s.error(f"alias {name} is defined twice", start)
    s.expect_punct("=")
    at = s.skip()
    if not s.text.startswith("{", at):
        shape, dtype = s.shape()
        strides = contiguous_strides(shape)
        m = s.match(_STRIDES)
        if m is not None:
            strides = tuple(int(v) for v in m.group(1).split(",")) if m.group(1) else ()
        s.layouts[name] = (shape, dtype, strides)
        return
    sync: dict[str, tuple[str, ...]] = {"waits": (), "signals": ()}
    for key, (value, value_at, key_at) in s.attr_dict().items():
        if key not in sync:
            raise s.error(f"a sync alias holds waits and signals, not '{key}'", key_at)
        if not isinstance(value, list) or not all(isinstance(v, _Symbol) for v in value):
            raise s.error(f"{key} must be a list of semaphores [@a, @b]", value_at)
        sync[key] = tuple(value)
    s.syncs[name] = (sync["waits"], sync["signals"])


def _buffer(s: _Scanner, program: Program, where: Locations, start: int) -> None:
    name = s.symbol()
    s.expect_punct(":")
    space_at = s.skip()
    m = _KEYWORD.match(s.text, space_at)
    if m is None or m.group() not in SPACES:
        raise s.error("Expected `l1`, `wb`, `llb`, or `ddr`.", space_at)
    space = m.group()
    s.pos = m.end()
    core = None
    if s.punct("("):
        core = s.integer()
        s.expect_punct(")")
    s.expect_punct("[")
    size = s.integer()
    s.expect_punct("]")
    offset = s.integer() if s.keyword("at") else None
    init, init_dtype = None, "f16"
    if s.punct("="):
        init, init_dtype = _init(s)
    live = None
    if s.keyword("live"):  # the phases it is used in: `live 3..7`
        first = s.integer()
        s.expect_punct("..")
        live = (first, s.integer())
    if s.keyword("attributes"):  # the generic spelling: {npu.live = array<i64: 3, 7>}
        attrs = s.attr_dict()
        for key, (value, at, key_at) in attrs.items():
            if key != "npu.live":
                raise s.error(f"unknown attribute '{key}' on npu.buffer (it takes npu.live)", key_at)
            if not (isinstance(value, tuple) and len(value) == 2):
                raise s.error("npu.live must be array<i64: first, last>", at)
            if live is not None:
                raise s.error("npu.live is given twice (by live and in attributes)", key_at)
            live = (value[0], value[1])
    if name in program.buffers:
        raise s.error(f"buffer @{name} is defined twice", start)
    program.buffers[name] = Buffer(name, space, size, core, offset, init, init_dtype, live)
    where.buffers[name] = start


def _init(s: _Scanner) -> tuple[bytes, str]:
    """`dense<...> : tensor<...>` or `#graph.extern<"file", offset, nbytes> : tensor<...>`."""
    start = s.skip()
    if s.keyword("dense"):
        s.expect_punct("<")
        value = None if s.punct(">") else s.value()
        if value is not None:
            s.expect_punct(">")
        shape, dtype = _tensor_type(s)
        return _dense_bytes(s, value, shape, dtype, start), dtype
    if s.punct("#graph.extern"):
        s.expect_punct("<")
        path = s.string()
        s.expect_punct(",")
        offset = s.integer()
        s.expect_punct(",")
        nbytes = s.integer()
        s.expect_punct(">")
        shape, dtype = _tensor_type(s)
        expected = int(np.prod(shape)) * DTYPES[dtype].itemsize
        if nbytes != expected:
            raise s.error(f"#graph.extern holds {nbytes} bytes but tensor<{'x'.join(map(str, shape))}x{dtype}> "
                          f"needs {expected}", start)
        try:
            return weights.read_bytes(path, offset, nbytes), dtype
        except (OSError, ValueError) as err:
            raise s.error(str(err), start) from None
    raise s.error("Expected buffer contents: dense<...> or #graph.extern<...>")


def _tensor_type(s: _Scanner) -> tuple[tuple[int, ...], str]:
    s.expect_punct(":")
    if not s.keyword("tensor"):
        raise s.error("Expected tensor type")
    s.expect_punct("<")
    shape = s.shape()
    s.expect_punct(">")
    return shape


def _dense_bytes(s: _Scanner, value: Any, shape: tuple[int, ...], dtype: str, at: int) -> bytes:
    np_dtype = DTYPES[dtype]
    count = int(np.prod(shape))
    if isinstance(value, str) and not isinstance(value, (_Symbol, _Alias)):
        if not re.fullmatch(r"0x(?:[0-9a-fA-F]{2})*", value):
            raise s.error("a dense hex string is \"0x\" and hex digits", at)
        data = bytes.fromhex(value[2:])
        if len(data) == np_dtype.itemsize:
            data *= count
        if len(data) != count * np_dtype.itemsize:
            raise s.error(f"dense hex holds {len(data)} bytes, the tensor needs {count * np_dtype.itemsize}", at)
        return data
    flat: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, (int, float)) and not isinstance(v, _Symbol):
            flat.append(v)
        else:
            raise s.error(f"unexpected dense element {v!r}", at)

    walk([] if value is None else value)
    if len(flat) == 1 and not isinstance(value, list):
        flat *= count
    if len(flat) != count:
        raise s.error(f"dense literal has {len(flat)} elements, the tensor needs {count}", at)
    return np.array(flat, dtype=np.float64 if np_dtype.kind == "f" else np.int64).astype(np_dtype).tobytes()


def _origin(s: _Scanner, program: Program, where: Locations, start: int) -> None:
    index = s.integer()
    if index != len(program.origins):
        raise s.error(f"npu.origin {index} is out of order: the table counts from 0, this entry "
                      f"is number {len(program.origins)}", start)
    parts: dict[str, Any] = {}
    for keyword in ("item", "subgroup", "op"):
        if s.keyword(keyword):
            parts[keyword] = s.string()
        elif keyword == "item":
            raise s.error("Expected 'item' and the schedule item's label (npu.origin N item \"...\")")
    if s.keyword("phase"):
        parts["phase"] = s.integer()
    program.origins.append(Origin(**parts))


def _semaphore(s: _Scanner, program: Program, where: Locations, start: int) -> None:
    name = s.symbol()
    if not s.keyword("core"):
        raise s.error("Expected 'core'")
    core = s.integer()
    init = s.integer() if s.keyword("init") else 0
    if name in program.semaphores:
        raise s.error(f"semaphore @{name} is defined twice", start)
    program.semaphores[name] = Semaphore(name, core, init)
    where.semaphores[name] = start


def _io(kind: str) -> Callable[[_Scanner, Program, Locations, int], None]:
    def parse(s: _Scanner, program: Program, where: Locations, start: int) -> None:
        name = s.string()
        buffer = s.symbol()
        s.expect_punct(":")
        shape, dtype = s.shape()
        (program.inputs if kind == "input" else program.outputs).append(IOSpec(name, buffer, shape, dtype))
        where.ios[(kind, name)] = start

    return parse


def _core(s: _Scanner, program: Program, where: Locations, start: int) -> None:
    core = s.integer()
    if core in program.cores:
        raise s.error(f"npu.core {core} is defined twice", start)
    s.expect_punct("{")
    stream: list[Command] = []
    positions: list[int] = []
    origin = -1  # a command without `origin` has the one of the command before it
    text, space = s.text, _WS.match
    while True:
        w = space(text, s.pos)
        at = s.pos = w.end() if w else s.pos
        if text.startswith("}", at):
            s.pos = at + 1
            break
        if at >= len(text):
            raise s.error(f"Expected '}}' to close npu.core {core}")
        m = _KEYWORD.match(text, at)
        spec = _COMMANDS.get(m.group()) if m is not None else None
        if spec is None:
            what = m.group() if m is not None else s.text[at:at + 1]
            if what in _STATEMENTS:
                raise s.error(f"'{what}' expects parent op 'npu.program'", at)
            raise s.error(f"Expected an npu command ({', '.join(OPS)}), got '{what}'", at)
        command = _fast_command(s, spec, at, core, len(stream), origin)
        if command is None:
            s.pos = m.end()  # type: ignore[union-attr]
            command = _command(s, spec, at, core, len(stream), origin)
        stream.append(command)
        origin = command.origin
        positions.append(at)
    program.cores[core] = stream
    where.cores[core] = start
    where.commands[core] = positions


_COMMANDS = {**OPS, **{"npu." + op: spec for op, spec in OPS.items()}}  # the prefix is optional in a core


def _command(s: _Scanner, spec: OpSpec, start: int, core: int, index: int, origin: int) -> Command:
    params: dict[str, Any] = {}
    if "kind" in spec.params:
        params["kind"] = s.expect(_KEYWORD, f"the kind of npu.{spec.op}").group()
    tiles: dict[str, Tile] = {}
    for i, slot in enumerate(spec.ins):
        if i:
            s.expect_punct(",")
        tiles[slot] = s.tile()
    while spec.optional:
        at = s.skip()
        m = _KEYWORD.match(s.text, at)
        if m is None or m.group() not in spec.optional:
            break
        s.pos = m.end()
        tiles[m.group()] = s.tile()
    if spec.outs:
        s.expect_punct("->")
    for i, slot in enumerate(spec.outs):
        if i:
            s.expect_punct(",")
        tiles[slot] = s.tile()
    sync: dict[str, tuple[str, ...]] = {"waits": (), "signals": ()}
    expects = None
    s.skip()
    if s.text.startswith("{", s.pos):
        attrs = s.attr_dict()
        if "sync" in attrs:
            value, at, key_at = attrs.pop("sync")
            if not isinstance(value, _Alias):
                raise s.error("sync must be a sync alias (#name)", at)
            for key in sync:
                if key in attrs:
                    raise s.error(f"{key} is given twice: by sync = {value} and on its own", attrs[key][2])
            sync["waits"], sync["signals"] = s.sync_alias(value, at)
        for key, (value, at, key_at) in attrs.items():
            if key == "origin":
                if not isinstance(value, int) or isinstance(value, bool) or value < -1:
                    raise s.error("origin must be an entry of the npu.origin table (an integer >= 0) "
                                  "or -1 (none)", at)
                origin = value
            elif key == "expects":
                if not isinstance(value, str) or isinstance(value, (_Symbol, _Alias)):
                    raise s.error('expects must be a string ("input: -1; weight: host" or "-1; host")', at)
                try:
                    expects = parse_expects(value, core, index, tuple(r for r in spec.reads if r in tiles))
                except ValueError as err:
                    raise s.error(str(err), at) from None
            elif key in sync:
                if not isinstance(value, list) or not all(isinstance(v, _Symbol) for v in value):
                    raise s.error(f"{key} must be a list of semaphores [@a, @b]", at)
                sync[key] = tuple(value)
            elif key not in spec.params or key == "kind":
                raise s.error(f"npu.{spec.op} has no parameter '{key}'", key_at)
            else:
                params[key] = _param(s, spec, key, value, at)
    try:
        params = spec.fill(params)
    except ValueError as err:
        raise s.error(str(err), start) from None
    return Command(spec.op, tiles, params, sync["waits"], sync["signals"], origin, expects)


# A command as the printer writes it (one line, single spaces, bare names) is read by one
# regular expression made from its OpSpec; anything else takes the general path above, which
# accepts any spacing and says exactly what is wrong.
_TILE_TEXT = (r"(@[A-Za-z_][\w$.\-]*(?:\[\d+\])? : (?:#[A-Za-z_]\w*|(?:\d+x)*(?:"
              + "|".join(sorted(DTYPES, key=len, reverse=True)) + r")(?: strides \[-?\d+(?:, -?\d+)*\])?))")
_ATTR_ITEM = re.compile(
    r'([A-Za-z_]\w*) = (?:\[((?:@[A-Za-z_][\w$.\-]*(?:, (?=@))?)*)\]|\[(-?\d+(?:, -?\d+)*)\]'
    r'|(array<i64(?:: (-?\d+(?:, -?\d+)*))?>)'
    r'|"([^"\\\n]*)"|(true|false)|(-?\d+) : i64|(-?\d+\.\d*(?:e[-+]?\d+)?) : f64)(?:, |$)')


def _command_regex(spec: OpSpec) -> re.Pattern[str]:
    text = rf"(?:npu\.)?{spec.op}\b" + (r" ([A-Za-z_]\w*)" if "kind" in spec.params else "")
    if spec.ins:
        text += " " + ", ".join([_TILE_TEXT] * len(spec.ins))
    text += "".join(rf"(?: {slot} {_TILE_TEXT})?" for slot in spec.optional)
    if spec.outs:
        text += " -> " + ", ".join([_TILE_TEXT] * len(spec.outs))
    return re.compile(text + r"(?: \{([^\n{}]*)\})?[ \t]*(?=\n|$)")


_COMMAND_REGEX = {op: _command_regex(spec) for op, spec in OPS.items()}
_TILE_PARTS = re.compile(r"@([^\[ ]+)(?:\[(\d+)\])? : (?:(#\w+)|((?:\d+x)*)(\w+)(?: strides \[([^\]]*)\])?)")


def _tile_of(s: _Scanner, text: str) -> Tile | None:
    """The tile a `_TILE_TEXT` match spells (memoised per parse: programs repeat their
    tiles, and an alias means what its program defines), None for an undefined alias."""
    t = s.tiles.get(text)
    if t is None:
        name, offset, alias, dims, dtype, strides = _TILE_PARTS.match(text).groups()  # type: ignore[union-attr]
        if alias is not None:
            layout = s.layouts.get(alias)
            if layout is None:
                return None  # the general path reports it
            t = Tile(name, int(offset or 0), layout[0], layout[2], layout[1])
        else:
            shape = tuple(map(int, dims[:-1].split("x"))) if dims else ()
            t = Tile(name, int(offset or 0), shape,
                     contiguous_strides(shape) if strides is None else tuple(map(int, strides.split(", "))),
                     dtype)
        s.tiles[text] = t
    return t


_EXPECTS_TAIL = re.compile(r'(?:^|, )expects = "([^"\\\n]*)"$')


def _fast_command(s: _Scanner, spec: OpSpec, start: int, core: int, index: int, origin: int) -> Command | None:
    """The command at `start` (command `index` of `core`, `origin` that of the command
    before it) if it is in the printer's form, else None."""
    m = _COMMAND_REGEX[spec.op].match(s.text, start)
    if m is None:
        return None
    groups = m.groups()
    i = 1 if "kind" in spec.params else 0
    tiles: dict[str, Tile] = {}
    known = s.tiles
    for slot in spec.slots:
        if groups[i] is not None:
            t = known.get(groups[i]) or _tile_of(s, groups[i])
            if t is None:
                return None
            tiles[slot] = t
        i += 1
    text, expects, sync = groups[i], None, None
    if text is not None and 'expects = "' in text:  # printed last; not cached
        e = _EXPECTS_TAIL.search(text)
        if e is None:
            return None
        try:
            expects = parse_expects(e.group(1), core, index, spec.reads if len(tiles) == len(spec.slots)
                                    else tuple(r for r in spec.reads if r in tiles))
        except ValueError:
            return None  # the general path reports it
        text = text[:e.start()] or None
    if text is not None and "origin = " in text and (tail := _ORIGIN_TAIL.search(text)) is not None:
        text, origin = text[:tail.start()] or None, int(tail.group(1))  # the rest repeats: cached
        if origin < -1:
            return None  # the general path reports it
    if text is not None and "sync = " in text and (tail := _SYNC_TAIL.search(text)) is not None:
        sync = s.syncs.get(tail.group(1))
        if sync is None:
            return None
        text = text[:tail.start()] or None
    key = (spec.op, groups[0] if "kind" in spec.params else None, text)
    attrs = _attrs.get(key)
    if attrs is None:
        attrs = _fast_attrs(spec, key[1], text or "")
        if attrs is None:
            return None
        if len(_attrs) > 1 << 16:
            _attrs.clear()
        _attrs[key] = attrs
    if sync is not None:
        if attrs[1] or attrs[2]:
            return None  # waits or signals twice: the general path reports it
        s.pos = m.end()
        return Command(spec.op, tiles, dict(attrs[0]), sync[0], sync[1], origin, expects)
    s.pos = m.end()
    return Command(spec.op, tiles, dict(attrs[0]), attrs[1], attrs[2], origin, expects)


_SYNC_TAIL = re.compile(r"(?:^|, )sync = (#[A-Za-z_]\w*)$")
_ORIGIN_TAIL = re.compile(r"(?:^|, )origin = (-?\d+)$")


_attrs: dict[tuple[str, str | None, str | None], tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = {}


def _fast_attrs(spec: OpSpec, kind: str | None, attrs: str
                ) -> tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]] | None:
    """(parameters with defaults, waits, signals) of an attribute dict in the printer's form."""
    params: dict[str, Any] = {} if kind is None else {"kind": kind}
    sync: dict[str, tuple[str, ...]] = {"waits": (), "signals": ()}
    pos = 0
    while pos < len(attrs):
        a = _ATTR_ITEM.match(attrs, pos)
        if a is None:
            return None
        pos = a.end()
        key, syms, listed, array, ints, string, boolean, integer, real = a.groups()
        if key in sync:
            if syms is None:
                return None
            sync[key] = tuple(syms.replace("@", "").split(", ")) if syms else ()
            continue
        param = spec.params.get(key)
        if param is None or key == "kind":
            return None
        kind_of = param[0]
        if kind_of == "ints" and (listed is not None or syms == ""):  # [2, 2] or []
            params[key] = tuple(int(v) for v in listed.split(", ")) if listed else ()
        elif kind_of == "ints" and array is not None:  # the older spelling
            params[key] = tuple(int(v) for v in ints.split(", ")) if ints else ()
        elif kind_of == "str" and string is not None:
            params[key] = string
        elif kind_of == "bool" and boolean is not None:
            params[key] = boolean == "true"
        elif kind_of == "int" and integer is not None:
            params[key] = int(integer)
        elif kind_of == "float" and (real is not None or integer is not None):
            params[key] = float(real if real is not None else integer)
        else:
            return None
    try:
        return spec.fill(params), sync["waits"], sync["signals"]
    except ValueError:
        return None


_PARAM_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,), "ints": (tuple,), "float": (int, float), "floats": (tuple,), "str": (str,), "bool": (bool,),
}


def _param(s: _Scanner, spec: OpSpec, key: str, value: Any, at: int) -> Any:
    kind = spec.params[key][0]
    if kind in ("ints", "floats") and isinstance(value, list):  # [1, 2]; array<i64: 1, 2> is a tuple
        numbers = (int,) if kind == "ints" else (int, float)
        if all(isinstance(v, numbers) and not isinstance(v, bool) for v in value):
            value = tuple(value if kind == "ints" else map(float, value))
    ok = isinstance(value, _PARAM_TYPES[kind]) and not isinstance(value, (_Symbol, _Alias))
    if kind in ("int", "float") and isinstance(value, bool):
        ok = False
    if not ok:
        expected = {"int": "an integer (e.g. 2 : i64)", "ints": "a list of integers [1, 2]", "float": "a float (e.g. 0.5 : f64)",
                    "floats": "a list of floats [0.5, 2.0]",
                    "str": "a string", "bool": "true or false"}[kind]
        raise s.error(f"npu.{spec.op} parameter '{key}' must be {expected}", at)
    return value


_STATEMENTS: dict[str, Callable[[_Scanner, Program, Locations, int], None]] = {
    "npu.origin": _origin,
    "npu.buffer": _buffer,
    "npu.semaphore": _semaphore,
    "npu.input": _io("input"),
    "npu.output": _io("output"),
    "npu.core": _core,
}

__all__ = [
    "Locations", "TextError", "find_block_end", "format_body", "format_buffer",
    "format_command", "format_expects", "format_init", "format_origin", "format_phases",
    "parse_body", "parse_expects", "parse_phases",
]
