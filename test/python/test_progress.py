"""Progress: stage lines, live steps on a terminal only, nothing with quiet (-q)."""

from __future__ import annotations

import io
import re

import numpy as np

from stc_mlir import progress, stcobj
from stc_mlir.emulator import examples
from stc_mlir.progress import ConsoleProgress, steps, timed
from stc_mlir.tools import stc_run


def _work(reporter: ConsoleProgress) -> list[int]:
    seen = []
    with reporter, timed(reporter, "lower"), steps("items", total=3) as advance:
        for i in range(3):
            seen.append(i)
            advance()
    return seen


def test_steps_outside_a_tool_do_nothing():
    with steps("items", total=2) as advance:
        advance()
        advance(5)  # no reporter installed: a no-op, whatever the count


def test_stage_lines_without_a_terminal():
    out = io.StringIO()
    assert _work(ConsoleProgress("tool", stream=out)) == [0, 1, 2]  # StringIO is not a tty
    assert re.fullmatch(r"tool: lower \.\.\. \d+\.\d\d s\n", out.getvalue())


def test_quiet_writes_nothing():
    out = io.StringIO()
    _work(ConsoleProgress("tool", quiet=True, stream=out, live=True))
    assert out.getvalue() == ""


def test_live_progress_shows_the_stage_and_its_steps():
    out = io.StringIO()
    reporter = ConsoleProgress("tool", stream=out, live=True)
    with reporter, timed(reporter, "lower"), steps("items", total=3) as advance:
        for _ in range(3):
            advance()
        reporter._live_bar().refresh()
        shown = out.getvalue()
    assert "tool: lower" in shown and "items" in shown and "3/3" in shown
    assert re.search(r"tool: lower \.\.\. \d+\.\d\d s", out.getvalue())
    assert progress._REPORTER.get() is None  # uninstalled on exit


def test_stc_run_quiet(tmp_path, capsys):
    weight = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    stcobj.save(examples.matmul_by_rows((64, 32), weight), tmp_path / "mm.stcobj")
    assert stc_run.main([str(tmp_path / "mm.stcobj"), "-q", "--trace", str(tmp_path / "t.json")]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "npu emulator report" in out
    assert stc_run.main([str(tmp_path / "mm.stcobj")]) == 0
    assert re.search(r"^stc-run: emulate \.\.\. \d+\.\d\d s$", capsys.readouterr().err, re.M)


def test_emulation_reports_its_commands_as_steps(recorded):
    from stc_mlir.emulator import run
    from stc_mlir.emulator.examples import conv_by_rows

    program = conv_by_rows((1, 4, 16, 8), np.ones((8, 4, 3, 3), np.float16), cores=2)
    run(program, {"x": np.ones((1, 4, 16, 8), np.float16)})
    total = sum(len(stream) for stream in program.cores.values())
    assert recorded == [["commands", total, total]]  # one step per command, fences included
