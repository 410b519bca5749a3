"""The event-driven emulator of one STCP920 cluster.

Each core issues its stream in order, `issue_cycles` per command, into per-unit FIFO
queues (DMA in, DMA out, matrix, vector). A unit starts its head command once it is
issued, the unit is free and every semaphore in its `waits` can be taken (each wait
decrements its semaphore by one); when the command completes, every semaphore in its
`signals` is incremented, after `hop_latency` per NoC hop from the command's core to the
semaphore's home core. A command's data effect is applied when it starts (hazard checks
guarantee that no other command can observe the difference). DMAs share bandwidth
(cost.fair_rates) and are re-timed whenever a transfer starts or ends.
"""

from __future__ import annotations

import heapq
import math
import operator
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import numpy as np

from stc_mlir.gc_pause import gc_paused
from stc_mlir import progress
from stc_mlir.progress import steps
from stc_mlir.target import Target

from . import cost, halves, native
from stc_mlir.isa.check import ProgramError, check_program
from .functional import execute
from .memory import EmulatorError, Footprint, HazardError, HazardTracker, Memory
from .parallel import Values
from . import tile_cache
from .tile_cache import TileCache
from .provenance import Provenance, numbering
from stc_mlir.isa.program import DTYPES, Command, Program, Tile
from .report import CommandFigures, Report, Slice


@dataclass(slots=True)
class _Task:
    """A command prepared for execution."""

    core: int
    index: int
    cmd: Command
    unit: str
    tid: int
    ready: float  # when its issue completes
    waits: dict[str, int]  # semaphore -> how many it takes
    places: dict[str, tuple[tuple[str, int | None], Footprint]]  # slot -> (memory, bytes)
    duration: float = 0.0  # compute commands
    dma: cost.DmaPlan | None = None
    macs: int = 0
    hand: int = 0  # its values' host work in MACs (`OFFLOAD_MACS`): a product's, or ELEMENT_MACS per binary element
    start: float = 0.0
    fence: list[_Task] | None = None  # npu.fence: its legs, one in each unit queue of its core
    reads: list[_Access] | None = None  # prepared once: what `_apply` checks, views and counts
    writes: list[_Access] | None = None
    dense: bool = False  # a DMA between two contiguous tiles (a byte copy)
    # set by `prepare` for a dense one: (destination Memory, lo, hi, its key, source Memory,
    # source lo, its key), what `_values` (or the C hook, `_values_hook`) copies
    copy: tuple | None = None
    # set by `prepare` (with numerics) for any other: its input and output tiles as views of
    # its memories' bytes, by slot (what `execute` takes), where each input tile's derived
    # values are kept (slot -> (memory key, lo, hi, key of the tile in `TileCache.get`)) and
    # the bytes its outputs write ((memory key, lo, hi) each)
    views: tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, tuple], tuple] | None = None
    # set by `prepare` (with numerics) for a DMA that is not dense, between tiles of one
    # shape and type that do not overlap: the byte runs its C computer copies (`_strided`)
    strided: tuple | None = None
    kind: tuple = ()  # a DMA's (shared resources, engine cap): what its bandwidth share depends on
    # set by `prepare` once the semaphores are numbered: (semaphore id, count) of `waits`,
    # the command's signals as (signal latency, semaphore ids in order) per latency, the
    # label of a wait slice
    wait_ids: tuple[tuple[int, int], ...] = ()
    signal_to: tuple[tuple[Any, tuple[int, ...]], ...] = ()
    wait_label: str = ""
    number: int = 0  # in program order (`provenance.numbering`)
    expect: tuple = ()  # what the provenance check compares (`Provenance.expectations`)


# (slot, memory, footprint, tile, bytes counted, granule hull, place): one tile a command
# reads or writes; the memory is its (space, core) key and the hull and place None until
# `prepare` binds it to the Memory itself, `Footprint.hull` in its granules and a number
# per distinct (memory, footprint)
_Access = tuple[str, Any, Footprint, Tile, int, Any, Any]


def _accesses(cmd: Command, places: dict, slots: Iterable[str]) -> list[_Access]:
    out = []
    for slot in slots:
        tl = cmd.tiles[slot]
        counted = cmd.tiles["output"] if (cmd.op, slot) == ("gather", "data") else tl  # only the selected rows move
        out.append((slot, *places[slot], tl, counted.numel * counted.itemsize, None, None))
    return out


def _counts(names: list[str]) -> dict[str, int]:
    """How many times each semaphore is named (in order; usually once each)."""
    counts = dict.fromkeys(names, 1)
    return counts if len(counts) == len(names) else dict(Counter(names))


_END = operator.attrgetter("end")  # a slice's end
_KICK, _DONE, _SIGNAL, _FLOW, _FLOWS = range(5)  # event kinds (a thread's head may start, a
# command completes, a signal lands, a DMA's bytes start to flow, the next transfer ends)


class _Flow:
    """A DMA's bytes flowing: what is left of them and the rate they go at."""

    __slots__ = ("task", "kind", "bytes", "remaining", "rate")

    def __init__(self, task: _Task, nbytes: int) -> None:
        self.task = task
        self.kind = task.kind  # (shared resources, engine cap): what its share depends on
        self.bytes = nbytes
        self.remaining: float = nbytes
        self.rate = 0.0


class Observer(Protocol):
    """Sees the run as it goes (per-tensor comparison reads values back through one:
    `stc_mlir.emulator.probes`); without one a run pays nothing."""

    def command_done(self, sim: Simulator, core: int, index: int) -> None: ...

    def finished(self, sim: Simulator) -> None: ...


