"""How levels 1-3 choose a schedule: candidates built on copies of the module, ranked by the
estimator, lowered, and judged by the emulator's cycle model where the estimator cannot be
trusted to rank them (docs/auto-schedule.md, "Never slower than the level below").

Each level N > 0 weighs its own choice against level N - 1's. Where the estimator is far
apart from the emulator, as it is on small, latency-bound graphs (DenseNet-121 32 x 32:
level 3's groups estimated 29% low), a level ranked by estimates alone could run slower
than the level below; so level N's choice is emulated (timing only) beside level N - 1's
whenever the two estimates are within `DOUBT` of each other or it is cheap to (an estimate
under `JUDGE_ALWAYS_CYCLES`), and the fewer cycles win. Otherwise, where a level is
estimated far ahead (ResNet-50 224 b16: level 3 19 M against level 2's 24 M), the
estimate stands and nothing more is lowered.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from stc_mlir import target as targets
from stc_mlir.errors import StcError
from stc_mlir.graph_schedule import IRModule
from stc_mlir.isa.program import DTYPES, Program
from stc_mlir.passes.schedule_verify import verify_function
from stc_mlir.progress import counted

from .build import build
from .cost import CALIBRATION, Calibration, Estimator
from .graph import GraphView
from .search import FILL, AutoScheduleError, Search, Segment

FALLBACK_FILLS = (FILL, 0.86, 0.8, 0.7)
"""Shares of L1 / LLB the placement may fill, tried in turn until the allocator succeeds."""
FILL_PAIRS = tuple((split, place) for split in FALLBACK_FILLS for place in FALLBACK_FILLS if place <= split)
"""(share of L1 a one-op group is cut to, share of L1 / LLB results fill) in the order tried
(levels 1-2): results placed with more margin before ops are cut more (ResNet-50 b16's
level 1 lowers with ops cut for 92% and results filling 86%; cut for 70% it re-read
weights 2-16 times and was slower than level 0)."""
LLB_FILLS = (0.5, 0.0)
"""Shares of LLB a level-3 candidate's results are placed in again when the allocator runs
out of LLB (the lowering stages streamed groups' intermediates in LLB: the placement does
not see that room)."""
RETRIES = 3
"""Placements tried again per level-3 candidate (each one lowers the whole model on a copy)."""
JUDGE_WITHIN = 0.05
"""A biased candidate is lowered and emulated next to the best-estimated one only when its
estimate is at most this much higher (the estimator's errors on the built-ins are within
about 10%, its ranking between similar schedules is what is in doubt)."""
DOUBT = 0.15
"""A level's choice is emulated beside the level below's when its estimate is not at least
this much lower: the estimator's error swings by up to ~20% between the levels' schedules
of one full-size model (ResNet-50 224 b16: level 0 -16.7%, level 3 +4.8%)."""
JUDGE_ALWAYS_CYCLES = 5_000_000
"""Below this estimate a level's choice is always emulated beside the level below's: such
programs emulate in about a second, and the estimator is furthest off on small graphs
(latency more than bandwidth: DenseNet-121 32 x 32's level-3 groups estimated 29% low; a
random 12 x 16 chain's level 2 estimated more than 15% under level 1 and emulated 7%
over it)."""
GROUP_BIASES = (0.1, 0.4)
"""Extra searches per boundary guess, each adding this share of the unbiased choice's mean
cycles per op to every group: the estimator charges a group boundary less than it costs
(ResNet-50 224 b16: the seeds' four stages, estimated 20.7 M cycles, emulate in 18.3 M; the
unbiased choice of 11 groups, estimated 20.8 M, in 20.0 M), so longer groups are offered too
and the emulator judges."""
BRANCH_FILL = 1.0
"""Share of L1 the fork-join candidate (`Search.branches`) is cut and placed for: its runs are
short chains, planned as the manual schedules plan them, to the verifier's whole L1 (BERT-base
b8: every result in L1, 23.92 M cycles; placed for 92% of L1, some go to LLB: 24.79 M); where
the allocator refuses, it is placed again for less (`_placed`)."""
BRANCH_WITHIN = 0.02
"""The fork-join candidate is judged beside a better-estimated one only within this much of it
(ResNet-50 224 b16: its 25 groups, estimated 4.4% above the four stages, would cost a
lowering and an emulation to lose)."""
POOL_OPS = 200
"""Graphs with at least this many ops run their searches in a process pool (where it pays)."""
POOL_COMMANDS = 5_000
"""Candidates with at least this many commands in all are emulated in a process pool."""


class UnsupportedGraph(AutoScheduleError):
    """No schedule of levels 1-3 takes the graph (the lowering refuses one of its op kinds, or
    its batch is beyond the levels' largest): searching further, or at another level, is pointless."""


@dataclass(eq=False)
class Choice:
    """A schedule a level may make: groups, the rules `build` placed them by (0 for the
    default schedule, 1-2 the one-op levels', 3 the search's) and the shares of L1 and LLB
    its results may fill; with its estimate, the copy of the module it was built on and,
    once lowered, the allocated program."""

    segments: list[Segment]
    style: int
    fill: float = FILL
    llb_fill: float = FILL
    estimate: float = math.inf
    copy: IRModule | None = None
    program: Program | None = None
    sunk: bool = False
    """the groups are runs of the ops in `sink_to_first_use` order (level 3's), not the graph's"""

    @property
    def decision(self) -> tuple[list[Segment], int, float, float, bool]:
        return self.segments, self.style, self.fill, self.llb_fill, self.sunk


class Decider:
    """The choices of every level for one function, each made at most once (level 3 asks
    for level 2's, which asks for level 1's, ...), and the emulated cycles of every program
    judged."""

    def __init__(self, mod: IRModule, name: str, view: GraphView, t: targets.Target):
        self.mod, self.name, self.view, self.t = mod, name, view, t
        self._sunk: IRModule | None = None
        self._moved = False
        """`sink_to_first_use` moved an op: the graph's order is another order to group in"""
        self.reasons: list[str] = []
        self._levels: dict[int, Choice] = {}
        self._singles: dict[float, list[Segment] | None] = {}
        self._first: dict[int, float] = {}
        self._cycles: dict[int, float] = {}  # id(program) -> emulated cycles

    @property
    def sunk(self) -> IRModule:
        """The module with every op moved to just before its first user: level 3 groups runs
        of ops in this order (BERT's V projection next to the matmul that uses it); levels
        1-2 keep the graph's order, which can be the better one for one-op items (XLNet
        32 x 32: level 2 4.26 M cycles in the graph's order, 4.42 M sunk)."""
        from stc_mlir.schedules.default import sink_to_first_use

        if self._sunk is None:
            self._sunk = IRModule(self.mod.module.clone())
            self._moved = sink_to_first_use(self._sunk[self.name].op)
        return self._sunk

    def decide(self, level: int) -> Choice:
        """Level `level`'s choice; raises AutoScheduleError when nothing lowers."""
        if level not in self._levels:
            choice = self._level0() if level == 0 else self._level3() if level == 3 else self._one_op(level)
            if choice is None:
                raise AutoScheduleError("no schedule found that the lowering takes: "
                                        + "; ".join(list(dict.fromkeys(self.reasons))[:3]))
            self._levels[level] = choice
        return self._levels[level]

    def decided(self) -> dict[int, Choice]:
        """The levels 1-3 decided so far (level N's choice needs level N - 1's where in doubt)."""
        return {level: choice for level, choice in self._levels.items() if level > 0}

    # --- candidates

    def trial(self, segments: list[Segment], style: int, fill: float, llb_fill: float | None = None,
              sunk: bool = False) -> Choice | None:
        """`segments` built by `style`'s rules on a copy of the module (with its ops sunk:
        `sunk`), estimated (None if `build` or the verifier refuses them: a guard, the search
        offers only the batch cuts the verifier takes, `GraphView.mixing`)."""
        copy = IRModule((self.sunk if sunk else self.mod).module.clone())
        try:
            build(copy, copy[self.name].op, segments, style, self.t, fill, llb_fill)
            verify_function(copy[self.name].op, self.t)
        except StcError as e:
            self.reasons.append(str(e))
            return None
        estimate = Estimator(self.t).function(copy[self.name].op).cycles
        return Choice(segments, style, fill, fill if llb_fill is None else llb_fill, estimate, copy, sunk=sunk)

    def lowers(self, choice: Choice) -> bool | str:
        """True (then `choice.program` is set), or why the lowering or the allocator refuses it."""
        if choice.program is not None:
            return True
        if choice.copy is None:
            return "not built"
        reason = _lowering_fails(choice.copy, self.name, self.t, keep := {})
        if reason is not None and "is not supported" in reason:  # an op kind: no schedule helps
            raise UnsupportedGraph(f"the lowering does not take the graph whatever its schedule: {reason}")
        if reason is not None:
            self.reasons.append(reason)
            return reason
        choice.program = keep["program"]
        return True

    def singles(self, fill: float) -> list[Segment] | None:
        if fill not in self._singles:
            try:
                self._singles[fill] = Search(self.view, self.t, fill=fill).singles()
            except AutoScheduleError as e:
                self.reasons.append(str(e))
                self._singles[fill] = None
        return self._singles[fill]

    def first_estimate(self, level: int) -> float:
        """The estimate of level `level`'s first try (nothing lowered): what a level above
        must beat by `DOUBT` to be taken without asking the emulator."""
        if level not in self._first:
            if level == 0:
                made = self._level0()
            else:
                ops = self.singles(FILL)
                made = self.trial(ops, level, FILL) if ops is not None else None
            self._first[level] = made.estimate if made is not None else math.inf
        return self._first[level]

    # --- the levels

    def _level0(self) -> Choice | None:
        from stc_mlir.schedules.default import default_schedule

        if 0 in self._levels:
            return self._levels[0]
        copy = IRModule(self.mod.module.clone())
        try:
            default_schedule(copy, target=self.t)
        except StcError as e:
            self.reasons.append(str(e))
            return None
        self._levels[0] = Choice([], 0, estimate=Estimator(self.t).function(copy[self.name].op).cycles, copy=copy)
        return self._levels[0]

    def _one_op(self, level: int) -> Choice | None:
        """Levels 1-2: one-op groups, cut as the first L1 fill needs, results filling less of
        LLB / L1 first; against the level below."""
        own = None
        for split_fill, place_fill in FILL_PAIRS:
            ops = self.singles(split_fill)
            made = self.trial(ops, level, place_fill) if ops is not None else None
            if made is not None and self.lowers(made) is True:
                own = made
                break
        return self._against_below(level, [own] if own is not None else [])

    def _level3(self) -> Choice | None:
        """The search, under each L1 fill in turn until a candidate lowers: its best-estimated
        unbiased and biased candidates, judged against each other and the level below."""
        # the emulator judges a candidate estimated within the estimator's doubt of the levels
        # below (`_against_below`), whatever the program's size: that doubt drops no candidate
        bar = min(self.first_estimate(0), self.first_estimate(1), self.first_estimate(2)) * (1 + DOUBT)
        view = GraphView(self.sunk[self.name].op)
        small = Estimator(self.t).regime(view.ops) is not CALIBRATION
        # runs of the sunk order, and of the graph's where sinking moved ops: BERT-base S512 b2's
        # scores need row stripes, so the probabilities cannot stay in L1 for the context matmul
        # when the V projection sits between them (sunk: 36.0 M cycles; graph order: 31.6 M)
        orders = [(view, True, "")] + ([(self.view, False, " (graph order)")] if self._moved else [])
        for fill in FALLBACK_FILLS:
            kinds_of, found = [], []
            for order, sunk, tag in orders:
                ours = _searches(order, self.t, fill)
                found += ours if sunk else []
                kinds_of += [(("biased" if biased else "search") + tag, segments, sunk) for biased, segments in ours]
                if small:  # the big programs' figures rank the runs otherwise: their choices too
                    kinds_of += [(("biased" if biased else "search") + " (big figures)" + tag, segments, sunk)
                                 for biased, segments in _searches(order, self.t, fill, CALIBRATION)
                                 if all(segments != other for _, other in ours)]
            made = [(self.trial(segments, 3, fill, sunk=sunk), kind) for kind, segments, sunk
                    in counted(kinds_of, f"search: estimate candidates (L1 fill {fill:.0%})")]
            if fill == FILL:  # the fork-join groups, cut and placed for all of L1 (the allocator judges)
                branches = _branches(view, self.t)
                if branches is not None and all(branches != segments for _, segments in found):
                    made.append((self.trial(branches, 3, BRANCH_FILL, sunk=True), "branches"))
            ranked = sorted(((c, kind) for c, kind in made if c is not None), key=lambda m: m[0].estimate)
            taken: list[Choice] = []
            kinds: set[str] = set()  # the best-estimated candidate of each kind that lowers
            for choice, kind in counted(ranked, "search: lower the best candidates"):
                if choice.estimate > bar or len(kinds) == len({kind for _, kind in made}) or (
                        taken and not small and choice.estimate > taken[0].estimate * (1 + JUDGE_WITHIN)):
                    break
                if kind in kinds or (kind == "branches" and taken and not small
                                     and choice.estimate > taken[0].estimate * (1 + BRANCH_WITHIN)):
                    continue
                if not choice.sunk and taken and not small:  # the graph's order only where estimated best:
                    continue  # each lowering of a big program costs seconds (ResNet-50 b16's search doubled)
                # the first candidate placed again until it lowers; the ones judged beside it as they are
                placed = self._placed(choice, bar, RETRIES if not taken else 0)
                if placed is not None:
                    kinds.add(kind)
                    taken.append(placed)
            if taken:
                return self._against_below(3, taken + self._narrowed(view, taken, fill, small))
            if ranked and ranked[0][0].estimate > bar:  # nothing to lower: less of L1 only costs more
                break
        return self._against_below(3, [])

    def _narrowed(self, view: GraphView, taken: list[Choice], fill: float, small: bool = False) -> list[Choice]:
        """Candidates with groups too small to spread on one core each (`Search.narrow`),
        where the programs are small enough that the emulator judges them: the taken ones
        with such groups narrowed, and the search's choice when it groups knowing that such
        groups run beside the other cores' items (`Search.narrowing`: DLRM's 26 embedding
        lookups, which the plain search folds into the MLPs' group to save group items);
        those that lower."""
        if not taken or taken[0].estimate >= JUDGE_ALWAYS_CYCLES:
            return []
        search = Search(view, self.t, fill=fill)  # (`view`: the sunk order's, as the narrowed groups')
        found = [[search.narrow(seg) for seg in choice.segments] for choice in taken if choice.sunk]
        for figures in (None, CALIBRATION) if small else (None,):  # as in `_level3`
            try:
                estimator = Estimator(self.t, figures) if figures is not None else None
                found.append(Search(view, self.t, estimator, fill=fill, narrowing=True).search())
            except AutoScheduleError:
                pass
        seen = [choice.segments for choice in taken]
        out = []
        for segments in found:
            if segments in seen or sum(bool(seg.cores) for seg in segments) < 2:  # none side by side
                continue
            seen.append(segments)
            made = self.trial(segments, 3, taken[0].fill, taken[0].llb_fill, sunk=True)
            if made is not None and self.lowers(made) is True:
                out.append(made)
        return out

    def _against_below(self, level: int, own: list[Choice]) -> Choice | None:
        """The best of this level's lowered candidates `own` (the estimator's best first) and
        level - 1's choice: by the estimates alone when this level's first candidate is big
        and `DOUBT` ahead of (or behind) the level below, else by the fewest emulated cycles;
        None when neither lowers."""
        big = bool(own) and own[0].estimate >= JUDGE_ALWAYS_CYCLES
        if big and own[0].estimate < (1 - DOUBT) * self.first_estimate(level - 1):
            return self.judge(own)
        try:
            below = self.decide(level - 1)
        except UnsupportedGraph:
            raise
        except AutoScheduleError:  # nothing below lowers: this level's own, if any
            return self.judge(own)
        if big and own[0].estimate > (1 + DOUBT) * below.estimate:
            return below
        return self.judge(own + [below])

    def _placed(self, choice: Choice, bar: float, retries: int) -> Choice | None:
        """A level-3 candidate as the search placed it, or (up to `retries` times), as long as
        the allocator names the memory it ran out of and the estimate stays under `bar`, placed
        again with more margin there (ResNet-50 224 b16: the DP's groups at 92% of L1 lower
        with results filling 86% of L1 and none in LLB, estimated 21.3 M cycles, where cutting
        the groups for 86% of L1 gave 22.4 M); None if it never lowers."""
        l1, llb = choice.fill, choice.llb_fill
        for attempt in range(retries + 1):
            reason = self.lowers(choice)
            if reason is True:
                return choice
            if attempt == retries:
                return None
            if "-byte llb" in reason:
                llb = next((f for f in LLB_FILLS if f < llb), None)
            elif "-byte l1 " in reason:
                l1 = next((f for f in FALLBACK_FILLS if f < l1), None)
            else:
                return None
            if l1 is None or llb is None:
                return None
            made = self.trial(choice.segments, 3, l1, llb, sunk=choice.sunk)
            if made is None or made.estimate > bar:
                return None
            choice = made
        return None

    # --- the emulator's verdict

    def judge(self, choices: list[Choice]) -> Choice | None:
        """The choice the emulator's cycle model runs in the fewest cycles (the first on a tie),
        among those that lower (level 0's default schedule can fail to); None if none does."""
        lowered = [c for c in choices if self.lowers(c) is True]
        if len(lowered) <= 1:
            return lowered[0] if lowered else None
        todo = [c.program for c in lowered if id(c.program) not in self._cycles]
        for program, cycles in zip(todo, _emulate(todo, self.t)):
            self._cycles[id(program)] = cycles
        return min(lowered, key=lambda c: self._cycles[id(c.program)])


def _lowering_fails(trial: IRModule, name: str, t: targets.Target, keep: dict | None = None) -> str | None:
    """Why the lowering or the allocator refuses the scheduled copy, or None (then the
    allocated program is `keep["program"]`)."""
    from stc_mlir.isa.check import check_program
    from stc_mlir.passes.lowering import lower
    from stc_mlir.passes.npu_allocate import allocate

    try:
        lowered = lower(trial.module, t, name)
        program = allocate(lowered.program, lowered.live, lowered.phase_items, t)
        check_program(program, t, require_offsets=True)  # a command the chip refuses rules it out too
    except Exception as e:  # noqa: BLE001 - any refusal (diagnostic or lowering bug) rules the candidate out
        return f"{type(e).__name__}: {e}"
    if keep is not None:
        keep["program"] = program
    return None


_JUDGED: tuple[list[Program], targets.Target] | None = None


def _emulate(programs: list[Program], t: targets.Target) -> list[float]:
    """The programs' emulated cycles (timing only, no hazard checks: the lowering's programs
    are checked where they are compiled), in a fork pool when they are big."""
    global _JUDGED
    if not programs:
        return []
    _JUDGED = (programs, t)
    try:
        commands = sum(len(stream) for program in programs for stream in program.cores.values())
        if (len(programs) > 1 and commands >= POOL_COMMANDS and _cores() > 1
                and "fork" in multiprocessing.get_all_start_methods()):
            return forked_map(_emulated, range(len(programs)), min(len(programs), _cores()))
        return [_emulated(k) for k in counted(range(len(programs)), "search: emulate the candidates")]
    finally:
        _JUDGED = None


def _emulated(k: int) -> float:
    """Cycles of the k-th judged program (in a worker: the programs inherited by fork);
    infinity if the emulator stops on it (nothing but a number crosses back from a worker:
    an exception that does not unpickle would hang the pool)."""
    from stc_mlir.emulator.simulator import run

    assert _JUDGED is not None
    programs, t = _JUDGED
    program = programs[k]
    inputs = {io.name: np.zeros(io.shape, DTYPES[io.dtype]) for io in program.inputs}
    try:
        return run(program, inputs, t, check_hazards=False, numerics=False)[1].cycles
    except Exception:  # noqa: BLE001 - a program the emulator refuses is never the fastest
        return math.inf


class WorkerLostWarning(UserWarning):
    """A forked search worker died (the out-of-memory killer, a crash): its work was redone
    in the searching process."""


_T = TypeVar("_T")
_R = TypeVar("_R")


def forked_map(fn: Callable[[_T], _R], items: Sequence[_T], workers: int) -> list[_R]:
    """`fn` over `items` in `workers` forked processes (inheriting the module-level state
    `fn` reads). A worker that dies breaks the pool at once rather than leaving it waiting
    for ever (multiprocessing.Pool's way): the items are then mapped here, one after the
    other, with a `WorkerLostWarning` (less memory than the parent and its forks together,
    which is what the out-of-memory killer usually objected to)."""
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(fn, items))
    except BrokenProcessPool as e:
        warnings.warn(f"a search worker process died ({e}); searching here instead, one item at a time",
                      WorkerLostWarning, stacklevel=2)
        return [fn(item) for item in items]


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_FORKED: tuple[GraphView, targets.Target, float, Calibration | None] | None = None


