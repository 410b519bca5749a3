"""The report's text table: columns stay apart however large the numbers get."""

import re

from stc_mlir import target
from stc_mlir.emulator.report import Report, Slice


def _table(cycles: int) -> list[str]:
    t = target.load("stcp920")
    timeline = [Slice(core=0, unit="matrix", index=0, label="mm", start=0, end=cycles // 13),
                Slice(core=0, unit="dma_in", index=1, label="ld", start=0, end=cycles // 2, wait=False),
                Slice(core=0, unit="sync", index=2, label="wait", start=0, end=cycles // 3, wait=True)]
    report = Report("p", t, cycles=cycles, timeline=timeline)
    report.bytes_read["ddr"] = 4_294_967_296
    return report.table().splitlines()


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_core_rows_keep_their_columns_apart_at_large_counts():
    lines = _table(98_765_432_109)
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["core", "unit"])
    assert _cells(lines[header]) == ["core", "unit", "cmds", "busy cyc", "busy %", "wait cyc", "idle cyc"]
    core_row = next(line for line in lines if "(core)" in line)
    # busy 49,382,716,054 of 98,765,432,109 cycles: the idle count is a column of its own
    assert _cells(core_row) == ["0", "(core)", "49,382,716,054", "50.0%", "49,382,716,055"]
    dma_row = next(line for line in lines if "dma_in" in line)
    assert _cells(dma_row) == ["0", "dma_in", "1", "49,382,716,054", "50.0%", "0"]


def test_memory_rows_keep_their_columns_apart():
    lines = _table(1000)
    ddr = next(line for line in lines if line.strip().startswith("ddr"))
    assert _cells(ddr)[:2] == ["ddr", "4,294,967,296"]
    l1 = next(line for line in lines if line.strip().startswith("l1 "))
    assert _cells(l1)[-1] == "per core"