@dataclass(eq=False)
class Prepared:
    """What emulating a program needs that its inputs do not change, made once (`prepare`)
    and reused by every run of it, as an onnxruntime session is (an `Executor` runs its
    program many times): the program checked, its commands as tasks (footprints, cycle
    costs, DMA plans), the per-command figures, and the memories the tasks' accesses are
    bound to, cleared at the start of each run. It serves one run at a time."""

    program: Program
    target: Target
    check_hazards: bool
    numerics: bool
    tasks: list[list[_Task]]  # per thread, in issue order
    memories: dict[tuple[str, int | None], Memory]
    figures: CommandFigures
    min_ddr_bytes: int
    compute_cycles: float
    commands: int
    sem_init: list[int]  # per semaphore id (their order in `program.semaphores`)
    sem_names: list[str]
    runs: int = 0
    plan: Any = None  # the tasks as C arrays for `native.simulate` (`_native_plan`), if built


    def serves(self, program: Program, target: Target, check_hazards: bool, numerics: bool) -> bool:
        return (self.program is program and self.target == target and self.check_hazards == check_hazards
                and self.numerics == numerics)


def prepare(program: Program, target: Target, check_hazards: bool = True, numerics: bool = True) -> Prepared:
    """The part of an emulation of `program` that does not depend on its inputs (see
    `Prepared`). Raises `ProgramError` for a program the chip could not run."""
    # ~10 objects per command that all stay alive: no collection walks them while they
    # are made, and none after (`gc_paused`)
    with gc_paused(long_lived=True):
        return _prepared(program, target, check_hazards, numerics)


def _prepared(program: Program, target: Target, check_hazards: bool, numerics: bool) -> Prepared:
    check_program(program, target, require_offsets=True)
    tracker = HazardTracker(target.cores, program.where)  # its thread numbering
    tasks, places, compute_cycles, commands = _prepare(program, target, tracker)
    figures = CommandFigures.of(program, tasks)  # (from the accesses' memory keys, before binding)
    memories = _make_memories(program, places, check_hazards, numerics)
    # accesses name their Memory and the hull of their footprint in its granules from now on
    numbers: dict[tuple, int] = {}
    bound = {id(fp): (memories[key], fp.hull(memories[key].granule), numbers.setdefault((key, fp), len(numbers)))
             for key, fp in places.values()}

    def bind(a: _Access) -> _Access:
        mem, hull, place = bound[id(a[2])]
        return (a[0], mem, a[2], a[3], a[4], hull, place)

    first = numbering(program)
    sem_ids = {name: i for i, name in enumerate(program.semaphores)}
    homes = [s.core for s in program.semaphores.values()]
    delays: dict[tuple[int, int], Any] = {}  # (core, semaphore's core) -> signal latency
    for queue in tasks:
        for task in queue:
            if task.reads is not None and task.writes is not None:
                task.reads = [bind(a) for a in task.reads]
                task.writes = [bind(a) for a in task.writes]
                task.expect = Provenance.expectations(task, first)
                if task.dense:
                    _, src, at, _, _, _, _ = task.reads[0]
                    _, dst, out, _, n, _, _ = task.writes[0]
                    task.copy = (dst, out.base, out.base + n, task.places["dst"][0], src, at.base,
                                 task.places["src"][0])
                elif numerics:
                    task.views = _views(task)
                    if task.cmd.op == "dma":
                        memory = {a[0]: a[1] for a in (*task.reads, *task.writes)}
                        task.strided = _strided(task.views[1]["dst"], memory["dst"], task.views[0]["src"],
                                                memory["src"])
            task.number = first[task.core] + task.index
            task.wait_ids = tuple((sem_ids[s], n) for s, n in task.waits.items())
            task.wait_label = "wait " + ", ".join(f"@{s}" for s in task.waits)
            to: dict[Any, list[int]] = {}  # signal latency -> semaphores, in order
            for name in task.cmd.signals:
                sem = sem_ids[name]
                delay = delays.get((task.core, homes[sem]))
                if delay is None:
                    delay = delays[(task.core, homes[sem])] = target.hops(task.core, homes[sem]) * target.hop_latency
                to.setdefault(delay, []).append(sem)
            task.signal_to = tuple((delay, tuple(sems)) for delay, sems in to.items())
    return Prepared(program, target, check_hazards, numerics, tasks, memories, figures,
                    _min_ddr_bytes(program), compute_cycles, commands,
                    [s.init for s in program.semaphores.values()], list(program.semaphores),
                    plan=_native_plan(tasks, check_hazards) if native.NATIVE else None)


def _views(task: _Task) -> tuple:
    """`_Task.views` of a task whose accesses are bound."""
    assert task.reads is not None and task.writes is not None
    spans = {slot: (key, fp.base, fp.base + fp.span) for slot, (key, fp) in task.places.items()}
    return ({slot: mem.view(fp.base, tile) for slot, mem, fp, tile, _, _, _ in task.reads},
            {slot: mem.view(fp.base, tile) for slot, mem, fp, tile, _, _, _ in task.writes},
            {slot: (*spans[slot], (spans[slot][1], tile.shape, tile.strides, tile.dtype))
             for slot, _, _, tile, _, _, _ in task.reads},
            tuple(spans[slot] for slot, _, _, _, _, _, _ in task.writes))


