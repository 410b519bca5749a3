"""Barriers that wait only for the cores involved.

A full cluster barrier between phases makes every core wait for every other one. What it
must order is less: core c's commands of phase q against another core o's commands of an
earlier phase r that touch the same memory, one of them writing. Within a phase `Sync`
orders commands by what they touch; across phases the barrier is what makes the
allocator's reuse of bytes safe (two buffers with disjoint phase ranges may share bytes),
so "the same memory" is, per access:

- a pinned buffer (model inputs, outputs, weights: never shared with another buffer):
  that buffer; buffers no command writes (weights, inputs) are left out altogether;
- any other buffer: its memory, i.e. (space, core) (a core's L1 or weight buffer, LLB,
  DDR), since the allocator may put another buffer of that memory on the same bytes.

The emitter records these per phase and core (`Touches`, the phase a command runs in:
a hoisted weight load runs in the phase before its own), puts both fences of every
barrier on every core (a core's own later commands still wait for all its earlier ones),
and once the program is complete `narrow` decides who waits for whom: at the barrier
into phase q, core c waits for core o if some phase r of o that c is not yet ordered
after (directly or through the cores it waited for: vector clocks of phases) touches what
c touches in phase q. Each (o, c) pair has its own semaphore `bar_o<o>_c<c>` homed on c:
o signals it at its first fence, c waits on it at its second, so the k-th signal pairs
with the k-th wait even when some cores run ahead by several barriers.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


class Touches:
    """The memories each core reads and writes in each phase (keys as in the module doc)."""

    def __init__(self) -> None:
        self.reads: dict[tuple[int, int], set] = {}
        self.writes: dict[tuple[int, int], set] = {}

    def add(self, phase: int, core: int, key, write: bool) -> None:
        (self.writes if write else self.reads).setdefault((phase, core), set()).add(key)

    def phases(self, core: int) -> list[int]:
        """The phases in which `core` touches anything, in order."""
        return sorted({p for p, c in (*self.reads, *self.writes) if c == core})

    def conflict(self, o: int, r: int, c: int, q: int) -> bool:
        """Whether core o's phase r and core c's phase q touch a memory, one writing."""
        wo = self.writes.get((r, o))
        ro = self.reads.get((r, o))
        wc = self.writes.get((q, c))
        rc = self.reads.get((q, c))
        if wo and ((wc and not wo.isdisjoint(wc)) or (rc and not wo.isdisjoint(rc))):
            return True
        return bool(ro and wc and not ro.isdisjoint(wc))

    def active(self, phase: int, core: int) -> bool:
        return (phase, core) in self.writes or (phase, core) in self.reads


def narrow(touches: Touches, barriers: Sequence[int], cores: Sequence[int]) -> list[dict[int, list[int]]]:
    """For each barrier (the phase p it ends, in order) and each core c, the cores c waits
    for before phase p + 1 (see the module doc)."""
    known = {c: {o: -1 for o in cores} for c in cores}  # c is ordered after o's phases <= this
    active = {c: touches.phases(c) for c in cores}
    out = []
    for p in barriers:
        q = p + 1
        waits: dict[int, list[int]] = {}
        for c in cores:
            need = []
            if touches.active(q, c):
                kc = known[c]
                for o in cores:
                    if o == c:
                        continue
                    phases = active[o]
                    lo, hi = bisect_right(phases, kc[o]), bisect_right(phases, p)
                    if any(touches.conflict(o, r, c, q) for r in phases[lo:hi]):
                        need.append(o)
            waits[c] = need
        after = {}
        for c in cores:
            k = dict(known[c])
            k[c] = p
            for o in waits[c]:
                for x, phase in known[o].items():
                    if phase > k[x]:
                        k[x] = phase
                k[o] = p
            after[c] = k
        known = after
        out.append(waits)
    return out


__all__ = ["Touches", "narrow"]
