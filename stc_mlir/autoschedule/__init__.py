"""Automatic graph scheduling: TensorTurbo's `graph_schedule_level` 0-3 (docs/auto-schedule.md).

    result = auto_schedule(mod, level=3)          # schedules mod in place
    result.segments, result.search_seconds, result.cache_hit, result.estimate
    open("sched.py", "w").write(result.script())  # the same schedule with the manual API

Split the way TPU-MLIR splits its LayerGroup: `graph.py` (what the search knows of the
graph), `cost.py` (the estimator, figures from the target file, `calibrate.py` fits it to
the emulator), `search.py` (grouping by dynamic programming), `build.py` (order, core
binds and mem scopes, made with the manual API), `cache.py` (decisions on disk) and
`emit.py` (the schedule as a Python script).

- level 0: the default schedule (every op its own item in DDR over all cores);
- level 1: one op per item, results in LLB wherever they fit for their lifetime, else DDR;
- level 2: one op per item, results in L1 wherever they fit, else LLB, else DDR;
- level 3: the search: groups of consecutive ops, split factors, core binds, interleaved
  order and mem scopes, ranked by the estimator.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field

import numpy as np

from stc_mlir import target as targets
from stc_mlir.errors import StcError
from stc_mlir.graph_schedule import GetNPUSubFunctions, IRModule
from stc_mlir.isa.program import DTYPES, Program
from stc_mlir.passes.schedule_verify import is_scheduled, verify_function
from stc_mlir.progress import counted

from . import cache
from .build import Built, build
from .cost import CALIBRATION, Calibration, Estimator
from .emit import script
from .graph import GraphView
from .search import FILL, AutoScheduleError, Search, Segment

LEVELS = (0, 1, 2, 3)


@dataclass
class AutoSchedule:
    """What `auto_schedule` decided for one function."""

    level: int
    function: str
    target: str
    batch: int
    segments: list[Segment] = field(default_factory=list)
    built: Built | None = None
    search_seconds: float = 0.0
    cache_hit: bool = False
    estimate: int = 0
    """estimated cycles of the schedule made"""
    kept_default: bool = False
    """the level kept level 0's default schedule: its own was estimated no faster"""

    def script(self, file: str = "sched.py", title: str | None = None) -> str:
        if self.kept_default:
            raise AutoScheduleError(f"level {self.level} kept the default schedule (its own was estimated no "
                                    "faster): nothing to write as a script")
        if self.built is None:
            raise AutoScheduleError(f"level {self.level} makes no groups of its own: nothing to write as a script "
                                    "(level 0 is the default schedule)")
        return script(self.built, level=self.level, target=self.target, batch=self.batch, cycles=self.estimate,
                      title=title or f"Graph schedule of @{self.function}", file=file)


def check_level(level: object) -> int:
    if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
        raise AutoScheduleError(f"graph_schedule_level must be 0, 1, 2 or 3, got {level!r}")
    return level


MAX_BATCH = 1 << 16
"""The largest batch levels 1-3 take: core binds and sample holders are kept per sample."""


def auto_schedule(mod, level: int = 3, target: str | targets.Target = "stcp920", *,
                  use_cache: bool = True) -> list[AutoSchedule]:
    """Schedule every graph-level NPU function of `mod` (a ModuleOp or IRModule) at `level`,
    in place; returns what was decided per function. Raises AutoScheduleError (an op no
    schedule can fit) or ScheduleVerifyError."""
    from stc_mlir.schedules.default import default_schedule, fold_empty, one_result_ops, sink_to_first_use

    check_level(level)
    t = target if isinstance(target, targets.Target) else targets.load(target)
    mod = IRModule.of(mod)
    out = []
    for function in GetNPUSubFunctions(mod["main"]):
        f = function.op
        if is_scheduled(f):
            raise AutoScheduleError(f"@{function.name} is already scheduled: automatic scheduling takes a "
                                    "graph-level function")
        before = list(f.body.block.ops)
        if level > 0:  # what the default schedule does first (level 0 does it itself)
            fold_empty(f)
            one_result_ops(f)
        if level == 3:  # the search groups consecutive ops: each computed as late as it can be
            sink_to_first_use(f)
        rewritten = before != list(f.body.block.ops)
        view = GraphView(f)
        if level > 0 and (view.batch or 1) > MAX_BATCH:
            raise UnsupportedGraph(
                f"@{function.name}: a batch of {view.batch:,} is more than levels 1-3 schedule (at most "
                f"{MAX_BATCH:,}: they bind cores sample by sample); level 0 cuts a batch of any size")
        result = AutoSchedule(level, function.name, t.name, view.batch or 1)
        if level == 0:
            default_schedule(mod, target=t)
        elif view.ops:
            start = time.perf_counter()
            k = cache.key(f, t, level) if use_cache else None
            found = cache.load(k) if k is not None else None
            result.cache_hit = found is not None
            if found is None:
                found = _decide(mod, function.name, view, level, t)
                if k is not None:
                    cache.store(k, *found)
            segments, style, fill, llb_fill = found
            result.search_seconds = time.perf_counter() - start
            result.segments = segments
            if style == 0:  # the default schedule was estimated no slower than this level's own
                result.kept_default = True
                default_schedule(mod, target=t)
            else:
                result.built = build(mod, f, segments, style, t, fill, llb_fill)
                result.built.one_result_ops = rewritten
            verify_function(f, t)
        result.estimate = Estimator(t).function(f).cycles
        out.append(result)
    return out