def _strided(dst: np.ndarray, dst_memory: Memory, src: np.ndarray, src_memory: Memory) -> tuple | None:
    """`_Task.strided` of a DMA from view `src` to view `dst` (of those Memories' bytes):
    (dst Memory, its first byte, src Memory, its first byte, the bytes of a run, the
    (count, dst stride, src stride) of each dimension over the runs, outer first, the byte
    hulls [lo, hi) of dst and src), or None (another shape or type, or overlapping bytes:
    numpy's copy, `execute`)."""
    if dst.shape != src.shape or dst.dtype != src.dtype or dst.size == 0:
        return None
    run = dst.itemsize
    dims = [(n, ds, ss) for n, ds, ss in zip(dst.shape, dst.strides, src.strides) if n > 1]
    while dims and dims[-1][1] == run == dims[-1][2]:  # contiguous inner dimensions: one run
        run *= dims.pop()[0]
    hulls = []
    for view, memory, at in ((dst, dst_memory, 1), (src, src_memory, 2)):
        first = view.__array_interface__["data"][0] - memory.data.__array_interface__["data"][0]
        low = first + sum(min(0, (d[0] - 1) * d[at]) for d in dims)
        hulls.append((first, low, first + sum(max(0, (d[0] - 1) * d[at]) for d in dims) + run))
    if dst_memory is src_memory and hulls[0][1] < hulls[1][2] and hulls[1][1] < hulls[0][2]:
        return None
    return (dst_memory, hulls[0][0], src_memory, hulls[1][0], run, tuple(dims), hulls[0][1:], hulls[1][1:])


def _native_plan(tasks: list[list[_Task]], check_hazards: bool) -> Any:
    """The prepared tasks as the C event loop takes them (`native.plan`): per thread, per
    task in issue order, what `_try_start`, `_complete`, the fences and `_reflow` read of
    it, a fence's legs as task numbers (threads' lists one after the other) on its first
    leg, and (without `check_hazards`: `native.command` counts them otherwise) the byte
    counts of its accesses."""
    number = {}
    for queue in tasks:
        for task in queue:
            number[id(task)] = len(number)
    threads = []
    for queue in tasks:
        rows = []
        for task in queue:
            dma = task.dma
            legs = (tuple(number[id(leg)] for leg in task.fence)
                    if task.fence is not None and task.fence[0] is task else None)
            counts = None
            if not check_hazards and task.reads is not None and task.writes is not None:
                counts = (tuple((a[1].level, a[4]) for a in task.reads),
                          tuple((a[1].level, a[4]) for a in task.writes))
            rows.append((task, task.core, task.index, task.unit, task.cmd.op, task.wait_label, task.tid,
                         task.ready, task.duration if dma is None else dma.latency, dma is not None,
                         0.0 if dma is None else float(dma.nbytes), task.kind, task.macs, task.wait_ids,
                         task.signal_to, legs, counts))
        threads.append(rows)
    return native.plan(threads)


def _make_memories(program: Program, places: dict, check_hazards: bool, numerics: bool
                   ) -> dict[tuple[str, int | None], Memory]:
    """One Memory per (space, core) used, each with the coarsest hazard-tracking granule
    that all its accesses (tiles, host writes and reads) are aligned to."""
    extents: dict[tuple[str, int | None], int] = {}
    align: dict[tuple[str, int | None], int] = {}
    for b in program.buffers.values():
        key = b.memory
        assert b.offset is not None
        extents[key] = max(extents.get(key, 0), b.offset + b.size)
        host = [len(b.init)] if b.init is not None else []
        host += [math.prod(io.shape) * DTYPES[io.dtype].itemsize
                 for io in program.inputs + program.outputs if io.buffer == b.name]
        if host:
            align[key] = math.gcd(align.get(key, 0), b.offset, *host)
    for key, fp in places.values():  # every place once
        align[key] = math.gcd(align.get(key, 0), fp.alignment())
    memories = {}
    for key, extent in extents.items():
        space, core = key
        name = space if core is None else f"{space}[{core}]"
        memories[key] = mem = Memory(name, space, extent, check_hazards, align.get(key) or 1, numerics)
        # its pages mapped here, not in the first run (0.05 s of ResNet-50 b16's, 0.4 s of
        # BERT-base b8's 227 MB); later runs reuse them (`Memory.clear`)
        mem.data.fill(0)
    return memories


def _prepare(program: Program, t: Target, tracker: HazardTracker
             ) -> tuple[list[list[_Task]], dict, float, int]:
    """(tasks per thread, places, compute cycles, commands) of `program`."""
    queues: list[list[_Task]] = [[] for _ in range(tracker.n)]  # by thread
    buffers = program.buffers
    # (buffer, offset, shape, strides, dtype) -> (memory, footprint): made once each
    known: dict[tuple, tuple[tuple[str, int | None], Footprint]] = {}
    compute_cycles, commands = 0.0, 0
    for core, stream in program.cores.items():
        for index, cmd in enumerate(stream):
            commands += 1
            if cmd.spec.unit == "sync":
                _prepare_fence(queues, tracker, core, index, cmd, t)
                continue
            places = {}
            for slot, tl in cmd.tiles.items():
                at = (tl.buffer, tl.offset, tl.shape, tl.strides, tl.dtype)
                place = known.get(at)
                if place is None:
                    b = buffers[tl.buffer]
                    assert b.offset is not None
                    place = known[at] = (b.memory, Footprint.of(b.offset + tl.offset, tl))
                places[slot] = place
            task = _Task(core, index, cmd, cmd.spec.unit, 0, (index + 1) * t.issue_cycles,
                         _counts(cmd.waits), places)
            spec = cmd.spec
            task.reads = _accesses(cmd, places, [s for s in spec.reads if s in cmd.tiles])
            task.writes = _accesses(cmd, places, spec.outs)
            if spec.unit == "dma":
                src, dst = cmd.tiles[spec.ins[0]], cmd.tiles[spec.outs[0]]
                task.dense = (cmd.op == "dma" and src.dtype == dst.dtype
                              and src.is_contiguous and dst.is_contiguous)
                task.dma = cost.dma_plan(cmd, core, buffers[src.buffer], buffers[dst.buffer], t)
                task.unit = task.dma.unit
                task.kind = (task.dma.shared, task.dma.cap)
            else:
                c = cost.compute_cost(cmd, t)
                task.duration, task.macs = c.cycles, c.macs
                task.hand = (ELEMENT_MACS * cmd.tiles[spec.outs[0]].numel if cmd.op == "binary"
                             else c.macs)
                compute_cycles += c.cycles
            task.tid = tracker.tid(core, task.unit)
            queues[task.tid].append(task)
    return queues, known, compute_cycles, commands


