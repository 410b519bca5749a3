"""schedule-auto: automatic graph scheduling, TensorTurbo's `graph_schedule_level`.

    stc-opt model.mlir -p 'schedule-auto{level=3 target=stcp920}'

Schedules every graph-level NPU function at `level` (0: the default schedule, 1: results in
LLB where they fit, 2: in L1 where they fit, 3: the search); the result is ordinary
schedule IR, verified. `script` writes the schedule made as a Python script using the manual
API (levels 1-3); `cache=false` skips the on-disk decision cache. The work is in
`stc_mlir.autoschedule` (docs/auto-schedule.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from stc_mlir import target as targets
from stc_mlir.errors import StcError


class ScheduleAutoError(StcError, PassFailedException):
    """Bad options, or a graph no level can schedule; the message says which and why."""


@dataclass(frozen=True)
class ScheduleAuto(ModulePass):
    name = "schedule-auto"

    level: int = 3
    target: str = "stcp920"
    cache: bool = True
    script: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from stc_mlir.autoschedule import AutoScheduleError, auto_schedule

        if isinstance(self.level, bool) or self.level not in (0, 1, 2, 3):
            raise ScheduleAutoError(f"schedule-auto: level must be 0, 1, 2 or 3, got {self.level}")
        try:
            t = targets.load(self.target)
        except targets.TargetError as e:
            raise ScheduleAutoError(f"schedule-auto: {e}") from None
        try:
            results = auto_schedule(op, self.level, t, use_cache=self.cache)
        except AutoScheduleError as e:
            raise ScheduleAutoError(f"schedule-auto: {e}") from None
        if self.script is not None:
            if self.level == 0:
                raise ScheduleAutoError("schedule-auto: script needs level 1-3 (level 0 is the default schedule)")
            with open(self.script, "w") as f:
                f.write(results[0].script(file=self.script))
