"""The per-layer report: the emulator's figures per schedule item and per graph op (from
the commands' origins), consistent with the run's totals, in the summary table, the JSON
report and `stc-run --report-csv`, for hand-made schedules, built-in models on the default
schedule and automatic ones."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from stc_mlir import models
from stc_mlir.dialects import graph as g
from stc_mlir.dialects.npu import program_from_module
from stc_mlir.emulator import examples, run
from stc_mlir.emulator.report import BOUND_SHARE, CSV_FIGURES
from stc_mlir.frontend import import_onnx
from stc_mlir.isa.program import OPS
from stc_mlir.passes.lowering.conv import space_to_depth
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate
from stc_mlir.pipeline import Pipeline
from stc_mlir.target import MEMORY_LEVELS
from stc_mlir.tools import stc_run

from lowering_helpers import f16
from test_report_origins import split_module

BOUNDS = {"compute", "DDR", "LLB", "DMA", "sync"}


def conv_taps(op: g.Conv2DOp) -> int:
    """Multiply-accumulates per output element of a conv as the chip does it: a stem the
    lowering computes in space-to-depth form (7 x 7 / 2 on 3 channels: 4 x 4 on 12) does
    its zero taps too (147 -> 192 on ResNet-50's stem)."""
    p = op.props()
    x, w = g.shape_of(op.operands[0].type), g.shape_of(op.weight.type)
    form = space_to_depth(x, w, g.shape_of(op.output.type)[2:], p["strides"], p["pads"],
                          p["dilations"], p["group"])
    if form is None:
        return math.prod(w[1:])
    return w[1] * p["strides"][0] ** 2 * form[0][1] * form[1][1]


def graph_macs(module) -> int:
    """Multiply-accumulates of the graph's convolutions and matrix products, from the
    imported model's shapes (before any scheduling or lowering), as the chip does them."""
    total = 0
    for op in module.walk():
        if isinstance(op, g.Conv2DOp):
            total += math.prod(g.shape_of(op.output.type)) * conv_taps(op)
        elif isinstance(op, g.MatmulOp):
            total += math.prod(g.shape_of(op.output.type)) * g.shape_of(op.lhs.type)[-1]
        elif isinstance(op, g.GemmOp):
            a = g.shape_of(op.a.type)
            k = a[0] if op.trans_a is not None and op.trans_a.value.data else a[-1]
            total += math.prod(g.shape_of(op.output.type)) * k
    return total


def check_consistent(report) -> None:
    """Rows sum to the run: cycles, MACs, bytes per level, commands; figures in range."""
    items, ops = report.items(), report.ops()
    assert items and ops
    for rows in (items, ops):
        assert sum(r["cycles"] for r in rows) == pytest.approx(report.cycles, abs=1.0)
        assert sum(r["macs"] for r in rows) == report.macs
        for lvl in MEMORY_LEVELS:
            moved = report.bytes_read[lvl] + report.bytes_written[lvl]
            assert sum(r[f"{lvl}_bytes"] for r in rows) == moved
        assert sum(r["commands"] for r in rows) == report.commands
        assert sum(r["cycles_share"] for r in rows) == pytest.approx(1.0)
    for r in items + ops:
        assert r["start"] <= r["end"] <= report.cycles and r["cycles"] <= r["end"] + 1e-6
        assert len(r["core_busy"]) == report.target.cores
        assert all(0 <= b <= r["span"] + 1e-6 for b in r["core_busy"])
        assert all(abs(b + i - r["span"]) < 1e-6 for b, i in zip(r["core_busy"], r["core_idle"]))
        assert 0 <= r["mac_utilization"] <= 1
        assert r["bound"] in BOUNDS
        assert r["peak_l1_bytes"] <= report.peak["l1"] and r["peak_llb_bytes"] <= report.peak["llb"]
    busiest = max(items, key=lambda r: r["peak_l1_bytes"])
    assert busiest["peak_l1_bytes"] > 0
    # the items finish one after the other (barriers between them); they may start out of order,
    # since an item's first weight loads are prefetched under the previous item's compute
    ends = [r["end"] for r in items]
    assert ends == sorted(ends)


@pytest.fixture(scope="module")
def split_run():
    lowered = lower(split_module())
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    _, report = run(program, {"x": f16(4, 8, 16, 16)})
    return program, report


def test_items_and_ops_of_a_split_schedule(split_run):
    program, report = split_run
    check_consistent(report)
    items = {(r["item"], r["subgroup"]): r for r in report.items()}
    sub0, sub1 = items[("group 'group_0'", "0")], items[("group 'group_0'", "1")]
    # conv 3x3, 8 -> 8 channels, 16x16, two samples per sub-group
    assert sub0["macs"] == sub1["macs"] == 2 * 8 * 16 * 16 * 8 * 9
    # sub-group 0 runs on cores 0-3 (result in LLB), sub-group 1 on cores 4-7 (in L1)
    assert all(b > 0 for b in sub0["core_busy"][:4]) and not any(sub0["core_busy"][4:])
    assert all(b > 0 for b in sub1["core_busy"][4:]) and not any(sub1["core_busy"][:4])
    # sub-group 0's result stays in LLB until the concat reads it, through sub-group 1
    assert sub0["peak_llb_bytes"] == sub1["peak_llb_bytes"] == 2 * 8 * 16 * 16 * 2
    assert sub1["peak_l1_bytes"] >= 8 * 16 * 16 * 2  # its result: a quarter of 2 samples per core
    # each sub-group must read the conv's weights and bias and its 2 samples of the input
    # once; the concat writes the output (4 samples)
    weights, samples = 8 * 8 * 9 * 2 + 8 * 2, 2 * 8 * 16 * 16 * 2
    assert sub0["min_ddr_bytes"] == sub1["min_ddr_bytes"] == weights + samples
    assert sub0["ddr_bytes"] >= sub0["min_ddr_bytes"]
    assert items[("concat 'concat_0'", "")]["min_ddr_bytes"] == 2 * samples
    ops = [r for r in report.ops() if r["subgroup"] == "0"]
    assert [r["op"].split(" ")[0] for r in ops] == ["graph.relu", "graph.conv2d"]
    assert ops[0]["macs"] == 0 and ops[0]["vector_busy"] > 0 and ops[1]["matrix_busy"] > 0
    assert ops[0]["phase"] < ops[1]["phase"]


def test_bound_follows_the_numbers(split_run):
    _, report = split_run
    t = report.target
    for r in report.ops():
        if r["bound"] == "DDR":
            assert r["ddr_bytes"] / t.memory["ddr"].bandwidth >= BOUND_SHARE * r["span"]
        if r["bound"] == "sync":
            assert r["ddr_bytes"] / t.memory["ddr"].bandwidth < BOUND_SHARE * r["span"]


@pytest.mark.parametrize("name, level", [("resnet50", 0), ("bert-base", 0), ("mobilenetv2", 3)])
def test_built_in_models_sum_to_the_run_and_to_the_models_macs(small_model, name, level, tmp_path, monkeypatch):
    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    proto = small_model(name)
    imported = import_onnx(proto)
    macs = graph_macs(imported)
    program = program_from_module(Pipeline(None, level=level).run(imported))
    _, report = run(program, models.example_inputs(name, proto), numerics=False)
    check_consistent(report)
    assert report.macs == macs > 0
    # every weight, input and output is some item's minimum (and none is counted twice here)
    assert sum(r["min_ddr_bytes"] for r in report.items()) >= report.min_ddr_bytes
    tagged = {(o.item, o.subgroup) for o in program.origins}
    assert {(r["item"], r["subgroup"]) for r in report.items()} == tagged


def test_json_and_csv_from_stc_run(tmp_path, capsys):
    report_json, report_csv = tmp_path / "r.json", tmp_path / "r.csv"
    assert stc_run.main(["resnet50", "--batch", "1", "--option", "image_size=32", "--timing-only", "-q", "--level", "0",
                         "--report-json", str(report_json), "--report-csv", str(report_csv)]) == 0
    out = capsys.readouterr().out
    assert "schedule items by cycles" in out
    d = json.loads(report_json.read_text())
    assert d["items"] and d["ops"] and sum(r["macs"] for r in d["items"]) == d["macs"]
    with open(report_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:10] == ["level", "item", "subgroup", "op", "phase", "start", "end", "span",
                                  "cycles", "cycles_share"]
    assert set(CSV_FIGURES) <= set(rows[0]) and {"core0_busy", "core7_idle"} <= set(rows[0])
    items = [r for r in rows if r["level"] == "item"]
    ops = [r for r in rows if r["level"] == "op"]
    assert len(items) == len(d["items"]) and len(ops) == len(d["ops"])
    assert rows[0]["level"] == "item" and rows[1]["level"] == "op" and rows[1]["item"] == rows[0]["item"]
    assert sum(int(r["macs"]) for r in ops) == d["macs"]
    assert sum(float(r["cycles"]) for r in items) == pytest.approx(d["cycles"], abs=1.0)
    # the table lists the items that take most cycles, largest first
    top = [line.split("  ")[1] for line in out.split("schedule items by cycles")[1].splitlines()[2:5]]
    biggest = sorted(d["items"], key=lambda r: -r["cycles"])[:3]
    assert [t.strip() for t in top] == [r["item"] for r in biggest]


def test_csv_refuses_a_directory(tmp_path, capsys):
    assert stc_run.main(["resnet50", "--report-csv", str(tmp_path)]) == 1
    assert f"--report-csv {tmp_path}: is a directory" in capsys.readouterr().err


def test_a_program_without_origins_is_one_row_and_no_top_items():
    weight = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    program = examples.matmul_by_rows((64, 32), weight)
    _, report = run(program, {program.inputs[0].name: np.ones((64, 32), np.float16)})
    (item,) = report.items()
    assert item["item"] == "(no origin)" and item["macs"] == report.macs == 64 * 32 * 64
    assert "schedule items by cycles" not in report.table()
    assert set(OPS)  # the op table is untouched by reporting


def test_plots_per_item_from_stc_run(tmp_path):
    assert stc_run.main(["resnet50", "--batch", "1", "--option", "image_size=32", "--timing-only", "-q",
                         "--plot", str(tmp_path)]) == 0
    for name in ("items_roofline.png", "items_ddr.png"):
        assert (tmp_path / name).stat().st_size > 10_000
