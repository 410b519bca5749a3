"""npu-allocate: give every buffer of an npu program its offset, by live range.

The pass replaces the `npu.program`'s `Program` by the placed one. Buffers carry the range
of phases they are live in (`Buffer.live`, printed as `npu.live = array<i64: first, last>`;
set by convert-schedule-to-npu; without it a buffer lives for the whole program) and the
program the schedule item of each phase (`Program.phases`, printed as `npu.phases`). Phases
are separated by cluster barriers, so two buffers whose phase ranges do not overlap may
share bytes: every use of the first is ordered before every use of the second.

Per memory instance (DDR, the LLB, each core's L1 and weight buffer) buffers are placed
one by one, each at the lowest 64-byte aligned offset where it overlaps no placed buffer
live at the same time (interval first-fit), in three orders (largest first, by birth,
longest-lived first); the placement with the lowest high-water mark wins. A buffer that
fits in none is a diagnostic naming it, its size, the free space and the schedule item
that needs the room (from the largest-first order).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from stc_mlir import target as targets
from stc_mlir.dialects.npu import program_op
from stc_mlir.errors import StcError
from stc_mlir.isa.program import LOCAL_SPACES, Buffer, Program

ALIGN = 64


class AllocationError(StcError, PassFailedException):
    """A buffer that does not fit its memory; `buffer` names it."""

    def __init__(self, message: str, buffer: str):
        super().__init__(message)
        self.buffer = buffer


def _fmt(n: int) -> str:
    return f"{n:,}"


def _where(b: Buffer) -> str:
    return f"{b.space} of core {b.core}" if b.space in LOCAL_SPACES else b.space


def _phase(phases: Sequence[str], p: int) -> str:
    item = phases[p] if 0 <= p < len(phases) and phases[p] else ""
    return f"phase {p}" + (f" ({item})" if item else "")


ORDERS = (
    lambda b, span: (-b.size, span[0], b.name),  # largest first
    lambda b, span: (span[0], -b.size, b.name),  # in order of birth
    lambda b, span: (span[0] - span[1], -b.size, b.name),  # longest lived first
    lambda b, span: (-span[1], -b.size, b.name),  # last to die first (ping-pong chains)
)
"""The orders tried; the placement with the lowest high-water mark wins."""


def allocate(program: Program, live: Mapping[str, tuple[int, int]] | None = None,
             phases: Sequence[str] | None = None, target: targets.Target | str | None = None) -> Program:
    """`program` with every buffer placed (offsets of already placed buffers are kept).
    `live` maps buffer names to (first, last) phase (default: the buffers' own `live`);
    missing: the whole program. `phases` default to the program's."""
    t = targets.load(target or program.target) if not isinstance(target, targets.Target) else target
    if live is None:
        live = {b.name: b.live for b in program.buffers.values() if b.live is not None}
    live = dict(live)
    phases = program.phases if phases is None else tuple(phases)
    end = max([hi for _, hi in live.values()] + [len(phases) - 1, 0])
    span = {n: live.get(n, (0, end)) for n in program.buffers}
    by_memory: dict[tuple[str, int | None], list[Buffer]] = defaultdict(list)
    for b in program.buffers.values():
        by_memory[b.memory].append(b)
    placed: dict[str, int] = {}
    for (space, _), buffers in by_memory.items():
        capacity = t.memory[space].size
        best: dict[str, int] | None = None
        error: _NoRoom | None = None
        tries = [(o, f) for o in ORDERS for f in (False, True)]
        if sum(b.size for b in buffers) <= capacity:
            tries = tries[:1]  # everything fits side by side (DDR): one pass is enough
        for order, best_fit in tries:
            try:
                offsets = _fit(buffers, span, capacity, phases, order, best_fit)
            except _NoRoom as err:
                error = error or err
                continue
            top = max((offsets[b.name] + b.size for b in buffers), default=0)
            if best is None or top < max(best[b.name] + b.size for b in buffers):
                best = offsets
        if best is None:
            assert error is not None
            raise error.diagnostic(capacity, phases)  # the first order's
        placed.update(best)
    buffers = {n: replace(b, offset=placed[n]) for n, b in program.buffers.items()}
    return replace(program, buffers=buffers)


def _fit(buffers: list[Buffer], span: Mapping[str, tuple[int, int]], capacity: int,
         phases: Sequence[str], order, best_fit: bool) -> dict[str, int]:
    """Offsets of one memory's buffers, placed in `order` at the lowest free offset (or, with
    `best_fit`, in the smallest free gap that holds them)."""
    placed: dict[str, int] = {}
    done = np.zeros((4, len(buffers)), dtype=np.int64)  # offset, end, first, last
    # per phase, the (offset, end) of the buffers living in a few phases placed there, and
    # the (offset, end, first, last) of those living longer: a buffer living in a few phases
    # looks only at those of its phases (one twice in the list changes no gap) and the long
    # ones alive then, one living longer at every placed buffer through `done`
    last = max((span[b.name][1] for b in buffers), default=0)
    by_phase: list[list[tuple[int, int]]] = [[] for _ in range(last + 1)]
    longs: list[tuple[int, int, int, int]] = []
    n = 0
    todo = []
    for b in buffers:
        if b.offset is None:
            todo.append(b)
            continue
        lo, hi = span[b.name]
        done[:, n] = (b.offset, b.offset + b.size, lo, hi)
        n += 1
        placed[b.name] = b.offset
        _index(by_phase, longs, b.offset, b.offset + b.size, lo, hi)
    for b in sorted(todo, key=lambda b: order(b, span[b.name])):
        lo, hi = span[b.name]
        if hi - lo < _FEW_PHASES:
            busy = [r for p in range(lo, hi + 1) for r in by_phase[p]]
            busy += [(o, e) for o, e, f, la in longs if f <= hi and la >= lo]
        else:
            live = (done[2, :n] <= hi) & (done[3, :n] >= lo)
            busy = zip(done[0, :n][live].tolist(), done[1, :n][live].tolist())
        gaps = [gap for gap in _free_gaps(busy, capacity) if gap[0] >= b.size]
        offset = capacity
        if gaps:
            offset = min(gaps)[1] if best_fit else gaps[0][1]
        if offset + b.size > capacity:
            raise _NoRoom(b, done[:, :n].copy(), (lo, hi))
        done[:, n] = (offset, offset + b.size, lo, hi)
        n += 1
        placed[b.name] = offset
        _index(by_phase, longs, offset, offset + b.size, lo, hi)
    return placed


def _index(by_phase: list, longs: list, offset: int, end: int, lo: int, hi: int) -> None:
    if hi - lo < _FEW_PHASES:
        for p in range(lo, hi + 1):
            by_phase[p].append((offset, end))
    else:
        longs.append((offset, end, lo, hi))


_FEW_PHASES = 8
"""A buffer living in fewer phases than this looks for room among the buffers of its phases."""


def _free_gaps(busy, capacity: int) -> list[tuple[int, int]]:
    """(size, offset) of the ALIGN-aligned gaps between the busy (offset, end) ranges."""
    gaps, start = [], 0
    for o, e in sorted(busy) + [(capacity, capacity)]:
        if o > start:
            gaps.append((o - start, start))
        start = max(start, -(-e // ALIGN) * ALIGN)
    return gaps


class _NoRoom(Exception):
    """One order's placement found no room for `b`: the numbers for its diagnostic, made
    only if every order fails (`diagnostic`)."""

    def __init__(self, b: Buffer, done: np.ndarray, rng: tuple[int, int]):
        super().__init__(b.name)
        self.b, self.done, self.rng = b, done, rng

    def diagnostic(self, capacity: int, phases: Sequence[str]) -> AllocationError:
        return _overflow(self.b, capacity, [tuple(x) for x in self.done.T.tolist()], self.rng, phases)


def _overflow(b: Buffer, capacity: int, done, rng, phases) -> AllocationError:
    """The numbers of a buffer that fits nowhere: the fullest phase of its live range, and
    the largest gap free in *all* its phases (one phase can have a larger one)."""
    lo, hi = rng
    worst, used = lo, -1
    for p in range(lo, hi + 1):
        total = sum(e - o for o, e, f, l in done if f <= p <= l)
        if total > used:
            worst, used = p, total
    busy = [(o, e) for o, e, f, l in done if f <= hi and l >= lo]
    gap = max((size for size, _ in _free_gaps(busy, capacity)), default=0)
    if lo == hi:
        live = _phase(phases, lo)
        numbers = f"at {live} the buffers placed there take {_fmt(used)} bytes and the largest free gap"
    else:
        live = f"phases {lo}-{hi}"
        numbers = (f"at {_phase(phases, worst)}, the fullest of them, the buffers placed there take "
                   f"{_fmt(used)} bytes; the largest gap free in all of {live}")
    return AllocationError(
        f"npu-allocate: buffer @{b.name} ({_fmt(b.size)} bytes, live in {live}) does not fit "
        f"the {_fmt(capacity)}-byte {_where(b)}: {numbers} is {_fmt(gap)} bytes", b.name)


@dataclass(frozen=True)
class NpuAllocate(ModulePass):
    """Place every buffer of the module's npu.program (offsets by live range)."""

    name = "npu-allocate"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        prog_op = program_op(op)
        prog_op.program = allocate(prog_op.program)
