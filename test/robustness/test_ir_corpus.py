"""Malformed IR, generated from real IR at graph, schedule and npu level: every mutant is
refused by `stc_mlir.ir.parse_ir` (the entry point of stc-run, stc-opt and the Python
API) with one line `file:line:col: message`, and nothing else escapes."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from stc_mlir import ir

from .ir_mutations import MUTATORS, mutants, sources

LOCATED = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): \S.*$")


@pytest.fixture(scope="module")
def corpus():
    srcs = sources()
    return srcs, mutants(srcs)


def test_sources_are_valid(corpus):
    srcs, _ = corpus
    assert {name.split("/")[0] for name in srcs} == {"graph", "schedule", "npu"}
    for name, text in srcs.items():
        ir.parse_ir(text, name)  # the unmutated text is accepted


def test_every_mutant_is_refused_with_a_located_one_line_message(corpus):
    srcs, cases = corpus
    assert len(cases) >= 200, len(cases)
    kinds: dict[str, int] = {}
    slowest = 0.0
    for case in cases:
        start = time.perf_counter()
        with pytest.raises(ir.IRError) as err:
            ir.parse_ir(case.text, case.name)
        slowest = max(slowest, time.perf_counter() - start)
        message = str(err.value)
        match = LOCATED.match(message)
        assert match, f"{case.name}: not a one-line file:line:col message: {message!r}"
        assert match["file"] == case.name, (case.name, message)
        text = case.text.decode("utf-8", "replace") if isinstance(case.text, bytes) else case.text
        assert 1 <= int(match["line"]) <= text.count("\n") + 1, (case.name, message)
        assert re.search(case.expect, message), (case.name, case.expect, message)
        kinds[case.name.split("/")[2]] = kinds.get(case.name.split("/")[2], 0) + 1
    assert set(kinds) == set(MUTATORS), kinds


def test_cycles_and_uses_before_definition_name_the_value_and_the_op():
    cycle = "func.func @f(%x: tensor<2xf16>) -> tensor<2xf16> {\n  %r = graph.relu %r : tensor<2xf16>\n  func.return %r : tensor<2xf16>\n}\n"
    with pytest.raises(ir.DominanceError, match=r"^c.mlir:2:3: graph.relu operand #0 %r: is this op's own result \(an SSA cycle\)$"):
        ir.parse_ir(cycle, "c.mlir")
    later = ("func.func @f(%x: tensor<2xf16>) -> tensor<2xf16> {\n  %a = graph.relu %b : tensor<2xf16>\n"
             "  %b = graph.exp %x : tensor<2xf16>\n  func.return %a : tensor<2xf16>\n}\n")
    with pytest.raises(ir.DominanceError, match=r"^l.mlir:2:3: graph.relu operand #0 %b: is used before its "
                                                r"definition \(graph.exp at l.mlir:3:3\)$"):
        ir.parse_ir(later, "l.mlir")


def test_verification_errors_are_located():
    text = ("func.func @f(%x: tensor<2x3xf16>) -> tensor<2xf16> {\n"
            "  %a = graph.reduce_sum %x {axes = array<i64: 99>, keepdims = false} : (tensor<2x3xf16>) -> tensor<2xf16>\n"
            "  func.return %a : tensor<2xf16>\n}\n")
    with pytest.raises(ir.IRError, match=r"^r.mlir:2:3: graph.reduce_sum: axis 99 is out of range for rank 2$"):
        ir.parse_ir(text, "r.mlir")


def test_read_ir_refuses_directories_and_missing_files(tmp_path):
    with pytest.raises(ir.IRError, match="is a directory"):
        ir.read_ir(tmp_path)
    with pytest.raises(ir.IRError, match="cannot read: No such file"):
        ir.read_ir(tmp_path / "missing.mlir")


UNTERMINATED = 'func.func @f() {\n  %0 = graph.constant dense<"0x' + "0A" * 5000 + '> : tensor<4xf16>\n}\n'


def test_unterminated_literal_is_refused_at_once_in_process():
    with pytest.raises(ir.IRError, match=r"^u.mlir:2:29: End of file reached before closing string literal"):
        ir.parse_ir(UNTERMINATED, "u.mlir")


def test_unterminated_literal_does_not_hang_stc_opt(tmp_path):
    """xDSL 0.74's regex took > 60 s for 16 bytes of hex: 10 kB must answer at once (the
    timeout is generous; the exponential case would never finish)."""
    path = tmp_path / "cut.mlir"
    path.write_text(UNTERMINATED)
    done = subprocess.run([sys.executable, "-c", "import sys; from stc_mlir.tools.stc_opt import main; "
                           "sys.exit(main(sys.argv[1:]))", str(path)],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 1
    assert "End of file reached before closing string literal" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["grüppe", 'q"uote', "back\\slash", "new\nline", "tab\t", "nul\x00", "🚀 rocket",
                                  "a:b/c"])
def test_group_names_round_trip_whatever_their_characters(name):
    from io import StringIO

    from stc_mlir.graph_schedule import Group, GroupOps, IRModule, ListItems, ListOps

    mod = IRModule(ir.parse_ir(NET_FOR_NAMES))
    ops = ListOps(mod["main"])
    GroupOps([Group([mod["main"].params[0]], ops["exp"][0], name=name)])(mod)
    out = StringIO()
    ir.print_module(mod.module, out)
    again = IRModule(ir.parse_ir(out.getvalue()))
    assert [op.group_name.data for op in ListItems(again["main"])] == [name]


NET_FOR_NAMES = """func.func @main(%x: tensor<2x4xf16>) -> tensor<2x4xf16> {
  %r = graph.relu %x : tensor<2x4xf16>
  %e = graph.exp %r : tensor<2x4xf16>
  func.return %e : tensor<2x4xf16>
}
"""
