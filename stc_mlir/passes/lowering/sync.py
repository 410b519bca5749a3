"""Synchronisation, derived from what the commands touch.

Every command runs on one *thread* of the cluster: a unit (DMA in, DMA out, matrix,
vector) of a core. Commands of one thread run in stream order; anything else needs a
semaphore. The lowering never writes a semaphore by hand: it declares each command's reads
and writes (`Access`: a buffer, the byte hull of the tile, and when known the box of the
tensor stored there), and `Sync.order` makes the command wait for every earlier command of
another thread it conflicts with (read after write, write after read or write) that is not
already ordered before it.

A wait is one count on the *channel* semaphore from the producing thread to the waiting
thread (homed on the waiting core); the producing command gets one signal on that channel.
A signal is added only for a wait, so every semaphore's signals and waits balance and the
same channel is reused for the whole program. Vector clocks (per thread, the last command
of every other thread known to be ordered before it) skip waits implied by earlier ones:
the double-buffer and halo protocols come out of this, with no redundant semaphores.

`barrier()` forgets all accesses: the caller has ordered everything before it against
everything after it (a cluster barrier of `npu.fence`s between phases, see emitter.py).

**Expected writers.** The same accesses say which result every read is meant to see: the
latest earlier writes to its bytes (walking back to the first write that covers it, or to
the host for model inputs and constants). `Sync.order` records them in `Cmd.expects`
as (core, index in its stream) pairs, sorted, exactly as `Command.expects` holds them; the
emulator checks that each byte read was last written by one of them
(`stc_mlir.emulator.provenance`): a lost DMA, a lost wait or an overlapping allocation then
shows as a read of the wrong result. Unlike the conflict log, this log outlives barriers.

**In C.** `order` and `barrier` are ~a quarter of the lowering (a few Python calls per
access, ~140,000 commands for BERT-base b8); the optional C module `_sync` (`_sync.c`,
built by setup.py) runs the same algorithm over the same logs kept as C arrays, and
`Sync` uses it when built (`STC_SYNC_NATIVE=0` in the environment, or `Sync(cores,
native=False)`, keeps the Python version here, which the tests compare it with). The same
module has `Emitter.emit` (`_sync.emit`, used when nothing is being hoisted; its Python
version is `Emitter._emit_python`).
"""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import Any, NamedTuple

from stc_mlir.isa.program import HOST, OPS, Writer

from . import boxes as bx

try:
    from . import _sync  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _sync = None

UNITS = ("dma_in", "dma_out", "matrix", "vector")
_SHORT = {"dma_in": "in", "dma_out": "out", "matrix": "mx", "vector": "vec"}

INTERFACE = 2
"""The `_sync.c` interface this file calls (its `SYNC_INTERFACE`)."""
BUILT = _sync is not None and getattr(_sync, "INTERFACE", None) == INTERFACE
"""Whether the C module is there (a module built from an older `_sync.c` is not used:
rebuild it with `python setup.py build_ext --inplace`)."""
NATIVE = BUILT and os.environ.get("STC_SYNC_NATIVE", "1") != "0"
"""Whether `Sync` (and `Emitter.emit`) use the C versions by default."""


def _channel_name(src: int, dst: int) -> str:
    """The semaphore from thread `src` to thread `dst`."""
    su, du = UNITS[src % len(UNITS)], UNITS[dst % len(UNITS)]
    return f"c{src // len(UNITS)}{_SHORT[su]}_c{dst // len(UNITS)}{_SHORT[du]}"


class Cmd:
    """A command being built: mutable until the program is finished. (A plain class with
    slots: one per command.)"""

    __slots__ = ("core", "op", "tiles", "params", "waits", "signals", "index", "expects")

    def __init__(self, core: int, op: str, tiles: dict[str, Any], params: dict[str, Any],
                 waits: list[str] | None = None, signals: list[str] | None = None):
        self.core, self.op, self.tiles, self.params = core, op, tiles, params
        self.waits: list[str] = [] if waits is None else waits
        self.signals: list[str] = [] if signals is None else signals
        self.index = -1  # in its core's stream (set before `Sync.order`: its writes name it so)
        self.expects: dict[str, tuple[Writer, ...]] | None = None  # `Command.expects`

    def __repr__(self) -> str:
        return f"Cmd({self.core}, {self.op!r}, index={self.index}, waits={self.waits}, signals={self.signals})"


class Access(NamedTuple):
    """Bytes [lo, hi) of `buffer`; when `frame` is set, exactly the box `box` of the tensor
    region the buffer stores in that frame (two accesses in one frame conflict only if
    their boxes intersect; in different frames, if their byte ranges do)."""

    buffer: str
    lo: int
    hi: int
    write: bool
    frame: Any = None
    box: bx.Box | None = None
    dense: bool = False  # touches every byte of [lo, hi)


