"""Staging a late weight in LLB while earlier items compute.

A big weight read by an item whose compute is short (a classifier's 1280 x 1000 matrix at
batch 2, a recommender's wide layer) makes that item DDR-bound: its phase lasts as long as
DDR needs for the weight (64 B/cycle), with the matrix units idle, while the DDR port idled
during the compute-bound items before it. Here such a weight is copied DDR -> LLB in
portions during those earlier items, and the item then reads it from LLB (256 B/cycle, 40
cycles latency) instead of DDR.

- **Which weights** (`Staging.plan`): the constant right operand of a matmul or the weight
  of a conv of at least `MIN_BYTES`, first used by its item, whose DDR time (bytes / DDR
  bandwidth) exceeds that item's compute estimate (MACs over its cores' MACs per cycle,
  elementwise elements over the vector rate), if LLB holds it beside what the schedule
  keeps there in every item (`schedule-verify`'s per-item LLB bytes, minus the
  allocator's margin): the staged buffer is pinned, live for the whole program (it shares
  bytes with nothing, so the narrowed barriers key it by itself), and the lowering's own
  LLB scratch (streamed intermediates) counts it as taken.
- **When**: going back from the item before, each earlier item takes a portion of at most
  `SHARE` of its compute estimate times the DDR bandwidth, until the weight is covered; a
  weight the items before cannot cover is not staged. A portion is split over the item's
  cores by rows (axis 0), issued at the start of the item's phase on each core's outbound
  DMA engine (a DDR -> LLB copy is not local to any core), so it runs under the item's
  compute and is complete by the barrier ending the phase.
- **Reading it**: from the item on, the weight's placement is the LLB buffer; its first
  chunk is still prefetched before the item's barrier (prefetch.py) when the last portion
  was copied at least two phases before (`Emitter.settled`: the barrier before the
  prefetching phase orders it after the copies).

`lower(..., stage_weights=False)` / `convert-schedule-to-npu{stage_weights=false}` turns it
off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.isa.program import DTYPES

from . import boxes as bx
from .placement import Frame, Placement, split_box, transfer, whole
from .values import constant, dtype_of, shape_of
from .vector import BINARY, UNARY

COMPUTED = tuple(UNARY) + tuple(BINARY) + (g.SoftmaxOp, g.LayerNormOp, g.ReduceSumOp, g.ReduceMeanOp,
                                          g.MaxPoolOp, g.AvgPoolOp, g.GlobalAvgPoolOp)

MIN_BYTES = 512 * 1024
"""Weights smaller than this are left to the weight prefetch."""
SHARE = 0.75
"""Of an item's compute estimate, the share its staging portion may take on the DDR port."""
STREAMS = 0.75
"""An item whose L1 footprint (schedule-verify's) exceeds this share of L1 may stream."""


@dataclass
class _Weight:
    value: SSAValue
    unit: int  # the graph op reading it, in program order
    nbytes: int
    portions: dict[int, tuple[int, int]] = field(default_factory=dict)  # item -> rows
    buffer: str | None = None
    issued: int = 0  # portions copied so far
    last: int = -1  # the phase of its last portion


