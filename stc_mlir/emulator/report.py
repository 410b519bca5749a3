"""The emulator's report: cycles, utilisation, bytes per memory level, roofline, the
same per schedule item and per graph op (from the commands' origins), and a Chrome trace
(one process per core, one track per unit / DMA engine).

Per item / per op (`Report.items()`, `Report.ops()`; the `items` and `ops` of `as_dict`,
`write_csv`), in the style of Vela's per-layer CSV and TPU-MLIR's profile:

- `cycles`: the wall-clock cycles the row adds to the run: from the end of everything
  before it (in program order) to the end of its last command, so the rows sum to the
  run's cycles; `start`, `end`, `span` (end - start) and, per core, `busy` (cycles with at
  least one of its units running one of the row's commands) and `idle` (span - busy);
- `macs` and `mac_utilization` (macs over span x the cluster's MACs per cycle);
- bytes read + written in DDR, LLB, L1 and the weight buffer, `min_ddr_bytes` (the weights
  and model inputs / outputs the row touches, each byte once), and `noc_bytes` (DMAs
  between two cores' local memories);
- `peak_l1_bytes` (fullest core), `peak_wb_bytes`, `peak_llb_bytes`: the buffers live in
  the row's phases (the allocator's reservation: the phases a buffer's commands run in);
- `bound`: what the span is spent on: `compute` (the busiest core's matrix or vector
  unit), `DDR` or `LLB` (bytes over bandwidth), whichever needs the most cycles if that is
  at least `BOUND_SHARE` of the span; else `DMA` if a core's DMA engine is busy that long
  (latency, NoC, engine rate), else `sync` (waiting on semaphores and barriers).
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from stc_mlir.isa.program import DTYPES, Origin, Program
from stc_mlir.target import MEMORY_LEVELS, Target

UNITS = ("dma_in", "dma_out", "matrix", "vector", "sync")  # sync: npu.fence


class Slice(NamedTuple):
    """A span of time on one unit: a command (`index` >= 0) or a semaphore wait. (A named
    tuple: the emulator makes one per command and wait.)"""

    core: int
    unit: str
    index: int
    label: str
    start: float
    end: float
    wait: bool = False


BOUND_SHARE = 0.5
"""A row is bound by a resource if that resource alone needs at least this share of its span."""
TOP_ITEMS = 10
"""Items the summary table lists (by cycles)."""
UNTAGGED = Origin("(no origin)")
"""The row of commands without an origin (a hand-written program)."""


@dataclass
class CommandFigures:
    """What each command does, by core and index in the stream (filled before the run, so
    the emulator's hot path does no bookkeeping): its origin, MACs, bytes per memory level
    (read + written) and bytes over the NoC; and the phases each origin runs in and the
    memory reserved in each phase (for peaks and the trace's counter tracks)."""

    origins: list[Origin]
    origin: dict[int, np.ndarray]  # core -> origin index per command (len(origins): none)
    macs: dict[int, np.ndarray]
    level_bytes: dict[int, np.ndarray]  # core -> (commands, len(MEMORY_LEVELS))
    noc_bytes: dict[int, np.ndarray]
    phase: np.ndarray  # per origin row: its phase (0 when the program has none)
    occupancy: dict[tuple[str, int | None], np.ndarray]  # (space, core) -> bytes per phase
    program: Program  # waits and signals, for the trace's flow arrows

    @classmethod
    def of(cls, program: Program, tasks: Sequence[Sequence[Any]]) -> CommandFigures:
        """From the program and the emulator's prepared tasks (`simulator._Task`: core,
        index, macs, the bytes of each access, the DMA plan)."""
        origins = list(program.origins)
        level = {lvl: i for i, lvl in enumerate(MEMORY_LEVELS)}
        first, n = {}, 0  # each core's commands in one flat array
        for core, stream in program.cores.items():
            first[core], n = n, n + len(stream)
        origin = np.array([c.origin if c.origin >= 0 else len(origins)
                           for stream in program.cores.values() for c in stream], np.int64)
        macs = np.zeros(n, np.int64)
        noc = np.zeros(n, np.int64)
        cells: list[int] = []
        counts: list[int] = []
        for queue in tasks:
            for task in queue:
                if task.fence is not None:
                    continue
                at = first[task.core] + task.index
                if task.macs:
                    macs[at] = task.macs
                for access in task.reads + task.writes:
                    cells.append(at * len(MEMORY_LEVELS) + level[access[1][0]])
                    counts.append(access[4])
                if task.dma is not None and any(isinstance(r, tuple) for r, _ in task.dma.shared):
                    noc[at] = task.dma.nbytes  # over NoC links
        level_bytes = np.bincount(np.array(cells, np.int64), weights=np.array(counts, float),
                                  minlength=n * len(MEMORY_LEVELS)).astype(np.int64)
        level_bytes = level_bytes.reshape(n, len(MEMORY_LEVELS))
        phase = np.array([max(o.phase, 0) for o in origins] + [0], np.int64)

        def per_core(flat: np.ndarray) -> dict[int, np.ndarray]:
            return {core: flat[at:at + len(program.cores[core])] for core, at in first.items()}

        return cls(origins, per_core(origin), per_core(macs), per_core(level_bytes), per_core(noc),
                   phase, _occupancy(program, phase), program)

    @property
    def phases(self) -> int:
        return int(self.phase.max()) + 1


def _occupancy(program: Program, phase: np.ndarray) -> dict[tuple[str, int | None], np.ndarray]:
    """Bytes of the L1, weight buffer and LLB buffers live in each phase, per memory: a
    buffer is live from the first to the last phase of the commands using it (`Buffer.live`
    as the lowering gives it to npu-allocate, else found from the commands' origins), over
    the whole program when that is unknown."""
    phases = int(phase.max()) + 1
    local = [b for b in program.buffers.values() if b.space != "ddr"]
    span: dict[str, list[int]] = {}
    if any(b.live is None for b in local):
        for stream in program.cores.values():
            for cmd in stream:
                if not 0 <= cmd.origin < len(phase) - 1:
                    continue
                p = int(phase[cmd.origin])
                for t in cmd.tiles.values():
                    lo_hi = span.get(t.buffer)
                    if lo_hi is None:
                        span[t.buffer] = [p, p]
                    elif p < lo_hi[0]:
                        lo_hi[0] = p
                    elif p > lo_hi[1]:
                        lo_hi[1] = p
    deltas: dict[tuple[str, int | None], np.ndarray] = {}
    for b in local:
        lo, hi = b.live if b.live is not None else span.get(b.name, (0, phases - 1))
        delta = deltas.get(b.memory)
        if delta is None:
            delta = deltas[b.memory] = np.zeros(phases + 1, np.int64)
        delta[min(max(lo, 0), phases - 1)] += b.size
        delta[min(max(hi, 0), phases - 1) + 1] -= b.size
    return {key: np.cumsum(delta)[:-1] for key, delta in deltas.items()}


def _union(keys: np.ndarray, starts: np.ndarray, ends: np.ndarray, size: int) -> np.ndarray:
    """Per key (0 <= key < size): the length of the union of its [start, end) intervals."""
    total = np.zeros(size)
    order = np.lexsort((starts, keys))
    reach, current = -np.inf, -1
    for k, a, b in zip(keys[order].tolist(), starts[order].tolist(), ends[order].tolist()):
        if k != current:
            current, reach = k, -np.inf
        if b > reach:
            total[k] += b - max(a, reach)
            reach = b
    return total


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
    figures: CommandFigures | None = None  # per command: origin, MACs, bytes (set by the emulator)
    _layers: tuple[int, list[dict[str, Any]], list[dict[str, Any]]] | None = field(
        default=None, repr=False, compare=False)

    # --- per schedule item and per graph op

    def items(self) -> list[dict[str, Any]]:
        """One row per schedule item (a sub-group is an item), in program order (see the
        module doc for the fields); empty without command figures."""
        return self._rows()[0]

    def ops(self) -> list[dict[str, Any]]:
        """One row per origin: a graph op of an item in one phase (or the item's own work:
        split, concat, model outputs), in program order."""
        return self._rows()[1]

    def _rows(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if self._layers is None or self._layers[0] != len(self.timeline):
            items, ops = _layer_rows(self) if self.figures is not None else ([], [])
            self._layers = (len(self.timeline), items, ops)
        return self._layers[1], self._layers[2]

    def write_csv(self, path: str | os.PathLike[str]) -> None:
        """The per-item and per-op rows as CSV (`level` says which: each item, then its ops)."""
        cores = range(self.target.cores)
        columns = ["level", "item", "subgroup", "op", "phase", "start", "end", "span", "cycles",
                   "cycles_share", *CSV_FIGURES, *(f"core{c}_busy" for c in cores),
                   *(f"core{c}_idle" for c in cores)]
        ops_of: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in self.ops():
            ops_of.setdefault((row["item"], row["subgroup"]), []).append(row)
        with open(path, "w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow(columns)
            for item in self.items():
                for level, row in (("item", item), *(("op", r) for r in ops_of[(item["item"], item["subgroup"])])):
                    phase = row["phase"] if level == "op" else "-".join(map(str, sorted(set(row["phases"]))))
                    out.writerow([level, row["item"], row["subgroup"], row.get("op", ""), phase,
                                  *(_cell(row[k]) for k in ("start", "end", "span", "cycles", "cycles_share")),
                                  *(_cell(row[k]) for k in CSV_FIGURES),
                                  *(_cell(b) for b in row["core_busy"]), *(_cell(i) for i in row["core_idle"])])

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
            "items": self.items(),
            "ops": self.ops(),
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
        lines += self._top_items()
        for h in self.hazards:
            lines.append(f"  HAZARD {h['message']}")
        return "\n".join(lines)

    def _top_items(self) -> list[str]:
        """The items that take the most cycles (the per-item CSV has them all)."""
        items = self.items()
        if not items or self.figures is None or not self.figures.origins:
            return []  # a program without origins is one anonymous item
        top = sorted(items, key=lambda r: -r["cycles"])[:TOP_ITEMS]
        names = [r["item"] + (f" sub-group {r['subgroup']}" if r["subgroup"] else "") for r in top]
        width = min(max(len(n) for n in names + ["item"]), 48)
        lines = ["", f"  top {len(top)} of {len(items)} schedule items by cycles (all items and ops: "
                     "--report-csv, --report-json)",
                 _row(("item", width, "<"), ("cycles", 12), ("share", 6), ("MAC util", 8), ("DDR B", 13),
                      ("peak L1 B", 11), ("bound", 7, "<"))]
        for name, r in zip(names, top):
            if len(name) > width:
                name = name[:width - 3] + "..."
            lines.append(_row((name, width, "<"), (f"{r['cycles']:,.0f}", 12),
                              (f"{100 * r['cycles_share']:.1f}%", 6), (f"{100 * r['mac_utilization']:.1f}%", 8),
                              (f"{r['ddr_bytes']:,}", 13), (f"{r['peak_l1_bytes']:,}", 11), (r["bound"], 7, "<")))
        return lines

    __str__ = table

    # --- trace

    def trace_events(self) -> list[dict[str, Any]]:
        """Chrome trace events (Perfetto / chrome://tracing); times in microseconds.

        A process per core (a thread per unit), each slice's `args` naming its schedule
        item, sub-group, graph op, phase and core; a flow arrow from each semaphore signal
        to the wait that takes it (in arrival order: the emulator counts, it does not say
        which signal a wait took); counter tracks of the L1 and weight-buffer bytes of each
        core and of the cluster's LLB reserved in each phase (a "cluster" process)."""
        us = 1.0 / (self.target.clock_ghz * 1e3)
        F = self.figures
        events: list[dict[str, Any]] = []
        cores = sorted({s.core for s in self.timeline})
        for core in cores:
            events.append({"ph": "M", "name": "process_name", "pid": core, "tid": 0,
                           "args": {"name": f"core {core}"}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": core, "tid": 0,
                           "args": {"sort_index": core}})
            fenced = any(s.core == core and s.unit == "sync" for s in self.timeline)
            for i, unit in enumerate(UNITS):
                if unit != "sync" or fenced:
                    events.append({"ph": "M", "name": "thread_name", "pid": core, "tid": i,
                                   "args": {"name": unit}})
        labels = (F.origins + [UNTAGGED]) if F is not None else [UNTAGGED]
        flows = self._flow_events(F, us) if F is not None else {}
        for s in self.timeline:
            origin = labels[F.origin[s.core][s.index]] if F is not None and s.core in F.origin else UNTAGGED
            events.append({
                "ph": "X", "pid": s.core, "tid": UNITS.index(s.unit), "name": s.label,
                "cat": "wait" if s.wait else s.unit, "ts": s.start * us,
                "dur": (s.end - s.start) * us,
                "args": {"item": origin.item, "subgroup": origin.subgroup, "op": origin.op,
                         "phase": origin.phase, "core": s.core, "command": s.index,
                         "start_cycle": s.start, "end_cycle": s.end,
                         **({"text": self.describe(s.core, s.index)} if self.describe else {})},
            })
            if not s.wait:  # its arrows right after it: a zero-cycle fence binds them too
                events += flows.get((s.core, s.index), ())
        events.sort(key=lambda e: e.get("ts", -1.0))  # time order, stable: as a trace processor reads it
        if F is not None:
            events += self._counter_events(F, us)
        return events

    def _flow_events(self, F: CommandFigures, us: float) -> dict[tuple[int, int], list[dict[str, Any]]]:
        """`s`/`f` flow pairs by the (core, index) of the slice they bind to: a signal (from
        the signalling command) to the wait that took it (into the waiting command), matched
        per semaphore in the order the signals arrived and the waits were taken (initial
        counts first). Each sits in the middle of its slice (Perfetto binds a flow event to
        the slice enclosing it on its thread)."""
        program, t = F.program, self.target
        ran = {(s.core, s.index): s for s in self.timeline if not s.wait}
        arrivals: dict[str, list[tuple[float, Slice]]] = {}
        takes: dict[str, list[tuple[float, Slice]]] = {}
        for (core, index), s in ran.items():
            cmd = program.cores[core][index]
            for name in cmd.signals:
                home = program.semaphores[name].core
                arrivals.setdefault(name, []).append((s.end + t.hops(core, home) * t.hop_latency, s))
            for name in cmd.waits:
                takes.setdefault(name, []).append((s.start, s))
        out: dict[tuple[int, int], list[dict[str, Any]]] = {}
        flow = 0
        for name, taken in takes.items():
            sent = sorted(arrivals.get(name, []), key=lambda a: a[0])
            taken.sort(key=lambda a: a[0])
            for (_, dst), (_, src) in zip(taken[program.semaphores[name].init:], sent):
                for ph, s in (("s", src), ("f", dst)):
                    out.setdefault((s.core, s.index), []).append(
                        {"ph": ph, "pid": s.core, "tid": UNITS.index(s.unit), "ts": (s.start + s.end) / 2 * us,
                         "name": f"@{name}", "cat": "semaphore", "id": flow, **({"bp": "e"} if ph == "f" else {})})
                flow += 1
        return out

    def _counter_events(self, F: CommandFigures, us: float) -> list[dict[str, Any]]:
        """Bytes reserved per memory over time: each phase's buffers (see `_occupancy`)
        from the end of the phase before it (its last command, on any core) on."""
        ends = np.zeros(F.phases)
        for s in self.timeline:
            p = F.phase[F.origin[s.core][s.index]] if s.core in F.origin else 0
            if s.end > ends[p]:
                ends[p] = s.end
        starts = np.concatenate([[0.0], np.maximum.accumulate(ends)[:-1]])
        cluster = self.target.cores  # a process of its own for the cluster's LLB
        events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": cluster, "tid": 0, "args": {"name": "cluster"}},
            {"ph": "M", "name": "process_sort_index", "pid": cluster, "tid": 0, "args": {"sort_index": cluster}},
        ] if any(core is None for _, core in F.occupancy) else []
        names = {"l1": "L1", "wb": "weight buffer", "llb": "LLB"}  # tracks "L1 bytes", ...
        for (space, core), per_phase in sorted(F.occupancy.items(), key=lambda kv: (kv[0][1] or 0, kv[0][0])):
            pid = cluster if core is None else core
            last = None
            for p, value in enumerate(per_phase.tolist()):
                if value != last:
                    events.append({"ph": "C", "pid": pid, "name": names[space], "ts": starts[p] * us,
                                   "args": {"bytes": value}})
                    last = value
            events.append({"ph": "C", "pid": pid, "name": names[space], "ts": self.cycles * us,
                           "args": {"bytes": 0}})
        return events

    def write_trace(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": self.trace_events(), "displayTimeUnit": "ns"}, f)


# ----------------------------------------------------------------------------- per item / op

CSV_FIGURES = ("bound", "macs", "mac_utilization", "ddr_bytes", "min_ddr_bytes", "llb_bytes", "l1_bytes",
               "wb_bytes", "noc_bytes", "peak_l1_bytes", "peak_wb_bytes", "peak_llb_bytes", "matrix_busy",
               "vector_busy", "dma_busy", "sync_wait", "commands")
"""The per-row figures of `Report.write_csv` after the cycles (then busy and idle per core)."""


def _cell(value: Any) -> Any:
    return f"{value:.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else value


def _layer_rows(report: Report) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(items, ops) of `report` (see the module doc): slices attributed to origins through
    the command figures, summed with numpy by origin index."""
    F = report.figures
    assert F is not None
    t = report.target
    C, U = t.cores, len(UNITS)
    R = len(F.origins) + 1  # the last row: commands without an origin
    n = len(report.timeline)
    core = np.fromiter((s.core for s in report.timeline), np.int64, n)
    index = np.fromiter((s.index for s in report.timeline), np.int64, n)
    start = np.fromiter((s.start for s in report.timeline), float, n)
    end = np.fromiter((s.end for s in report.timeline), float, n)
    unit = np.fromiter((UNITS.index(s.unit) for s in report.timeline), np.int64, n)
    wait = np.fromiter((s.wait for s in report.timeline), bool, n)
    origin = np.full(n, R - 1, np.int64)
    macs = np.zeros(n, np.int64)
    level_bytes = np.zeros((n, len(MEMORY_LEVELS)), np.int64)
    noc = np.zeros(n, np.int64)
    for c in np.unique(core).tolist():
        m = core == c
        if c not in F.origin:
            continue
        at = index[m]
        origin[m] = F.origin[c][at]
        done = m & ~wait  # a command's own slice (its waits carry its index too)
        at = index[done]
        macs[done], level_bytes[done], noc[done] = F.macs[c][at], F.level_bytes[c][at], F.noc_bytes[c][at]
    busy = ~wait

    def per_row(keys: np.ndarray, size: int) -> dict[str, np.ndarray]:
        first = np.full(size, np.inf)
        last = np.full(size, -np.inf)
        np.minimum.at(first, keys, start)
        np.maximum.at(last, keys, end)
        dur = end - start
        units = np.bincount((keys * C + core) * U + unit, weights=np.where(busy, dur, 0.0),
                            minlength=size * C * U).reshape(size, C, U)
        return {
            "start": first, "end": last,
            "units": units,
            "wait": np.bincount(keys, weights=np.where(wait, dur, 0.0), minlength=size),
            "core_busy": _union(keys[busy] * C + core[busy], start[busy], end[busy], size * C).reshape(size, C),
            "macs": np.bincount(keys, weights=macs, minlength=size).astype(np.int64),
            "bytes": np.stack([np.bincount(keys, weights=level_bytes[:, i], minlength=size)
                               for i in range(len(MEMORY_LEVELS))], axis=1).astype(np.int64),
            "noc": np.bincount(keys, weights=noc, minlength=size).astype(np.int64),
            "commands": np.bincount(keys[busy], minlength=size),
        }

    # cycles each origin adds: from the end of everything before it to its own end
    ops = per_row(origin, R)
    ran = np.isfinite(ops["start"])
    cycles = np.zeros(R)
    frontier = 0.0
    for r in np.flatnonzero(ran).tolist():
        cycles[r] = max(ops["end"][r], frontier) - frontier
        frontier = max(frontier, ops["end"][r])
    ops["cycles"] = cycles
    peaks = _phase_peaks(F)  # (phases, 3): l1 (fullest core), wb, llb
    essential = _essential_ddr(F)  # per origin row: {buffer: bytes it must read or write at least}
    labels = F.origins + [UNTAGGED]

    # items: the origins of one (item, sub-group), in program order
    item_of: dict[tuple[str, str], int] = {}
    row_item = np.array([item_of.setdefault((o.item, o.subgroup), len(item_of)) for o in labels], np.int64)
    items = per_row(row_item[origin], len(item_of))
    items["cycles"] = np.bincount(row_item, weights=cycles, minlength=len(item_of))
    total = max(frontier, 1e-9)

    def row(figs: dict[str, np.ndarray], r: int, phases: list[int], minimum: int) -> dict[str, Any]:
        span = float(figs["end"][r] - figs["start"][r])
        units = figs["units"][r]
        nbytes = {lvl: int(figs["bytes"][r][i]) for i, lvl in enumerate(MEMORY_LEVELS)}
        core_busy = figs["core_busy"][r]
        peak = peaks[phases].max(axis=0) if phases else np.zeros(3, np.int64)
        bounds = {
            "compute": float(units[:, [UNITS.index("matrix"), UNITS.index("vector")]].max(initial=0.0)),
            "DDR": nbytes["ddr"] / (t.memory["ddr"].bandwidth or np.inf),
            "LLB": nbytes["llb"] / (t.memory["llb"].bandwidth or np.inf),
        }
        dma = float(units[:, [UNITS.index("dma_in"), UNITS.index("dma_out")]].max(initial=0.0))
        name = max(bounds, key=bounds.__getitem__)
        bound = (name if bounds[name] >= BOUND_SHARE * span else
                 "DMA" if dma >= BOUND_SHARE * span else "sync") if span > 0 else "-"
        macs_r = int(figs["macs"][r])
        return {
            "start": float(figs["start"][r]), "end": float(figs["end"][r]), "span": span,
            "cycles": float(figs["cycles"][r]), "cycles_share": float(figs["cycles"][r] / total),
            "core_busy": core_busy.tolist(), "core_idle": (span - core_busy).tolist(),
            "bound": bound,
            "macs": macs_r,
            "mac_utilization": macs_r / (span * C * t.macs_per_cycle) if span > 0 else 0.0,
            **{f"{lvl}_bytes": nbytes[lvl] for lvl in ("ddr", "llb", "l1", "wb")},
            "min_ddr_bytes": minimum,
            "noc_bytes": int(figs["noc"][r]),
            "peak_l1_bytes": int(peak[0]), "peak_wb_bytes": int(peak[1]), "peak_llb_bytes": int(peak[2]),
            "matrix_busy": float(units[:, UNITS.index("matrix")].sum()),
            "vector_busy": float(units[:, UNITS.index("vector")].sum()),
            "dma_busy": float(units[:, [UNITS.index("dma_in"), UNITS.index("dma_out")]].sum()),
            "sync_wait": float(figs["wait"][r]),
            "commands": int(figs["commands"][r]),
        }

    op_rows = []
    for r in np.flatnonzero(ran).tolist():
        o = labels[r]
        op_rows.append({"item": o.item, "subgroup": o.subgroup, "op": o.op, "phase": o.phase,
                         **row(ops, r, [int(F.phase[r])], sum(essential[r].values()))})
    item_rows = []
    for (name, subgroup), i in item_of.items():
        rows = np.flatnonzero(ran & (row_item == i)).tolist()
        if rows:
            phases = sorted({int(F.phase[r]) for r in rows})
            needed: dict[str, int] = {}
            for r in rows:
                for b, nbytes in essential[r].items():
                    needed[b] = max(needed.get(b, 0), nbytes)
            item_rows.append({"item": name, "subgroup": subgroup, "phases": phases,
                              **row(items, i, phases, sum(needed.values()))})
    return item_rows, op_rows


def _essential_ddr(F: CommandFigures) -> list[dict[str, int]]:
    """Per origin row: the bytes of weights and model inputs / outputs its commands touch
    (each byte once: the union of the tiles' byte ranges; of a table only gathered from,
    the rows gathered), the row's share of the run's `min_ddr_bytes`."""
    program = F.program
    io = {x.buffer: math.prod(x.shape) * DTYPES[x.dtype].itemsize for x in program.inputs + program.outputs}
    size = {b.name: len(b.init) for b in program.buffers.values() if b.init is not None}
    size.update(io)
    n = len(F.origins) + 1
    ranges: list[dict[str, list[tuple[int, int]]]] = [{} for _ in range(n)]
    gathered: list[dict[str, int]] = [{} for _ in range(n)]
    for stream in program.cores.values():
        for cmd in stream:
            r = cmd.origin if 0 <= cmd.origin < n - 1 else n - 1
            for slot, t in cmd.tiles.items():
                if t.buffer not in size:
                    continue
                if (cmd.op, slot) == ("gather", "data"):
                    out = cmd.tiles["output"]
                    gathered[r][t.buffer] = gathered[r].get(t.buffer, 0) + out.numel * out.itemsize
                else:
                    ranges[r].setdefault(t.buffer, []).append((t.offset, t.offset + t.span))
    rows = []
    for touched, picked in zip(ranges, gathered):
        row = {}
        for name, spans in touched.items():
            total, reach = 0, 0
            for lo, hi in sorted(spans):
                if hi > reach:
                    total += hi - max(lo, reach)
                    reach = hi
            row[name] = min(total, size[name])
        for name, nbytes in picked.items():
            row.setdefault(name, min(nbytes, size[name]))
        rows.append(row)
    return rows


def _phase_peaks(F: CommandFigures) -> np.ndarray:
    """(phases, 3): bytes reserved in each phase in L1 (the fullest core), WB (same), LLB."""
    out = np.zeros((F.phases, 3), np.int64)
    for (space, _), per_phase in F.occupancy.items():
        col = {"l1": 0, "wb": 1, "llb": 2}[space]
        np.maximum(out[:, col], per_phase, out=out[:, col])
    return out
