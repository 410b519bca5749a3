"""Static checks of an npu `Program` against a target: the npu dialect's verifier and the
emulator's load-time checks are this one function.

`check_program` raises `ProgramError` (with a `kind`: "invalid", "out_of_bounds",
"capacity_overflow", "unallocated" or "sync") whose message names the command (core,
index in the stream, text), the buffer, the bytes and the limit involved.
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

import numpy as np

from stc_mlir.errors import StcError
from stc_mlir.kernels import window_output_size
from stc_mlir.target import Target

from .program import (
    ACTIVATIONS, DTYPES, FLOAT_DTYPES, HOST, INDEX_DTYPES, INDEX_SLOTS, LOCAL_SPACES, MAX_RANK,
    OPS, SPACES, Buffer, Command, Program, Tile, takes_integers,
)


class ProgramError(StcError, ValueError):
    """An npu program that cannot run; `kind` says which rule it breaks."""

    def __init__(self, kind: str, message: str, core: int | None = None,
                 index: int | None = None, address: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.core = core
        self.index = index
        self.address = address


def describe_buffer(b: Buffer) -> str:
    where = f"{b.space} of core {b.core}" if b.space in LOCAL_SPACES else b.space
    at = f" at offset {b.offset}" if b.offset is not None else ""
    return f"@{b.name} ({where}, {b.size} bytes{at})"


_CHECKED = "_checked_by_check_program"
"""A `Program`'s attribute recording what last passed `check_program`: (target,
require_offsets, `_contents` of the program then)."""


def check_program(program: Program, target: Target, require_offsets: bool = False) -> None:
    """Raise `ProgramError` for the first rule `program` breaks on `target`.

    A program that passed for this target (with offsets required, if they are now) is not
    checked again as long as it holds the very same buffers, semaphores, inputs, outputs and
    commands (with the same tiles, parameters and expectations): `stcobj.load` checks a
    program and the emulator that runs it, or runs it again, does not pay a second time.
    Anything replaced, added or removed since (all these objects are frozen, so a change
    replaces one) makes it check the whole program again."""
    contents = _contents(program)
    memo = program.__dict__.get(_CHECKED)
    if (memo is not None and memo[0] is target and (memo[1] or not require_offsets)
            and _same(memo[2], contents)):
        return
    program.__dict__.pop(_CHECKED, None)
    _check_program(program, target, require_offsets)
    program.__dict__[_CHECKED] = (target, require_offsets, contents)


def _contents(program: Program) -> tuple[list[int], list[Any]]:
    """What `check_program` reads of `program`: (sizes, the objects themselves in order);
    two are the same program when the sizes are equal and the objects identical."""
    sizes = [len(program.origins)]
    refs: list[Any] = []
    add = refs.extend
    for d in (program.buffers, program.semaphores):
        sizes.append(len(d))
        add(d)
        add(d.values())
    for items in (program.inputs, program.outputs, program.cores):
        sizes.append(len(items))
        add(items)
    for stream in program.cores.values():
        sizes.append(len(stream))
        for cmd in stream:
            refs.append(cmd)
            for d in (cmd.tiles, cmd.params, cmd.expects or {}):
                sizes.append(len(d))
                add(d)
                add(d.values())
    return sizes, refs


def _same(a: tuple[list[int], list[Any]], b: tuple[list[int], list[Any]]) -> bool:
    return a[0] == b[0] and len(a[1]) == len(b[1]) and all(map(operator.is_, a[1], b[1]))


def _check_program(program: Program, target: Target, require_offsets: bool) -> None:
    for core in program.cores:
        if not 0 <= core < target.cores:
            raise ProgramError("invalid", f"core id {core} is out of range: {target.name} "
                               f"has cores 0..{target.cores - 1}", core)
    for b in program.buffers.values():
        _check_buffer(b, target, require_offsets)
    for s in program.semaphores.values():
        if not 0 <= s.core < target.cores:
            raise ProgramError("invalid", f"semaphore @{s.name}: core {s.core} is out of range "
                               f"(cores 0..{target.cores - 1})")
        if s.init < 0:
            raise ProgramError("invalid", f"semaphore @{s.name}: negative init {s.init}")
    for kind, ios in (("input", program.inputs), ("output", program.outputs)):
        names = Counter(io.name for io in ios)
        for io in ios:
            if names[io.name] > 1:
                raise ProgramError("invalid", f"{kind} '{io.name}' is declared twice")
            b = program.buffers.get(io.buffer)
            if b is None or b.space != "ddr":
                raise ProgramError("invalid", f"{kind} '{io.name}' must name a DDR buffer, "
                                   f"got @{io.buffer}")
            if io.dtype not in DTYPES:
                raise ProgramError("invalid", f"{kind} '{io.name}': unknown dtype {io.dtype}")
            nbytes = int(np.prod(io.shape)) * DTYPES[io.dtype].itemsize
            if nbytes > b.size:
                raise ProgramError("out_of_bounds", f"{kind} '{io.name}' needs {nbytes} bytes "
                                   f"but buffer {describe_buffer(b)} is smaller")
    waits: Counter[str] = Counter()
    signals: Counter[str] = Counter()
    host = {io.buffer for io in program.inputs}
    host |= {b.name for b in program.buffers.values() if b.init is not None}
    for core, index, cmd in program.commands():
        try:
            _check_command(program, core, cmd)
        except ProgramError as err:
            raise ProgramError(err.kind, f"{program.where(core, index)}: {err}", core, index,
                               err.address) from None
        if not -1 <= cmd.origin < len(program.origins):
            raise ProgramError("invalid", f"{program.where(core, index)}: origin {cmd.origin} is "
                               f"not in the program's table of {len(program.origins)} origins "
                               "(npu.origin)", core, index)
        if cmd.expects is not None:
            _check_expects(program, core, index, cmd, host)
        for name in cmd.waits + cmd.signals:
            if name not in program.semaphores:
                raise ProgramError("sync", f"{program.where(core, index)}: unknown semaphore "
                                   f"@{name}", core, index)
        waits.update(cmd.waits)
        signals.update(cmd.signals)
    for name, n in waits.items():
        sem = program.semaphores[name]
        if sem.init + signals[name] < n:
            waiters = [f"core {c} #{i}" for c, i, cmd in program.commands() if name in cmd.waits]
            raise ProgramError(
                "sync", f"semaphore @{name} has {n} waits but only {sem.init + signals[name]} "
                f"can be matched (init {sem.init} + {signals[name]} signals); waits at "
                f"{', '.join(waiters)}")


def _check_expects(program: Program, core: int, index: int, cmd: Command, host: set[str]) -> None:
    """The writers a command's reads expect exist, come before it and write what it reads."""
    assert cmd.expects is not None
    cores = program.cores
    for slot, writers in cmd.expects.items():
        problem = ""
        if slot not in cmd.spec.reads or slot not in cmd.tiles:
            problem = f"npu.{cmd.op} reads no operand '{slot}'"
            writers = ()
        else:
            buffer = cmd.tiles[slot].buffer
        for w in writers:
            if w == HOST:
                if buffer not in host:
                    problem = f"the host writes only model inputs and constants, not @{buffer}"
            elif w[0] not in cores or not 0 <= w[1] < len(cores[w[0]]):
                problem = f"no command #{w[1]} on core {w[0]}"
            elif w[0] == core and w[1] >= index:
                problem = f"core {core}, command #{w[1]} does not come before it"
            else:
                writer = cores[w[0]][w[1]]
                if all(writer.tiles[s].buffer != buffer for s in writer.spec.outs):
                    problem = f"{program.where(*w)} does not write @{buffer}"
            if problem:
                break
        if problem:
            raise ProgramError("invalid", f"{program.where(core, index)}: expects: {slot}: {problem}",
                               core, index)


