"""Byte-addressed memories and the hazard tracker.

Each memory instance (the L1 and weight buffer of every core, the LLB, DDR) is a numpy
uint8 array covering the bytes its buffers use, so tiles are zero-copy strided views and a
wrong offset or an overlapping allocation really corrupts data.

Hazards are found with vector clocks. Every engine of every core is a thread; a command's
accesses carry the epoch of its thread. Per byte, the tracker keeps who wrote it last as a
code `epoch << TID_BITS | thread` (0: never written; thread 0 is the host), as runs of
equal codes and, under strided writes, per granule (`Memory`); reads are logged per memory
as (epoch, bytes, thread) records. A read of a byte whose writer does not happen-before the
reader, a write over such a byte, or a write over bytes read by a command that does not
happen-before the writer is an unsynchronised access (`race`); a read of a byte never
written is `uninitialized_read`. Ordering comes from the FIFO order of each engine and from
semaphores (a wait joins the clocks of the signals it consumes).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
import functools
import math
import mmap
from typing import Any, NamedTuple

import numpy as np

from stc_mlir.errors import StcError

from stc_mlir.isa.program import DTYPES, Tile

from . import native


class EmulatorError(StcError, RuntimeError):
    """A program the emulator cannot run (bad inputs, unallocated buffers...)."""


class HazardError(EmulatorError):
    """The program would corrupt data or deadlock. `kind` is one of "uninitialized_read",
    "race", "out_of_bounds", "capacity_overflow", "deadlock" (or another checker kind);
    `report` is the partial report of the run up to the hazard."""

    def __init__(self, kind: str, message: str, core: int | None = None,
                 index: int | None = None, address: int | None = None):
        super().__init__(f"{kind.replace('_', ' ')}: {message}")
        self.kind = kind
        self.core = core
        self.index = index
        self.address = address
        self.report: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": str(self), "core": self.core,
                "index": self.index, "address": self.address}


class Footprint(NamedTuple):
    """The bytes of a tile at address `base`: a grid (`shape`, byte `strides`) of contiguous
    runs of `run` bytes. (A named tuple: one is made for every tile of a program.)"""

    base: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    run: int
    span: int  # bytes from base to the end of the last run

    @staticmethod
    def of(base: int, t: Tile) -> Footprint:
        return Footprint(base, *_layout(t.shape, t.strides, DTYPES[t.dtype].itemsize))

    def alignment(self) -> int:
        """The largest granule every byte range of this footprint is made of."""
        return math.gcd(self.base, self.run, *self.strides)

    def view(self, arr: np.ndarray, granule: int = 1) -> np.ndarray:
        """`arr` (one element per `granule` bytes) over this footprint: shape + (run/granule,)."""
        step = arr.itemsize
        return np.ndarray(self.shape + (self.run // granule,), dtype=arr.dtype, buffer=arr,
                          offset=self.base // granule * step,
                          strides=tuple(s // granule * step for s in self.strides) + (step,))

    def hull(self, granule: int) -> tuple[int, int, bool]:
        """[lo, hi) granule indices from its first byte to its last, and whether it is
        dense (every byte between them is its own)."""
        return (self.base // granule, -(-(self.base + self.span) // granule),
                self.run == self.span and self.span > 0)

    def address(self, mask: np.ndarray, granule: int = 1) -> int:
        """Byte address of the first True of a `view`-shaped mask."""
        pos = np.unravel_index(int(np.argmax(mask)), mask.shape)
        return self.base + sum(int(i) * s for i, s in zip(pos, self.strides)) + int(pos[-1]) * granule


def _zeros(n: int) -> np.ndarray:
    """n int32 zeros in an anonymous mapping of their own: pages of zeros the system gives
    when first touched (a granule code array is up to hundreds of MB, of which a run touches
    a little; `np.zeros` from the heap, where a freed array of the last run makes the
    allocator zero it all again, cost ~15% of a prepared MobileNetV2 timing-only run)."""
    return np.frombuffer(mmap.mmap(-1, 4 * max(n, 1)), dtype=np.int32)[:n]


@functools.lru_cache(maxsize=65536)
def _layout(shape: tuple[int, ...], strides: tuple[int, ...], size: int) -> tuple:
    """(shape, byte strides, run, span) of a footprint: tiles of a program repeat a few
    shapes at many addresses, so this is worked out once per shape."""
    dims = [(d, s * size) for d, s in zip(shape, strides) if d > 1]
    run = size
    while dims and dims[-1][1] == run:  # merge contiguous inner dims into the run
        run *= dims.pop()[0]
    span = (sum((d - 1) * s for d, s in zip(shape, strides)) + 1) * size
    return tuple(d for d, _ in dims), tuple(s for _, s in dims), run, span


@functools.lru_cache(maxsize=65536)
def _view_layout(strides: tuple[int, ...], dtype: str) -> tuple[np.dtype, tuple[int, ...]]:
    """(numpy dtype, byte strides) of a tile's view (`Memory.view`: two views per command
    access in a run with numerics; a program's tiles repeat a few layouts)."""
    d = DTYPES[dtype]
    return d, tuple(s * d.itemsize for s in strides)


