"""Running one op on its cores: operands in, tiles computed, results out.

A *rule* (conv.py, matmul.py, vector.py, movement.py) says how an op is cut: the axes its
output is spread over cores along (`split_axes`) and cut into tiles along (`tile_axes`),
how a tile is cut further for weight chunks (`chunks`), and for each tile the *steps*
(compute commands, more than one when the reduction is cut into K chunks) with the region
of every operand each step reads, derived backwards from the tile's output region
(`steps`). The rule then emits the command of a step from the frames holding those
regions (`emit`).

The stage driver (`run_stage`) gives each operand a *source* on each core:

- `FrameSource`: a frame on this core that holds (or will hold) every region the core
  needs: the operand's own piece in L1 (its margins filled from the neighbours' pieces
  over the NoC on first use: halos) or a staging buffer holding the hull of the core's
  needs, filled region by region just before the first tile that reads it, so the loads
  overlap the compute of earlier tiles;
- `RingSource`: two slots (one if every tile reads the same region) in L1 or, for
  weights, in the weight buffer; a tile's region is loaded into the least recently used
  slot unless a slot already holds it. Double buffering falls out of `Sync`: the load of
  tile t+2 waits for the compute of tile t, the compute of tile t+1 for its load. The
  weight rings of a stage's cores form a `WeightPool`: a chunk is read from DDR once and
  passed from core to core over the NoC;

and the result a *sink*: `FrameSink` writes into the value's own L1 frame, `RingSink`
computes into two L1 slots and stores each tile to the result's DDR/LLB frame (the store
of tile t overlapping the compute of tile t+1).

Tile sizes are the fewest tiles whose slots fit the core's free L1 and weight buffer
(then up to `min_tiles` when operands stream from DDR, so loads and stores overlap, but
not below `MIN_TILE_BYTES`). The cores' tiles are emitted interleaved, step by step.
"""

from __future__ import annotations

import functools
import weakref

from abc import ABC, abstractmethod

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from stc_mlir.isa.program import DTYPES

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref, align
from .placement import Frame, LoweringError, Piece, Placement, transfer
from .prefetch import prefetch
from .values import dtype_of, shape_of

MIN_TILE_BYTES = 16 * 1024
"""Tiles are not cut below this many output bytes just to get more of them."""

# ----------------------------------------------------------------------------- rules


@dataclass
class Work:
    """One output tile: its region and, per step, each operand's region (None: unused)."""

    out: Box
    steps: list[list[Box | None]]
    chunk: int = 0  # which weight chunk of its tile (rule.chunks)


class Rule(ABC):
    """How one graph op is tiled and computed (subclasses per op family)."""

    split_axes: Sequence[int] = ()
    tile_axes: Sequence[int] = ()
    follows = False  # may take its first operand's distribution (elementwise-like)
    in_place = False  # may write over its first operand when that dies with it
    movement = False  # done by DMAs alone (movement.py)
    weight_slots: frozenset[int] = frozenset()  # operands read from the weight buffer

    def __init__(self, op: Operation, operands: Sequence[SSAValue], out: SSAValue):
        self.op = op
        self.operands = list(operands)
        self.out = out

    def configure(self, wb_budget: int) -> None:
        """Choose weight chunks for a weight-buffer budget (bytes); raise LoweringError
        if the op cannot fit it."""

    def chunks(self, box: Box) -> list[Box]:
        return [box]

    @abstractmethod
    def steps(self, out: Box) -> list[list[Box | None]]:
        """The commands of a tile: per step, the region of every operand (None: unused)."""

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames: list[Frame | None],
             out: Ref, acc: Frame | None) -> None:
        """Emit one step's command from the frames holding its operand regions (compute
        rules); movement rules move data with `run` instead and emit no compute command."""
        raise TypeError(f"{type(self).__name__} emits no compute command")

    def acc_dtype(self, work: Work) -> str | None:
        """The element type of the partial sums between steps (None: one step)."""
        return "f32" if len(work.steps) > 1 else None

    # operands loaded in another layout than the value's (conv.py's space-to-depth input):
    # always through ring slots, each holding `slot_box(i, region)` filled by `load`
    relaid: frozenset[int] = frozenset()

    def slot_box(self, i: int, region: Box) -> Box:
        """The box (in the slot's own coordinates) a slot holding `region` of operand `i`
        holds."""
        return region

    def load(self, em: Emitter, i: int, value: Placement, frame: Frame, region: Box,
             core: int) -> None:
        """Fill `frame` (of box `slot_box(i, region)`) with `region` of operand `i`."""
        transfer(em, value, frame, region, core)

    def operand_value(self, em: Emitter, i: int, value: Placement) -> Placement:
        """The placement operand `i` is read from (a weight rearranged at compile time)."""
        return value

    def reuse(self, out: Box) -> float | None:
        """How many output positions of box `out` (a core's share of the op) each weight
        element is used at (its MACs per weight element; None: not a weighted op). Few
        mean the core computes for less time than its weights take to arrive
        (`FINE_REUSE`)."""
        return None