_Record = tuple  # (seq, pos, access, clock, cmd): a plain tuple, made ~130k times
"""A logged access: `seq` of its command in its thread, `pos` the order of logging (the
conflicts of one access are found in this order), the `access`, the thread's vector
`clock` after the command and the command."""


def _meets(a: bx.Box, b: bx.Box) -> bool:
    """`bx.intersect(a, b) is not None`, without building the intersection."""
    for (x0, x1), (y0, y1) in zip(a, b):
        if x1 <= y0 or y1 <= x0 or x1 <= x0 or y1 <= y0:
            return False
    return True


def _covers(a: Access, b: Access) -> bool:
    """Whether write `a` overwrites everything `b` touched."""
    if a.lo > b.lo or b.hi > a.hi:
        return False
    return _covers_within(a, b.frame, b.box)


def _covers_within(a: Access, frame: Any, box: bx.Box | None) -> bool:
    """`_covers` for an access (in `frame`, of `box`) within `a`'s bytes."""
    if a.dense:
        return True
    if a.frame is not None and a.frame == frame and a.box is not None and box is not None:
        return bx.contains(a.box, box)
    return False


class _Log:
    """The accesses to one buffer since the last barrier, per thread in logging order
    (`seqs` beside the records, to skip those the reader already knows by bisection)."""

    __slots__ = ("threads", "size")

    def __init__(self) -> None:
        self.threads: dict[int, tuple[list[int], list[_Record]]] = {}
        self.size = 0

    def add(self, thread: int, r: _Record) -> None:
        entry = self.threads.get(thread)
        if entry is None:
            entry = self.threads[thread] = ([], [])
        entry[0].append(r[0])
        entry[1].append(r)
        self.size += 1

    def forget_covered(self, a: Access) -> None:
        """Drop the records write `a` overwrites entirely."""
        lo, hi, dense, frame, box = a.lo, a.hi, a.dense, a.frame, a.box
        boxed = frame is not None and box is not None
        for t, (seqs, records) in list(self.threads.items()):
            for r in records:  # (most writes cover nothing: look before rebuilding the lists)
                b = r[2]
                if lo <= b.lo and b.hi <= hi and (dense or (boxed and b.box is not None and b.frame == frame
                                                            and bx.contains(box, b.box))):
                    break
            else:
                continue
            kept = [r for r in records if not _covers(a, r[2])]
            if len(kept) != len(records):
                self.size -= len(records) - len(kept)
                if kept:
                    self.threads[t] = ([r[0] for r in kept], kept)
                else:
                    del self.threads[t]


class _Writes:
    """The writes to one buffer in program order, each as (lo, hi, frame, box, dense,
    writer, (writer,)), the writer as (core, index) (the 1-tuple shared by the reads that
    expect it alone). A write over exactly the bytes of an earlier one
    (a slot refilled, a tile recomputed) that covers it replaces it; a walk back from a read
    stops at the first write that covers the read anyway."""

    __slots__ = ("entries", "at", "dead")

    def __init__(self) -> None:
        self.entries: list[tuple | None] = []
        self.at: dict[tuple[int, int], int] = {}  # byte range -> index of its latest write
        self.dead = 0

    def add(self, a: Access, writer: Writer, alone: tuple[Writer]) -> None:
        entries = self.entries
        key = (a.lo, a.hi)
        i = self.at.get(key)
        if i is not None:
            old = entries[i]
            if old is not None and _covers_within(a, old[2], old[3]):
                entries[i] = None
                self.dead += 1
        self.at[key] = len(entries)
        entries.append((a.lo, a.hi, a.frame, a.box, a.dense, writer, alone))
        if self.dead > 16 and 2 * self.dead > len(entries):
            self.entries = [e for e in entries if e is not None]
            self.at = {(e[0], e[1]): j for j, e in enumerate(self.entries)}  # type: ignore[index]
            self.dead = 0