def _search(slices: bool) -> list[tuple[bool, list[Segment]]]:
    """One boundary guess's searches (in a worker: on the graph inherited by fork) as (biased,
    groups): unbiased, then with each of `GROUP_BIASES`; none if nothing fits."""
    assert _FORKED is not None
    view, t, fill, figures = _FORKED
    est = lambda: Estimator(t, figures) if figures is not None else None  # noqa: E731
    try:
        first = Search(view, t, est(), slices=slices, fill=fill).search()
    except AutoScheduleError:
        return []
    per_op = sum(seg.cycles for seg in first) / max(len(view), 1)
    return [(False, first), *((True, Search(view, t, est(), slices=slices, fill=fill,
                                            group_cycles=bias * per_op).search())
                              for bias in GROUP_BIASES)]


def _branches(view: GraphView, t: targets.Target) -> list[Segment] | None:
    """The fork-join candidate's groups (`Search.branches`), or None if an op fits no cut."""
    try:
        return Search(view, t, fill=BRANCH_FILL).branches()
    except AutoScheduleError:
        return None


def _searches(view: GraphView, t: targets.Target, fill: float,
              figures: Calibration | None = None) -> list[tuple[bool, list[Segment]]]:
    """The distinct choices of the searches under both boundary guesses (the whole value at
    a group boundary, or the slice a sub-group hands over): side by side in two forked
    processes when the graph is big and the machine has the cores, else one after the
    other. (Tuning a model zoo across machines would hand candidates to an existing engine
    such as Ray instead.) `figures`: the estimator's (default: those the graph's size picks)."""
    global _FORKED
    _FORKED = (view, t, fill, figures)
    try:
        if len(view) >= POOL_OPS and _cores() > 1 and "fork" in multiprocessing.get_all_start_methods():
            found = forked_map(_search, (False, True), 2)
        else:
            found = [_search(False), _search(True)]
        distinct: dict[tuple, tuple[bool, list[Segment]]] = {}
        for choices in found:
            for biased, segments in choices:
                distinct.setdefault(tuple(segments), (biased, segments))  # unbiased first
        return list(distinct.values())
    finally:
        _FORKED = None