def _check_buffer(b: Buffer, target: Target, require_offsets: bool) -> None:
    if b.space not in SPACES:
        raise ProgramError("invalid", f"buffer @{b.name}: unknown memory space '{b.space}' "
                           f"(expected one of {', '.join(SPACES)})")
    if b.space in LOCAL_SPACES:
        if b.core is None or not 0 <= b.core < target.cores:
            raise ProgramError("invalid", f"buffer @{b.name}: {b.space} buffers need a core "
                               f"in 0..{target.cores - 1}, got {b.core}")
    elif b.core is not None:
        raise ProgramError("invalid", f"buffer @{b.name}: {b.space} buffers are shared by the "
                           f"cluster and take no core")
    if b.size <= 0:
        raise ProgramError("invalid", f"buffer @{b.name}: size must be positive, got {b.size}")
    capacity = target.memory[b.space].size
    if b.offset is None:
        if require_offsets:
            raise ProgramError("unallocated", f"buffer {describe_buffer(b)} has no offset: "
                               "allocate buffers (npu-allocate) before running")
        if b.size > capacity:
            raise ProgramError("capacity_overflow", f"buffer {describe_buffer(b)} exceeds the "
                               f"{capacity}-byte {b.space} capacity of {target.name}")
    else:
        if b.offset < 0:
            raise ProgramError("invalid", f"buffer @{b.name}: negative offset {b.offset}")
        if b.offset + b.size > capacity:
            raise ProgramError(
                "capacity_overflow", f"buffer {describe_buffer(b)} ends at byte "
                f"{b.offset + b.size}, beyond the {capacity}-byte {b.space} capacity of "
                f"{target.name}", address=b.offset + b.size)
    if b.init is not None:
        if b.space != "ddr":
            raise ProgramError("invalid", f"buffer @{b.name}: only DDR buffers hold constant "
                               "data")
        if b.init_dtype not in DTYPES:
            raise ProgramError("invalid", f"buffer @{b.name}: unknown dtype {b.init_dtype}")
        if len(b.init) > b.size:
            raise ProgramError("out_of_bounds", f"buffer {describe_buffer(b)}: its constant "
                               f"data has {len(b.init)} bytes")


