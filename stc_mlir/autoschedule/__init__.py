"""Automatic graph scheduling: TensorTurbo's `graph_schedule_level` 0-3 (docs/auto-schedule.md).

    result = auto_schedule(mod, level=3)          # schedules mod in place
    result.segments, result.search_seconds, result.cache_hit, result.estimate
    open("sched.py", "w").write(result.script())  # the same schedule with the manual API

Split the way TPU-MLIR splits its LayerGroup: `graph.py` (what the search knows of the
graph), `cost.py` (the estimator, figures from the target file, `calibrate.py` fits it to
the emulator), `search.py` (grouping by dynamic programming), `build.py` (order, core
binds and mem scopes, made with the manual API), `decide.py` (candidates lowered and, where
the estimator is in doubt, judged by the emulator against the level below), `cache.py`
(decisions on disk) and `emit.py` (the schedule as a Python script).

- level 0: the default schedule (every op its own item in DDR over all cores);
- level 1: one op per item, results in LLB wherever they fit for their lifetime, else DDR;
- level 2: one op per item, results in L1 wherever they fit, else LLB, else DDR;
- level 3: the search: groups of consecutive ops, split factors, core binds, interleaved
  order and mem scopes, ranked by the estimator.

Level 3 groups runs of ops after moving every op to just before its first user. No level
runs slower than the level below: where the estimator cannot rank them, the emulator does
(`decide.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from stc_mlir import target as targets
from stc_mlir.graph_schedule import GetNPUSubFunctions, IRModule
from stc_mlir.passes.schedule_verify import is_scheduled, verify_function

from . import cache
from .build import Built, build
from .cost import CALIBRATION, Calibration, Estimator
from .decide import Decider, UnsupportedGraph
from .emit import script
from .graph import GraphView
from .search import AutoScheduleError, Segment

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
            raise AutoScheduleError(f"level {self.level} kept the default schedule (its own was no faster, "
                                    "estimated or emulated): nothing to write as a script")
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
                decider = Decider(mod, function.name, view, t)
                found = decider.decide(level).decision
                if use_cache:  # the levels below decided on the way, for their own compiles
                    for below, choice in decider.decided().items():
                        cache.store(cache.key(f, t, below), *choice.decision)
            segments, style, fill, llb_fill, sunk = found
            if sunk:  # level 3's groups are runs of ops in this order
                sink_to_first_use(f)
            rewritten = before != list(f.body.block.ops)
            result.search_seconds = time.perf_counter() - start
            result.segments = segments
            if style == 0:  # the default schedule was no slower than this level's own
                result.kept_default = True
                default_schedule(mod, target=t)
            else:
                result.built = build(mod, f, segments, style, t, fill, llb_fill)
                result.built.one_result_ops, result.built.sunk = rewritten, sunk
            verify_function(f, t)
        result.estimate = Estimator(t).function(f).cycles
        out.append(result)
    return out


__all__ = ["CALIBRATION", "LEVELS", "AutoSchedule", "AutoScheduleError", "Calibration", "Estimator",
           "UnsupportedGraph", "auto_schedule", "check_level"]
