"""The npu program as plain Python data: what the emulator runs and `.stcobj` stores.

A `Program` is the npu dialect without xDSL: buffers (`Buffer`), semaphores, one command
list per core (`Command`, whose operands are `Tile`s: a buffer symbol, a byte offset, a
shape and element strides), and the model inputs/outputs (`IOSpec`). `OPS` describes every
command kind once (operand slots, parameters and defaults); the npu dialect, the checker,
the cost model and the functional model all follow it.

`to_manifest` / `from_manifest` give the JSON form used by `.stcobj`; `stc_mlir.isa.text`
the npu dialect's text. A `Program` is the payload of the npu dialect's `npu.program` op
(see docs/npu.md, "One representation"): this package never imports xDSL.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from stc_mlir import kernels

SPACES = ("l1", "wb", "llb", "ddr")
LOCAL_SPACES = ("l1", "wb")  # one per core: buffers in them name their core
DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    # storage types of integer, bool and narrow float tensors (MLIR spellings): moved by
    # the DMA engines, computed exactly by the vector unit's EXACT_OPS, cast to f16/f32
    "i1": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "ui8": np.dtype(np.uint8),
    "i16": np.dtype(np.int16),
    "ui16": np.dtype(np.uint16),
    "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "f8E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
}
FLOAT_DTYPES = ("f16", "f32")
INDEX_DTYPES = ("i32", "i64")
EXACT_OPS = frozenset({
    "cast", "copy", "unary", "binary", "compare", "select", "reduce", "arg_reduce", "topk",
    "one_hot", "nms", "gather_elements", "gather_nd",
})
"""Vector-unit commands that also take integer/bool tiles (computed exactly in their own
type, as the unit's integer ALU does); the others (and the matrix unit) take f16/f32."""
INDEX_SLOTS = ("indices", "batch_indices")
"""Operand slots holding indices (i32/i64) whatever the command computes on."""
EXACT_KINDS: dict[str, tuple[str, ...]] = {
    "unary": ("abs", "neg", "sign", "not"),
    "binary": ("add", "sub", "mul", "div", "pow", "maximum", "minimum"),
    "reduce": ("sum", "max", "min"),
}
"""The kinds of an EXACT_OPS command that take integer/bool tiles (other kinds: f16/f32)."""


def takes_integers(cmd: Command) -> bool:
    """Whether `cmd` computes on integer/bool tiles (EXACT_OPS, restricted by EXACT_KINDS)."""
    kinds = EXACT_KINDS.get(cmd.op)
    return cmd.op in EXACT_OPS and (kinds is None or cmd.params.get("kind") in kinds)
MAX_RANK = 4
ACTIVATIONS = ("none", "relu", "relu6")


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Tile:
    """A strided view of a buffer: `offset` in bytes from the buffer start, `shape` and
    `strides` in elements of `dtype` (row-major strides when built with `tile()`)."""

    buffer: str
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str = "f16"

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype].itemsize

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @functools.cached_property
    def span(self) -> int:
        """Bytes from `offset` to one past the last byte the tile touches."""
        last = sum((d - 1) * s for d, s in zip(self.shape, self.strides))
        return (last + 1) * self.itemsize

    @property
    def is_contiguous(self) -> bool:
        return self.strides == contiguous_strides(self.shape)


def contiguous_strides(shape: Iterable[int]) -> tuple[int, ...]:
    return _contiguous_strides(tuple(shape))


@functools.lru_cache(maxsize=1 << 12)
def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def tile(
    buffer: str, shape: Iterable[int], offset: int = 0,
    strides: Iterable[int] | None = None, dtype: str = "f16",
) -> Tile:
    shape = tuple(int(d) for d in shape)
    strides = contiguous_strides(shape) if strides is None else tuple(int(s) for s in strides)
    return Tile(buffer, int(offset), shape, strides, dtype)


@dataclass(frozen=True)
class Buffer:
    """`size` bytes in `space` (of `core` for l1/wb); `offset` is None before allocation.
    `init` holds the constant contents (weights) of a DDR buffer. `live` is the (first,
    last) phase the buffer is used in, set by the lowering for npu-allocate (None: the
    whole program)."""

    name: str
    space: str
    size: int
    core: int | None = None
    offset: int | None = None
    init: bytes | None = None
    init_dtype: str = "f16"
    live: tuple[int, int] | None = None

    @property
    def memory(self) -> tuple[str, int | None]:
        """The memory instance the buffer lives in: (space, core or None)."""
        return self.space, self.core