class Memory:
    """One memory instance: `extent` bytes (up to the highest byte its buffers use).

    With hazard tracking, each granule of `granule` bytes (the largest granule all accesses
    to this memory are aligned to) has a writer code; 0: never written. `full` marks
    the blocks of `BLOCK` granules known to be all written, so a large read is checked for
    never-written bytes per block rather than per granule.

    The codes are kept as runs (`starts`, `values`: from granule `starts[i]` on, up to the
    next start, the code is `values[i]`) and, where a run does not say, per granule in
    `code`: a dense write (one contiguous range; the host's writes) sets its run only
    (`code` is filled in from the runs when looked at: `codes`), a strided one writes its
    codes into `code` and marks its hull unknown (a negative token, new for each such
    write, so runs that did not change can be told from runs rewritten: `state`). Most
    accesses are dense, so the writers of an access's hull (a superset of its own) are
    found with two bisections (`known`) instead of passes over every granule code; the
    per-granule codes are looked at only when those do not settle a check."""

    BLOCK = 1024

    def __init__(self, name: str, level: str, extent: int, track: bool, granule: int = 1,
                 numerics: bool = True):
        self.name = name
        self.level = level
        self.extent = extent
        self.granule = granule
        self._modes = (track, numerics)
        # without numerics (a timing-only run) there are no bytes, only the hazard codes
        self.data = np.zeros(extent if numerics else 0, dtype=np.uint8)
        # strided writes whose codes the C loop has not put into `code` yet, in order: (lo, hi,
        # code) in `pending` (a `native.Log`), the footprint or None for all of granules [lo,
        # hi) in `pending_at`; `code` applies them first
        self.pending: Any = native.Log(3)
        self.pending_at: list[Footprint | None] = []
        # the codes per granule, made when first looked at (`code`), in pages of their own
        # (`_zeros`)
        self._code: np.ndarray | None = None
        self.size = -(-extent // granule) if track else 0  # granules
        # per block of BLOCK granules: known to be all written (codes never return to 0)
        # (a bytearray: a slice's `0 in` test is much cheaper than numpy's .all())
        self.full = bytearray(-(-self.size // self.BLOCK)) if track else None
        self.reads = _ReadLog()
        # per thread that wrote here: [epoch of its last write, hull lo, hull hi) of all its
        # writes (a few threads write each memory: a Python loop beats numpy on them)
        self.writers: dict[int, list[int]] = {}
        # per writing thread, (epoch, lo, hi) of each write in order (a `native.Log`): which of
        # its writes a thread has not seen may touch an access (`_wrote_since`)
        self.writes: dict[int, Any] = {}
        self.starts: list[int] = [0]
        self.values: list[int] = [0]
        self.token = -1  # the last unknown-run token given (-2, -3, ...: no code is below -1)
        # (read footprint, *expected codes) -> `state` of its hull when its granule codes were
        # last found all expected (`native._granules_expected`): the same state again needs
        # no look at them (a tile read by several commands with the same writers)
        self.passed: dict[tuple, tuple] = {}

    def clear(self) -> None:
        """As new: no bytes written, no hazard codes (the next run of a prepared program);
        the same `data`, zeroed (the views of it a prepared program keeps stay valid)."""
        track, numerics = self._modes
        data = self.data
        self.__init__(self.name, self.level, self.extent, track, self.granule, numerics)  # type: ignore[misc]
        data.fill(0)
        self.data = data

    @property
    def code(self) -> np.ndarray | None:
        """The per-granule codes (those of the pending writes applied first); None without
        hazard tracking. Under a known run (`values` > 0) they are that run's code only
        where something filled it in (`_fill`: a check that looked at those granules), else
        stale or 0: the tracker's code of a granule is its run's where known, this array's
        under unknown runs only (`codes` gives them with the runs filled in)."""
        if self._code is None:
            if not self._modes[0]:
                return None
            self._code = _zeros(self.size)
        if self.pending:
            self._flush()
        return self._code

    def _flush(self) -> None:
        assert self._code is not None
        g, code = self.granule, self._code
        for (lo, hi, c), fp in zip(self.pending, self.pending_at):
            if fp is None:
                code[lo:hi] = c
            else:
                fp.view(code, g)[...] = c
        self.pending.clear()  # (in place: the C loop holds them)
        self.pending_at.clear()

    def record_write(self, fp: Footprint, hull: tuple[int, int, bool], code: int, tid: int,
                     epoch: int) -> None:
        """A checked write of `fp` (`hull`: `fp.hull(self.granule)`) by thread `tid` at
        `epoch` (writer `code`): its code over the hull, per granule from now on where the
        hull is not dense, the thread's writer summary and its write log."""
        lo, hi, dense = hull
        if not dense:
            self.codes(fp)[...] = code
        self.mark(lo, hi, code if dense else None)
        _note(self.writers, tid, epoch, fp.base, fp.base + fp.span)
        log = self.writes.get(tid)
        if log is None:
            log = self.writes[tid] = native.Log(3)
        log.append((epoch, fp.base, fp.base + fp.span))

    def mark(self, lo: int, hi: int, code: int | None) -> None:
        """Granules [lo, hi) now hold `code` (None: unknown, some of them do)."""
        starts, values = self.starts, self.values
        if lo >= hi:
            return
        if code is None:
            self.token -= 1
            code = self.token
        k = bisect_right(starts, hi)
        tail = values[k - 1]  # what continues after hi
        i = bisect_left(starts, lo)
        new_s: list[int] = []
        new_v: list[int] = []
        if i == 0 or values[i - 1] != code:
            new_s.append(lo)
            new_v.append(code)
        if hi < self.size and tail != code:
            new_s.append(hi)
            new_v.append(tail)
        starts[i:k] = new_s
        values[i:k] = new_v

    def known(self, lo: int, hi: int) -> list[int] | None:
        """The codes over granules [lo, hi) (with repeats), or None if some are unknown (or
        there are none)."""
        if lo >= hi:
            return None
        starts = self.starts
        out = self.values[bisect_right(starts, lo) - 1:bisect_left(starts, hi)]
        return None if min(out) < 0 else out

    def state(self, lo: int, hi: int) -> tuple:
        """The runs over granules [lo, hi) (as a value): equal at two moments only if no
        write touched these granules in between (each write's run or token is new)."""
        starts = self.starts
        i, k = bisect_right(starts, lo), bisect_left(starts, hi)
        return (*starts[i:k], *self.values[i - 1:k])  # (the first run clipped to lo)

    def view(self, base: int, t: Tile) -> np.ndarray:
        dtype, strides = _view_layout(t.strides, t.dtype)
        return np.ndarray(t.shape, dtype=dtype, buffer=self.data, offset=base, strides=strides)

    def codes(self, fp: Footprint) -> np.ndarray:
        """The writer codes of `fp`'s granules (a view of `code`, filled in from the runs)."""
        assert self.code is not None
        g = self.granule
        self._fill(fp.base // g, -(-(fp.base + fp.span) // g))
        return fp.view(self.code, g)

    def _fill(self, lo: int, hi: int) -> None:
        """Bring `code` up to date over granules [lo, hi): write the code of each known run
        there into it (dense writes set only their run)."""
        assert self.code is not None
        starts, values, code = self.starts, self.values, self.code
        k = bisect_left(starts, hi)
        for j in range(bisect_right(starts, lo) - 1, k):
            v = values[j]
            if v > 0:  # (0: never written, as `code` holds it; below 0: `code` is right)
                code[max(starts[j], lo):starts[j + 1] if j + 1 < len(starts) and starts[j + 1] < hi else hi] = v

    def hull_written(self, fp: Footprint) -> bool:
        """Whether every granule from `fp`'s first byte to its last has been written (so
        are all of `fp`'s): the blocks not yet known to be are looked at again."""
        assert self.code is not None and self.full is not None
        g, shift = self.granule, self.BLOCK.bit_length() - 1
        b0, b1 = fp.base // g >> shift, ((fp.base + fp.span - 1) // g >> shift) + 1
        if 0 not in self.full[b0:b1]:
            return True
        self._fill(b0 << shift, b1 << shift)
        full = np.frombuffer(self.full, dtype=bool)[b0:b1]
        full |= np.minimum.reduceat(self.code[b0 << shift:b1 << shift],
                                    np.arange(0, full.size << shift, self.BLOCK)) > 0
        return bool(full.all())

    def host_write(self, base: int, raw: bytes | np.ndarray) -> None:
        raw = np.frombuffer(raw, dtype=np.uint8) if isinstance(raw, bytes) else raw.view(np.uint8).ravel()
        if self.data.size:
            self.data[base:base + raw.size] = raw
        self.host_wrote(base, raw.size)

    def host_wrote(self, base: int, nbytes: int) -> None:
        """The host wrote [base, base + nbytes) (its hazard codes; `host_write` without the
        bytes, for a memory that keeps none)."""
        if self._modes[0]:  # (tracked: its runs; `code` is not made for this)
            g = self.granule
            lo, hi = base // g, -(-(base + nbytes) // g)
            self.mark(lo, hi, HazardTracker.HOST_CODE)  # `code` filled in when looked at

    def unwritten(self, base: int, nbytes: int) -> int | None:
        """Address of the first never-written byte of [base, base + nbytes), if any."""
        if self.code is None or nbytes == 0:  # an empty tensor has no bytes to write
            return None
        g = self.granule
        lo, hi = base // g, -(-(base + nbytes) // g)
        self._fill(lo, hi)
        codes = self.code[lo:hi]
        if codes.min() > 0:
            return None
        return max(base, (base // g + int(np.argmax(codes == 0))) * g)


class _ReadLog:
    """Reads of one memory: (epoch, lo, hi, thread) rows (a `native.Log`: in C numbers where
    the C module is built, no object per read; `cols` gives them as arrays when a write or a
    pruning needs them) + footprints, and per reading thread [its latest epoch, hull lo,
    hull hi) over its logged reads (a write looks at the log only if some thread's summary
    says it may conflict)."""

    def __init__(self) -> None:
        self.rows: Any = native.Log(4)
        self.where: list[Footprint] = []
        self.pruned_at = 64
        self.readers: dict[int, list[int]] = {}
        # per reading thread, the rows of its reads in order (epoch, lo, hi first, as in a
        # write log; a `native.Log` each), never pruned: which of its reads a writer has not
        # seen may touch a write (`_wrote_since`)
        self.by: dict[int, Any] = {}

    @property
    def n(self) -> int:
        """How many reads are logged."""
        return len(self.rows)

    @property
    def cols(self) -> np.ndarray:
        """The rows as a (4, n) int64 array: lo, hi, thread, epoch."""
        return np.array(list(self.rows), dtype=np.int64).reshape(-1, 4)[:, [1, 2, 3, 0]].T

    def add(self, fp: Footprint, tid: int, epoch: int) -> None:
        lo, hi = fp.base, fp.base + fp.span
        row = (epoch, lo, hi, tid)
        self.rows.append(row)
        self.where.append(fp)
        summary = self.readers.get(tid)  # (`_note`, inlined: once per read)
        if summary is None:
            self.readers[tid] = [epoch, lo, hi]
        else:
            summary[0] = epoch
            if lo < summary[1]:
                summary[1] = lo
            if hi > summary[2]:
                summary[2] = hi
        mine = self.by.get(tid)
        if mine is None:
            mine = self.by[tid] = native.Log(4)
        mine.append(row)

    def keep(self, mask: list[bool]) -> None:
        """Keep the reads where `mask` is true (and their threads' summaries)."""
        self.rows = native.Log(4, [r for r, k in zip(self.rows, mask) if k])
        self.where = [w for w, k in zip(self.where, mask) if k]
        readers: dict[int, list[int]] = {}
        for epoch, lo, hi, tid in self.rows:
            _note_max(readers, tid, epoch, lo, hi)
        self.readers = {t: readers[t] for t in sorted(readers)}


def _note(summary: dict[int, list[int]], tid: int, epoch: int, lo: int, hi: int) -> None:
    """Record an access [lo, hi) by thread `tid` at `epoch` in a per-thread summary
    [latest epoch, hull lo, hull hi) (a thread's epochs only grow)."""
    mine = summary.get(tid)
    if mine is None:
        summary[tid] = [epoch, lo, hi]
        return
    mine[0] = epoch
    if lo < mine[1]:
        mine[1] = lo
    if hi > mine[2]:
        mine[2] = hi


def _note_max(summary: dict[int, list[int]], tid: int, epoch: int, lo: int, hi: int) -> None:
    """`_note` for accesses in any order of epochs (the latest is the largest)."""
    mine = summary.get(tid)
    if mine is None:
        summary[tid] = [epoch, lo, hi]
        return
    if epoch > mine[0]:
        mine[0] = epoch
    if lo < mine[1]:
        mine[1] = lo
    if hi > mine[2]:
        mine[2] = hi


def _wrote_since(log: Sequence[tuple[int, ...]], seen: int, lo: int, hi: int,
                 limit: int = 32) -> bool:
    """Whether a thread's writes (or reads) after epoch `seen` (its `log` of (epoch, lo,
    hi) or, for reads, read log rows (epoch, lo, hi, thread); epochs non-decreasing) may
    touch [lo, hi): False only if none of their hulls does. Beyond `limit` such accesses
    it says True (the caller then looks closer)."""
    for i in range(len(log) - 1, max(len(log) - 1 - limit, -1), -1):
        epoch, wlo, whi = log[i][:3]
        if epoch <= seen:
            return False
        if wlo < hi and whi > lo:
            return True
    return len(log) > limit and log[-1 - limit][0] > seen


class HazardTracker:
    """Vector clocks of the engines and the per-byte / per-read shadow state."""

    UNITS = ("dma_in", "dma_out", "matrix", "vector")
    TID_BITS = native.TID_BITS
    HOST_CODE = 1 << TID_BITS  # host writes: thread 0 at epoch 1, which every clock has seen

    def __init__(self, cores: int, describe: Callable[[int, int], str]):
        self.n = 1 + cores * len(self.UNITS)
        assert self.n <= (1 << self.TID_BITS)
        self.mask = (1 << self.TID_BITS) - 1
        self.vc = np.zeros((self.n, self.n), dtype=np.int64)
        self.vc[np.arange(self.n), np.arange(self.n)] = 1
        self.vc[:, 0] = 1
        self.rows = list(self.vc)  # each thread's clock, a view of its row (no view per use)
        self.who: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]  # epoch-1 -> cmd
        self.describe = describe  # (core, index) -> text naming the command
        self.active = np.zeros(self.n, dtype=bool)

    def tid(self, core: int, unit: str) -> int:
        return 1 + core * len(self.UNITS) + self.UNITS.index(unit)

    # --- clocks

    def begin(self, tid: int, core: int, index: int) -> None:
        self.who[tid].append((core, index))

    def acquire(self, tid: int, clock: np.ndarray) -> None:
        row = self.rows[tid]
        np.maximum(row, clock, out=row)

    def release(self, tid: int) -> np.ndarray:
        """Clock a completed command publishes to the semaphores it signals."""
        row = self.rows[tid]
        clock = row.copy()
        row[tid] += 1
        return clock

    def _other(self, code: int) -> str:
        tid, epoch = code & self.mask, code >> self.TID_BITS
        core, index = self.who[tid][epoch - 1]
        return f"{self.describe(core, index)} on {self.UNITS[(tid - 1) % len(self.UNITS)]}"

    # --- accesses

    def read(self, mem: Memory, fp: Footprint, tid: int, core: int, index: int,
             seen: list[int] | None = None, codes: np.ndarray | None = None,
             known: list[int] | None = None, settled: bool | None = None) -> None:
        """Check and log a read of `fp` by thread `tid` (`seen`: its clock as a list,
        `codes`: `mem.codes(fp)`, `known`: the codes over its hull from `mem.known`,
        `settled`: whether they settle the check (`native.settled`), if the caller has
        them)."""
        if seen is None:
            seen = self.vc[tid].tolist()
        if settled is None:
            if known is None:
                known = mem.known(*fp.hull(mem.granule)[:2])
            settled = not (known is None or 0 in known or self._unseen(mem, known, seen))
        if not settled:
            if codes is None:
                codes = mem.codes(fp)
            if (codes.size < mem.BLOCK or not mem.hull_written(fp)) and codes.min() == 0:
                addr = fp.address(codes == 0, mem.granule)
                raise HazardError("uninitialized_read", f"{self.describe(core, index)} reads "
                                  f"{mem.name}+{addr:#x}, which was never written", core, index, addr)
            self._check_writers(mem, codes, fp, tid, core, index, "reads", seen)
        mem.reads.add(fp, tid, seen[tid])
        if mem.reads.n >= 2 * mem.reads.pruned_at:
            self._prune(mem)

    def write(self, mem: Memory, fp: Footprint, tid: int, core: int, index: int,
              seen: list[int] | None = None, hull: tuple[int, int, bool] | None = None) -> None:
        """Check and record a write of `fp` by thread `tid` (`hull`: `fp.hull(mem.granule)`
        if the caller has it)."""
        if seen is None:
            seen = self.vc[tid].tolist()
        lo, hi, dense = hull if hull is not None else fp.hull(mem.granule)
        if not native.settled(mem.starts, mem.values, lo, hi, seen, mem.writers, self.TID_BITS)[1]:
            self._check_writers(mem, mem.codes(fp), fp, tid, core, index, "writes", seen)
        self._check_readers(mem, fp, tid, core, index, seen)
        epoch = seen[tid]
        mem.record_write(fp, (lo, hi, dense), (epoch << self.TID_BITS) | tid, tid, epoch)

    def _unseen(self, mem: Memory, known: list[int], seen: list[int]) -> bool:
        """Whether some of the codes `known` were written by a thread after the epoch
        `seen` of it (then `_check_writers` looks at the granules)."""
        if not mem.writers:
            return False
        mask, bits = self.mask, self.TID_BITS
        for code in set(known) if len(known) > 8 else known:
            if code >> bits > seen[code & mask]:
                return True
        return False

    def _check_writers(self, mem: Memory, codes: np.ndarray, fp: Footprint, tid: int,
                       core: int, index: int, verb: str, seen: list[int]) -> None:
        """Race if a byte's last writer does not happen-before thread `tid`. Only threads
        that wrote near these bytes after the epoch `tid` has seen of them need checking."""
        lo, hi = fp.base, fp.base + fp.span
        writers = [w for w, (epoch, wlo, whi) in mem.writers.items()
                   if epoch > seen[w] and wlo < hi and whi > lo
                   and _wrote_since(mem.writes[w], seen[w], lo, hi)]
        if not writers:
            return
        # per unseen writer, its codes from the first epoch `tid` has not seen: a few
        # int32 passes each (a table of limits gathered by thread, np.take, cost ~10x more)
        tids = codes & self.mask
        bad = None
        for w in writers:
            mine = tids == w
            mine &= codes >= (seen[w] + 1) << self.TID_BITS
            if bad is None:
                bad = mine
            else:
                bad |= mine
        assert bad is not None
        if bad.any():
            addr = fp.address(bad, mem.granule)
            raise HazardError(
                "race", f"{self.describe(core, index)} {verb} {mem.name}+{addr:#x}, written "
                f"by {self._other(int(codes[bad][0]))} with no synchronisation ordering them",
                core, index, addr)

    def _check_readers(self, mem: Memory, fp: Footprint, tid: int, core: int, index: int,
                       clock: list[int]) -> None:
        """Race if bytes this write overwrites were read by a command that does not
        happen-before it (exact overlap checked byte by byte for candidate reads)."""
        log = mem.reads
        start, stop = fp.base, fp.base + fp.span
        for r, (epoch, rlo, rhi) in log.readers.items():  # (a loop: no generator per write)
            if (epoch > clock[r] and rlo < stop and rhi > start and r != tid
                    and _wrote_since(log.by[r], clock[r], start, stop)):
                break
        else:
            return  # no thread read here after what `tid` has seen of it
        found = native.read_overlapping(log, fp, tid, clock)
        if found is not None:
            i, addr = found
            code = (log.rows[i][0] << self.TID_BITS) | log.rows[i][3]
            raise HazardError(
                "race", f"{self.describe(core, index)} writes {mem.name}+{addr:#x}, read by "
                f"{self._other(code)} with no synchronisation ordering them",
                core, index, addr)

    def _prune(self, mem: Memory) -> None:
        """Forget reads every thread that still has commands has synchronised with."""
        native.prune(mem.reads, self.vc, self.active)