def _prepare_fence(queues: list[list[_Task]], tracker: HazardTracker, core: int, index: int,
                   cmd: Command, t: Target) -> None:
    """An npu.fence is one leg in each unit queue of its core: it starts when every unit
    has finished the commands issued before it, and the units resume after it."""
    ready = (index + 1) * t.issue_cycles
    waits = _counts(cmd.waits)
    legs: list[_Task] = []
    for unit in HazardTracker.UNITS:
        tid = tracker.tid(core, unit)
        legs.append(_Task(core, index, cmd, "sync", tid, ready, waits, {}, fence=legs))
        queues[tid].append(legs[-1])


OFFLOAD_MACS = 1 << 16
"""The host work (`_Task.hand`) from which a command's product is handed to the pool of product
threads (`_parallel`): a smaller product costs less than handing it over (and a gather, which
may raise for an index out of range, does it where it would without helpers). 2^16 against
2^18, prepared runs alternating in one process (thirteenth session): MobileNetV2 b16 0.29
against 0.37 s (median), BERT-base b8 2.12 against 2.22 s, ResNet-50 b16 the same."""

ELEMENT_MACS = 32
"""What an element of a binary command (`_f16.binary`, handed over as a product is) costs the
host, in BLAS MACs: 0.45 ns against 0.013 on BERT-base's tiles (64 x 768 x 32 in 20 us)."""