@dataclass(frozen=True)
class Semaphore:
    """A counting semaphore homed on `core`, starting at `init`."""

    name: str
    core: int = 0
    init: int = 0


@dataclass(frozen=True)
class IOSpec:
    """A model input or output: a dense row-major tensor at the start of a DDR buffer."""

    name: str
    buffer: str
    shape: tuple[int, ...]
    dtype: str = "f16"


Writer = tuple[int, int]
"""A command by (core, index in its stream): what an `expects` entry names."""
HOST: Writer = (-1, -1)
"""The writer of model inputs and constant buffers (the host, before the run)."""


@dataclass(frozen=True)
class Origin:
    """Where commands come from: the schedule item (its label without the sub-group, e.g.
    `group 'layer1'`, `split 'x'`), the sub-group index ("" when the group is not split),
    the graph op (`graph.conv2d 'conv1'`; "" for work of the item as a whole: a split,
    concat or the copies to the model outputs) and the phase (see `phases`; -1: unknown)
    the commands run in. Reports, traces and diagnostics name commands by it; a command's
    `origin` indexes `Program.origins`."""

    item: str
    subgroup: str = ""
    op: str = ""
    phase: int = -1

    def describe(self) -> str:
        """`group 'a' sub-group 1: graph.conv2d 'c'`: how messages name it."""
        text = self.item + (f" sub-group {self.subgroup}" if self.subgroup else "")
        return text + (f": {self.op}" if self.op else "")


@dataclass(frozen=True)
class Command:
    """One command of a core's stream. `tiles` maps the op's operand slots to tiles,
    `params` holds every parameter of `OPS[op]` (defaults filled in). `origin` indexes the
    program's `origins` (-1: unknown, e.g. a hand-written program)."""

    op: str
    tiles: Mapping[str, Tile]
    params: Mapping[str, Any] = field(default_factory=dict)
    waits: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    origin: int = -1
    expects: Mapping[str, tuple[Writer, ...]] | None = None
    """Per read slot, the commands whose results the lowering meant this read to see (each
    byte's last writer is one of them; `HOST` for model inputs and constants); None: not
    recorded (a hand-written or old program), and a slot not in it is not checked. The
    emulator's provenance check (`stc_mlir.emulator.provenance`) enforces it."""

    @property
    def spec(self) -> OpSpec:
        return OPS[self.op]

    def inputs(self) -> list[tuple[str, Tile]]:
        return [(s, self.tiles[s]) for s in self.spec.reads if s in self.tiles]

    def outputs(self) -> list[tuple[str, Tile]]:
        return [(s, self.tiles[s]) for s in self.spec.outs]

    def describe(self) -> str:
        """The command in the npu dialect's syntax (without its parameters)."""
        spec = self.spec
        head = f"npu.{self.op}" + (f" {self.params['kind']}" if "kind" in spec.params else "")
        if not spec.outs:  # npu.fence
            return head
        ins = ", ".join(format_tile(self.tiles[s]) for s in spec.ins)
        opts = "".join(f" {s} {format_tile(self.tiles[s])}" for s in spec.optional if s in self.tiles)
        outs = ", ".join(format_tile(self.tiles[s]) for s in spec.outs)
        return f"{head} {ins}{opts} -> {outs}"


_BARE_NAME = re.compile(r"[A-Za-z_][\w$.\-]*")


