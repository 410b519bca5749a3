"""Weight prefetch: the first weights of a stage loaded under the previous phase's compute.

Phases are separated by cluster barriers (emitter.py): without prefetch, every stage
starts by loading its first weight chunk from DDR and passing it down the chain of cores
(`stage.WeightPool`) while the matrix units wait. Vela double-buffers weights across
operations instead: the next one's weights stream in while the current one computes.

Here the stage driver first asks each core's weight ring for the region its first tile
reads (`prefetch`), with the emitter in hoisting mode (`Emitter.hoisting`): a command it
emits then goes *before* the fences of the barrier that opened the phase, at the end of
the previous phase's stream on its core, so the DMA engine runs it while the previous
phase computes (the barrier waits for it like for any earlier command). That is safe
when (`Hoist.where`):

- the core has had no other command since the barrier (the hoisted commands sit together
  right before its fences, in the order the synchronisation saw them);
- the command reads only constants (DDR weights) or what an earlier hoisted command wrote
  (the previous core's copy on the chain), so it waits for nothing of the new phase, and
  writes a fresh weight-buffer buffer;
- the weight-buffer bytes live in the previous phase on that core, plus the hoisted ones,
  fit the weight buffer: the buffer's live range then starts in the previous phase, and
  npu-allocate places it apart from everything that phase uses (the double buffer is the
  allocator's: alternate phases land in different bytes).

Otherwise the command is emitted in the phase as before. `Emitter.prefetch = False`
(`lower(..., prefetch=False)`, `convert-schedule-to-npu{prefetch=false}`) turns it off.
"""

from __future__ import annotations

from collections.abc import Sequence


class Hoist:
    """The rules of one prefetch (see the module doc); `capacity`: the weight buffer's
    usable bytes per core."""

    def __init__(self, capacity: int):
        self.capacity = capacity

    def where(self, em, core: int, accesses: Sequence) -> int | None:
        """Where in `core`'s stream a command with `accesses` goes, or None: not hoisted."""
        at = em.hoist_position(core)
        if at is None:
            return None
        buffers = em.program.buffers
        size = 0
        for a in accesses:
            if not a.write:
                if (a.buffer not in em.sync.readonly and a.buffer not in em.hoisted_bufs
                        and a.buffer not in em.settled):
                    return None
            elif a.buffer in em.hoisted_bufs:  # a further piece of a region hoisted already
                continue
            elif buffers[a.buffer].space != "wb" or a.buffer in em.live:
                return None
            else:
                size += buffers[a.buffer].size
        if em.wb_prev.get(core, 0) + em.hoisted_bytes.get(core, 0) + size > self.capacity:
            return None
        return at

    def hoisted(self, em, core: int, accesses: Sequence) -> None:
        """A command with `accesses` went before the barrier: its buffers live from the
        previous phase on."""
        for a in accesses:
            if a.write and a.buffer not in em.hoisted_bufs:
                em.live[a.buffer][0] = em.phase - 1
                em.hoisted_bufs.add(a.buffer)
                em.hoisted_bytes[core] = em.hoisted_bytes.get(core, 0) + em.program.buffers[a.buffer].size


def prefetch(em, rule, states: Sequence) -> None:
    """Load the weight region of every core's first step (in chain order) before the
    stage's other commands, hoisted before the barrier where `Hoist` allows. `states` are
    the stage's (job, works, sources, ...) per core, in chain order."""
    if not em.prefetch or em.phase == 0 or not rule.weight_slots:
        return
    em.hoisting(Hoist(em.wb_capacity))
    try:
        for _job, works, sources, *_ in states:
            if not works:
                continue
            step = works[0].steps[0]
            for i in sorted(rule.weight_slots):
                source = sources[i]
                if getattr(source, "pool", None) is not None and step[i] is not None:
                    source.get(step[i])
    finally:
        em.hoisting(None)


__all__ = ["Hoist", "prefetch"]