def _check_tile(program: Program, slot: str, t: Tile, write: bool) -> Buffer:
    b = program.buffers.get(t.buffer)
    if b is None:
        raise ProgramError("invalid", f"{slot}: unknown buffer @{t.buffer}")
    if t.dtype not in DTYPES:
        raise ProgramError("invalid", f"{slot}: unsupported element type {t.dtype}")
    if not 1 <= len(t.shape) <= MAX_RANK or len(t.strides) != len(t.shape):
        raise ProgramError("invalid", f"{slot}: a tile has 1 to {MAX_RANK} dimensions and one "
                           f"stride per dimension, got shape {list(t.shape)} strides "
                           f"{list(t.strides)}")
    if min(t.shape) < 1 or min(t.strides) < 0:
        raise ProgramError("invalid", f"{slot}: tile shape must be positive and strides "
                           f"non-negative, got shape {list(t.shape)} strides {list(t.strides)}")
    if write and any(s == 0 and d > 1 for d, s in zip(t.shape, t.strides)):
        raise ProgramError("invalid", f"{slot}: an output tile cannot have zero strides")
    if t.offset < 0 or t.offset + t.span > b.size:
        base = b.offset or 0
        raise ProgramError(
            "out_of_bounds", f"{slot}: tile bytes [{t.offset}, {t.offset + t.span}) are outside "
            f"buffer {describe_buffer(b)}", address=base + (t.offset if t.offset < 0 else b.size))
    return b


def _check_command(program: Program, core: int, cmd: Command) -> None:
    spec = cmd.spec
    for slot, t in cmd.tiles.items():
        b = _check_tile(program, slot, t, slot in spec.outs)
        if spec.unit == "dma":
            continue
        if b.space not in LOCAL_SPACES or b.core != core:
            raise ProgramError("invalid", f"{slot}: a {spec.unit}-unit command works on the "
                               f"L1/weight buffer of its own core, but {describe_buffer(b)} is not")
        if slot in spec.outs and b.space != "l1":
            raise ProgramError("invalid", f"{slot}: results go to L1, not {describe_buffer(b)}")
        if (cmd.op, slot) == ("conv2d", "weight") and b.space != "wb":
            raise ProgramError("invalid", f"weight: conv weights are read from the weight "
                               f"buffer, not {describe_buffer(b)}")
        if t.dtype not in FLOAT_DTYPES and not takes_integers(cmd) and slot not in INDEX_SLOTS:
            kind = f" {cmd.params['kind']}" if "kind" in cmd.params else ""
            raise ProgramError("invalid", f"{slot}: npu.{cmd.op}{kind} takes f16/f32 tiles, "
                               f"got {t.dtype}")
    if "kind" in spec.params and cmd.params["kind"] not in spec.kinds:
        raise ProgramError("invalid", f"unknown kind '{cmd.params['kind']}' (expected one of "
                           f"{', '.join(spec.kinds)})")
    _SHAPE_CHECKS[cmd.op](cmd, cmd.tiles, cmd.params)


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise ProgramError("invalid", message)