def weight_chunks(n: int, k: int, unit: int, budget: int, what: str) -> tuple[int, int]:
    """Chunks (n_chunk, k_chunk) of an n (output channels / columns) x k (reduction)
    weight of `unit` bytes per (n, k) pair for a weight-buffer `budget`: everything if it
    fits; else two chunks of all of k in flight, n in multiples of the 32 N lanes; else
    32 of n and k cut in equal chunks of a multiple of the 16 K lanes."""
    if n * k * unit <= budget:
        return n, k
    nc = budget // (2 * k * unit) // 32 * 32
    if nc >= 32:
        return nc, k
    nc = min(n, 32)
    kc = budget // (2 * nc * unit)
    if kc == 0:
        raise LoweringError(f"one {what} of {nc} needs {2 * nc * unit:,} bytes of weight "
                            f"buffer for two chunks, {budget:,} are free")
    parts = -(-k // kc)
    even = -(-k // parts)  # equal chunks: no small last one holding a slot for little work
    return nc, min(kc // 16 * 16, -(-even // 16) * 16) if kc >= 16 else even


def project(box: Box, shape: Sequence[int]) -> Box:
    """The region of an operand of `shape` that a box of the (broadcast) result reads:
    right-aligned dims, extent-1 dims broadcast."""
    lead = len(box) - len(shape)
    return tuple([(0, 1) if d == 1 else box[lead + i] for i, d in enumerate(shape)])


# ----------------------------------------------------------------------------- sources


class FrameSource:
    """Regions from one frame on this core that holds all the core needs; `have` are the
    boxes already there. A missing part is fetched from `value` when first read."""

    def __init__(self, em: Emitter, core: int, value: Placement, frame: Frame,
                 have: list[Box]):
        self.em, self.core, self.value, self.frame, self.have = em, core, value, frame, have

    def get(self, region: Box) -> Frame:
        for held in reversed(self.have):  # usually one box already holds it all
            if bx.contains(held, region):
                return self.frame
        for part in bx.missing(region, self.have):
            transfer(self.em, self.value, self.frame, part, self.core)
            self.have.append(part)
        return self.frame


class _Slots:
    """Buffers made on first use (a tiling may need fewer than it could)."""

    def __init__(self, em: Emitter, core: int, space: str, count: int, nbytes: int, hint: str):
        self.em, self.core, self.space, self.nbytes, self.hint = em, core, space, nbytes, hint
        self.names: list[str | None] = [None] * count

    def __getitem__(self, i: int) -> str:
        if self.names[i] is None:
            self.names[i] = self.em.buffer(f"{self.hint}{i}", self.space, self.nbytes, self.core)
        return self.names[i]  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.names)


class RingSource:
    def __init__(self, em: Emitter, core: int, value: Placement, space: str, slots: int,
                 nbytes: int, hint: str, relaid: tuple[Rule, int] | None = None):
        self.em, self.core, self.value = em, core, value
        self.relaid = relaid  # (rule, operand): loaded by `rule.load` in its own layout
        self.buffers = _Slots(em, core, space, slots, nbytes, f"{hint}_s")
        self.held: list[Box | None] = [None] * slots
        self.frames: list[Frame | None] = [None] * slots  # the frame of what each slot holds
        self.order = list(range(slots))  # least recently used first

    def get(self, region: Box) -> Frame:
        for i, held in enumerate(self.held):
            if held is not None and bx.contains(held, region):
                self._use(i)
                return self.frames[i]  # type: ignore[return-value]
        first = all(h is None for h in self.held)  # what the core's first step waits for
        i = self.order[0]
        self.held[i] = region
        if self.relaid is not None:
            rule, k = self.relaid
            frame = self.frames[i] = Frame(self.buffers[i], 0, rule.slot_box(k, region), self.value.dtype)
            rule.load(self.em, k, self.value, frame, region, self.core)
            self._use(i)
            return frame
        frame = self.frames[i] = Frame(self.buffers[i], 0, region, self.value.dtype)
        pool = getattr(self, "pool", None)
        if pool is None:
            transfer(self.em, self.value, frame, region, self.core)
        else:  # in pieces: the next core down the tree starts on a piece as soon as it is here
            src = pool.source(self.core, region)
            near = all(piece.core is not None for piece in src.pieces)  # another core's copy
            parts = ([region] if not near and not pool.feeds(self.core)  # nobody waits for it
                     else _pieces(region, frame.dtype, PIECE_BYTES,
                                   FINE_PIECES if pool.fine and first else PIECES)
                     if near else _pieces(region, frame.dtype, pool.far_piece(), PIECES))
            for part in parts:
                transfer(self.em, src, frame, part, self.core)
        self._use(i)
        return frame

    def _use(self, i: int) -> None:
        self.order.remove(i)
        self.order.append(i)


PIECE_BYTES = 8 * 1024
"""A weight region copied from another core is moved in pieces of at least this many
bytes (at most `PIECES`); from DDR/LLB, whose latency each piece pays again, in pieces
that take at least `LATENCIES` times that latency at the memory's bandwidth shared by the
stage's cores loading from it (`WeightPool.far_piece`)."""
PIECES = 2
"""Two, not four: on ResNet-50 224 b16 (manual) four pieces double the commands (48,052 ->
96,891) and the compile time (2.98 -> 4.85 s) for 0.06% fewer cycles, where two give
65,209 commands and 3.79 s; DenseNet-121 224 b2 keeps most of its gain (level 3: 2,518,613
cycles in one piece, 2,382,230 in two, 2,330,613 in four)."""
LATENCIES = 2
FINE_REUSE = 256
FINE_PIECES = 8
FINE_REGIONS = 8
"""The first weight region a core loads in a stage that uses each weight element at fewer
than `FINE_REUSE` output positions per core (`Rule.reuse`: such a core computes a region
in less than 16 times what one NoC link takes to copy it; DenseNet-121's dense layers at
batch 2: 784, 196, 49 and 12-14 positions on its 56, 28, 14 and 7 wide maps) is copied from
the core before it in up to `FINE_PIECES` pieces (of at least `PIECE_BYTES`), not
`PIECES`: the cores wait for that region at the start of the phase (or at the barrier
before it, when it is prefetched under a short phase), and the farthest core of the tree
has it four piece-copies after the first piece left DDR, so eighths instead of halves take
three quarters off that wait. Later regions arrive while the core computes and keep
`PIECES`, as do stages reusing their weights more: on ResNet-50 224 b16 (manual) every
region in 8 pieces took 65,977 -> 110,910 commands (lowering 3.8 -> 5.8 CPU s) for 0.03%
fewer cycles. So do stages that stream more than `FINE_REGIONS` regions per core
(ResNet-34 b2's 3 x 3 convs on 512 channels, 4.7 MB each: DDR-bound on the stream, where
the extra copies cost 568 cycles); ResNet-50's manual schedule then lowers to 66,593
commands, its cycles unchanged."""


def _pieces(region: Box, dtype: str, least: int, most: int) -> list[Box]:
    """`region` cut along its first dim into up to `most` pieces of at least `least`
    bytes (one piece when it is small or its first dim is 1)."""
    n = min(most, bx.numel(region) * DTYPES[dtype].itemsize // least, region[0][1] - region[0][0])
    if n <= 1:
        return [region]
    return [bx.with_dim(region, 0, r) for r in bx.ranges(region[0][1] - region[0][0], n, region[0][0])]


# ----------------------------------------------------------------------------- sinks


class FrameSink:
    """Results go straight into the value's L1 frame on this core; with `also`, each tile
    is then stored there too (a group output in DDR that the group reads again)."""

    def __init__(self, em: Emitter, core: int, frame: Frame, also: Placement | None = None):
        self.em, self.core, self.frame, self.also = em, core, frame, also

    def get(self, region: Box) -> Ref:
        return self.frame.ref(region)

    def put(self, region: Box, value: Placement) -> None:
        if self.also is not None:
            src = Placement(value.shape, value.dtype, [Piece(self.core, region, self.frame)])
            store(self.em, self.core, src, region, self.also)


class RingSink:
    """Results are computed into two L1 slots and stored to `dest` tile by tile."""

    def __init__(self, em: Emitter, core: int, dest: Placement, nbytes: int, hint: str):
        self.em, self.core, self.dest = em, core, dest
        self.buffers = _Slots(em, core, "l1", 2, nbytes, f"{hint}_o")
        self.next = 0
        self.frame: Frame | None = None

    def get(self, region: Box) -> Ref:
        self.frame = Frame(self.buffers[self.next], 0, region, self.dest.dtype)
        self.next = (self.next + 1) % len(self.buffers)
        return self.frame.ref(region)

    def put(self, region: Box, value: Placement) -> None:
        assert self.frame is not None
        src = Placement(value.shape, value.dtype, [Piece(self.core, region, self.frame)])
        store(self.em, self.core, src, region, self.dest)


def store(em: Emitter, core: int, value: Placement, region: Box, dest: Placement) -> None:
    """Copy `region` of `value` into every piece of `dest` it meets."""
    for piece in dest.pieces:
        part = bx.intersect(region, piece.owned)
        if part is not None:
            transfer(em, value, piece.frame, part, core, near=core)


# ----------------------------------------------------------------------------- the driver


@dataclass
class Operand:
    """An operand on one core: where the value is, and the frame on this core holding
    every region the core reads of it, if there is one (`have`: what it already holds)."""

    value: Placement
    frame: Frame | None = None
    have: list[Box] = field(default_factory=list)


@dataclass
class Output:
    """Where a result goes from one core: its own L1 `frame` (and `also` a copy), or
    through ring slots to `dest`."""

    frame: Frame | None = None
    also: Placement | None = None
    dest: Placement | None = None


def _nbytes(region: Box | None, dtype: str) -> int:
    return 0 if region is None else bx.numel(region) * DTYPES[dtype].itemsize


def _largest(regions: list[Box], dtype: str) -> int:
    """The bytes of the largest of `regions` (none None; at least one)."""
    return max(map(bx.numel, regions)) * DTYPES[dtype].itemsize


def tilings(rule: Rule, box: Box) -> Iterator[list[Work]]:
    """Candidate tilings of `box`, from the fewest tiles to the most."""
    axes = [a for a in rule.tile_axes if box[a][1] - box[a][0] > 1]
    fixed: list[int] = []
    for axis in axes or [None]:
        extent = box[axis][1] - box[axis][0] if axis is not None else 1
        last = None
        for k in range(1, extent + 1):
            size = -(-extent // k)
            if size == last:
                continue
            last = size
            outs = [box]
            for a in fixed:
                outs = [bx.with_dim(o, a, r) for o in outs for r in bx.chunks(o[a][0], o[a][1], 1)]
            if axis is not None:
                outs = [bx.with_dim(o, axis, r) for o in outs
                        for r in bx.chunks(o[axis][0], o[axis][1], size)]
            yield [Work(c, rule.steps(c), j) for o in outs for j, c in enumerate(rule.chunks(o))]
        if axis is not None:
            fixed.append(axis)


def _memory(rule: Rule, works: list[Work], operands: list[Operand], ring_out: bool,
            out_dtype: str) -> tuple[int, int]:
    """(L1, weight buffer) bytes the slots of a tiling need."""
    l1 = wb = 0
    for i, op in enumerate(operands):
        if op.frame is not None and i not in rule.relaid:
            continue
        regions = [s[i] for w in works for s in w.steps if s[i] is not None]
        if not regions:
            continue
        if i in rule.relaid:
            regions = [rule.slot_box(i, r) for r in regions]
        size = align(_largest(regions, op.value.dtype))
        slots = 1 if all(r == regions[0] for r in regions) else 2
        if i in rule.weight_slots:
            wb += slots * size
        else:
            l1 += slots * size
    if ring_out:
        l1 += 2 * align(_largest([w.out for w in works], out_dtype))
    if any(rule.acc_dtype(w) for w in works):
        l1 += align(max(bx.numel(w.out) for w in works) * 4)
    return l1, wb


@dataclass
class Job:
    """One core's share of a stage: its output box, operands, output and free L1."""

    core: int
    box: Box
    operands: list[Operand]
    output: Output
    l1_free: int


class WeightPool:
    """The weight-buffer slots of one constant operand on every core of a stage. A core
    that needs a region another core's slot holds pulls it over the NoC (from the nearest
    holder) instead of reading DDR again, so each weight chunk leaves DDR about once."""

    def __init__(self, em: Emitter, value: Placement, hint: str):
        self.em, self.value, self.hint = em, value, hint
        self.rings: dict[int, RingSource] = {}
        self._before: dict[int, int] | None = None  # core -> the one before it on the chain
        self.loaders = 1  # cores reading distinct regions of it at once (set by run_stage)
        self.feeding: set[int] = set()  # cores a child in the tree copies from (run_stage)
        self.fine = False  # first regions copied in up to FINE_PIECES pieces (run_stage)

    def ring(self, core: int, slots: int, nbytes: int) -> RingSource:
        ring = RingSource(self.em, core, self.value, "wb", slots, nbytes, f"{self.hint}_c{core}")
        # a weak back-reference: a pool <-> ring cycle kept the emitter (every command,
        # every Sync record) alive after the lowering until a full cyclic collection
        ring.pool = weakref.proxy(self)  # type: ignore[attr-defined]
        self.rings[core] = ring
        return ring

    def source(self, core: int, region: Box) -> Placement:
        """Where `core` should copy `region` from: the core before it on the chain (a snake
        through the NoC mesh, one hop per link) if that one holds it, else DDR. Every
        weight chunk flows down the chain like a systolic pipeline: each core's inbound
        engine moves it once, each link carries it once."""
        if self._before is None or len(self._before) != len(self.rings) - 1:
            self._before = tree(self.em.target, self.rings)[1]
        before = self._before.get(core)
        found = self._held(before, region) if before is not None else None
        if found is None:  # cores split along N: the nearest other core holding it
            hops = self.em.target.hops
            for other in sorted(self.rings, key=lambda o: hops(o, core)):
                if other != core and (found := self._held(other, region)) is not None:
                    before = other
                    break
        if found is not None:
            held, frame = found
            return Placement(self.value.shape, self.value.dtype, [Piece(before, held, frame)])
        return self.value

    def far_piece(self) -> int:
        """The least bytes of a piece read from the weight's own memory (DDR or LLB)."""
        mem = self.em.target.memory[self.em.program.buffers[self.value.pieces[0].frame.buffer].space]
        return int(LATENCIES * mem.latency * mem.bandwidth / max(1, self.loaders))

    def feeds(self, core: int) -> bool:
        """Whether a core below `core` in the tree reads the same first region (so it
        copies from `core`; cores split along N read their own columns)."""
        return core in self.feeding

    def _held(self, core: int, region: Box) -> tuple[Box, Frame] | None:
        """The region and frame of `core`'s slot holding `region`, if one does."""
        ring = self.rings.get(core)
        if ring is not None:
            for i, held in enumerate(ring.held):
                if held is not None and bx.contains(held, region):
                    return held, ring.frames[i]  # type: ignore[return-value]
        return None


def tree(target, cores) -> tuple[list[int], dict[int, int]]:
    """The order a stage's `cores` are emitted in and, for each but the first, the core it
    copies weight chunks from: a spanning tree of one-hop links grown breadth-first from
    the first core of the snake (each core's parent the nearest one already reached, the one
    with the fewest children on a tie), so a chunk reaches every core in as many copies as
    the farthest core is hops away (4 on the 2 x 4 mesh, 7 down the snake) and each link
    still carries it once."""
    return _tree_of(target.noc_rows, target.noc_cols, target.cores, tuple(sorted(cores)))


@functools.lru_cache(maxsize=None)
def _tree_of(rows: int, cols: int, n: int, cores: tuple[int, ...]) -> tuple[list[int], dict[int, int]]:
    def hops(a: int, b: int) -> int:
        return abs(a // cols - b // cols) + abs(a % cols - b % cols)

    snake = [c for c in _snake_of(rows, cols, n) if c in cores] + [c for c in cores if c >= n]
    if not snake:
        return [], {}
    root = snake[0]
    order = sorted(snake, key=lambda c: (hops(root, c), snake.index(c)))
    parent: dict[int, int] = {}
    children = dict.fromkeys(order, 0)
    for i, c in enumerate(order[1:], 1):
        p = min(order[:i], key=lambda o: (hops(o, c), children[o], -order.index(o)))
        parent[c] = p
        children[p] += 1
    return order, parent


def _snake(target) -> tuple[int, ...]:
    """The cores in boustrophedon order over the NoC mesh (neighbours one hop apart)."""
    return _snake_of(target.noc_rows, target.noc_cols, target.cores)


@functools.lru_cache(maxsize=None)
def _snake_of(rows: int, cols: int, cores: int) -> tuple[int, ...]:
    order = []
    for r in range(rows):
        row = [r * cols + c for c in range(cols)]
        order += row if r % 2 == 0 else row[::-1]
    return tuple(c for c in order if c < cores)


def _tiling(rule: Rule, job: Job, wb_free: int, min_tiles: int, where: str) -> list[Work]:
    out_dtype = dtype_of(rule.out)
    chosen = None
    for works in tilings(rule, job.box):
        l1, wb = _memory(rule, works, job.operands, job.output.frame is None, out_dtype)
        if l1 <= job.l1_free and wb <= wb_free:
            small = _largest([w.out for w in works], out_dtype) < MIN_TILE_BYTES
            if chosen is not None and small:
                break  # more tiles would only make DMAs and commands smaller
            chosen = works
            if len(works) >= min_tiles or _chunked(rule, works):
                break  # more tiles would load the weight chunks again
        elif chosen is not None:
            break
    if chosen is None:
        raise LoweringError(
            f"{where}: no tiling of its {'x'.join(map(str, bx.shape(job.box)))} output on core "
            f"{job.core} fits the {job.l1_free:,} bytes of L1 and {wb_free:,} bytes of weight "
            "buffer left")
    return _order(rule, chosen, job)


def _chunked(rule: Rule, works: list[Work]) -> bool:
    """Whether a tile's steps cycle through several weight regions (K chunks)."""
    return any(len({tuple(st[i] for i in rule.weight_slots) for st in w.steps}) > 1
               for w in works)


def _order(rule: Rule, works: list[Work], job: Job) -> list[Work]:
    """Weight chunk outermost when that moves fewer bytes than reloading the chunks for
    every tile (always when the other operands are in L1 already)."""
    chunks = sorted({w.chunk for w in works})
    if len(chunks) <= 2:
        return works
    tiles = len(works) // len(chunks)
    weights = streamed = 0
    for i, op in enumerate(job.operands):
        regions = {s[i] for w in works for s in w.steps if s[i] is not None}
        size = sum(_nbytes(r, op.value.dtype) for r in regions)
        if i in rule.weight_slots:
            weights += size
        elif op.frame is None:
            streamed += size
    if weights * (tiles - 1) > streamed * (len(chunks) - 1):
        return sorted(works, key=lambda w: w.chunk)
    return works


def configure(rule: Rule, budgets: Sequence[int]) -> Sequence[int]:
    """Configure `rule` for the first of the weight-buffer `budgets` (bytes, preferred
    first) its weights fit; returns that budget and the larger ones after it. A smaller
    budget (half the buffer when weights are prefetched: prefetch.py) is a preference: an
    op whose chunks do not fit it takes the next instead of failing."""
    for i, budget in enumerate(budgets):
        try:
            rule.configure(budget)
            return budgets[i:]
        except LoweringError:
            if i == len(budgets) - 1:
                raise
    raise ValueError("no weight-buffer budget given")


def run_stage(em: Emitter, rule: Rule, jobs: list[Job], budgets: Sequence[int],
              min_tiles: int, hint: str, where: str) -> None:
    """Compute every job's box of `rule`'s op on its core: operands with a `frame` are read
    from it (filled as needed), the others through rings; weights through a `WeightPool`
    shared by the cores. The cores' tiles are emitted interleaved (tile i of every core,
    then tile i + 1), so a weight chunk one core loaded is still there for the others.
    `rule` comes configured for `budgets[0]` (`configure`); when a core's share fits no
    tiling within it, the next budget is tried. Raises LoweringError when a core's share
    fits no tiling within the last."""
    out_shape, out_dtype = shape_of(rule.out), dtype_of(rule.out)
    for job in jobs:
        for i, op in enumerate(job.operands):
            op.value = rule.operand_value(em, i, op.value)
    for i, wb_free in enumerate(budgets):
        try:
            if i:
                rule.configure(wb_free)
            plans = [_tiling(rule, job, wb_free, min_tiles, where) for job in jobs]
            break
        except LoweringError:
            if i == len(budgets) - 1:
                raise
    pools = {i: WeightPool(em, jobs[0].operands[i].value, f"{hint}_{i}")
             for i in rule.weight_slots if jobs}
    states = []
    rank = {c: i for i, c in enumerate(tree(em.target, [job.core for job in jobs])[0])}
    for job, works in sorted(zip(jobs, plans), key=lambda jw: rank.get(jw[0].core, 0)):
        core = job.core
        sources: list[FrameSource | RingSource | None] = []
        for i, op in enumerate(job.operands):
            regions = [s[i] for w in works for s in w.steps if s[i] is not None]
            if not regions:
                sources.append(None)
                continue
            slots = 1 if all(r == regions[0] for r in regions) else 2
            if i in rule.relaid:
                sources.append(RingSource(em, core, op.value, "l1", slots,
                                          _largest([rule.slot_box(i, r) for r in regions], op.value.dtype),
                                          f"{hint}_c{core}_{i}", (rule, i)))
                continue
            size = _largest(regions, op.value.dtype)
            if op.frame is not None:
                sources.append(FrameSource(em, core, op.value, op.frame, op.have))
            elif i in pools:
                sources.append(pools[i].ring(core, slots, size))
            else:
                sources.append(RingSource(em, core, op.value, "l1", slots, size,
                                          f"{hint}_c{core}_{i}"))
        if job.output.frame is not None:
            sink: FrameSink | RingSink = FrameSink(em, core, job.output.frame, job.output.also)
        else:
            assert job.output.dest is not None
            sink = RingSink(em, core, job.output.dest,
                            _largest([w.out for w in works], out_dtype), f"{hint}_c{core}")
        acc = None
        if any(rule.acc_dtype(w) for w in works):
            acc = em.buffer(f"{hint}_c{core}_acc", "l1",
                            max(bx.numel(w.out) for w in works) * 4, core)
        states.append((job, works, sources, sink, acc))
    parent = tree(em.target, [job.core for job in jobs])[1]
    for i, pool in pools.items():  # distinct first regions: the cores loading side by side
        first = {job.core: works[0].steps[0][i] for job, works, *_ in states if works}
        pool.loaders = len(set(first.values())) or 1
        pool.feeding = {p for c, p in parent.items() if c in first and first[c] == first.get(p)}
        reuse = [rule.reuse(job.box) for job, *_ in states]
        regions = max(len({s[i] for w in works for s in w.steps}) for _, works, *_ in states)
        pool.fine = (bool(reuse) and all(r is not None and r < FINE_REUSE for r in reuse)
                     and regions <= FINE_REGIONS)
    prefetch(em, rule, states)
    if em.before_barrier is not None:
        em.before_barrier()  # copies that run under this stage (staging.py), after its prefetch
    value = Placement(out_shape, out_dtype, [])
    n = len(states)
    current: list[tuple[Ref, Frame | None] | None] = [None] * n
    for i in range(max((len(w) for w in plans), default=0)):
        steps = max(len(works[i].steps) for _, works, *_ in states if i < len(works))
        for k in range(steps):  # step k of tile i on every core, then step k + 1
            for c in range(n):  # in chain order: a core's weights come from the one before
                job, works, sources, sink, acc_buffer = states[c]
                if i >= len(works) or k >= len(works[i].steps):
                    continue
                work = works[i]
                if k == 0:
                    acc_dtype = rule.acc_dtype(work)
                    current[c] = (sink.get(work.out), Frame(acc_buffer, 0, work.out, acc_dtype)
                                  if acc_dtype and acc_buffer else None)
                out_ref, acc = current[c]  # type: ignore[misc]
                frames = [src.get(r) if src is not None and r is not None else None
                          for src, r in zip(sources, work.steps[k])]
                rule.emit(em, job.core, work, k, frames, out_ref, acc)
                if k == len(work.steps) - 1:
                    sink.put(work.out, value)


__all__ = ["FrameSink", "FrameSource", "Job", "Operand", "Output", "RingSink", "RingSource",
           "Rule", "WeightPool", "Work", "project", "run_stage", "store", "tilings"]