class Simulator:
    values: Values | None = None  # the commands' values on helper threads (`_parallel`)

    def __init__(self, program: Program, target: Target, check_hazards: bool = True,
                 numerics: bool = True, observer: Observer | None = None, prepared: Prepared | None = None,
                 threads: int = 1):
        self.program = program
        self.threads = threads
        self.target = target
        self.check_hazards = check_hazards
        self.numerics = numerics
        self.observer = observer
        self.report = Report(program.name, target, describe=program.where)
        if prepared is None:
            try:
                prepared = prepare(program, target, check_hazards, numerics)
            except ProgramError as err:
                hazard = HazardError(err.kind, str(err), err.core, err.index, err.address)
                self.report.hazards.append(hazard.as_dict())
                hazard.report = self.report
                raise hazard from None
        elif not prepared.serves(program, target, check_hazards, numerics):
            raise EmulatorError("a prepared emulation serves only the program, target and modes it was made for")
        if prepared.runs:  # the run before left its bytes and hazard codes
            for mem in prepared.memories.values():
                mem.clear()
        prepared.runs += 1
        report = self.report
        report.min_ddr_bytes = prepared.min_ddr_bytes
        report.compute_cycles = prepared.compute_cycles
        report.commands = prepared.commands
        report.figures = prepared.figures
        for (space, _), mem in prepared.memories.items():
            report.peak[space] = max(report.peak[space], mem.extent)
        self.tracker = HazardTracker(target.cores, program.where)
        self.provenance = Provenance(program, self.tracker) if check_hazards else None
        self.cache = TileCache()
        # a command's values but a dense copy's: in C with the C module (no reference to
        # this simulator: none kept alive in a cycle)
        self.compute: Callable[[_Task], None] = (
            tile_cache._values.computer(self.cache, execute, partial(_out_of_bounds, program.where),
                                        halves.to_f32, np.dtype(np.float16))
            if self.cache.native else partial(_computed, self.cache, program.where))
        self.sem_init = prepared.sem_init
        self.sem_names = prepared.sem_names
        self.memories = prepared.memories
        self.prepared_tasks = prepared.tasks
        self.plan = prepared.plan
        self.tasks = [deque(queue) for queue in prepared.tasks]

    def _place(self, buffer: str) -> tuple[Memory, int]:
        b = self.program.buffers[buffer]
        assert b.offset is not None
        return self.memories[b.memory], b.offset

    # --- running

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self._load_inputs(inputs)
        commands = sum(len(stream) for stream in self.program.cores.values())
        # the slow paths of `native.command`: bound methods, dropped at the end (a simulator
        # left in a reference cycle would keep its memories and caches until a full collection)
        self._hooks = (self._provenance_read, self._read, self._write, self.tracker._prune)
        try:
            with steps("commands", total=commands) as self._command_done, self._parallel():  # (progress shown by stc-run on a terminal)
                self._simulate()
            outputs = self._read_outputs()
            if self.observer is not None:
                self.observer.finished(self)
        except HazardError as err:
            self.report.hazards.append(err.as_dict())
            err.report = self.report
            raise
        finally:
            self._hooks = ()
        return outputs

    def _load_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        prog = self.program
        for b in prog.buffers.values():
            if b.init is not None:
                mem, addr = self._place(b.name)
                mem.host_write(addr, b.init)
        expected = {io.name for io in prog.inputs}
        if set(inputs) != expected:
            raise EmulatorError(f"program '{prog.name}' takes inputs {sorted(expected)}, "
                                f"got {sorted(inputs)}")
        for io in prog.inputs:
            value = inputs[io.name]
            dtype = DTYPES[io.dtype]
            # without numerics only the shape of a numeric array counts: no conversion (a
            # b16 224x224 image batch to fp16 is ~13 ms, a tenth of a prepared timing-only
            # MobileNetV2 run)
            keep = not self.numerics and isinstance(value, np.ndarray) and value.dtype.kind in "biuf"
            if not keep:
                # np.asarray keeps a rank-0 input rank 0 (np.ascontiguousarray makes it (1,))
                value = np.asarray(value, dtype=dtype, order="C")
            if value.shape != io.shape:
                raise EmulatorError(f"input '{io.name}' has shape {list(value.shape)}, "
                                    f"expected {list(io.shape)}")
            mem, addr = self._place(io.buffer)
            if keep:
                mem.host_wrote(addr, value.size * dtype.itemsize)
            else:
                mem.host_write(addr, value.reshape(-1))

    def _read_outputs(self) -> dict[str, np.ndarray]:
        """The outputs by name (none in a timing-only run; their bytes are still checked
        to have been written)."""
        outputs = {}
        for io in self.program.outputs:
            mem, addr = self._place(io.buffer)
            n = math.prod(io.shape) * DTYPES[io.dtype].itemsize
            first = mem.unwritten(addr, n)
            if first is not None:
                raise HazardError("uninitialized_read", f"output '{io.name}' (buffer "
                                  f"@{io.buffer}) has bytes never written, first at "
                                  f"{mem.name}+{first:#x}", address=first)
            if not self.numerics:
                continue
            raw = mem.data[addr:addr + n].copy()
            outputs[io.name] = raw.view(DTYPES[io.dtype]).reshape(io.shape)
        return outputs

    def _push(self, time: float, kind: int, data: Any) -> None:
        self._seq += 1
        heapq.heappush(self._events, (time, self._seq, kind, data))

    def _simulate(self) -> None:
        self._events: list[tuple[float, int, int, Any]] = []  # (time, seq, kind, data)
        self._seq = 0
        n_sems = len(self.sem_init)
        self.sem_count = list(self.sem_init)  # per semaphore id
        self.sem_clocks = np.zeros((n_sems, self.tracker.n), dtype=np.int64)
        self.sem_clock = list(self.sem_clocks)  # each semaphore's clock, a view of its row
        self.busy = [False] * len(self.tasks)
        self.blocked_since: list[float | None] = [None] * len(self.tasks)
        self.waiting: dict[int, set[int]] = {}  # semaphore id -> threads blocked on it
        self.flows: list[_Flow] = []
        self.flow_time = 0.0
        self.flow_generation = 0
        self.now = 0.0
        for tid, queue in enumerate(self.tasks):
            self.tracker.active[tid] = bool(queue)
        if self.plan is not None and self.observer is None:  # the same loop in C
            self._simulate_native()
            return
        for tid, queue in enumerate(self.tasks):
            if queue:
                self._push(queue[0].ready, _KICK, tid)
        events, pop = self._events, heapq.heappop
        try_start, complete = self._try_start, self._complete
        sem_count, sem_clock, waiting, join = self.sem_count, self.sem_clock, self.waiting, native.join
        while events:
            self.now, _, kind, data = pop(events)
            if kind == _KICK:
                try_start(data)
            elif kind == _DONE:
                complete(data)
            elif kind == _SIGNAL:  # the signals of one command that land at the same time, in order
                sems, clock = data
                for sem in sems:
                    sem_count[sem] += 1
                    join(sem_clock[sem], clock)
                    blocked = waiting.pop(sem, None)
                    if blocked:
                        for tid in sorted(blocked):
                            try_start(tid)
            elif kind == _FLOW:
                self._reflow(data)
            elif data == self.flow_generation:  # _FLOWS
                for f in self._reflow(None):
                    complete(f.task)
        self._finish()

    def _finish(self, last: Any = None) -> None:
        """The cycles: the timeline's last end (one pass over ~100k slices, no list; `last`:
        already known); a deadlock if some tasks did not run."""
        if last is None:
            last = max(map(_END, self.report.timeline), default=0.0)
        self.report.cycles = int(math.ceil(last - 1e-9))
        if any(self.tasks):
            self._deadlock()

    def _simulate_native(self) -> None:
        """`_simulate`'s loop in C (`native.simulate`), over the prepared plan: the same
        events in the same order, the same timeline, clocks, semaphores and hook calls; what
        it leaves behind is what the Python loop leaves (the tasks not started, the
        semaphore counts, the macs), so the end of `_simulate` and `_deadlock` are shared."""
        target = self.target
        timeline = self.report.timeline
        before = len(timeline)  # (slices the C loop did not add: none so far)
        started, last = native.simulate(
            self.plan, self.tracker.vc, self.sem_clocks, self.sem_count, self.tracker.active,
            self.report.timeline, self.tracker.who, self.tracker.rows,
            self.provenance.codes if self.provenance is not None else None,
            self.report.bytes_read, self.report.bytes_written,
            self._hooks if self.check_hazards else None, self._values_hook() if self.numerics else None,
            # (no call per command when no tool shows the progress)
            None if self._command_done is progress.nothing else self._command_done,
            lambda kinds: cost.shares(kinds, target), Slice, "sync", "fence",
            self.report)
        self.tasks = [deque(queue[n:]) for queue, n in zip(self.prepared_tasks, started)]
        if last is not None:  # the latest end of the slices it added
            last = max(max(map(_END, timeline[:before]), default=0.0), last)
        self._finish(last)

    def _try_start(self, tid: int) -> None:
        if self.busy[tid]:
            return
        queue = self.tasks[tid]
        if not queue:
            return
        task = queue[0]
        now = self.now
        if task.ready > now:
            self._push(task.ready, _KICK, tid)
            return
        if task.fence is not None:
            self._try_fence(task)
            return
        waits = task.wait_ids
        if waits:
            count = self.sem_count
            short = [s for s, n in waits if count[s] < n]
            if short:
                if self.blocked_since[tid] is None:
                    self.blocked_since[tid] = now
                for s in short:
                    self.waiting.setdefault(s, set()).add(tid)
                return
        since = self.blocked_since[tid]
        if since is not None:
            if now > since:
                self.report.timeline.append(Slice(task.core, task.unit, task.index, task.wait_label,
                                                  since, now, True))
            self.blocked_since[tid] = None
        if waits:
            count, sem_clock, row, join = self.sem_count, self.sem_clock, self.tracker.rows[tid], native.join
            for s, n in waits:
                count[s] -= n
                join(row, sem_clock[s])  # (the tracker's acquire)
        queue.popleft()
        self.busy[tid] = True
        task.start = now
        self.tracker.who[tid].append((task.core, task.index))  # (the tracker's begin)
        self._apply(task)
        if task.dma is None:
            self._push(now + task.duration, _DONE, task)
        else:
            self._push(now + task.dma.latency, _FLOW, task)

    def _try_fence(self, task: _Task) -> None:
        legs = task.fence
        assert legs is not None
        for leg in legs:
            queue = self.tasks[leg.tid]
            if self.busy[leg.tid] or not queue or queue[0] is not leg:
                return  # that unit resumes the fence when it reaches it
        first = legs[0]
        short = [s for s, n in task.wait_ids if self.sem_count[s] < n]
        if short:
            if self.blocked_since[first.tid] is None:
                self.blocked_since[first.tid] = self.now
            for s in short:
                self.waiting.setdefault(s, set()).add(first.tid)
            return
        since = self.blocked_since[first.tid]
        if since is not None:
            if self.now > since:
                self.report.timeline.append(Slice(task.core, "sync", task.index, task.wait_label,
                                                  since, self.now, True))
            self.blocked_since[first.tid] = None
        joint = np.max(self.tracker.vc[[leg.tid for leg in legs]], axis=0)
        for s, n in task.wait_ids:
            self.sem_count[s] -= n
            np.maximum(joint, self.sem_clock[s], out=joint)
        for leg in legs:
            self.tasks[leg.tid].popleft()
            self.busy[leg.tid] = True
            self.tracker.acquire(leg.tid, joint)
            self.tracker.begin(leg.tid, leg.core, leg.index)
        first.start = self.now
        self._push(self.now, _DONE, first)

    def _complete_fence(self, task: _Task) -> None:
        legs = task.fence
        assert legs is not None
        self.report.timeline.append(Slice(task.core, "sync", task.index, "fence", task.start,
                                          self.now))
        clocks = [self.tracker.release(leg.tid) for leg in legs]
        self._signal(task, clocks[0])
        for leg in legs:
            self.busy[leg.tid] = False
            if not self.tasks[leg.tid]:
                self.tracker.active[leg.tid] = False
        for leg in legs:
            self._try_start(leg.tid)

    def _signal(self, task: _Task, clock: np.ndarray) -> None:
        now = self.now
        # one event per latency: no other event can come between signals pushed together
        # for one time (the same time, consecutive sequence numbers)
        for delay, sems in task.signal_to:
            self._push(now + delay, _SIGNAL, (sems, clock))

    def _apply(self, task: _Task) -> None:
        """The command's data effect, with its hazard checks and byte counts."""
        numerics = self.numerics
        reads, writes, tid = task.reads, task.writes, task.tid
        assert reads is not None and writes is not None
        bytes_read, bytes_written = self.report.bytes_read, self.report.bytes_written
        if self.check_hazards:  # every memory keeps writer codes
            assert self.provenance is not None
            # what the writer runs settle in one call, the rest by the hooks (`native.command`)
            native.command(task, self.tracker.rows[tid], self.provenance.codes,
                           bytes_read, bytes_written, self._hooks)
        else:
            for _, mem, _, _, nbytes, _, _ in reads:
                bytes_read[mem.level] += nbytes
            for _, mem, _, _, nbytes, _, _ in writes:
                bytes_written[mem.level] += nbytes
        if numerics:
            self._compute(task)

    @contextmanager
    def _parallel(self) -> Iterator[None]:
        """The run's commands' values computed on `threads` threads (`parallel`), if more
        than one, with numerics and hazard checks (what makes it safe) and no observer (it
        reads values as commands complete); all computed when the loop is over."""
        if self.threads < 2 or not (self.numerics and self.check_hazards) or self.observer is not None:
            yield
            return
        self.values = Values(self.threads)
        try:
            yield
            self.values.finish()
        finally:
            self.values.close()
            self.values = None

    def _values_hook(self) -> Callable[[_Task], None]:
        """What the C event loop calls for each command started (a run with numerics):
        `_compute` in C (`_values.hook`: `Values.completed`, the dense DMAs' copies and the
        choice of `_hand` there, the rest by `compute` or `_offload`); `_compute` itself
        without the C module."""
        if not self.cache.native:
            return self._compute
        return tile_cache._values.hook(self.cache, self.compute, self.values, self.report.timeline,
                                       self._offload, OFFLOAD_MACS)

    def _compute(self, task: _Task) -> None:
        """The command's values (a run with numerics), after its checks: with helper
        threads (`_parallel`), after those of the commands completed since the last start
        (`parallel`), a large product's on a helper, the rest here."""
        values = self.values
        if values is None:
            self._values(task)
            return
        values.completed(self.report.timeline)
        self._hand(task)

    def _hand(self, task: _Task) -> None:
        """`_compute`'s last step (with helper threads, after `Values.completed`)."""
        assert self.values is not None
        if task.copy is not None:  # (as `_values_hook` does it)
            self._values(task)
        elif task.hand < OFFLOAD_MACS:
            self.compute(task)
        else:
            self._offload(task)

    def _offload(self, task: _Task) -> None:
        """A large product's (or binary's) values: its Python work here, its C pass on the pool
        (`_hand`)."""
        assert self.values is not None
        self.values.start((task.core, task.index), partial(self.compute, task))

    def _values(self, task: _Task) -> None:
        """The command's values, computed into its output tiles: a dense copy's here, any
        other command's by `compute`."""
        if task.copy is not None:  # a byte copy, without views (~37,000 of a ResNet-50 b16 run)
            dst, lo, hi, key, src, at, source = task.copy
            self.cache.copy(dst.data, lo, hi, key, src.data, at, source)
            return
        self.compute(task)

    # the slow paths of `native.command`: what the writer runs do not settle

    def _provenance_read(self, task: _Task, i: int, host: bool, writers: tuple[int, ...],
                         codes: list[np.ndarray | None], runs: list[int] | None) -> None:
        assert self.provenance is not None
        self.provenance.check_read(task, i, host, writers, codes, runs)

    def _read(self, task: _Task, i: int, codes: np.ndarray | None, runs: list[int] | None,
              seen: list[int]) -> None:
        assert task.reads is not None
        _, mem, fp, _, _, _, _ = task.reads[i]
        self.tracker.read(mem, fp, task.tid, task.core, task.index, seen, codes, runs, False)

    def _write(self, task: _Task, j: int, seen: list[int]) -> None:
        assert task.writes is not None
        _, mem, fp, _, _, hull, _ = task.writes[j]
        self.tracker.write(mem, fp, task.tid, task.core, task.index, seen, hull)

    def _complete(self, task: _Task) -> None:
        self._command_done()
        if self.observer is not None:
            self.observer.command_done(self, task.core, task.index)
        if task.fence is not None:
            self._complete_fence(task)
            return
        tid = task.tid
        self.busy[tid] = False
        self.report.timeline.append(Slice(task.core, task.unit, task.index, task.cmd.op,
                                          task.start, self.now))
        self.report.macs += task.macs
        row = self.tracker.rows[tid]  # (the tracker's release: the clock it publishes, then a new epoch)
        if task.signal_to:
            self._signal(task, row.copy())
        row[tid] += 1
        if not self.tasks[tid]:
            self.tracker.active[tid] = False
        self._try_start(tid)

    def _reflow(self, new: _Task | None) -> list[_Flow]:
        """The transfers at `now`: each running one advanced at its rate since the last
        change; without a `new` one (a transfer's expected end) those now finished leave
        and are returned, with one (its latency over) it joins at the end; then every rate
        is worked out again (max-min fair shares depend only on how many transfers use
        which resources) and the next end is an event. One pass over the transfers."""
        dt = self.now - self.flow_time
        self.flow_time = self.now
        done: list[_Flow] = []
        running: list[_Flow] = []
        counts: dict[tuple, int] = {}
        now = self.now
        for f in self.flows:
            f.remaining -= f.rate * dt
            # finished, or so nearly that its end would not move the clock (at ~2e7 cycles a
            # float's step is ~4e-9: BERT-base S512 b2 looped for ever on a 1.6e-8-byte rest)
            if new is None and (f.remaining <= 1e-9 * f.bytes or now + f.remaining / f.rate <= now):
                done.append(f)
            else:
                running.append(f)
                counts[f.kind] = counts.get(f.kind, 0) + 1
        if new is not None:
            f = _Flow(new, new.dma.nbytes)
            running.append(f)
            counts[f.kind] = counts.get(f.kind, 0) + 1
        self.flows = running
        self.flow_generation += 1
        if not running:
            return done
        rates = cost.shares(frozenset(counts.items()), self.target)
        finish = math.inf
        for f in running:
            f.rate = rate = rates[f.kind]
            left = f.remaining
            t = (left if left > 0.0 else 0.0) / rate
            if t < finish:
                finish = t
        self._push(self.now + finish, _FLOWS, self.flow_generation)
        return done

    def _deadlock(self) -> None:
        pending = {(t.core, t.index) for q in self.tasks for t in q}
        count = dict(zip(self.sem_names, self.sem_count))
        lines = []
        first: _Task | None = None
        shown: set[tuple[int, int]] = set()
        for queue in self.tasks:
            if not queue or (queue[0].core, queue[0].index) in shown:
                continue
            task = queue[0]
            shown.add((task.core, task.index))
            first = first or task
            needs = []
            for s, n in task.waits.items():
                signallers = [f"core {c} #{i}" for c, i in sorted(pending)
                              if s in self.program.cores[c][i].signals]
                needs.append(f"@{s} (count {count[s]}, needs {n}; pending signallers: "
                             f"{', '.join(signallers) or 'none'})")
            lines.append(f"{self.program.where(task.core, task.index)} on {task.unit} waits "
                         f"for {', '.join(needs)}")
        assert first is not None
        raise HazardError("deadlock", f"no command can start after cycle {self.report.cycles}: "
                          + "; ".join(lines), first.core, first.index)