class Staging:
    def __init__(self, fl, enabled: bool = True):
        self.fl = fl
        self.weights: list[_Weight] = []
        self.bytes = 0  # LLB bytes the staged weights take for the whole program
        self.by_op: dict[Operation, _Weight] = {}
        self.portions: dict[Operation, list[tuple[_Weight, tuple[int, int]]]] = {}  # graph op ->
        self.pending: list[tuple[_Weight, tuple[int, int]]] = []  # to copy before the barrier
        if enabled:
            self.plan()

    # --- planning

    def plan(self) -> None:
        """Choose the weights and their portions, per graph op in program order (a phase
        each, or a share of one: fused chains, views)."""
        fl = self.fl
        t = fl.t
        bw = t.memory["ddr"].bandwidth
        llb_free = int(t.memory["llb"].size * (1 - MARGIN)) - max(
            (self._llb_need(it) for it in fl.analysed), default=0)
        units: list[tuple[Operation, float]] = []  # (graph op, compute estimate)
        for item in fl.items:
            if not isinstance(item, s.GroupOp):
                continue
            cores = max(1, len(list(item.core_bind.cores)))  # type: ignore[union-attr]
            for o in item.walk():
                if isinstance(o, g.GraphOp) and not isinstance(o, g.ConstantOp):
                    units.append((o, self._estimate(o, cores)))
        # staging bytes each op's phase can carry: a share of what its compute leaves of the
        # DDR port once its own weights are read
        budget = [max(0.0, e - self._weight_bytes(o) / bw) * SHARE * bw for o, e in units]
        seen: set[Operation] = set()
        for j, (o, e) in enumerate(units):
            if not isinstance(o, (g.MatmulOp, g.Conv2DOp)) or len(o.operands) < 2:
                continue
            v = o.operands[1]
            op = constant(v)
            if op is None or op in seen:  # staged for its first user only
                continue
            seen.add(op)
            nbytes = math.prod(shape_of(v)) * DTYPES[dtype_of(v)].itemsize
            if (nbytes < MIN_BYTES or nbytes / bw <= e or self.bytes + nbytes > llb_free
                    or shape_of(v)[0] < 2):
                continue
            w = self._cover(v, j, nbytes, budget)
            if w is None:
                continue
            self.weights.append(w)
            self.by_op[op] = w
            self.bytes += nbytes
            for k, rows in w.portions.items():
                self.portions.setdefault(units[k][0], []).append((w, rows))

    def _cover(self, v: SSAValue, j: int, nbytes: int, budget: list[float]) -> _Weight | None:
        rows = shape_of(v)[0]
        row_bytes = nbytes / rows
        take: dict[int, int] = {}
        left = rows
        for k in range(j - 1, -1, -1):
            n = min(left, int(budget[k] // row_bytes))
            if n > 0:
                take[k] = n
                left -= n
            if not left:
                break
        if left:
            return None
        w = _Weight(v, j, nbytes)
        start = 0
        for k in sorted(take):
            budget[k] -= take[k] * row_bytes
            w.portions[k] = (start, start + take[k])
            start += take[k]
        return w

    def _llb_need(self, it) -> int:
        """LLB bytes item `it` may take: what the schedule keeps there, and when the item
        might not fit L1 (then it streams: items.GroupLowering.streamed) all of its
        intermediates, which the lowering puts in LLB where they fit."""
        need = it.llb
        if isinstance(it.op, s.GroupOp) and it.l1_peak[1] > STREAMS * self.fl.t.memory["l1"].size:
            need += sum(math.prod(shape_of(r)) * DTYPES[dtype_of(r)].itemsize
                        for o in it.op.walk() if isinstance(o, g.GraphOp) for r in o.results
                        if isinstance(r.type, g.TensorType))
        return need

    @staticmethod
    def _weight_bytes(o: Operation) -> int:
        return sum(math.prod(shape_of(v)) * DTYPES[dtype_of(v)].itemsize
                   for v in o.operands if constant(v) is not None)

    def _estimate(self, o: Operation, cores: int) -> float:
        """Cycles of graph op `o` on `cores` cores, from MACs and elements (an estimate;
        views and movement count nothing)."""
        t = self.fl.t
        k, n = t.k_lanes, t.n_lanes

        def up(x: int, to: int) -> int:
            return -(-x // to) * to

        if isinstance(o, g.Conv2DOp):  # lanes the channels of a group do not fill are lost
            out, w = shape_of(o.results[0]), shape_of(o.operands[1])
            groups = int(o.props().get("group") or 1)
            cells = math.prod(out) // out[1] * groups * math.prod(w[2:])
            if w[1] == 1 and w[0] == groups:  # depthwise: at least one pass of the vector rate
                return cells / (cores * t.vector_elements)
            return cells * up(w[1], k) * up(w[0] // groups, n) / (cores * t.macs_per_cycle)
        if isinstance(o, g.MatmulOp):
            out = shape_of(o.results[0])
            rows = math.prod(out[:-1]) if len(out) > 1 else 1
            return rows * up(shape_of(o.operands[0])[-1], k) * up(out[-1] if out else 1, n) / (cores * t.macs_per_cycle)
        if isinstance(o, COMPUTED):
            return sum(math.prod(shape_of(r)) for r in o.results) / (cores * t.vector_elements)
        return 0.0

    # --- lowering

    def issue(self, o: Operation) -> None:
        """Graph op `o` is being lowered: its portions are copied once its stage has
        prefetched its weights (`flush`, called by `run_stage` after the prefetch, so the
        prefetch before the barrier opening the phase still finds the cores idle, and the
        copies run from the start of the phase), else before the barrier ending it."""
        self.pending += self.portions.get(o, [])

    def flush(self) -> None:
        """Copy the pending portions, each split by rows over the cores' outbound DMA
        engines (they run under the phase's compute; the barrier waits for them)."""
        if not self.pending:
            return
        fl, em = self.fl, self.fl.em
        saved = em.current
        for w, rows in self.pending:
            if w.buffer is None:
                w.buffer = em.buffer(f"staged_{w.value.name_hint or 'weight'}", "llb", w.nbytes, pinned=True)
                em.staged[w.buffer] = set()  # the narrowed barriers key its writes by core
            em.set_origin(saved[0], saved[1], f"staging {w.value.name_hint or 'a weight'} in LLB")
            src = fl.ddr_const(w.value)
            shape = shape_of(w.value)
            dst = Frame(w.buffer, 0, bx.full(shape), dtype_of(w.value))
            box = bx.with_dim(bx.full(shape), 0, rows)
            for core, part in split_box(box, em.barrier_cores, [0]):
                transfer(em, src, dst, part, core)
            w.issued += 1
            w.last = em.phase
        self.pending = []
        em.set_origin(*saved)

    def placement(self, op: Operation) -> Placement | None:
        """The LLB copy of weight `op` once every portion of it has been issued."""
        w = self.by_op.get(op)
        if w is None or w.issued < len(w.portions):
            return None
        if w.last <= self.fl.em.phase - 2:
            self.fl.em.settled.add(w.buffer)
        return whole(w.buffer, shape_of(w.value), dtype_of(w.value))  # type: ignore[arg-type]


MARGIN = 0.02  # as items.MARGIN (the allocator's share); kept here to avoid an import cycle

__all__ = ["MIN_BYTES", "SHARE", "Staging"]