def _decide(mod: IRModule, name: str, view: GraphView, level: int, t: targets.Target
            ) -> tuple[list[Segment], int, float, float]:
    """(groups, how to order and place them: the level whose rules `build` applies, 0 for the
    default schedule, and the shares of L1 and of LLB results may fill).

    Level 3 runs the search with two guesses of where group boundaries live (the whole value,
    or the slice a sub-group hands over), builds the groups on copies of the module and keeps
    the first, in the estimator's order, that the lowering takes (lowered and allocated on
    the copy: a footprint the allocator cannot honour is never compiled; when the allocator
    runs out of L1 or LLB, the same groups are placed again with more margin in that memory,
    `_retry_fills`); if none does, the search again with less of L1 and LLB filled. Levels 1-2 cut one-op groups as L1 needs
    and fill less of LLB (then of L1 too) until the lowering takes them.

    No level is estimated worse than the levels below it: a level-3 candidate must be
    estimated below every lower level's first try (one-op groups placed by level 1's and 2's
    rules, and level 0's default schedule); level 2 keeps level 1's placement where the
    estimator ranks it first; and a level whose best lowering schedule is estimated no
    better than level 0's default schedule keeps the default (style 0)."""
    from stc_mlir.schedules.default import default_schedule

    reasons: list[str] = []

    def trial(segments: list[Segment], style: int, fill: float, llb_fill: float | None = None
              ) -> tuple[float, IRModule] | None:
        copy = IRModule(mod.module.clone())
        try:
            build(copy, copy[name].op, segments, style, t, fill, llb_fill)
        except StcError as e:
            reasons.append(str(e))
            return None
        return Estimator(t).function(copy[name].op).cycles, copy

    lowered: dict[str, Program] = {}  # the last program that lowered (for `_judge`)

    def lowers(copy: IRModule) -> bool | str:
        """True, or why the lowering or the allocator refuses the copy."""
        reason = _lowering_fails(copy, name, t, lowered)
        if reason is not None and "is not supported" in reason:  # an op kind: no schedule helps
            raise UnsupportedGraph(f"the lowering does not take the graph whatever its schedule: {reason}")
        if reason is not None:
            reasons.append(reason)
            return reason
        return True

    level0 = IRModule(mod.module.clone())
    try:
        default_schedule(level0, target=t)
        bar0 = Estimator(t).function(level0[name].op).cycles
    except StcError as e:
        reasons.append(str(e))
        bar0 = float("inf")
    styles = (2, 1) if level >= 2 else (1,)
    singles_at: dict[float, list[Segment] | None] = {}

    def singles(fill: float) -> list[Segment] | None:
        if fill not in singles_at:
            try:
                singles_at[fill] = Search(view, t, fill=fill).singles()
            except AutoScheduleError as e:
                reasons.append(str(e))
                singles_at[fill] = None
        return singles_at[fill]

    if level == 3:
        first = singles(FILL)
        tried = [(m, style) for style in (2, 1) if first is not None and (m := trial(first, style, FILL)) is not None]
        bar = min([bar0, *(m[0] for m, _ in tried)])
        for fill in FALLBACK_FILLS:
            found = _searches(view, t, fill)
            made = [(trial(segments, 3, fill), segments, biased)
                    for biased, segments in counted(found, f"search: estimate candidates (L1 fill {fill:.0%})")]
            ranked = sorted((m for m in made if m[0] is not None), key=lambda m: m[0][0])
            taken: list[tuple[list[Segment], int, tuple[float, float], Program | None]] = []
            kinds: set[bool] = set()  # the best-estimated unbiased and biased candidates that lower
            best = 0.0
            for (cycles, copy), segments, biased in counted(ranked, "search: lower the best candidates"):
                if cycles >= bar or len(kinds) == 2 or (taken and cycles > best * (1 + JUDGE_WITHIN)):
                    break
                if biased in kinds:
                    continue
                # the first candidate placed again until it lowers; the one judged beside it as it is
                fills = _retry_fills(copy, segments, fill, bar, trial, lowers, RETRIES if not taken else 0)
                if fills is not None:
                    kinds.add(biased)
                    best = best or cycles
                    taken.append((segments, 3, fills, lowered.pop("program", None)))
            if taken:
                if len(taken) > 1 and tried:  # level 2's first one-op schedule too: a guard where the estimator is far off
                    (_, copy), style = min(tried, key=lambda m: m[0][0])
                    if lowers(copy) is True:
                        taken.append((first, style, (FILL, FILL), lowered.pop("program", None)))
                segments, style, fills, _ = taken[_judge([program for *_, program in taken], t)]
                return segments, style, *fills
    # one-op groups: cut as the first L1 fill needs, results filling less of LLB / L1 first
    for split_fill, place_fill in FILL_PAIRS:
        ops = singles(split_fill)
        if ops is None:
            continue
        made = [(trial(ops, style, place_fill), style) for style in styles]
        for (cycles, copy), style in sorted((m for m in made if m[0] is not None), key=lambda m: m[0][0]):
            if cycles >= bar0:
                return [], 0, FILL, FILL  # the default schedule is estimated no slower
            if lowers(copy) is True:
                return ops, style, place_fill, place_fill
    raise AutoScheduleError("no schedule found that the lowering takes: " + "; ".join(list(dict.fromkeys(reasons))[:3]))


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


