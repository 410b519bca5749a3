"""Pictures of an emulator run (matplotlib, written as PNG or SVG): `stc-run --plot DIR`.

    write_plots(report, "plots/")                 # -> [plots/timeline.png, ...]

From what the report holds today (the emulator's timeline of busy and waiting slices per
core and unit, totals per core and memory level):

    timeline      every core's units over time: commands, semaphore waits (a static Perfetto)
    utilisation   share of the cluster's matrix / vector / DMA units busy over time
    cores         per core: busy, waiting on semaphores, idle; per unit busy cycles
    summary       cycles against the compute and DDR rooflines, DDR bytes against the
                  minimum, peak memory per level against its capacity

Per schedule item (`ItemFigures`: cycles, MACs, DDR bytes, peak L1 of each item; stc-run
passes `items_of(report)`, the per-layer report's items) two more:

    items_roofline  each item's cycles against its own roofline (compute or DDR bound)
    items_ddr       DDR bytes moved per item, against its minimum

Memory occupancy over time is in the trace's counter tracks (docs/report.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stc_mlir.emulator.report import UNITS, Report
from stc_mlir.progress import steps

FORMATS = ("png", "svg")
UNIT_COLOURS = {"dma_in": "#4c78a8", "dma_out": "#72b7b2", "matrix": "#e45756", "vector": "#f58518",
                "sync": "#9d9d9d"}
WAIT_COLOUR = "#d9d9d9"
BINS = 200  # time bins of the utilisation curve


@dataclass(frozen=True)
class ItemFigures:
    """What one schedule item cost (from a per-item report)."""

    name: str  # "group 'g' sub-group 2"
    cycles: float
    macs: int
    ddr_bytes: int
    min_ddr_bytes: int = 0
    peak_l1_bytes: int = 0


def items_of(report: Report) -> list[ItemFigures]:
    """The per-layer report's schedule items (none for a program without origins)."""
    if report.figures is None or not report.figures.origins:
        return []
    return [ItemFigures(r["item"] + (f" sub-group {r['subgroup']}" if r["subgroup"] else ""), r["cycles"],
                        r["macs"], r["ddr_bytes"], r["min_ddr_bytes"], r["peak_l1_bytes"])
            for r in report.items()]


def write_plots(report: Report, directory: str | os.PathLike[str], *, fmt: str = "png",
                items: Sequence[ItemFigures] | None = None) -> list[Path]:
    """Write every plot the data allows into `directory` (created); the paths written."""
    if fmt not in FORMATS:
        raise ValueError(f"plot format must be one of {', '.join(FORMATS)}, got '{fmt}'")
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    from matplotlib import pyplot as plt

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    plots = [("timeline", timeline), ("utilisation", utilisation), ("cores", cores), ("summary", summary)]
    if items:
        plots += [("items_roofline", lambda r: items_roofline(r, items)), ("items_ddr", lambda r: items_ddr(items))]
    written = []
    with steps("plots", total=len(plots)) as advance:
        for name, draw in plots:
            fig = draw(report)
            path = out / f"{name}.{fmt}"
            fig.savefig(path, dpi=110, bbox_inches="tight")
            plt.close(fig)
            written.append(path)
            advance()
    return written


def _figure(width: float, height: float):
    from matplotlib import pyplot as plt

    return plt.subplots(figsize=(width, height))


def _eng(*axes) -> None:
    """Counts as 250k, 1.2M on the x axis of `axes` (cycles, bytes)."""
    from matplotlib.ticker import EngFormatter

    for ax in axes:
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))


# ----------------------------------------------------------------------------- the run


def _rows(report: Report) -> list[tuple[int, str]]:
    """(core, unit) pairs that did anything, core-major."""
    active = {(s.core, s.unit) for s in report.timeline}
    return [(c, u) for c in range(report.target.cores) for u in UNITS if (c, u) in active]


