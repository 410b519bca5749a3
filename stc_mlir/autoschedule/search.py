"""The grouping search: which consecutive ops run together, cut how many ways.

Dynamic programming over the ops in block (topological) order, as TPU-MLIR's LayerGroup
does: `best[j] = min over i of best[i] + cost(ops[i:j])`, where a candidate group
`ops[i:j]` must have a single output, and its cost is that of its best split factor n
(sub-groups of batch/n samples) and batch parts p (the core_bind's outer list; the 8 / p
cores of a part share its samples spatially): the estimator's cycles of the n sub-groups,
weights re-read by each, inputs and the result moved where they are likely to live. A
candidate whose sub-group does not fit the cores' L1 (the footprint model of
`schedule-verify`) for any n costs infinity; growing a group backwards stops there.

Level 3 also offers one candidate cut by the graph's structure (`Search.branches`: a group
per branch between where chains fork and join, as the seeds' manual BERT schedule groups
an attention layer), which `decide.py` judges beside the programme's.

Levels 1 and 2 keep one op per group and cut an op only as much as its L1 footprint needs
(the default schedule's rule); level 3 is the search. When even one sample of a run does
not fit, the run is cut into row stripes instead (a spatial split, `Segment.rows`): the
fewest stripes whose footprint (halo rows included, `schedule_verify.stripes_peak`) fits,
as Vela's cascades and TreeWalker's tiles; the search keeps growing such a run while its
stripes fit.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from xdsl.ir import SSAValue

from stc_mlir import target as targets
from stc_mlir.errors import StcError
from stc_mlir.dialects.graph import GatherOp
from stc_mlir.passes.schedule_verify import VIEW_OPS, fewest_stripes, fmt, nbytes
from stc_mlir.progress import counted
from stc_mlir.schedules.default import divisors

from .cost import MOVEMENT_OPS, Estimator, spread_along_n, weight_bytes
from .graph import GraphView, is_weight, output_of

FILL = 0.92
"""Share of L1 a group may plan to use: the lowering adds halo margins and alignment."""
MAX_GROUP_OPS = 48
"""Longest group tried (ops); ResNet-50 stages and a BERT layer are shorter."""
STRIPE_FILL = 0.75
"""Share of a group's L1 budget a row stripe plans for: the rest is the lowering's halo
margins and staging, so that the stripe runs resident (intermediates in L1) instead of
streaming them through LLB."""
NARROW_RATIO = 1.25
"""A group whose estimate on one core is at most this many times its estimate on all the
cores is offered on one core (`Search.narrow`) ..."""
NARROW_CYCLES = 2_000
"""... and that is estimated at most this many cycles on all the cores (a DDR-bound group
estimated alike on one core and on eight still runs faster spread: DLRM's MLPs)."""
MAX_STRIPE_OPS = 6
"""Longest run cut into row stripes (a ResNet bottleneck block is 5 ops; at 512 x 512,
runs of 12 ops made stripes whose tiles the lowering could not fit next to their frames)."""


class AutoScheduleError(StcError):
    """A graph the automatic scheduler cannot schedule (an op too big for every split)."""


@dataclass(frozen=True)
class Segment:
    """A group: ops[start:stop] cut into `split` sub-groups whose core_bind has `parts` parts."""

    start: int
    stop: int
    split: int
    parts: int
    cycles: float = 0.0
    rows: bool = False
    """the split cuts row stripes (H), not the batch"""
    cores: int = 0
    """the cores of its one part when it runs on fewer than all of them (0: all): a group too
    small to spread runs on one core, beside the other cores' items (`Search.narrow`)"""

    def as_dict(self) -> dict:
        return asdict(self)


class Search:
    def __init__(self, view: GraphView, target: targets.Target, estimator: Estimator | None = None,
                 slices: bool = False, fill: float = FILL, group_cycles: float = 0.0, narrowing: bool = False):
        self.view, self.t = view, target
        self.fill = fill
        self.narrowing = narrowing
        """the dynamic programme puts groups too small to spread on one core each (`narrow`)
        and counts an eighth of their cycles: they run beside the other cores' items"""
        self.group_cycles = group_cycles
        """added once per group while the dynamic programme compares runs (not to the estimate):
        a bias towards fewer, longer groups (`GROUP_BIASES`)"""
        """share of L1 a sub-group may plan to use"""
        self.slices = slices
        """guess boundary places from the slice a sub-group hands over (else the whole value)"""
        self.est = estimator or Estimator(target)
        self.est.regime(view.ops)
        self.l1 = target.memory["l1"].size
        self.llb = target.memory["llb"].size
        self.batch = view.batch or 1
        self.evaluated = 0
        self._op_terms: dict[int, tuple] = {}
        self._inner: dict[tuple[int, int, int], float] = {}
        self._first_producer = [min([view.position.get(v.owner, -1) for v in acts] or [len(view)])  # type: ignore[arg-type]
                                for acts in view.acts]
        """per op: the position of its earliest activation producer (-1: a function argument)"""
        self._places: dict[tuple[SSAValue, int], str] = {}
        self._stripes: dict[tuple[int, int, float], Segment | None] = {}

    # --- candidates

    def _candidates(self, i: int, j: int, one_part: bool = False) -> Iterator[tuple[int, int]]:
        """(split, parts) pairs for ops[i:j] along the batch (row stripes: `stripes`)."""
        mixing = self.view.mixing(i, j) is not None
        for n in divisors(self.batch):
            if n > 1 and mixing:
                break
            samples = self.batch // n
            parts_max = 1 if mixing or one_part else math.gcd(samples, self.t.cores)
            for p in sorted({1, parts_max}, reverse=True):  # ties: whole samples per part (no halos)
                yield n, p

    def share(self, i: int, j: int, n: int, p: int) -> int:
        """L1 bytes per core of one sub-group of ops[i:j] split n ways with p parts."""
        samples = self.batch // n
        return -(-self.view.peak(i, j, samples, p) // (self.t.cores // p))

    def fits(self, i: int, j: int, n: int, p: int) -> bool:
        return self.share(i, j, n, p) <= self.l1 * self.fill

    # --- costs

    def guess_place(self, v: SSAValue, n: int) -> str:
        """Where a group boundary value will likely live when its group is cut n ways (the
        placement decides later): a slice small enough stays in L1 or LLB until its
        consumer, which the interleaved order runs soon after (with `slices`; else the whole
        value decides)."""
        key = (v, n)
        if key not in self._places:
            piece = nbytes(v.type) / n if self.view.carries(v) and self.slices else nbytes(v.type)
            if v in self.view.results or v.owner not in self.view.position:
                self._places[key] = "ddr"
            elif piece / self.t.cores <= self.l1 / 4:
                self._places[key] = "l1"
            else:
                self._places[key] = "llb" if piece <= self.llb / 2 else "ddr"
        return self._places[key]

    def _terms(self, k: int) -> tuple:
        """What the cost of op k needs, computed once: (skip, weights, compute, carried, inputs
        (value, bytes), result bytes, movement, spread along N)."""
        if k not in self._op_terms:
            op = self.view.ops[k]
            view = self.view
            weights = weight_bytes(op)
            carried = view.carries(output_of(op)) or any(view.carries(v) for v in op.operands)
            acts = [(v, nbytes(v.type)) for v in op.operands if not is_weight(v)]
            self._op_terms[k] = (isinstance(op, VIEW_OPS), weights, self.est.compute(op), carried, acts,
                                 nbytes(output_of(op).type), isinstance(op, MOVEMENT_OPS), spread_along_n(op))
        return self._op_terms[k]

    def cost(self, i: int, j: int, n: int, p: int, cores: int = 0) -> float:
        """Estimated cycles of ops[i:j] as n sub-groups on p parts of the cores (of `cores`
        cores, all by default)."""
        self.evaluated += 1
        total = 0.0
        first = self._first_producer
        for k in range(i, j):
            if first[k] >= i and k != j - 1:  # reads nothing from outside, not the output
                key = (k, n, p, cores)
                c = self._inner.get(key)
                if c is None:
                    c = self._inner[key] = self._op_cost(k, i, j, n, p, cores)
                total += c
            else:
                total += self._op_cost(k, i, j, n, p, cores)
        return (total + self.est.c.item(total)) * n

    def _op_cost(self, k: int, i: int, j: int, n: int, p: int, cores: int = 0) -> float:
        """One sub-group's cycles of op k inside the group ops[i:j]."""
        view, est = self.view, self.est
        skip, weights, compute, carried, acts, out_bytes, movement, spread = self._terms(k)
        if skip:
            return 0.0
        frac = 1 / n
        cores = cores or self.t.cores
        traffic = {"ddr": float(weights), "llb": 0.0, "l1": 0.0}
        for v, size in acts:
            at = view.position.get(v.owner)  # type: ignore[arg-type]
            if at is None or not i <= at < j:
                traffic[self.guess_place(v, n)] += size * frac
        if k == j - 1:
            traffic[self.guess_place(output_of(view.ops[k]), n)] += out_bytes * frac
        gather = isinstance(view.ops[k], GatherOp)
        if gather:
            traffic["ddr"] += out_bytes * frac
        noc = out_bytes * frac / cores if movement and not gather else 0.0
        imbalance = est.imbalance(view.ops[k], self.batch * frac, p, cores // p)
        return est.phase(compute * (frac if carried else 1), cores, imbalance, ddr=traffic["ddr"],
                         llb=traffic["llb"], noc=noc, weights=weights, spread=spread, parts=p)

    def narrow(self, seg: Segment) -> Segment:
        """`seg` on one core when its work is too small to spread: estimated on one core at
        most `NARROW_RATIO` times its cycles on all the cores (its phases are latency, not
        work: DLRM's 26 embedding lookups of a row or two), so independent small items run
        side by side on different cores (the barriers wait only for the cores involved);
        else `seg` unchanged."""
        if seg.rows or seg.split > 1 or seg.cores:
            return seg
        spread = self.cost(seg.start, seg.stop, 1, 1)
        if spread <= NARROW_CYCLES and self.cost(seg.start, seg.stop, 1, 1, cores=1) <= NARROW_RATIO * spread \
                and self.share(seg.start, seg.stop, 1, 1) * self.t.cores <= self.l1 * self.fill:
            return Segment(seg.start, seg.stop, 1, 1, seg.cycles, cores=1)
        return seg

    def best(self, i: int, j: int, one_part: bool = False, fewest: bool = False) -> Segment | None:
        """The cheapest fitting (split, parts) of ops[i:j], or None. `fewest`: the fewest
        sub-groups that fit (levels 1-2)."""
        found = None
        for n, p in self._candidates(i, j, one_part):
            if not self.fits(i, j, n, p):
                continue
            if fewest:
                return Segment(i, j, n, p, self.cost(i, j, n, p))
            c = self.cost(i, j, n, p)
            if found is None or c < found.cycles:
                found = Segment(i, j, n, p, c)
        return found

    def stripes(self, i: int, j: int, fill: float = STRIPE_FILL) -> Segment | None:
        """ops[i:j] cut into the fewest row stripes that fit `fill` of the group budget (all
        samples, all cores one part), or None: not one output, not row-local, or even one
        row per stripe too big."""
        key = (i, j, fill)
        if key in self._stripes:
            return self._stripes[key]
        self._stripes[key] = None
        ops = self.view.ops[i:j]
        if j - i > 1 and not self.view.single_output(i, j):
            return None
        n = fewest_stripes(ops, self.view.inputs(i, j), output_of(ops[-1]), self.view.batch,
                           self.l1 * self.fill * fill * self.t.cores)
        if n is None:
            return None
        weights = sum(self._terms(k)[1] for k in range(i, j))
        whole = self.cost(i, j, 1, 1)
        cycles = whole + (n - 1) * (self.est.c.item(whole / n) + weights / 64)  # weights re-read
        self._stripes[key] = Segment(i, j, n, 1, cycles, rows=True)
        return self._stripes[key]

    # --- the levels

    def singles(self) -> list[Segment]:
        """Levels 1-2: every op its own group, cut only as much as L1 needs, all cores one
        part; row stripes when even one sample does not fit."""
        out = []
        for i in counted(range(len(self.view)), "search: a group per op"):
            # (one op with its operands in DDR/LLB streams through L1 anyway: the fewest stripes)
            seg = self.best(i, i + 1, one_part=True, fewest=True) or self.stripes(i, i + 1, 1.0)
            if seg is None:
                raise self._too_big(i)
            out.append(seg)
        return out

    def search(self) -> list[Segment]:
        """Level 3: the dynamic programme over consecutive runs of ops."""
        return self._programme(0, len(self.view))

    def branches(self) -> list[Segment]:
        """Level 3's fork-join candidate: the graph cut where its chains fork and join, each
        run cut the fewest ways that fit (weights read once), as the seeds' manual BERT
        schedule groups a layer (Q, K, scores + softmax, V, context, feed-forward). A run
        ends after an op whose result has several users or whose one user is not the next
        op (the chain breaks), and before an op that joins two activations each computed
        for it alone (two branches meet: BERT's scores and context matmuls; a residual add
        reads a value other ops read too, so it stays in its chain). A run that cannot be
        one group (not one output, too big for any cut or stripes) is left to the dynamic
        programme."""
        view = self.view
        n = len(view)
        cuts = {0, n}
        for k, op in enumerate(view.ops):
            users = [view.position.get(use.operation) for r in op.results for use in r.uses]
            if len(users) != 1 or users[0] != k + 1:
                cuts.add(k + 1)
            computed = [v for v in view.acts[k] if v.owner in view.position and len(list(v.uses)) == 1]
            if len(computed) >= 2:
                cuts.add(k)
        bounds = sorted(cuts)
        out: list[Segment] = []
        for i, j in zip(bounds, bounds[1:]):
            seg = None
            if j - i <= MAX_GROUP_OPS and view.single_output(i, j):
                seg = self.best(i, j, fewest=True) or self.stripes(i, j)
            out += [seg] if seg is not None else self._programme(i, j)
        return out

    def _programme(self, lo: int, hi: int) -> list[Segment]:
        """The dynamic programme's groups of ops[lo:hi]."""
        bias = self.group_cycles
        best = [math.inf] * (hi + 1)
        best[lo] = 0.0
        choice: list[Segment | None] = [None] * (hi + 1)
        ends = range(lo + 1, hi + 1)
        for j in counted(ends, "search: the best groups ending at each op") if hi - lo == len(self.view) else ends:
            for i in range(j - 1, max(lo - 1, j - 1 - MAX_GROUP_OPS), -1):
                if best[i] == math.inf:
                    continue
                if j - i > 1:
                    # the smallest sub-group that could exist must fit, or longer runs will not
                    mixing = self.view.mixing(i, j) is not None
                    n_min = 1 if mixing else self.batch
                    if self.share(i, j, n_min, 1) > self.l1 * self.fill:
                        # not even one sample fits: row stripes, while the run stays row-local
                        seg = self.stripes(i, j) if j - i <= MAX_STRIPE_OPS else None
                        if seg is None:
                            break
                        if best[i] + seg.cycles + bias < best[j]:
                            best[j] = best[i] + seg.cycles + bias
                            choice[j] = seg
                        continue
                    if not self.view.single_output(i, j):
                        continue
                seg = self.best(i, j) or self.stripes(i, j)
                if seg is None:
                    continue
                cycles = seg.cycles
                if self.narrowing:
                    seg = self.narrow(seg)
                    cycles = seg.cycles / self.t.cores if seg.cores else cycles
                if best[i] + cycles + bias < best[j]:
                    best[j] = best[i] + cycles + bias
                    choice[j] = seg
            if best[j] == math.inf:
                raise self._too_big(j - 1)
        segments = []
        j = hi
        while j > lo:
            seg = choice[j]
            assert seg is not None
            segments.append(seg)
            j = seg.start
        return segments[::-1]

    def _too_big(self, i: int) -> AutoScheduleError:
        op = self.view.ops[i]
        share = self.share(i, i + 1, self.batch if self.view.mixing(i, i + 1) is None else 1, 1)
        return AutoScheduleError(
            f"{op.name} (op {i}) needs {fmt(share)} bytes of L1 per core even with one sample over "
            f"{self.t.cores} cores, more than the {fmt(self.l1)}-byte L1 data buffer, and it cannot be cut "
            f"into row stripes that fit (not an NCHW op computing each row from nearby rows, or one row "
            f"too big)"
        )

