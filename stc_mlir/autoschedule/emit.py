"""Write a found schedule as a TensorTurbo-style Python script using the manual API.

The script has the shape of `stc_mlir.schedules.resnet50_schedule`: groups named by their
inputs and output (`ListOps` handles of the graph-level function), `GroupOps`,
`SplitGroups`, then one `ScheduleInfo` per item in execution order. Fed back to the compiler
(`stc-run --schedule sched.py:schedule`, `Model.compile(schedule=...)`) it gives the same
schedule IR; a user can edit it as a starting point.
"""

from __future__ import annotations

from .build import Built

_HEADER = '''"""{title}

Written by stc-mlir's automatic graph scheduler (graph_schedule_level {level}, target
{target}): {groups} groups, {items} items, estimated {cycles:,} cycles. Edit it as any
manual schedule and compile with `stc-run MODEL --schedule {file}:schedule`.
"""

from stc_mlir.graph_schedule import (
    GetNPUSubFunctions,
    Group,
    GroupOps,
    ListOps,
    NPUMemScope,
    Schedule,
    ScheduleInfo,
    SplitGroups,
    SplitRows,
)
from stc_mlir.schedules._common import check_batch


def schedule(mod, batch={batch}):
    func = GetNPUSubFunctions(mod["main"])[0]
    check_batch("schedule", func, batch)
    ops = ListOps(func)
'''


def script(built: Built, *, level: int, target: str, batch: int, cycles: int, title: str,
           file: str = "sched.py") -> str:
    lines = [_HEADER.format(title=title, level=level, target=target, groups=len(built.groups),
                            items=len(built.items), cycles=cycles, file=file, batch=batch)]
    if built.one_result_ops:  # the handles below name the rewritten graph
        lines[0] = lines[0].replace("from stc_mlir.schedules._common import check_batch",
                                    "from stc_mlir.schedules._common import check_batch\n"
                                    "from stc_mlir.schedules.default import fold_empty, one_result_ops"
                                    + (", sink_to_first_use" if built.sunk else ""))
        lines[0] = lines[0].replace("    ops = ListOps(func)\n", "    fold_empty(func.op)  # as the scheduler did: a group "
                                    "boundary is one value\n    one_result_ops(func.op)\n"
                                    + ("    sink_to_first_use(func.op)  # each op as late as it can be: its order\n"
                                       if built.sunk else "")
                                    + "    ops = ListOps(func)\n")
    lines.append("    groups = [")
    for grp, output, inputs in built.groups:
        lines.append(f'        Group([{", ".join(inputs)}], {output}, name="{grp.name}"),')
    lines.append("    ]")
    lines.append("    mod = GroupOps(groups)(mod)")
    if built.splits:
        lines.append("    mod = SplitGroups({")
        for k, n in built.splits.items():
            lines.append(f"        groups[{k}]: {n},")
        lines.append("    })(mod)")
    if built.stripes:
        lines.append("    mod = SplitRows({")
        for k, n in built.stripes.items():
            lines.append(f"        groups[{k}]: {n},")
        lines.append("    })(mod)")
    lines.append("")
    lines.append("    ops = ListOps(GetNPUSubFunctions(mod[\"main\"])[0])")
    lines.append("    return Schedule([")
    for handle, scope, bind in built.items:
        shown = [p[0] for p in bind] if all(len(p) == 1 for p in bind) else bind
        lines.append(f"        ScheduleInfo({handle}, NPUMemScope.{scope.name}, {shown}),")
    lines.append("    ])(mod)")
    return "\n".join(lines) + "\n"
