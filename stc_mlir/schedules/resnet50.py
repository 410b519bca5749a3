"""The seeds' ResNet-50 schedule (224 x 224, batch 16): the "inverted pyramid".

Four groups cut at the residual adds that close the downsampling blocks, where the feature
map halves: start .. layer2.0 (4 cores per image), layer2.1 .. layer3.0 (2 cores per image),
layer3.1 .. layer4.0 (1 core per image), layer4.1 .. end (2 images per core). They are split
8 / 4 / 2 / 1 ways along the batch so every sub-group fits the cores' L1, and interleaved so
that half of the results wait in LLB while the other half stay in L1, as in the seeds'
listing (same order, mem_scopes and core_binds). The seeds index Relay's `add` ops (15, 31,
55); ours are the residual adds 3, 7 and 13 (or the convs they were fused into).
"""

from __future__ import annotations

from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import (
    GetNPUSubFunctions,
    Group,
    GroupOps,
    ListOps,
    NPUMemScope,
    Schedule,
    ScheduleError,
    ScheduleInfo,
    SplitGroups,
)
from stc_mlir.schedules._common import check_batch

BLOCKS = 16  # bottlenecks: 3 + 4 + 6 + 3
GROUP_ENDS = (3, 7, 13)  # the blocks layer2.0, layer3.0 and layer4.0


def residual_block_ends(ops):
    """The op closing each bottleneck: the residual `add`, or the conv2d it was fused into."""
    adds = [op for op in ops["add"] if not any(isinstance(v.owner, g.ConstantOp) for v in op.operands)]
    ends = adds or [op for op in ops["conv2d"] if op.residual is not None]
    if len(ends) != BLOCKS:
        raise ScheduleError(f"resnet50_schedule: expected the {BLOCKS} residual blocks of ResNet-50, found {len(ends)}")
    return ends


def resnet50_schedule(mod, batch=16):
    """resnet50 schedule"""
    # Graph scheduling primitives
    func = GetNPUSubFunctions(mod["main"])[0]
    check_batch("resnet50_schedule", func, batch)
    ends = residual_block_ends(ListOps(func))
    # Four-stage partition of resnet-50 graph
    groups = [
        Group([func.params[0]], ends[GROUP_ENDS[0]]),
        Group([ends[GROUP_ENDS[0]]], ends[GROUP_ENDS[1]]),
        Group([ends[GROUP_ENDS[1]]], ends[GROUP_ENDS[2]]),
        Group([ends[GROUP_ENDS[2]]], func.results[0]),
    ]
    mod = GroupOps(groups)(mod)
    # Group split
    mod = SplitGroups(
        {
            groups[0]: batch // 2,
            groups[1]: batch // 4,
            groups[2]: batch // 8,
            groups[3]: batch // 16,
        }
    )(mod)

    # Schedule groups
    # Topological order of subgroups
    ops = ListOps(GetNPUSubFunctions(mod["main"])[0])
    graph_schedule = [
        ScheduleInfo(ops["split"][0], NPUMemScope.DDR, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(groups[0][0], NPUMemScope.LLB, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(groups[0][1], NPUMemScope.L1, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(ops["concatenate"][0], NPUMemScope.L1, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(groups[1][0], NPUMemScope.LLB, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(groups[0][2], NPUMemScope.LLB, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(groups[0][3], NPUMemScope.L1, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(ops["concatenate"][1], NPUMemScope.L1, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(groups[1][1], NPUMemScope.L1, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(ops["concatenate"][2], NPUMemScope.L1, [3, 7, 2, 6, 1, 5, 0, 4]),
        ScheduleInfo(groups[2][0], NPUMemScope.LLB, [3, 7, 2, 6, 1, 5, 0, 4]),
        ScheduleInfo(groups[0][4], NPUMemScope.LLB, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(groups[0][5], NPUMemScope.L1, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(ops["concatenate"][3], NPUMemScope.L1, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(groups[1][2], NPUMemScope.LLB, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(groups[0][6], NPUMemScope.LLB, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(groups[0][7], NPUMemScope.L1, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(ops["concatenate"][4], NPUMemScope.L1, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(groups[1][3], NPUMemScope.L1, [[1, 3], [5, 7], [0, 2], [4, 6]]),
        ScheduleInfo(ops["concatenate"][5], NPUMemScope.L1, [3, 7, 2, 6, 1, 5, 0, 4]),
        ScheduleInfo(groups[2][1], NPUMemScope.L1, [3, 7, 2, 6, 1, 5, 0, 4]),
        ScheduleInfo(ops["concatenate"][6], NPUMemScope.L1, [7, 6, 5, 4, 3, 2, 1, 0]),
        ScheduleInfo(groups[3][0], NPUMemScope.DDR, [7, 6, 5, 4, 3, 2, 1, 0]),
    ]
    mod = Schedule(graph_schedule)(mod)
    return mod