def _expect_shape(slot: str, t: Tile, shape: tuple[int, ...]) -> None:
    _expect(tuple(t.shape) == tuple(shape),
            f"{slot} tile has shape {list(t.shape)}, expected {list(shape)}")


def _same_elements(src: Tile, dst: Tile) -> None:
    _expect(src.numel == dst.numel and src.dtype == dst.dtype,
            f"source ({src.numel} x {src.dtype}) and destination ({dst.numel} x {dst.dtype}) "
            "differ in element count or type")


def _epilogue(tiles: dict[str, Tile], params: dict[str, Any], out: tuple[int, ...]) -> None:
    _expect(params["act"] in ACTIVATIONS,
            f"unknown activation '{params['act']}' (expected {', '.join(ACTIVATIONS)})")
    _expect_shape("output", tiles["output"], out)
    if "bias" in tiles:
        _expect_shape("bias", tiles["bias"], (out[1] if len(out) == 4 else out[-1],))
    if "residual" in tiles:
        _expect_shape("residual", tiles["residual"], out)


def _conv2d(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x, w = tiles["input"].shape, tiles["weight"].shape
    _expect(len(x) == 4 and len(w) == 4 and len(tiles["output"].shape) == 4,
            "conv2d takes 4-D input (NCHW), weight (OIHW) and output tiles")
    _expect(len(p["strides"]) == 2 and len(p["dilations"]) == 2 and len(p["pads"]) == 4
            and min(p["strides"] + p["dilations"]) >= 1 and min(p["pads"]) >= 0,
            "conv2d needs 2 positive strides, 2 positive dilations and 4 non-negative pads")
    g = p["groups"]
    _expect(g >= 1 and x[1] % g == 0 and w[0] % g == 0 and w[1] * g == x[1],
            f"conv2d: input channels {x[1]}, weight {list(w)} and groups {g} do not match")
    ho = window_output_size(x[2], w[2], p["strides"][0], p["pads"][0], p["pads"][2], p["dilations"][0])
    wo = window_output_size(x[3], w[3], p["strides"][1], p["pads"][1], p["pads"][3], p["dilations"][1])
    _expect(ho >= 1 and wo >= 1, f"conv2d: the window does not fit the {x[2]}x{x[3]} input")
    _epilogue(tiles, p, (x[0], w[0], ho, wo))


def _matmul(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    a, b = tiles["lhs"].shape, tiles["rhs"].shape
    _expect(len(a) >= 2 and len(b) >= 2 and a[-1] == b[-2],
            f"matmul: lhs {list(a)} and rhs {list(b)} do not chain (M x K times K x N)")
    try:
        batch = np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        raise ProgramError("invalid", f"matmul: batch dims of {list(a)} and {list(b)} do not "
                           "broadcast") from None
    _epilogue(tiles, p, tuple(batch) + (a[-2], b[-1]))


def _elementwise(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    shapes = [tiles[s].shape for s in cmd.spec.ins]
    try:
        out = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ProgramError("invalid", f"shapes {[list(s) for s in shapes]} do not broadcast") from None
    _expect_shape("output", tiles["output"], out)


def _axis(axis: int, rank: int) -> int:
    _expect(-rank <= axis < rank, f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def _softmax(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _axis(p["axis"], len(tiles["input"].shape))
    _elementwise(cmd, tiles, p)


def _layer_norm(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x = tiles["input"].shape
    axis = _axis(p["axis"], len(x))
    for slot in ("scale", "bias"):
        if slot in tiles:
            _expect_shape(slot, tiles[slot], x[axis:])
    _elementwise(cmd, tiles, p)


def _pool(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x = tiles["input"].shape
    k, s, d, pads = p["kernel"], p["strides"], p["dilations"], p["pads"]
    _expect(len(x) == 4 and len(k) == 2 and len(s) == 2 and len(d) == 2 and len(pads) == 4
            and min(k + s + d) >= 1 and min(pads) >= 0,
            "pool takes a 4-D input, 2 kernel sizes, strides and dilations and 4 pads")
    _expect(p["kind"] == "max" or d == (1, 1), "avg pool has no dilations")
    ho = window_output_size(x[2], k[0], s[0], pads[0], pads[2], d[0], p["ceil_mode"])
    wo = window_output_size(x[3], k[1], s[1], pads[1], pads[3], d[1], p["ceil_mode"])
    _expect(ho >= 1 and wo >= 1, f"pool: the window does not fit the {x[2]}x{x[3]} input")
    _expect_shape("output", tiles["output"], (x[0], x[1], ho, wo))


def _reduce(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x = tiles["input"].shape
    axes = {_axis(a, len(x)) for a in p["axes"]}
    _expect(len(axes) == len(p["axes"]) and axes, f"reduce: bad axes {list(p['axes'])}")
    out = tuple(1 if i in axes else d for i, d in enumerate(x) if p["keepdims"] or i not in axes)
    _expect_shape("output", tiles["output"], out or (1,))


def _copy(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _same_elements(tiles["input"], tiles["output"])


def _cast(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _expect_shape("output", tiles["output"], tiles["input"].shape)


def _fence(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    pass  # no operands: it orders the commands of its core


def _dma(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _same_elements(tiles["src"], tiles["dst"])


def _gather(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    data, idx, out = tiles["data"], tiles["indices"], tiles["output"]
    _expect(idx.dtype in INDEX_DTYPES, f"gather indices are i32 or i64, got {idx.dtype}")
    _expect(out.dtype == data.dtype, f"gather output type {out.dtype} differs from the "
            f"data type {data.dtype}")
    axis = _axis(p["axis"], len(data.shape))
    _expect_shape("output", out, data.shape[:axis] + idx.shape + data.shape[axis + 1:])


def _compare(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _expect(tiles["output"].dtype == "i1", f"compare writes an i1 mask, got {tiles['output'].dtype}")
    _elementwise(cmd, tiles, p)


def _select(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _expect(tiles["cond"].dtype == "i1", f"select's condition is an i1 mask, got {tiles['cond'].dtype}")
    _elementwise(cmd, tiles, p)


def _arg_reduce(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x = tiles["input"].shape
    axis = _axis(p["axis"], len(x))
    _expect(tiles["output"].dtype in INDEX_DTYPES, f"arg_reduce writes indices, got {tiles['output'].dtype}")
    out = tuple(1 if i == axis else d for i, d in enumerate(x) if p["keepdims"] or i != axis)
    _expect_shape("output", tiles["output"], out or (1,))


def _topk(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x = tiles["input"].shape
    axis = _axis(p["axis"], len(x))
    _expect(1 <= p["k"] <= x[axis], f"topk: k {p['k']} is outside 1..{x[axis]}")
    if p["kind"] == "indices":
        _expect(tiles["output"].dtype in INDEX_DTYPES, f"topk indices are i32/i64, got {tiles['output'].dtype}")
    _expect_shape("output", tiles["output"], x[:axis] + (p["k"],) + x[axis + 1:])


def _resize(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x, y = tiles["input"].shape, tiles["output"].shape
    _expect(len(x) == len(y) == len(p["scales"]), f"resize: input {list(x)}, output {list(y)} and "
            f"{len(p['scales'])} scales must have one entry per axis")
    _expect(len(p["roi"]) in (0, 2 * len(x)), f"resize: roi has {len(p['roi'])} values, expected "
            f"0 or {2 * len(x)}")


def _gather_elements(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    data, idx = tiles["data"].shape, tiles["indices"].shape
    _axis(p["axis"], len(data))
    _expect(len(idx) == len(data), f"gather_elements: indices {list(idx)} and data {list(data)} differ in rank")
    _expect_shape("output", tiles["output"], idx)


def _gather_nd(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    data, idx, b = tiles["data"].shape, tiles["indices"].shape, p["batch_dims"]
    _expect(0 <= b < len(idx) and b + idx[-1] <= len(data) and data[:b] == idx[:b],
            f"gather_nd: indices {list(idx)} do not index data {list(data)} with {b} batch dims")
    _expect_shape("output", tiles["output"], (idx[:-1] + data[b + idx[-1]:]) or (1,))


def _one_hot(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    idx = tiles["indices"].shape
    axis = _axis(p["axis"], len(idx) + 1)
    _expect(tiles["values"].numel == 2, "one_hot values are (off, on)")
    _expect_shape("output", tiles["output"], idx[:axis] + (p["depth"],) + idx[axis:])


def _batch_norm(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x = tiles["input"].shape
    _expect(len(x) >= 2, f"batch_norm input {list(x)} has no channel axis")
    for slot in ("scale", "bias", "mean", "var"):
        _expect_shape(slot, tiles[slot], (x[1],))
    _expect_shape("output", tiles["output"], x)


def _rois(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    x, rois = tiles["input"].shape, tiles["rois"].shape
    corners = 4 if cmd.op == "roi_align" else 5  # max_roi_pool rows start with the batch index
    _expect(len(x) == 4 and len(rois) == 2 and rois[1] == corners,
            f"{cmd.op}: input {list(x)} (NCHW) and rois {list(rois)} (R x {corners})")
    bins = (p["output_height"], p["output_width"]) if cmd.op == "roi_align" else p["pooled_shape"]
    _expect_shape("output", tiles["output"], (rois[0], x[1], *bins))


def _nms(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    boxes, scores, out = tiles["boxes"].shape, tiles["scores"].shape, tiles["output"]
    _expect(len(boxes) == 3 and boxes[2] == 4 and len(scores) == 3 and scores[0] == boxes[0]
            and scores[2] == boxes[1], f"nms: boxes {list(boxes)} and scores {list(scores)}")
    _expect(out.dtype in INDEX_DTYPES, f"nms writes indices, got {out.dtype}")
    _expect(out.shape == (1,) if p["kind"] == "count" else len(out.shape) == 2 and out.shape[1] == 3,
            f"nms {p['kind']}: output tile {list(out.shape)}")


def _einsum(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    operands = [tiles[s].shape for s in ("lhs", "rhs") if s in tiles]
    eq = p["equation"].replace(" ", "")
    extent: dict[str, int] = {}
    for letters, shape in zip(eq.split("->")[0].split(","), operands):
        if "..." in letters:
            continue  # numpy's broadcasting of the ellipsis decides below
        _expect(len(letters) == len(shape), f"einsum '{eq}': operand {list(shape)} has "
                f"{len(shape)} dims for the {len(letters)} indices '{letters}'")
        for letter, d in zip(letters, shape):
            _expect(extent.setdefault(letter, d) in (d, 1) or d == 1, f"einsum '{eq}': index "
                    f"'{letter}' is {extent[letter]} in one operand and {d} in another")
    try:
        out = np.einsum(p["equation"], *(np.broadcast_to(np.float32(0), s) for s in operands)).shape
    except ValueError as e:
        raise ProgramError("invalid", f"einsum '{p['equation']}': {e}") from None
    _expect_shape("output", tiles["output"], out or (1,))


def _lrn(cmd: Command, tiles: dict[str, Tile], p: dict[str, Any]) -> None:
    _expect(len(tiles["input"].shape) >= 3 and p["size"] >= 1,
            f"lrn takes an input with channels (N, C, ...) and a size >= 1, got "
            f"{list(tiles['input'].shape)} and size {p['size']}")
    _expect_shape("output", tiles["output"], tiles["input"].shape)


_SHAPE_CHECKS = {
    "dma": _dma, "gather": _gather, "conv2d": _conv2d, "matmul": _matmul, "unary": _elementwise,
    "binary": _elementwise, "softmax": _softmax, "layer_norm": _layer_norm, "pool": _pool,
    "reduce": _reduce, "copy": _copy, "cast": _cast, "fence": _fence,
    "compare": _compare, "select": _select, "arg_reduce": _arg_reduce, "topk": _topk,
    "resize": _resize, "gather_elements": _gather_elements, "gather_nd": _gather_nd,
    "one_hot": _one_hot, "batch_norm": _batch_norm, "roi_align": _rois, "max_roi_pool": _rois,
    "nms": _nms, "einsum": _einsum, "lrn": _lrn,
}
assert set(_SHAPE_CHECKS) == set(OPS)