def _computed(cache: TileCache, where: Callable[[int, int], str], task: _Task) -> None:
    """A command's values but a dense copy's, without the C module (what
    `_values.computer` does: `Simulator.compute`)."""
    assert task.views is not None
    ins, outs, places, spans = task.views

    def derived(slot: str, what: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
        memory, lo, hi, tile = places[slot]
        return cache.get(memory, lo, hi, (*tile, what), make)

    try:
        execute(task.cmd, ins, outs, derived)
    except IndexError as err:
        _out_of_bounds(where, task, err)
    for memory, lo, hi in spans:  # after the command: its inputs may be its outputs (in place)
        cache.written(memory, lo, hi)


def _out_of_bounds(where: Callable[[int, int], str], task: _Task, err: IndexError) -> None:
    """Raises the hazard of a command whose gather index `err` says is out of range."""
    raise HazardError("out_of_bounds", f"{where(task.core, task.index)}: {err}", task.core,
                      task.index) from None


def _min_ddr_bytes(program: Program) -> int:
    """Weights + inputs + outputs once; a table only gathered from counts at most the rows
    the gathers pick (an embedding table is mostly never read)."""
    gathered: Counter[str] = Counter()
    other: set[str] = set()
    for _, _, cmd in program.commands():
        for slot, tile in cmd.tiles.items():
            if (cmd.op, slot) == ("gather", "data"):
                out = cmd.tiles["output"]
                gathered[tile.buffer] += out.numel * out.itemsize
            else:
                other.add(tile.buffer)
    weights = sum(len(b.init) if b.name in other or b.name not in gathered
                  else min(len(b.init), gathered[b.name])
                  for b in program.buffers.values() if b.init is not None)
    return weights + sum(math.prod(io.shape) * DTYPES[io.dtype].itemsize
                         for io in program.inputs + program.outputs)


THREADS_VARIABLE = "STC_EMULATOR_THREADS"
"""Environment variable naming the threads of an emulation when `run` is not told."""


def numerics_threads(threads: int | None = None) -> int:
    """The threads computing the commands' values in an emulation (`parallel`): `threads`,
    else $STC_EMULATOR_THREADS, else 2 if a core is idle (the load average of the last
    minute leaves one of this process's CPUs free), else 1.

    Each of them calls a single-threaded BLAS: the emulator computes many small matrix
    products, for which BLAS threads waiting for a busy core cost more than they gain
    (ResNet-50 b16 took 133 s instead of 15 s on a loaded 2-core machine with the
    library's default), and a BLAS thread count changes the bits of a product; the
    threads beyond the event loop's are a pool that computes whole products handed to it,
    each as it would alone (the same bits). A second thread takes a prepared run of
    ResNet-50 b16 from ~2.0-2.5 to ~1.3 s, BERT-base b8 from ~3.3 to ~2.2 s, MobileNetV2 b16
    from ~0.35 to ~0.26 s (docs/performance.md, thirteenth session); a thread that must share
    its core with others' work only loses (eleventh session): hence the load test."""
    if threads is None:
        text = os.environ.get(THREADS_VARIABLE)
        if text is None:
            cpus = _cpus()
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else cpus
            return 2 if cpus >= 2 and load <= cpus - 1 else 1
        try:
            threads = int(text)
        except ValueError:
            raise EmulatorError(f"{THREADS_VARIABLE}={text!r}: expected a positive integer") from None
    if threads < 1:
        raise EmulatorError(f"the emulator needs at least one thread, got {threads}")
    return threads


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


def run(
    program: Program, inputs: dict[str, np.ndarray], target: Target | str | None = None,
    trace: str | None = None, check_hazards: bool = True, numerics: bool = True,
    threads: int | None = None, observer: Observer | None = None, prepared: Prepared | None = None,
) -> tuple[dict[str, np.ndarray], Report]:
    """Emulate `program` on `inputs` (by input name); returns (outputs by name, report).

    `target` defaults to the program's own target; `trace` is a path for a Chrome trace
    JSON. `numerics=False` is a timing-only run: the same report (cycles, bytes, hazards)
    without computing any value (no outputs are returned; gather indices are not checked).
    `threads` is the number of threads computing values (see `numerics_threads`; one
    with an observer or without hazard checks); `observer` sees every
    command complete and the end of the run (see `Observer`); `prepared` (from `prepare`,
    for this program, target and modes) skips the set-up a run repeats otherwise. Raises `HazardError`
    (with `.report`) when the program would corrupt data or deadlock, `EmulatorError` for
    bad inputs."""
    from threadpoolctl import threadpool_limits

    from stc_mlir import target as targets

    tgt = prepared.target if prepared is not None and target is None else targets.load(
        target if target is not None else program.target)
    # what a run leaves alive (its report's timeline, the memories' logs) is long-lived:
    # no young collection walks it when the pause ends (`gc_paused`; 0.13-0.16 s a
    # ResNet-50 b16 run)
    n = numerics_threads(threads)
    with threadpool_limits(limits=1, user_api="blas"), gc_paused(long_lived=True):
        sim = Simulator(program, tgt, check_hazards, numerics, observer, prepared, n)
        try:
            outputs = sim.run(inputs)
        finally:
            if trace is not None:
                sim.report.write_trace(trace)
    return outputs, sim.report