class Sync:
    def __init__(self, cores: int, native: bool | None = None):
        """`native`: use the C version of `order` and `barrier` (default `NATIVE`)."""
        self.threads = cores * len(UNITS)
        self.seq = [0] * self.threads
        self.known = [[-1] * self.threads for _ in range(self.threads)]
        self.log: dict[str, _Log] = {}
        self.semaphores: dict[str, int] = {}  # name -> home core
        self.readonly: set[str] = set()  # buffers no command writes (weights, model inputs)
        self._channels: dict[tuple[int, int], str] = {}
        self._pos = 0
        self.writes: dict[str, _Writes] = {}  # per buffer, in program order
        if NATIVE if native is None else native:
            if not BUILT:
                raise RuntimeError("Sync(native=True): the C module _sync is not built (or is out of date)")
            names = [_channel_name(s, d) for s in range(self.threads) for d in range(self.threads)]
            reads = {op: spec.reads for op, spec in OPS.items()}
            c = _sync.Sync(self.threads, self.readonly, self.semaphores, names, HOST, reads)
            self.order, self.barrier = c.order, c.barrier  # the logs above stay unused

    @staticmethod
    def thread(core: int, unit: str) -> int:
        return core * len(UNITS) + UNITS.index(unit)

    def _channel(self, src: int, dst: int) -> str:
        name = self._channels.get((src, dst))
        if name is None:
            name = self._channels[(src, dst)] = _channel_name(src, dst)
        self.semaphores.setdefault(name, dst // len(UNITS))
        return name

    def order(self, cmd: Cmd, thread: int, accesses: list[Access]) -> None:
        """Make `cmd` (the next command of `thread`) wait for what it conflicts with: per
        other thread, the latest conflicting command it does not already know of."""
        known = self.known[thread]
        need: dict[int, _Record] = {}
        found: dict[int, tuple[int, int]] = {}  # thread -> (access, pos) of its first conflict
        self._expect(cmd, accesses)
        accesses = [a for a in accesses if a.buffer not in self.readonly]
        for i, a in enumerate(accesses):
            log = self.log.get(a.buffer)
            if log is None:
                continue
            write, lo, hi, frame, box = a.write, a.lo, a.hi, a.frame, a.box
            boxed = frame is not None and box is not None
            for t, (seqs, records) in log.threads.items():
                seen = known[t]
                if t == thread or seqs[-1] <= seen:
                    continue
                first = last = None
                for r in records[bisect_right(seqs, seen):]:
                    b = r[2]
                    if not (write or b.write) or lo >= b.hi or b.lo >= hi:
                        continue  # no conflict: both read, or disjoint bytes
                    if boxed and b.box is not None and frame == b.frame and not _meets(box, b.box):
                        continue  # disjoint boxes of one frame
                    if first is None:
                        first = r
                    last = r
                if last is None:
                    continue
                if t not in need:
                    need[t], found[t] = last, (i, first[1])  # type: ignore[index]
                elif need[t][0] < last[0]:
                    need[t] = last
        # the latest first; equal sequence numbers in the order the conflicts were found
        for t in sorted(need, key=lambda t: (-need[t][0], found[t])) if len(need) > 1 else need:
            r_seq, _, _, r_clock, r_cmd = need[t]
            if r_seq <= known[t]:
                continue  # implied by a wait taken above
            name = self._channels.get((t, thread)) or self._channel(t, thread)
            r_cmd.signals.append(name)
            cmd.waits.append(name)
            for j, c in enumerate(r_clock):  # known = max(known, clock), in place (few change)
                if c > known[j]:
                    known[j] = c
        seq = self.seq[thread]
        self.seq[thread] += 1
        known[thread] = seq
        clock = list(known)
        for a in accesses:
            log = self.log.get(a.buffer)
            if log is None:
                log = self.log[a.buffer] = _Log()
            elif a.write and log.size > 4:
                log.forget_covered(a)
            self._pos += 1
            log.add(thread, (seq, self._pos, a, clock, cmd))

    def _expect(self, cmd: Cmd, accesses: list[Access]) -> None:
        """Record the writers each read of `cmd` expects, then log its writes."""
        tiles = cmd.tiles
        reads = [s for s in OPS[cmd.op].reads if s in tiles]
        expects: dict[str, tuple[Writer, ...]] = {}
        cmd.expects = expects
        for slot, a in zip(reads, accesses):
            writers: list[Writer] = []
            covered = False
            alone = None
            log = self.writes.get(a.buffer)
            if log is not None:
                lo, hi, frame, box = a.lo, a.hi, a.frame, a.box
                boxed = frame is not None and box is not None
                for entry in reversed(log.entries):
                    if entry is None:
                        continue
                    w_lo, w_hi, w_frame, w_box, w_dense, writer, one = entry
                    if w_lo >= hi or lo >= w_hi:
                        continue
                    same = boxed and w_box is not None and frame == w_frame
                    if same and not _meets(box, w_box):
                        continue  # disjoint boxes of one frame
                    if not writers:
                        alone = one
                        writers.append(writer)
                    elif writer not in writers:
                        writers.append(writer)
                    if w_lo <= lo and hi <= w_hi and (w_dense or (same and bx.contains(w_box, box))):
                        covered = True
                        break
            if not covered and a.buffer in self.readonly:
                writers.append(HOST)
            if len(writers) == 1:
                expects[slot] = alone if alone is not None else (writers[0],)
            else:
                expects[slot] = tuple(sorted(writers))
        if len(accesses) > len(reads):
            at = (cmd.core, cmd.index)
            one = (at,)
            for a in accesses[len(reads):]:
                log = self.writes.get(a.buffer)
                if log is None:
                    log = self.writes[a.buffer] = _Writes()
                log.add(a, at, one)

    def barrier(self) -> None:
        self.log.clear()
        before = [s - 1 for s in self.seq]  # every thread knows everything before the barrier
        for known in self.known:
            known[:] = before

