"""Users' passes: plugin files (`--load-pass-plugin`, `pass_plugins.register_plugin_file`)
and installed packages (the `stc_mlir.passes` entry points), used by stc-opt and the pipeline."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from stc_mlir import ir, pass_plugins, reference, universe
from stc_mlir.passes import registry
from stc_mlir.pipeline import compile_module
from stc_mlir.tools import stc_run

ROOT = Path(__file__).resolve().parents[2]
INPUTS = ROOT / "test" / "tools" / "Inputs"
PROGRAM = """
func.func @main(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %n = graph.neg %x : tensor<2x3xf16>
  %m = graph.neg %n : tensor<2x3xf16>
  %r = graph.relu %m : tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}
"""

PASS_SOURCE = '''
from dataclasses import dataclass
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from stc_mlir.dialects import graph as g


@dataclass(frozen=True)
class {cls}(ModulePass):
    """Replace every relu by an identity: the numbers show whether the pass ran."""

    name = "{name}"

    def apply(self, ctx, op):
        for relu in [o for o in op.walk() if isinstance(o, g.ReluOp)]:
            Rewriter.replace_op(relu, [], [relu.input])
'''


@pytest.fixture
def clean_registry():
    saved = [(table, dict(table)) for table in (universe.PASSES, registry.PASSES)]
    yield
    for table, entries in saved:
        table.clear()
        table.update(entries)
    pass_plugins._SOURCES.clear()


def test_plugin_file_passes_are_found_named_and_registered_once(clean_registry):
    assert pass_plugins.register_plugin_file(str(INPUTS / "pass_plugin.py")) == ["test-fold-double-neg"]
    # loading the same file again is harmless; the name is taken for any other source
    assert pass_plugins.register_plugin_file(str(INPUTS / "pass_plugin.py")) == ["test-fold-double-neg"]
    cls = universe.PASSES["test-fold-double-neg"]()
    assert pass_plugins.describe(cls) == "Fold neg(neg(x)) to x"


def test_stc_passes_lists_the_plugin_passes_explicitly(tmp_path, clean_registry):
    plugin = tmp_path / "two.py"
    plugin.write_text(PASS_SOURCE.format(cls="A", name="test-a") + PASS_SOURCE.format(cls="B", name="test-b")
                      + "\nSTC_PASSES = [B]\n")
    assert pass_plugins.register_plugin_file(str(plugin)) == ["test-b"]
    assert "test-a" not in universe.PASSES


def test_a_plugin_pass_runs_in_the_compile_pipeline(tmp_path, clean_registry):
    plugin = tmp_path / "drop_relu.py"
    plugin.write_text(PASS_SOURCE.format(cls="DropRelu", name="graph-test-drop-relu"))
    pass_plugins.register_plugin_file(str(plugin))
    module = ir.parse_text(PROGRAM)
    compile_module(module, required_pass=["graph-test-drop-relu"], stop_after="graph-test-drop-relu")
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float16)
    (y,) = reference.run(module, {"x": x})
    np.testing.assert_array_equal(y, x)  # relu gone: the negatives survive


def test_installed_package_passes_come_from_the_entry_point_group(tmp_path):
    """A package installed with an `stc_mlir.passes` entry point: its pass is in stc-opt."""
    site = tmp_path / "site"
    (site / "my_stc_passes").mkdir(parents=True)
    (site / "my_stc_passes" / "__init__.py").write_text(PASS_SOURCE.format(cls="DropRelu", name="my-drop-relu"))
    dist = site / "my_stc_passes-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-stc-passes\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        textwrap.dedent("""\
            [stc_mlir.passes]
            my-drop-relu = my_stc_passes:DropRelu
        """))
    src = tmp_path / "in.mlir"
    src.write_text(PROGRAM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}
    run = [sys.executable, "-m", "stc_mlir.tools.stc_opt"]
    done = subprocess.run([*run, str(src), "-p", "my-drop-relu"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "graph.relu" not in done.stdout and "graph.neg" in done.stdout
    helped = subprocess.run([*run, "--help"], env=env, capture_output=True, text=True)
    assert "plugin passes (--load-pass-plugin, entry points 'stc_mlir.passes'):" in helped.stdout
    assert "my-drop-relu" in helped.stdout.split("positional arguments")[0]


def test_stc_run_runs_a_plugin_pass_at_the_stage_its_name_says(tmp_path, capsys, clean_registry):
    """graph-* passes run after the pipeline's graph passes, before the schedule."""
    plugin = tmp_path / "drop_relu.py"
    plugin.write_text(PASS_SOURCE.format(cls="DropRelu", name="graph-test-drop-relu"))
    src = tmp_path / "m.mlir"
    src.write_text(PROGRAM)
    dump = tmp_path / "ir"
    code = stc_run.main([str(src), "--load-pass-plugin", str(plugin), "--required-pass", "graph-test-drop-relu",
                         "--dump-ir", str(dump), "-q"])
    assert code == 0
    stages = sorted(p.name for p in dump.iterdir())
    assert stages[3] == "03-graph-test-drop-relu.mlir" and stages[4] == "04-schedule.mlir"
    assert "graph.relu" in (dump / stages[2]).read_text() and "graph.relu" not in (dump / stages[3]).read_text()
    assert stc_run.main([str(src), "--load-pass-plugin", str(tmp_path / "none.py")]) == 1
    assert "--load-pass-plugin: no such file" in capsys.readouterr().err