@functools.lru_cache(maxsize=1 << 16)
def symbol(name: str) -> str:
    """`@name`, quoted (`@"a:b"`) when the name is not a bare identifier (as MLIR does)."""
    if _BARE_NAME.fullmatch(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


@functools.lru_cache(maxsize=1 << 16)
def format_tile(t: Tile) -> str:
    text = f"{symbol(t.buffer)}[{t.offset}] : {'x'.join(map(str, t.shape))}x{t.dtype}"
    if not t.is_contiguous:
        text += f" strides [{', '.join(map(str, t.strides))}]"
    return text


@dataclass(frozen=True)
class ProbePiece:
    """Part of a probed value: `tile` holds the box of the value starting at `at` (the
    tile's shape is the box's extent)."""

    tile: Tile
    at: tuple[int, ...]


@dataclass(frozen=True)
class Probe:
    """Where one graph value can be read back from memory, for per-tensor comparison
    (`stc_mlir.compare_all`, docs/compare.md).

    `index` is the value's position in graph order (`stc_mlir.reference.graph_values`),
    `op` the label of the graph op making it, `item` its schedule item. The value is
    complete once every command in `after` ((core, index) pairs: the cluster barrier that
    ends the phase computing it) has completed, and unchanged until the next phase starts:
    buffers are reused only across phases. An empty `after`: complete at the end of the
    program. No pieces: never in memory as a whole, `note` says why. `region` (a (lo, hi)
    range per dimension; empty: the whole value) is the part of the value that exists: a
    value inside a row stripe is computed only on the rows that stripe needs (halos
    included), and its pieces cover just those."""

    index: int
    op: str
    item: str
    shape: tuple[int, ...]
    dtype: str
    pieces: tuple[ProbePiece, ...]
    after: tuple[tuple[int, int], ...] = ()
    note: str = ""
    region: tuple[tuple[int, int], ...] = ()


@dataclass
class Program:
    name: str = "main"
    target: str = "stcp920"
    buffers: dict[str, Buffer] = field(default_factory=dict)
    semaphores: dict[str, Semaphore] = field(default_factory=dict)
    cores: dict[int, list[Command]] = field(default_factory=dict)
    inputs: list[IOSpec] = field(default_factory=list)
    outputs: list[IOSpec] = field(default_factory=list)
    phases: tuple[str, ...] = ()
    """The schedule item of each phase (what npu-allocate names in its diagnostics)."""
    origins: list[Origin] = field(default_factory=list)
    """What the commands' `origin` fields index: the schedule item / graph op they lower."""
    probes: list[Probe] = field(default_factory=list, compare=False)
    """Where each graph value lives when it is complete (set by the lowering; used only by
    per-tensor comparison). Debugging data, not what the program does: not part of the npu
    text (docs/compare.md says why) nor of a program's equality."""

    def commands(self) -> Iterable[tuple[int, int, Command]]:
        """(core, index in its stream, command) for every command."""
        for core, stream in self.cores.items():
            for index, cmd in enumerate(stream):
                yield core, index, cmd

    def where(self, core: int, index: int) -> str:
        """How error messages name a command (with the item / op it lowers, if known)."""
        cmd = self.cores[core][index]
        origin = self.origin_of(cmd)
        return (f"core {core}, command #{index} ({cmd.describe()})"
                + (f" of {origin.describe()}" if origin is not None else ""))

    def origin_of(self, cmd: Command) -> Origin | None:
        """The origin of `cmd`, None if it has none."""
        return self.origins[cmd.origin] if 0 <= cmd.origin < len(self.origins) else None


# ----------------------------------------------------------------------------- op table

REQUIRED = object()  # marks a parameter without default
PARAM_KINDS = ("int", "ints", "float", "floats", "str", "bool")


@dataclass(frozen=True)
class OpSpec:
    """Operand slots and parameters of one command kind.

    `ins` are required input tiles, `optional` optional input tiles (named by keyword in
    the IR), `outs` output tiles; `params` maps name -> (kind, default) with kind one of
    PARAM_KINDS; a `kind` parameter (if any) takes one of `kinds`."""

    op: str
    unit: str  # "dma", "matrix", "vector" or "sync" (npu.fence: all units of its core)
    ins: tuple[str, ...]
    outs: tuple[str, ...]
    optional: tuple[str, ...] = ()
    params: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    kinds: tuple[str, ...] = ()

    @property
    def reads(self) -> tuple[str, ...]:
        return self.ins + self.optional

    @property
    def slots(self) -> tuple[str, ...]:
        """Every tile operand in the order the syntax writes them."""
        return self.ins + self.optional + self.outs

    def fill(self, params: Mapping[str, Any], where: str = "") -> dict[str, Any]:
        """`params` normalised (ints as tuples, floats as float) with defaults filled."""
        out: dict[str, Any] = {}
        for name in params:
            if name not in self.params:
                raise ValueError(f"{where}npu.{self.op} has no parameter '{name}'")
        for name, (kind, default) in self.params.items():
            value = params.get(name, default)
            if value is REQUIRED:
                raise ValueError(f"{where}npu.{self.op} needs parameter '{name}'")
            out[name] = _normalise(kind, value)
        return out


def _normalise(kind: str, value: Any) -> Any:
    match kind:
        case "int":
            return int(value)
        case "ints":
            return tuple(int(v) for v in value)
        case "float":
            return float(value)
        case "floats":
            return tuple(float(v) for v in value)
        case "str":
            return str(value)
        case "bool":
            return bool(value)
    raise ValueError(f"unknown parameter kind {kind}")


_WINDOW = {
    "strides": ("ints", (1, 1)),
    "pads": ("ints", (0, 0, 0, 0)),
    "dilations": ("ints", (1, 1)),
}

OPS: dict[str, OpSpec] = {
    spec.op: spec
    for spec in (
        OpSpec("dma", "dma", ("src",), ("dst",)),
        OpSpec("gather", "dma", ("data", "indices"), ("output",), (), {"axis": ("int", 0)}),
        OpSpec(
            "conv2d", "matrix", ("input", "weight"), ("output",), ("bias", "residual"),
            {**_WINDOW, "groups": ("int", 1), "act": ("str", "none")},
        ),
        OpSpec("matmul", "matrix", ("lhs", "rhs"), ("output",), ("bias", "residual"),
               {"act": ("str", "none")}),
        OpSpec(
            "unary", "vector", ("input",), ("output",), (),
            {"kind": ("str", REQUIRED), "alpha": ("float", 0.01), "min": ("float", 0.0),
             "max": ("float", 6.0), "approximate": ("str", "none"), "beta": ("float", 0.5)},
            kernels.UNARY_KINDS,
        ),
        OpSpec("binary", "vector", ("lhs", "rhs"), ("output",), (),
               {"kind": ("str", REQUIRED)}, tuple(kernels.BINARY)),
        OpSpec("softmax", "vector", ("input",), ("output",), (), {"axis": ("int", -1)}),
        OpSpec("layer_norm", "vector", ("input",), ("output",), ("scale", "bias"),
               {"axis": ("int", -1), "epsilon": ("float", 1e-5)}),
        OpSpec(
            "pool", "vector", ("input",), ("output",), (),
            {"kind": ("str", REQUIRED), "kernel": ("ints", REQUIRED), **_WINDOW,
             "ceil_mode": ("bool", False), "count_include_pad": ("bool", False)},
            ("max", "avg"),
        ),
        OpSpec("reduce", "vector", ("input",), ("output",), (),
               {"kind": ("str", REQUIRED), "axes": ("ints", REQUIRED), "keepdims": ("bool", True)},
               ("sum", "mean", "max", "min")),
        OpSpec("copy", "vector", ("input",), ("output",)),
        OpSpec("cast", "vector", ("input",), ("output",), (), {"saturate": ("bool", True)}),
        OpSpec("fence", "sync", (), ()),
        # --- beyond the seeds' first command set (docs/npu.md, "Index, mask and detection
        # commands"): comparisons, masks, index results and data-dependent shapes
        OpSpec("compare", "vector", ("lhs", "rhs"), ("output",), (),
               {"kind": ("str", REQUIRED)}, tuple(kernels.COMPARE)),
        OpSpec("select", "vector", ("cond", "lhs", "rhs"), ("output",)),
        OpSpec("arg_reduce", "vector", ("input",), ("output",), (),
               {"kind": ("str", REQUIRED), "axis": ("int", 0), "keepdims": ("bool", True),
                "select_last_index": ("bool", False)}, ("argmax", "argmin")),
        OpSpec("topk", "vector", ("input",), ("output",), (),
               {"kind": ("str", REQUIRED), "k": ("int", REQUIRED), "axis": ("int", -1),
                "largest": ("bool", True)}, ("values", "indices")),
        OpSpec("resize", "vector", ("input",), ("output",), (),
               {"mode": ("str", "nearest"), "coordinate_transformation_mode": ("str", "half_pixel"),
                "nearest_mode": ("str", "round_prefer_floor"), "cubic_coeff_a": ("float", -0.75),
                "exclude_outside": ("bool", False), "antialias": ("bool", False),
                "extrapolation_value": ("float", 0.0), "scales": ("floats", REQUIRED),
                "roi": ("floats", ())}),
        OpSpec("gather_elements", "vector", ("data", "indices"), ("output",), (), {"axis": ("int", 0)}),
        OpSpec("gather_nd", "vector", ("data", "indices"), ("output",), (), {"batch_dims": ("int", 0)}),
        OpSpec("one_hot", "vector", ("indices", "values"), ("output",), (),
               {"depth": ("int", REQUIRED), "axis": ("int", -1)}),
        OpSpec("batch_norm", "vector", ("input", "scale", "bias", "mean", "var"), ("output",), (),
               {"epsilon": ("float", 1e-5)}),
        OpSpec("roi_align", "vector", ("input", "rois", "batch_indices"), ("output",), (),
               {"kind": ("str", REQUIRED), "output_height": ("int", 1), "output_width": ("int", 1),
                "sampling_ratio": ("int", 0), "spatial_scale": ("float", 1.0),
                "half_pixel": ("bool", True)}, ("avg", "max")),
        OpSpec("max_roi_pool", "vector", ("input", "rois"), ("output",), (),
               {"pooled_shape": ("ints", REQUIRED), "spatial_scale": ("float", 1.0)}),
        OpSpec("nms", "vector", ("boxes", "scores"), ("output",), (),
               {"kind": ("str", REQUIRED), "max_output_boxes_per_class": ("int", 0),
                "iou_threshold": ("float", 0.0), "score_threshold": ("float", -math.inf),
                "center_point_box": ("bool", False)}, ("indices", "count")),
        OpSpec("einsum", "matrix", ("lhs",), ("output",), ("rhs",), {"equation": ("str", REQUIRED)}),
        OpSpec("lrn", "vector", ("input",), ("output",), (),
               {"size": ("int", REQUIRED), "alpha": ("float", 1e-4), "beta": ("float", 0.75),
                "bias": ("float", 1.0)}),
    )
}


def command(
    op: str, waits: Iterable[str] = (), signals: Iterable[str] = (), **operands: Any,
) -> Command:
    """Build a command: tile operands by slot name, parameters by name."""
    spec = OPS[op]
    tiles = {k: v for k, v in operands.items() if isinstance(v, Tile)}
    params = {k: v for k, v in operands.items() if not isinstance(v, Tile) and v is not None}
    for slot in spec.ins + spec.outs:
        if slot not in tiles:
            raise ValueError(f"npu.{op} needs a tile for '{slot}'")
    for slot in tiles:
        if slot not in spec.ins + spec.optional + spec.outs:
            raise ValueError(f"npu.{op} has no operand '{slot}'")
    return Command(op, tiles, spec.fill(params), tuple(waits), tuple(signals))


# ----------------------------------------------------------------------------- JSON form


@functools.lru_cache(maxsize=1 << 16)
def _tile_json(t: Tile) -> tuple[Any, ...]:
    """[buffer, offset, shape, strides, dtype] (tuples: json writes them as lists)."""
    return (t.buffer, t.offset, t.shape, t.strides, t.dtype)


def to_manifest(program: Program) -> tuple[dict[str, Any], dict[str, bytes]]:
    """JSON-ready manifest of `program`, and the constant buffer contents by buffer name."""
    blobs = {b.name: b.init for b in program.buffers.values() if b.init is not None}
    manifest = {
        "name": program.name,
        "target": program.target,
        "buffers": [
            {"name": b.name, "space": b.space, "size": b.size, "core": b.core,
             "offset": b.offset, "init_dtype": b.init_dtype if b.init is not None else None,
             **({"live": list(b.live)} if b.live is not None else {})}
            for b in program.buffers.values()
        ],
        **({"phases": list(program.phases)} if program.phases else {}),
        **({"probes": [_probe_json(p) for p in program.probes]} if program.probes else {}),
        "semaphores": [[s.name, s.core, s.init] for s in program.semaphores.values()],
        "inputs": [[io.name, io.buffer, list(io.shape), io.dtype] for io in program.inputs],
        "outputs": [[io.name, io.buffer, list(io.shape), io.dtype] for io in program.outputs],
        "cores": {
            str(core): [
                [c.op, {s: _tile_json(t) for s, t in c.tiles.items()}, c.params, c.waits, c.signals]
                for c in stream
            ]
            for core, stream in program.cores.items()
        },
    }
    if program.origins or any(c.origin != -1 for _, _, c in program.commands()):
        manifest["origins"] = [[o.item, o.subgroup, o.op, o.phase] for o in program.origins]
        manifest["command_origins"] = {str(core): [c.origin for c in stream]
                                       for core, stream in program.cores.items()}
    if any(c.expects is not None for _, _, c in program.commands()):
        manifest["expects"] = {  # per core, per command: {slot: [[core, index], ...]} or null
            # (the commands' own dicts of tuples: json writes them as lists; a manifest is for
            # writing out, not for editing in place)
            str(core): [c.expects for c in stream]
            for core, stream in program.cores.items()
        }
    return manifest, blobs


def from_manifest(manifest: Mapping[str, Any], blobs: Mapping[str, bytes]) -> Program:
    buffers = {}
    for b in manifest["buffers"]:
        init = blobs.get(b["name"]) if b["init_dtype"] is not None else None
        live = tuple(b["live"]) if b.get("live") is not None else None
        buffers[b["name"]] = Buffer(b["name"], b["space"], b["size"], b["core"], b["offset"],
                                    init, b["init_dtype"] or "f16", live)  # type: ignore[arg-type]
    cores = {}
    known: dict[tuple[Any, ...], Tile] = {}  # programs repeat their tiles: build each once

    def tile_of(v: list[Any]) -> Tile:
        key = (v[0], v[1], *v[2], None, *v[3], v[4])
        t = known.get(key)
        if t is None:
            t = known[key] = Tile(v[0], v[1], tuple(v[2]), tuple(v[3]), v[4])
        return t

    command_origins = manifest.get("command_origins", {})  # optional: older files have none
    expects = manifest.get("expects", {})
    for core, stream in manifest["cores"].items():
        cmds = []
        origins = command_origins.get(core) or [-1] * len(stream)
        wanted = expects.get(core) or [None] * len(stream)
        for (op, tiles, params, waits, signals), origin, want in zip(stream, origins, wanted):
            spec = OPS[op]
            cmds.append(Command(op, {s: tile_of(t) for s, t in tiles.items()},
                                spec.fill(params), tuple(waits), tuple(signals), origin,
                                None if want is None else
                                {s: tuple((c, i) for c, i in ws) for s, ws in want.items()}))
        cores[int(core)] = cmds
    return Program(
        name=manifest["name"],
        target=manifest["target"],
        buffers=buffers,
        semaphores={n: Semaphore(n, c, i) for n, c, i in manifest["semaphores"]},
        cores=cores,
        inputs=[IOSpec(n, b, tuple(s), d) for n, b, s, d in manifest["inputs"]],
        outputs=[IOSpec(n, b, tuple(s), d) for n, b, s, d in manifest["outputs"]],
        phases=tuple(manifest.get("phases", ())),
        origins=[Origin(*o) for o in manifest.get("origins", ())],
        probes=[_probe_of(p, tile_of) for p in manifest.get("probes", ())],
    )


def _probe_json(p: Probe) -> dict[str, Any]:
    return {"index": p.index, "op": p.op, "item": p.item, "shape": list(p.shape), "dtype": p.dtype,
            "pieces": [[_tile_json(piece.tile), list(piece.at)] for piece in p.pieces],
            "after": [list(a) for a in p.after], **({"note": p.note} if p.note else {}),
            **({"region": [list(r) for r in p.region]} if p.region else {})}


def _probe_of(p: Mapping[str, Any], tile_of) -> Probe:
    return Probe(p["index"], p["op"], p["item"], tuple(p["shape"]), p["dtype"],
                 tuple(ProbePiece(tile_of(t), tuple(at)) for t, at in p["pieces"]),
                 tuple((c, i) for c, i in p["after"]), p.get("note", ""),
                 tuple((lo, hi) for lo, hi in p.get("region", ())))
