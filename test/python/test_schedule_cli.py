"""stc-opt reports a schedule that cannot run as a one-line diagnostic naming the file, the
item and the numbers, and exits non-zero (no traceback)."""

from __future__ import annotations

import re

import pytest

from stc_mlir.tools import stc_opt


def group(name: str, value: str, t: str, bind: str, body: str = "graph.relu") -> str:
    return f"""
  %{name} = schedule.group "{name}" (%x = {value} : {t}) -> {t} attributes {{mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{bind}>}} {{
    %r = {body} %x : {t}
    schedule.yield %r : {t}
  }}"""


def function(t: str, body: str, result: str) -> str:
    return f"func.func @main(%in: {t}) -> {t} {{{body}\n  func.return {result} : {t}\n}}\n"


SMALL = "tensor<4x8xf16>"
CASES = {
    # 2 x 1024 x 320 x 2 bytes of input and as much of result on core 0
    "l1_overflow": (
        function("tensor<2x1024x320xf16>", group("big", "%in", "tensor<2x1024x320xf16>", "[[0]]"), "%big"),
        "@main: group 'big': L1 footprint 2,621,440 bytes per core exceeds the 1,048,576-byte L1 data buffer (core 0)",
    ),
    "bad_core": (
        function(SMALL, group("g", "%in", SMALL, "[[0, 9]]"), "%g"),
        "@main: group 'g': core_bind [[0, 9]] uses core 9, outside the cluster's cores 0-7",
    ),
    "split_factor": (
        function(SMALL, """
  %s:3 = schedule.split %in into 3 : tensor<4x8xf16> -> tensor<1x8xf16>""", "%in"),
        "schedule.split: split factor 3 does not divide the batch 4 of tensor<4x8xf16>",
    ),
    "use_before_producer": (
        function(SMALL, group("a", "%b", SMALL, "[0]") + group("b", "%in", SMALL, "[0]", "graph.exp"), "%a"),
        # refused when the IR is read (SSA dominance, stc_mlir/ir.py), before schedule-verify
        "schedule.group operand #0 %b: is used before its definition (schedule.group at",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_rejects_schedule_with_its_numbers(case, tmp_path, capsys):
    text, message = CASES[case]
    path = tmp_path / f"{case}.mlir"
    path.write_text(text)
    assert stc_opt.main([str(path), "-p", "schedule-verify"]) == 1
    err = capsys.readouterr().err
    assert re.match(rf"stc-opt: error: {re.escape(str(path))}(: verification failed: |:\d+:\d+: )", err)
    assert message in err
    assert "Traceback" not in err