def _retry_fills(copy: IRModule, segments: list[Segment], fill: float, bar: float, trial, lowers,
                 retries: int = 0) -> tuple[float, float] | None:
    """(L1 fill, LLB fill) with which the lowering takes a level-3 candidate's groups, or None:
    the groups as the search placed them, then (up to `retries` times), as long as the allocator names the memory it
    ran out of and the estimate stays under `bar`, placed again with more margin there (ResNet-50
    224 b16: the DP's groups at 92% of L1 lower with results filling 86% of L1 and none in
    LLB, estimated 21.3 M cycles, where cutting the groups for 86% of L1 gave 22.4 M)."""
    l1, llb = fill, fill
    for attempt in range(retries + 1):
        reason = lowers(copy)
        if reason is True:
            return l1, llb
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
        made = trial(segments, 3, l1, llb)
        if made is None or made[0] >= bar:
            return None
        copy = made[1]
    return None


class UnsupportedGraph(AutoScheduleError):
    """No schedule of levels 1-3 takes the graph (the lowering refuses one of its op kinds, or
    its batch is beyond `MAX_BATCH`): searching further, or at another level, is pointless."""


def _lowering_fails(trial: IRModule, name: str, t: targets.Target, keep: dict | None = None) -> str | None:
    """Why the lowering or the allocator refuses the scheduled copy, or None (then the
    allocated program is `keep["program"]`)."""
    from stc_mlir.passes.lowering import lower
    from stc_mlir.passes.npu_allocate import allocate

    try:
        lowered = lower(trial.module, t, name)
        program = allocate(lowered.program, lowered.live, lowered.phase_items, t)
    except Exception as e:  # noqa: BLE001 - any refusal (diagnostic or lowering bug) rules the candidate out
        return f"{type(e).__name__}: {e}"
    if keep is not None:
        keep["program"] = program
    return None