def timeline(report: Report):
    """Every core's units over time: busy slices in the unit's colour, waits in grey."""
    rows = _rows(report)
    fig, ax = _figure(12, max(2.5, 0.22 * len(rows) + 1))
    index = {row: i for i, row in enumerate(rows)}
    spans: dict[tuple[int, str, bool], list[tuple[float, float]]] = {}
    for s in report.timeline:
        spans.setdefault((s.core, s.unit, s.wait), []).append((s.start, s.end - s.start))
    for (core, unit, wait), xs in spans.items():
        colour = WAIT_COLOUR if wait else UNIT_COLOURS[unit]
        ax.broken_barh(xs, (index[(core, unit)] - 0.4, 0.8), facecolors=colour, linewidth=0)
    ax.set_yticks(range(len(rows)), [f"core {c} {u}" for c, u in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, max(report.cycles, 1))
    ax.set_xlabel("cycle")
    _eng(ax)
    ax.set_title(f"{report.program}: commands per core and unit (grey: waiting on a semaphore)")
    return fig


def busy_over_time(report: Report, unit: str, bins: int = BINS) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges, share of the cluster's `unit`s busy in each bin)."""
    edges = np.linspace(0, max(report.cycles, 1), bins + 1)
    spans = np.array([(s.start, s.end) for s in report.timeline if s.unit == unit and not s.wait], dtype=float)
    if not len(spans):
        return edges, np.zeros(bins)
    start, length = spans[:, 0], spans[:, 1] - spans[:, 0]
    # busy time up to each edge: sum over slices of clip(edge - start, 0, length)
    done = np.clip(edges[:, None] - start[None, :], 0, length[None, :]).sum(axis=1)
    return edges, np.diff(done) / (np.diff(edges) * report.target.cores)


def utilisation(report: Report):
    """Share of the cluster's units of each kind busy, over time."""
    fig, ax = _figure(12, 3.5)
    for unit in ("matrix", "vector", "dma_in", "dma_out"):
        edges, share = busy_over_time(report, unit)
        ax.stairs(100 * share, edges, label=unit, color=UNIT_COLOURS[unit], linewidth=1.2)
    ax.set_ylim(0, 100)
    ax.set_xlim(0, max(report.cycles, 1))
    ax.set_xlabel("cycle")
    ax.set_ylabel(f"% of {report.target.cores} cores busy")
    _eng(ax)
    ax.legend(loc="upper right", fontsize=8, ncols=4)
    ax.set_title(f"{report.program}: unit utilisation over time")
    return fig


def cores(report: Report):
    """Per core: busy / waiting / idle cycles, and each unit's busy cycles."""
    from matplotlib import pyplot as plt

    d = report.as_dict()
    n = len(d["cores"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.35 * n + 1.5))
    y = np.arange(n)
    busy = np.array([c["busy"] for c in d["cores"]])
    wait = np.array([c["units"]["sync"]["wait"] for c in d["cores"]])
    wait = np.minimum(wait, d["cycles"] - busy)
    idle = d["cycles"] - busy - wait
    left.barh(y, busy, color="#54a24b", label="busy")
    left.barh(y, wait, left=busy, color=WAIT_COLOUR, label="waiting (fence)")
    left.barh(y, idle, left=busy + wait, color="#f2f2f2", edgecolor="#bbbbbb", label="idle")
    left.set_yticks(y, [f"core {c['core']}" for c in d["cores"]])
    left.invert_yaxis()
    left.set_xlabel("cycles")
    left.legend(fontsize=8, loc="lower right")
    left.set_title("busy, waiting, idle")
    height = 0.8 / (len(UNITS) - 1)
    for i, unit in enumerate(u for u in UNITS if u != "sync"):
        right.barh(y - 0.4 + (i + 0.5) * height, [c["units"][unit]["busy"] for c in d["cores"]], height,
                   color=UNIT_COLOURS[unit], label=unit)
    right.set_yticks(y, [f"core {c['core']}" for c in d["cores"]])
    right.invert_yaxis()
    right.set_xlabel("busy cycles")
    right.legend(fontsize=8, loc="lower right")
    right.set_title("per unit")
    _eng(left, right)
    fig.suptitle(f"{report.program}: {d['cycles']:,} cycles")
    return fig


def summary(report: Report):
    """Cycles against the rooflines, DDR bytes against the minimum, peak memory against capacity."""
    from matplotlib import pyplot as plt

    d = report.as_dict()
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(13, 3.5))
    bars = [("compute\nroofline", d["compute_roofline_cycles"]), ("DDR\nroofline", d["ddr_roofline_cycles"]),
            ("emulated", d["cycles"])]
    a.bar([n for n, _ in bars], [v for _, v in bars], color=["#bab0ac", "#bab0ac", "#e45756"])
    a.set_ylabel("cycles")
    a.set_title(f"{d['roofline_ratio']:.2f}x the roofline")
    b.bar(["minimum", "moved"], [d["min_ddr_bytes"], d["ddr_bytes"]], color=["#bab0ac", "#4c78a8"])
    b.set_ylabel("DDR bytes")
    b.set_title(f"DDR traffic: {d['ddr_bytes'] / max(d['min_ddr_bytes'], 1):.2f}x the minimum")
    levels = [lvl for lvl in report.peak if lvl != "ddr"]
    shares = [100 * report.peak[lvl] / report.target.memory[lvl].size for lvl in levels]
    c.bar([f"{lvl}\n{report.peak[lvl]:,} B" for lvl in levels], shares, color="#72b7b2")
    c.set_ylim(0, max(100, *shares))
    c.axhline(100, color="#e45756", linewidth=1)
    c.set_ylabel("% of capacity")
    c.set_title("peak memory (l1, wb per core)")
    from matplotlib.ticker import EngFormatter

    for axis in (a, b):
        axis.yaxis.set_major_formatter(EngFormatter(sep=""))
    fig.suptitle(report.program)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- per item


def items_roofline(report: Report, items: Sequence[ItemFigures]):
    """Each item's cycles against its roofline: compute (MACs over the cluster's MAC rate)
    or DDR (its minimum bytes over DDR bandwidth), whichever is higher."""
    t = report.target
    ddr_bw = t.memory["ddr"].bandwidth or 1
    fig, ax = _figure(12, 0.3 * len(items) + 1.5)
    y = np.arange(len(items))
    compute = np.array([i.macs / (t.cores * t.macs_per_cycle) for i in items])
    ddr = np.array([i.min_ddr_bytes / ddr_bw for i in items])
    ax.barh(y, [i.cycles for i in items], color="#e45756", label="emulated cycles")
    ax.scatter(np.maximum(compute, ddr), y, marker="|", s=200, color="black",
               label="roofline (max of compute, DDR)", zorder=3)
    ax.set_yticks(y, [i.name for i in items], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("cycles")
    _eng(ax)
    ax.legend(fontsize=8)
    ax.set_title(f"{report.program}: cycles per schedule item against its roofline")
    return fig


def items_ddr(items: Sequence[ItemFigures]):
    """DDR bytes moved per item, against the item's minimum."""
    fig, ax = _figure(12, 0.3 * len(items) + 1.5)
    y = np.arange(len(items))
    ax.barh(y, [i.ddr_bytes for i in items], color="#4c78a8", label="moved")
    ax.scatter([i.min_ddr_bytes for i in items], y, marker="|", s=200, color="black", label="minimum", zorder=3)
    ax.set_yticks(y, [i.name for i in items], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("DDR bytes")
    _eng(ax)
    ax.legend(fontsize=8)
    ax.set_title("DDR traffic per schedule item")
    return fig
