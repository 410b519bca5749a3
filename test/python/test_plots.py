"""stc-run --plot: the pictures of a run are written, non-empty, from the report's numbers."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from stc_mlir import stcobj, target
from stc_mlir.emulator import examples, run
from stc_mlir.emulator.report import Report, Slice
from stc_mlir.tools import stc_run
from stc_mlir.viz import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def matmul_run():
    weight = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    program = examples.matmul_by_rows((64, 32), weight)
    x = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float16)
    _, report = run(program, {program.inputs[0].name: x})
    return program, report


def test_busy_over_time_is_the_share_of_the_clusters_units():
    t = target.load("stcp920")
    # core 0's matrix unit busy over [0, 50), core 1's over [25, 100); a wait does not count
    timeline = [Slice(0, "matrix", 0, "a", 0, 50), Slice(1, "matrix", 0, "b", 25, 100),
                Slice(2, "matrix", 1, "w", 0, 100, wait=True)]
    report = Report("p", t, cycles=100, timeline=timeline)
    edges, share = plots.busy_over_time(report, "matrix", bins=4)
    np.testing.assert_allclose(edges, [0, 25, 50, 75, 100])
    np.testing.assert_allclose(share, np.array([1, 2, 1, 1]) / t.cores)
    assert not plots.busy_over_time(report, "vector", bins=4)[1].any()


def test_every_plot_is_written_and_non_empty(tmp_path, matmul_run):
    _, report = matmul_run
    written = plots.write_plots(report, tmp_path / "png")
    assert [p.name for p in written] == ["timeline.png", "utilisation.png", "cores.png", "summary.png"]
    for path in written:
        assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 10_000
    svgs = plots.write_plots(report, tmp_path / "svg", fmt="svg")
    timeline = ET.parse(svgs[0]).getroot()
    # one drawn bar per busy slice at least (broken_barh paths), so the picture holds the run
    assert sum(1 for _ in timeline.iter("{http://www.w3.org/2000/svg}path")) >= 8


def test_per_item_plots_appear_when_items_are_given(tmp_path, matmul_run):
    _, report = matmul_run
    items = [plots.ItemFigures("group 'a'", 5000, 10**6, 40_000, 30_000),
             plots.ItemFigures("group 'b'", 2000, 10**5, 8_000, 8_000)]
    written = plots.write_plots(report, tmp_path, items=items)
    assert [p.name for p in written[-2:]] == ["items_roofline.png", "items_ddr.png"]
    assert all(p.stat().st_size > 10_000 for p in written)


def test_a_bad_format_is_refused(tmp_path, matmul_run):
    with pytest.raises(ValueError, match="plot format must be one of png, svg, got 'gif'"):
        plots.write_plots(matmul_run[1], tmp_path, fmt="gif")


def test_stc_run_plot(tmp_path, capsys, matmul_run):
    program, _ = matmul_run
    stcobj.save(program, tmp_path / "mm.stcobj")
    assert stc_run.main([str(tmp_path / "mm.stcobj"), "--plot", str(tmp_path / "plots"), "--plot-format", "svg"]) == 0
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "cores.svg", "summary.svg", "timeline.svg", "utilisation.svg"]
    assert "wrote timeline.svg, utilisation.svg, cores.svg, summary.svg in" in capsys.readouterr().err
