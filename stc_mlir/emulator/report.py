"""The emulator's report: cycles, utilisation, bytes per memory level, roofline, and a
Chrome trace (one process per core, one track per unit / DMA engine)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stc_mlir.target import MEMORY_LEVELS, Target

UNITS = ("dma_in", "dma_out", "matrix", "vector", "sync")  # sync: npu.fence


@dataclass(frozen=True)
class Slice:
    """A span of time on one unit: a command (`index` >= 0) or a semaphore wait."""

    core: int
    unit: str
    index: int
    label: str
    start: float
    end: float
    wait: bool = False


def _row(*cells: tuple) -> str:
    """One table row: cells (value, width) right-aligned or (value, width, "<") left-aligned,
    two spaces apart however wide the values are."""
    return "  " + "  ".join(format(str(c[0]), (c[2] if len(c) > 2 else ">") + str(c[1]))
                            for c in cells).rstrip()


@dataclass
class Report:
    program: str
    target: Target
    cycles: int = 0
    compute_cycles: int = 0  # aligned matrix + vector cycles of all compute commands
    macs: int = 0
    min_ddr_bytes: int = 0
    bytes_read: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEMORY_LEVELS, 0))
    bytes_written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEMORY_LEVELS, 0))
    peak: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEMORY_LEVELS, 0))
    commands: int = 0
    timeline: list[Slice] = field(default_factory=list)
    hazards: list[dict[str, Any]] = field(default_factory=list)
    describe: Callable[[int, int], str] | None = None  # (core, index) -> command text

    # --- derived figures

    def unit_stats(self) -> dict[tuple[int, str], dict[str, float]]:
        """{(core, unit): {"busy", "wait", "commands"}} for every core and unit."""
        stats = {(c, u): {"busy": 0.0, "wait": 0.0, "commands": 0}
                 for c in range(self.target.cores) for u in UNITS}
        for s in self.timeline:
            entry = stats[(s.core, s.unit)]
            if s.wait:
                entry["wait"] += s.end - s.start
            else:
                entry["busy"] += s.end - s.start
                entry["commands"] += 1
        return stats

    def core_busy(self) -> dict[int, float]:
        """Per core, the cycles during which at least one of its units runs a command."""
        spans: dict[int, list[tuple[float, float]]] = {c: [] for c in range(self.target.cores)}
        for s in self.timeline:
            if not s.wait:
                spans[s.core].append((s.start, s.end))
        busy = {}
        for core, intervals in spans.items():
            total, reach = 0.0, float("-inf")
            for start, end in sorted(intervals):
                if end > reach:
                    total += end - max(start, reach)
                    reach = end
            busy[core] = total
        return busy

    @property
    def roofline_compute(self) -> float:
        return self.compute_cycles / self.target.cores

    @property
    def roofline_ddr(self) -> float:
        bw = self.target.memory["ddr"].bandwidth
        assert bw is not None
        return self.min_ddr_bytes / bw

    @property
    def roofline_cycles(self) -> int:
        return int(-(-max(self.roofline_compute, self.roofline_ddr) // 1))

    def as_dict(self) -> dict[str, Any]:
        t = self.target
        stats = self.unit_stats()
        busy = self.core_busy()
        capacity = t.cores * self.cycles

        def unit_total(unit: str) -> float:
            return sum(stats[(c, unit)]["busy"] for c in range(t.cores))

        matrix_busy = unit_total("matrix")
        cores = [{"core": c, "busy": busy[c], "idle": self.cycles - busy[c],
                  "units": {u: stats[(c, u)] for u in UNITS}} for c in range(t.cores)]
        return {
            "program": self.program,
            "target": t.name,
            "cycles": self.cycles,
            "time_us": self.cycles / (t.clock_ghz * 1e3),
            "commands": self.commands,
            "roofline_cycles": self.roofline_cycles,
            "roofline_ratio": self.cycles / self.roofline_cycles if self.roofline_cycles else 0.0,
            "compute_roofline_cycles": self.roofline_compute,
            "ddr_roofline_cycles": self.roofline_ddr,
            "ddr_bytes": self.bytes_read["ddr"] + self.bytes_written["ddr"],
            "min_ddr_bytes": self.min_ddr_bytes,
            "bytes_read": dict(self.bytes_read),
            "bytes_written": dict(self.bytes_written),
            **{f"peak_{lvl}_bytes": self.peak[lvl] for lvl in MEMORY_LEVELS},
            "macs": self.macs,
            "mac_utilization": self.macs / (capacity * t.macs_per_cycle) if capacity else 0.0,
            "matrix_lane_efficiency": self.macs / (matrix_busy * t.macs_per_cycle) if matrix_busy else 0.0,
            "matrix_utilization": matrix_busy / capacity if capacity else 0.0,
            "vector_utilization": unit_total("vector") / capacity if capacity else 0.0,
            "cores": cores,
            "hazards": list(self.hazards),
        }

    # --- text

    def table(self) -> str:
        """A readable summary, per memory level and per core and unit (Vela-style)."""
        d = self.as_dict()
        t = self.target
        lines = [
            f"npu emulator report: program '{self.program}' on {t.name} ({t.cores} cores, "
            f"{t.clock_ghz:g} GHz), {self.commands} commands",
            f"  cycles                {d['cycles']:>14,}   ({d['time_us']:.1f} us)",
            f"  roofline cycles       {d['roofline_cycles']:>14,}   (compute "
            f"{d['compute_roofline_cycles']:,.0f}, DDR {d['ddr_roofline_cycles']:,.0f}); "
            f"ratio {d['roofline_ratio']:.2f}x",
            f"  MAC utilisation       {100 * d['mac_utilization']:>13.1f}%   (matrix busy "
            f"{100 * d['matrix_utilization']:.1f}%, lane efficiency "
            f"{100 * d['matrix_lane_efficiency']:.1f}%)",
            f"  vector utilisation    {100 * d['vector_utilization']:>13.1f}%",
            f"  DDR bytes             {d['ddr_bytes']:>14,}   (minimum {d['min_ddr_bytes']:,})",
            "",
            _row(("memory", 6, "<"), ("read B", 15), ("written B", 15), ("peak B", 15),
                 ("capacity B", 15)),
        ]
        for lvl in MEMORY_LEVELS:
            lines.append(_row((lvl, 6, "<"), (f"{self.bytes_read[lvl]:,}", 15),
                              (f"{self.bytes_written[lvl]:,}", 15), (f"{self.peak[lvl]:,}", 15),
                              (f"{t.memory[lvl].size:,}", 15),
                              ("per core" if lvl in ("l1", "wb") else "", 0, "<")))
        # cells are always two spaces apart, so wide numbers never run together
        lines += ["", _row(("core", 4, "<"), ("unit", 7, "<"), ("cmds", 6), ("busy cyc", 14),
                           ("busy %", 7), ("wait cyc", 14), ("idle cyc", 14))]
        for core in d["cores"]:
            for unit, u in core["units"].items():
                if not u["commands"]:
                    continue
                pct = 100 * u["busy"] / self.cycles if self.cycles else 0.0
                lines.append(_row((core["core"], 4, "<"), (unit, 7, "<"), (u["commands"], 6),
                                  (f"{u['busy']:,.0f}", 14), (f"{pct:.1f}%", 7),
                                  (f"{u['wait']:,.0f}", 14)))
            if any(u["commands"] for u in core["units"].values()):
                pct = 100 * core["busy"] / max(self.cycles, 1)
                lines.append(_row((core["core"], 4, "<"), ("(core)", 7, "<"), ("", 6),
                                  (f"{core['busy']:,.0f}", 14), (f"{pct:.1f}%", 7), ("", 14),
                                  (f"{core['idle']:,.0f}", 14)))
        for h in self.hazards:
            lines.append(f"  HAZARD {h['message']}")
        return "\n".join(lines)

    __str__ = table

    # --- trace

    def trace_events(self) -> list[dict[str, Any]]:
        """Chrome trace events (Perfetto / chrome://tracing); times in microseconds."""
        us = 1.0 / (self.target.clock_ghz * 1e3)
        events: list[dict[str, Any]] = []
        for core in sorted({s.core for s in self.timeline}):
            events.append({"ph": "M", "name": "process_name", "pid": core, "tid": 0,
                           "args": {"name": f"core {core}"}})
            fenced = any(s.core == core and s.unit == "sync" for s in self.timeline)
            for i, unit in enumerate(UNITS):
                if unit != "sync" or fenced:
                    events.append({"ph": "M", "name": "thread_name", "pid": core, "tid": i,
                                   "args": {"name": unit}})
        for s in self.timeline:
            events.append({
                "ph": "X", "pid": s.core, "tid": UNITS.index(s.unit), "name": s.label,
                "cat": "wait" if s.wait else s.unit, "ts": s.start * us,
                "dur": (s.end - s.start) * us,
                "args": {"command": s.index, "start_cycle": s.start, "end_cycle": s.end,
                         **({"text": self.describe(s.core, s.index)} if self.describe else {})},
            })
        return events

    def write_trace(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": self.trace_events(), "displayTimeUnit": "ns"}, f)
