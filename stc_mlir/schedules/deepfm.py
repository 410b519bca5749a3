"""The seeds' DeepFM schedule: the whole network one group, batch 320 x 8, one core per
320 samples, everything in L1 and the result back to DDR."""

from __future__ import annotations

from stc_mlir.graph_schedule import (
    GetNPUSubFunctions,
    Group,
    GroupOps,
    NPUMemScope,
    Schedule,
    ScheduleInfo,
)
from stc_mlir.schedules._common import check_batch


def deepfm_schedule(mod, batch: int = 320 * 8):
    func = GetNPUSubFunctions(mod["main"])[0]
    check_batch("deepfm_schedule", func, batch)
    (output,) = func.results
    group = Group(func.params, output, name="deepfm")
    mod = GroupOps([group])(mod)
    return Schedule([ScheduleInfo(group, NPUMemScope.DDR, list(range(8)))])(mod)
