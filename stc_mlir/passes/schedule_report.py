"""schedule-report: a table of every scheduled item, like Vela's per-layer report.

One row per item in execution order: graph ops inside, split (sub-group i of n), batch,
mem_scope, core_bind, the L1 bytes on its fullest core (its own share plus results of
earlier items resident in L1, see `schedule-verify`) and the LLB bytes live while it runs.
A value over the target's capacity is marked with `!`. The pass leaves the IR unchanged
and writes the report to stdout, or to the file named by its `file` option.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from stc_mlir import target as targets
from stc_mlir.passes.schedule_verify import Item, analyse, fmt, scheduled_functions

COLUMNS = ("#", "item", "ops", "split", "batch", "mem_scope", "core_bind", "L1 bytes/core", "LLB bytes")
RIGHT = {"#", "ops", "batch", "L1 bytes/core", "LLB bytes"}


def _peak(items: list[Item], key) -> tuple[int, Item | None]:
    best = max(items, key=key, default=None)
    return (key(best) if best is not None else 0), best


def report(f: func.FuncOp, target: targets.Target) -> str:
    """The report of one scheduled function."""
    l1, llb = target.memory["l1"].size, target.memory["llb"].size
    items = analyse(f)

    def flagged(n: int, capacity: int) -> str:
        return fmt(n) + (" !" if n > capacity else "")

    rows = [
        (str(it.position), it.label, str(it.graph_ops), it.split_text, str(it.batch),
         it.mem_scope.name if it.mem_scope is not None else "-", it.core_bind.text if it.core_bind is not None else "-",
         flagged(it.l1_peak[1], l1), flagged(it.llb, llb))
        for it in items
    ]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(COLUMNS)]

    def line(cells) -> str:
        return "  ".join(
            cell.rjust(w) if name in RIGHT else cell.ljust(w) for name, cell, w in zip(COLUMNS, cells, widths)
        ).rstrip()

    l1_peak, l1_item = _peak(items, lambda it: it.l1_peak[1])
    llb_peak, llb_item = _peak(items, lambda it: it.llb)
    out = [
        f"schedule report for @{f.sym_name.data} on {target.name}: {len(items)} items, "
        f"L1 data buffer {fmt(l1)} bytes per core, LLB {fmt(llb)} bytes",
        line(COLUMNS),
        *(line(r) for r in rows),
        f"peak L1: {fmt(l1_peak)} bytes per core ({100 * l1_peak / l1:.1f}%)"
        + (f" at {l1_item.label}" if l1_item is not None else ""),
        f"peak LLB: {fmt(llb_peak)} bytes ({100 * llb_peak / llb:.1f}%)"
        + (f" at {llb_item.label}" if llb_item is not None and llb_peak else ""),
    ]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class ScheduleReport(ModulePass):
    """Print the schedule report of every scheduled function."""

    name = "schedule-report"

    target: str = "stcp920"
    file: str = "-"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        t = targets.load(self.target)
        text = "".join(report(f, t) for f in scheduled_functions(op))
        if self.file == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            with open(self.file, "w") as out:
                out.write(text)
