"""Building the npu program: buffers with live ranges, commands with derived
synchronisation, and phases separated by cluster barriers.

The program is built as plain Python data (`stc_mlir.isa.program.Program`); turning it into
IR is one conversion at the end, and the allocator works on the same data.

**Phases and live ranges.** The lowering cuts the program into *phases* (one scheduled
item, or one op of a group, or one stage of a streamed group) and puts a cluster barrier
between consecutive phases: on every core `npu.fence {signals = [every other core's
barrier semaphore]}` then `npu.fence {waits = [its own, once per other core]}`. Every
buffer records the first and last phase that touches it (`live`); the allocator may give
two buffers the same bytes only if their phase ranges are disjoint, which the barriers make
safe: every use of the first is ordered before every use of the second (with
`narrow = True` each core waits only for the cores involved: barriers.py; a prefetch may
put weight loads before a barrier's fences: prefetch.py). Model inputs,
outputs and weights (DDR) live for the whole program. `phase_items[p]` names the schedule
item phase p belongs to (for the allocator's diagnostics).

**Origins.** Every command records what it lowers (`Command.origin`, an index into
`Program.origins`): the lowering sets the current item, sub-group and graph op
(`set_origin` per item, `set_op` per graph op of a group) and every command emitted until
the next change carries them with its phase; the barrier ending a phase carries the
origin of that phase.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from stc_mlir.isa.program import (
    DTYPES, LOCAL_SPACES, OPS, Buffer, Command, IOSpec, Origin, Program, Semaphore, Tile,
)
from stc_mlir.target import Target

from . import sync
from .barriers import Touches, narrow
from .sync import UNITS, Access, Cmd, Sync

_ITEMSIZE = {name: dt.itemsize for name, dt in DTYPES.items()}

ALIGN = 64
"""Buffer sizes are rounded up to this (the allocator aligns offsets to it too)."""


def align(n: int, to: int = ALIGN) -> int:
    return -(-n // to) * to


class Ref:
    """A tile operand together with what it touches (for `Sync`). (A plain class with
    slots, not a frozen dataclass: the lowering makes hundreds of thousands.)"""

    __slots__ = ("tile", "frame", "box", "_read", "_write")

    def __init__(self, tile: Tile, frame: object = None, box: tuple | None = None):
        self.tile, self.frame, self.box = tile, frame, box
        self._read = self._write = None  # its accesses, made on first use (refs recur: Frame.ref)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Ref) and self.tile == other.tile and self.frame == other.frame
                and self.box == other.box)

    def __hash__(self) -> int:
        return hash((self.tile, self.frame, self.box))

    def __repr__(self) -> str:
        return f"Ref({self.tile!r}, {self.frame!r}, {self.box!r})"

    def access(self, write: bool) -> Access:
        a = self._write if write else self._read
        if a is not None:
            return a
        t = self.tile
        last = 0
        numel = 1
        for d, st in zip(t.shape, t.strides):
            last += (d - 1) * st
            numel *= d
        end = t.offset + (last + 1) * _ITEMSIZE[t.dtype]
        a = Access(t.buffer, t.offset, end, write, self.frame, self.box, last + 1 == numel)
        if write:
            self._write = a
        else:
            self._read = a
        return a


@dataclass
class Lowered:
    """The lowering's result: the program (buffers without offsets), each buffer's live
    phase range, and the schedule item of each phase."""

    program: Program
    live: dict[str, tuple[int, int]]
    phase_items: list[str]


PIN_SMALL = 1024
"""DDR/LLB buffers of at most this many bytes are pinned: they share bytes with no other
buffer (the allocator gives them the whole program), so the narrowed barriers key them by
themselves instead of by their memory. A small op's tiny DDR/LLB result (a recommender's
embedding lookups, a few bytes each) then orders only its own writers and readers across
phases, not every core that touched LLB since (0: off)."""


class Emitter:
    def __init__(self, target: Target, name: str = "main", target_ref: str | None = None):
        self.target = target
        self.program = Program(name=name, target=target_ref or target.name)
        self.cmds: dict[int, list[Cmd]] = {}
        self.origin_of: dict[int, list[int]] = {}  # core -> the origin of each of its cmds
        self.current = ("", "", "")  # what the commands emitted now lower: item, sub-group, op
        self._origin: int | None = -1  # its index in program.origins (None: not entered yet)
        self._origin_index: dict[Origin, int] = {}
        self.sync = Sync(target.cores)
        self.native = sync.NATIVE  # `emit` in C (_sync.c) when nothing is being hoisted
        self.phase = 0
        self.phase_items: list[str] = [""]
        self.live: dict[str, list[int]] = {}
        self.pinned: set[str] = set()
        self.barrier_cores: list[int] = list(range(target.cores))
        self._names: dict[str, int] = {}
        self._parity = 0
        self.prefetch = True  # weight loads may run before the barrier (prefetch.py)
        self.wb_capacity = target.memory["wb"].size  # what prefetches may fill per core
        self._hoist = None  # a prefetch.Hoist while a prefetch is being emitted
        self._before: dict[int, int] = {}  # core -> where a command hoisted there goes
        self.hoisted_bufs: set[str] = set()  # written by commands hoisted into this phase
        self.settled: set[str] = set()  # written only two or more phases ago (staging.py)
        self.before_barrier = None  # called when a phase ends, before its fences
        self.staged: dict[str, set[int]] = {}  # staged weight buffer -> cores writing it
        self.derived: dict[object, object] = {}  # constants made by rules (conv.py), by key
        self.hoisted_bytes: dict[int, int] = {}  # core -> their weight-buffer bytes
        self._wb_bufs: dict[int, list[str]] = {}  # core -> its weight-buffer buffers
        self.wb_prev: dict[int, int] = {}  # core -> weight-buffer bytes live in the last phase
        self.narrow = False  # barriers wait only for the cores involved (barriers.py)
        self.touches = Touches()
        self._barriers: list[tuple[int, dict[int, tuple[Cmd, Cmd]]]] = []  # (phase, fences)
        # equal tiles and tuples shared by the commands: the program keeps a third of the
        # objects, so the collection after the lowering walks a third (`finish`)
        self._tiles: dict[tuple, Tile] = {}
        self._tuples: dict[tuple, tuple] = {}

    # --- buffers

    def name(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.]", "_", hint) or "b"
        if base[0].isdigit():
            base = "_" + base
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def buffer(self, hint: str, space: str, size: int, core: int | None = None,
               init: bytes | None = None, init_dtype: str = "f16", pinned: bool = False) -> str:
        name = self.name(hint)
        self.program.buffers[name] = Buffer(name, space, align(max(size, 1)),
                                            core if space in LOCAL_SPACES else None,
                                            None, init, init_dtype)
        if pinned or (PIN_SMALL and space in ("llb", "ddr") and size <= PIN_SMALL):
            self.pinned.add(name)
        if init is not None:
            self.sync.readonly.add(name)
        return name

    def io(self, kind: str, name: str, shape: tuple[int, ...], dtype: str, size: int) -> str:
        buf = self.buffer(f"{kind}_{name}", "ddr", size, pinned=True)
        if kind == "in":
            self.sync.readonly.add(buf)
        (self.program.inputs if kind == "in" else self.program.outputs).append(
            IOSpec(name, buf, tuple(shape), dtype))
        return buf

    # --- commands

    def unit(self, core: int, op: str, tiles: Mapping[str, Tile]) -> str:
        spec = OPS[op]
        if spec.unit != "dma":
            return spec.unit
        dst = self.program.buffers[tiles[spec.outs[0]].buffer]
        return "dma_in" if dst.space in LOCAL_SPACES and dst.core == core else "dma_out"

    def emit(self, core: int, op: str, **operands: object) -> Cmd:
        """Append a command to `core`'s stream; tile operands are `Ref`s, the rest are
        parameters. Waits on earlier commands are added from the tiles' accesses."""
        if self.native and self._hoist is None:
            return sync._sync.emit(self, core, op, operands)
        return self._emit_python(core, op, operands)

    def _emit_python(self, core: int, op: str, operands: dict[str, object]) -> Cmd:
        """`emit` in Python (`_sync.emit` is the same in C, used when it is built and
        nothing is being hoisted: `native`)."""
        spec = OPS[op]
        refs, tiles, params = {}, {}, {}
        shared = self._tiles
        for k, v in operands.items():
            if isinstance(v, Ref):
                refs[k] = v
                t = v.tile
                key = (t.buffer, t.offset, t.shape, t.strides, t.dtype)
                tiles[k] = shared.get(key) or self._share(key, t)
            elif v is not None:
                params[k] = v
        cmd = Cmd(core, op, tiles, params)
        accesses = [refs[s].access(False) for s in spec.reads if s in refs]
        accesses += [refs[s].access(True) for s in spec.outs]
        thread = Sync.thread(core, self.unit(core, op, tiles))
        stream = self.cmds.setdefault(core, [])
        at = self._hoist.where(self, core, accesses) if self._hoist is not None else None
        cmd.index = len(stream) if at is None else at
        self.sync.order(cmd, thread, accesses)
        origins = self.origin_of.setdefault(core, [])
        if at is None:
            stream.append(cmd)
            origins.append(self.origin())
        else:  # before the fences of the last barrier: it overlaps the last phase
            stream.insert(at, cmd)
            origins.insert(at, self.origin())
            self._before[core] = at + 1
        phase, live = self.phase, self.live
        for t in tiles.values():
            span = live.get(t.buffer)
            if span is None:
                live[t.buffer] = [phase, phase]
                if self.program.buffers[t.buffer].space == "wb":
                    self._wb_bufs.setdefault(core, []).append(t.buffer)
            else:
                span[1] = phase
        if at is not None:
            self._hoist.hoisted(self, core, accesses)
        if self.narrow:
            ran = phase - 1 if at is not None else phase  # a hoisted command runs before the barrier
            for a in accesses:
                if a.buffer in self.staged:  # per writing core: the copies' rows are disjoint
                    writers = self.staged[a.buffer]
                    if a.write:
                        writers.add(core)
                        self.touches.add(ran, core, (a.buffer, core), True)
                    else:
                        for w in writers:
                            self.touches.add(ran, core, (a.buffer, w), False)
                elif a.buffer not in self.sync.readonly:
                    self.touches.add(ran, core, self.memory_key(a.buffer), a.write)
        return cmd

    def _share(self, key: tuple, t: Tile) -> Tile:
        """The tile every command with tile `key` shares (its shape and strides shared too)."""
        tuples = self._tuples
        shape, strides = tuples.setdefault(t.shape, t.shape), tuples.setdefault(t.strides, t.strides)
        if shape is not t.shape or strides is not t.strides:
            t = Tile(t.buffer, t.offset, shape, strides, t.dtype)
        self._tiles[key] = t
        return t

    def memory_key(self, buffer: str):
        """What an access to `buffer` may conflict with across phases (barriers.py): the
        buffer itself if pinned, else its memory."""
        if buffer in self.pinned:
            return buffer
        b = self.program.buffers[buffer]
        return (b.space, b.core)

    def hoisting(self, hoist) -> None:
        """Commands emitted from now on (until `hoisting(None)`) go before the last barrier
        when `hoist.where` allows (prefetch.py)."""
        self._hoist = hoist if self.prefetch and self.phase > 0 else None

    def hoist_position(self, core: int) -> int | None:
        """Where a command on `core` would go before the last barrier's fences: None if the
        core has had other commands since that barrier (or there was none)."""
        at = self._before.get(core)
        if at is None or len(self.cmds.get(core, ())) != at + 2:
            return None
        return at

    def barrier(self, next_item: str) -> None:
        """End the phase: a cluster barrier of fences, then phase + 1 for `next_item`."""
        if self.before_barrier is not None:
            self.before_barrier()  # the phase's last commands (staging.py)
        if any(self.cmds.get(c) for c in self.barrier_cores):
            cores = self.barrier_cores
            names = {c: f"bar{self._parity}_c{c}" for c in cores}
            fences = {}
            for c in cores:
                if self.narrow:  # who waits for whom: decided by `finish`
                    fences[c] = (Cmd(c, "fence", {}, {}), Cmd(c, "fence", {}, {}))
                else:
                    self.sync.semaphores[names[c]] = c
                    fences[c] = (Cmd(c, "fence", {}, {}, [], [names[o] for o in cores if o != c]),
                                 Cmd(c, "fence", {}, {}, [names[c]] * (len(cores) - 1), []))
                self.cmds.setdefault(c, []).extend(fences[c])
                self.origin_of.setdefault(c, []).extend((self.origin(), self.origin()))
            if self.narrow:
                self._barriers.append((self.phase, fences))
            self._before = {c: len(self.cmds[c]) - 2 for c in cores}
            self._parity ^= 1
            self.sync.barrier()
        else:
            self._before = {}
        self._wb_usage()
        self.hoisted_bufs = set()
        self.hoisted_bytes = {}
        self.phase += 1
        if self._origin != -1:
            self._origin = None  # the same item and op, in the next phase
        self.phase_items.append(next_item)

    def _wb_usage(self) -> None:
        """`wb_prev`: per core, the weight-buffer bytes of buffers live in the phase ending."""
        phase, live, buffers = self.phase, self.live, self.program.buffers
        for core, names in self._wb_bufs.items():
            kept = [n for n in names if live[n][1] >= phase]
            self._wb_bufs[core] = kept
            self.wb_prev[core] = sum(buffers[n].size for n in kept)

    def set_item(self, label: str) -> None:
        self.phase_items[self.phase] = label

    def set_origin(self, item: str, subgroup: str = "", op: str = "") -> None:
        """What the commands emitted from now on lower (see the module doc)."""
        self.current = (item, subgroup, op)
        self._origin = None

    def set_op(self, op: str) -> None:
        """The current origin's item and sub-group, for graph op `op`."""
        self.set_origin(self.current[0], self.current[1], op)

    def origin(self) -> int:
        """The index of the current origin (in the current phase), entered in the
        program's table on first use."""
        if self._origin is None:
            origin = Origin(*self.current, phase=self.phase)
            index = self._origin_index.get(origin)
            if index is None:
                index = self._origin_index[origin] = len(self.program.origins)
                self.program.origins.append(origin)
            self._origin = index
        return self._origin

    # --- result

    def _narrow_barriers(self) -> None:
        """Fill each barrier's fences: a core signals the cores that wait for it and waits
        for those it needs (barriers.py), on one semaphore per pair."""
        cores = self.barrier_cores
        plan = narrow(self.touches, [p for p, _ in self._barriers], cores)
        for (_, fences), waits in zip(self._barriers, plan):
            for c, others in waits.items():
                for o in others:
                    name = f"bar_o{o}_c{c}"
                    self.sync.semaphores[name] = c
                    fences[o][0].signals.append(name)
                    fences[c][1].waits.append(name)

    def finish(self) -> Lowered:
        prog = self.program
        if self.narrow:
            self._narrow_barriers()
        prog.semaphores = {n: Semaphore(n, c) for n, c in sorted(self.sync.semaphores.items())}
        filled: dict[tuple, dict] = {}  # the same parameters recur: fill them once, share them

        def fill(op: str, params: dict) -> dict:
            try:
                key = (op, tuple(params.items()), tuple(map(type, params.values())))
                hit = filled.get(key)
            except TypeError:  # an unhashable parameter value
                return OPS[op].fill(params)
            if hit is None:
                hit = filled[key] = OPS[op].fill(params)
            return hit

        tuples = self._tuples  # the same waits and signals recur too
        prog.cores = {
            core: [Command(c.op, c.tiles, fill(c.op, c.params),
                           tuples.setdefault(w := tuple(c.waits), w),
                           tuples.setdefault(g := tuple(c.signals), g), origin, c.expects)
                   for c, origin in zip(stream, self.origin_of[core])]
            for core, stream in sorted(self.cmds.items())
        }
        last = self.phase
        io = {x.buffer for x in prog.inputs + prog.outputs}
        prog.buffers = {n: b for n, b in prog.buffers.items()  # drop buffers nothing used
                        if n in self.live or n in io}
        live = {}
        for name in prog.buffers:
            live[name] = (0, last) if name in self.pinned else tuple(self.live[name])
        return Lowered(prog, live, list(self.phase_items))


if sync.BUILT:
    sync._sync.setup(Ref, Cmd, {op: (spec.reads, spec.outs, spec.unit) for op, spec in OPS.items()}, LOCAL_SPACES)

__all__ = ["ALIGN", "Emitter", "Lowered", "Ref", "UNITS", "align"]