def _judge(programs: list[Program | None], t: targets.Target) -> int:
    """Which of the candidates' lowered programs the emulator's cycle model runs in the fewest
    cycles (timing only, no hazard checks: the lowering's programs are checked where they are
    compiled); the first, the estimator's best, on a tie or without programs."""
    global _JUDGED
    if len(programs) == 1 or any(program is None for program in programs):
        return 0
    _JUDGED = (programs, t)  # type: ignore[assignment]
    try:
        commands = sum(len(stream) for program in programs for stream in program.cores.values())  # type: ignore[union-attr]
        if commands >= POOL_COMMANDS and _cores() > 1 and "fork" in multiprocessing.get_all_start_methods():
            with multiprocessing.get_context("fork").Pool(min(len(programs), _cores())) as pool:
                cycles = pool.map(_emulated, range(len(programs)))
        else:
            cycles = [_emulated(k) for k in counted(range(len(programs)), "search: emulate the candidates")]
    finally:
        _JUDGED = None
    return min(range(len(programs)), key=lambda k: (cycles[k], k))


_JUDGED: tuple[list[Program], targets.Target] | None = None


def _emulated(k: int) -> int:
    """Cycles of the k-th judged program (in a worker: the programs inherited by fork)."""
    from stc_mlir.emulator.simulator import run

    assert _JUDGED is not None
    programs, t = _JUDGED
    program = programs[k]
    inputs = {io.name: np.zeros(io.shape, DTYPES[io.dtype]) for io in program.inputs}
    return run(program, inputs, t, check_hazards=False, numerics=False)[1].cycles


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


FALLBACK_FILLS = (FILL, 0.86, 0.8, 0.7)
"""Shares of L1 / LLB the placement may fill, tried in turn until the allocator succeeds."""
FILL_PAIRS = tuple((split, place) for split in FALLBACK_FILLS for place in FALLBACK_FILLS if place <= split)
"""(share of L1 a one-op group is cut to, share of L1 / LLB results fill) in the order tried
(levels 1-2): results placed with more margin before ops are cut more (ResNet-50 b16's
level 1 lowers with ops cut for 92% and results filling 86%; cut for 70% it re-read
weights 2-16 times and was slower than level 0)."""
POOL_OPS = 200
"""Graphs with at least this many ops run their searches in a process pool (where it pays)."""
POOL_COMMANDS = 5_000
"""Candidates with at least this many commands in all are emulated in a process pool."""
_FORKED: tuple[GraphView, targets.Target, float] | None = None


GROUP_BIASES = (0.1, 0.4)
"""Extra searches per boundary guess, each adding this share of the unbiased choice's mean
cycles per op to every group: the estimator charges a group boundary less than it costs
(ResNet-50 224 b16: the seeds' four stages, estimated 20.7 M cycles, emulate in 18.3 M; the
unbiased choice of 11 groups, estimated 20.8 M, in 20.0 M), so longer groups are offered too
and the emulator judges (`_judge`)."""


def _search(slices: bool) -> list[tuple[bool, list[Segment]]]:
    """One boundary guess's searches (in a worker: on the graph inherited by fork) as (biased,
    groups): unbiased, then with each of `GROUP_BIASES`; none if nothing fits."""
    assert _FORKED is not None
    view, t, fill = _FORKED
    try:
        first = Search(view, t, slices=slices, fill=fill).search()
    except AutoScheduleError:
        return []
    per_op = sum(seg.cycles for seg in first) / max(len(view), 1)
    return [(False, first), *((True, Search(view, t, slices=slices, fill=fill, group_cycles=bias * per_op).search())
                              for bias in GROUP_BIASES)]


def _searches(view: GraphView, t: targets.Target, fill: float) -> list[tuple[bool, list[Segment]]]:
    """The distinct choices of the searches under both boundary guesses: side by side in two
    forked processes when the graph is big and the machine has the cores, else one after the
    other. (Tuning a model zoo across machines would hand candidates to an existing engine
    such as Ray instead.)"""
    global _FORKED
    _FORKED = (view, t, fill)
    try:
        if len(view) >= POOL_OPS and _cores() > 1 and "fork" in multiprocessing.get_all_start_methods():
            with multiprocessing.get_context("fork").Pool(2) as pool:
                found = pool.map(_search, (False, True))
        else:
            found = [_search(False), _search(True)]
        distinct: dict[tuple, tuple[bool, list[Segment]]] = {}
        for choices in found:
            for biased, segments in choices:
                distinct.setdefault(tuple(segments), (biased, segments))  # unbiased first
        return list(distinct.values())
    finally:
        _FORKED = None


__all__ = ["CALIBRATION", "LEVELS", "AutoSchedule", "AutoScheduleError", "Calibration", "Estimator",
           "UnsupportedGraph", "auto_schedule", "check_level"]
