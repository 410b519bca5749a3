"""The default schedule and the compilation pipeline (stc_mlir.pipeline, stc-compile):
what runs in which order, option checking, and the schedule stage's results."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from stc_mlir import ir, models, reference
from stc_mlir.dialects import schedule as s
from stc_mlir.frontend import import_onnx
from stc_mlir.graph_schedule import (
    GetNPUSubFunctions,
    Group,
    GroupOps,
    IRModule,
    ListItems,
    ListOps,
    NPUMemScope,
    ScheduleError,
)
from stc_mlir.pipeline import LOWERING, STAGES, Pipeline, PipelineError, compile_module, module_level
from stc_mlir.schedules.default import default_schedule
from stc_mlir.tools import stc_opt

DDR = NPUMemScope.DDR
ALL = ((0, 1, 2, 3, 4, 5, 6, 7),)


@pytest.fixture(scope="module")
def resnet_graph(small_model):
    proto = small_model("resnet50")
    return import_onnx(proto), models.example_inputs("resnet50", proto)


@pytest.fixture
def resnet_small(resnet_graph):
    """ResNet-50 at 32 x 32, batch 2: a fresh copy of its graph-level module, and inputs."""
    module, inputs = resnet_graph
    return module.clone(), inputs


def placements(module) -> set[tuple]:
    return {(op.mem_scope.data, op.core_bind.data) for op in ListItems(IRModule(module)["main"])}


def text(module) -> str:
    out = io.StringIO()
    ir.print_module(module, out)
    return out.getvalue()


# -- the default schedule


def test_default_schedule_puts_every_op_in_ddr_on_all_cores(resnet_small):
    module, inputs = resnet_small
    want = reference.run(module, inputs)
    graph_ops = [op for op in module.body.block.first_op.body.block.ops
                 if op.name.startswith("graph.") and op.name != "graph.constant"]
    default_schedule(module)
    items = ListItems(IRModule(module)["main"])
    assert len(items) == len(graph_ops)
    assert all(isinstance(op, s.GroupOp) and len(op.body_ops()) == 1 for op in items)
    assert placements(module) == {(DDR, ALL)}
    np.testing.assert_array_equal(reference.run(module, inputs)[0], want[0])


# 16 x 1024 x 160 x 2 bytes in and out: 10,485,760 bytes over 8 cores do not fit 1 MiB of L1
BIG = """
func.func @main(%x: tensor<16x1024x160xf16> {graph.name = "x"}) -> tensor<16x1024x160xf16> {
  %r = graph.relu %x : tensor<16x1024x160xf16>
  %e = graph.exp %r : tensor<16x1024x160xf16>
  func.return %e : tensor<16x1024x160xf16>
}
"""


def test_default_schedule_cuts_an_op_too_big_for_l1_along_the_batch():
    module = ir.parse_text(BIG)
    x = np.random.default_rng(0).standard_normal((16, 1024, 160)).astype(np.float16)
    want = reference.run(module, {"x": x})
    default_schedule(module, batch=16)
    kinds = [(s.op_kind(op), op.split.data if isinstance(op, s.GroupOp) else None)
             for op in ListItems(IRModule(module)["main"])]
    # both ops in two halves; exp takes relu's halves directly, only its result is joined
    assert kinds == [("split", None), ("group", 2), ("group", 2), ("group", 2), ("group", 2), ("concat", None)]
    assert placements(module) == {(DDR, ALL)}
    np.testing.assert_array_equal(reference.run(module, {"x": x})[0], want[0])


def test_default_schedule_says_why_an_op_cannot_fit():
    big = BIG.replace("graph.exp %r", "graph.softmax %r {axis = 0 : i64}")
    with pytest.raises(ScheduleError, match=r"default schedule: graph.softmax 'softmax_0' needs 1,310,720 bytes "
                                            r"of L1 per core with 16 sample\(s\) over 8 cores, more than the "
                                            r"1,048,576-byte L1 data buffer; it cannot be cut along the batch: "
                                            r"graph.softmax .* combines elements across the batch axis"):
        default_schedule(ir.parse_text(big))


def test_default_schedule_checks_the_batch(resnet_small):
    module, _ = resnet_small
    with pytest.raises(ScheduleError, match=r"default_schedule\(batch=16\) is applied to a model with batch 2"):
        default_schedule(module, batch=16)


def test_default_schedule_completes_a_partial_manual_schedule(resnet_small):
    module, inputs = resnet_small
    want = reference.run(module, inputs)
    func = GetNPUSubFunctions(IRModule(module)["main"])[0]
    ops = ListOps(func)
    head = Group([func.params[0]], ops["max_pool"][0], name="stem")
    GroupOps([head])(IRModule(module))
    head[0].properties["mem_scope"] = s.MemScopeAttr(NPUMemScope.L1)
    head[0].properties["core_bind"] = s.CoreBindAttr.of([[0, 1], [2, 3]])
    default_schedule(module)
    items = ListItems(IRModule(module)["main"])
    assert items[0] is head[0]  # kept first, with its placement
    assert (head[0].mem_scope.data, head[0].core_bind.data) == (NPUMemScope.L1, ((0, 1), (2, 3)))
    assert {(op.mem_scope.data, op.core_bind.data) for op in items[1:]} == {(DDR, ALL)}
    np.testing.assert_array_equal(reference.run(module, inputs)[0], want[0])


# -- the pipeline


def test_pipeline_runs_the_stages_in_order(resnet_small):
    module, inputs = resnet_small
    want = reference.run(module, inputs)
    seen = []
    compile_module(module, stop_after="schedule-verify", progress=lambda stage, t: seen.append((stage, t is None)))
    assert seen == [(stage, start) for stage in STAGES[:4] for start in (True, False)]
    assert module_level(module) == "schedule"
    assert "graph.batch_norm" not in text(module)  # canonicalized
    np.testing.assert_allclose(reference.run(module, inputs)[0], want[0], rtol=0.05, atol=0.05)


def test_pipeline_runs_a_manual_schedule_with_the_batch():
    module = import_onnx(models.build("deepfm", batch=16))
    calls = []

    def one_group(mod, batch=4):
        calls.append(batch)
        func = GetNPUSubFunctions(mod["main"])[0]
        GroupOps([Group(func.params, func.results[0], name="all")])(mod)
        return mod

    compile_module(module, one_group, batch=16, stop_after="schedule")
    assert calls == [16]
    (item,) = ListItems(IRModule(module)["main"])
    assert (item.group_name.data, item.mem_scope.data) == ("all", DDR)  # placed by the default


def test_pipeline_leaves_the_batch_to_the_schedule_when_not_given():
    module = import_onnx(models.build("deepfm", batch=16))
    with pytest.raises(ScheduleError, match=r"deepfm_schedule\(batch=2560\) is applied to a model with batch 16"):
        compile_module(module, "stc_mlir.schedules:deepfm_schedule", stop_after="schedule")


def test_pipeline_loads_a_schedule_from_a_file(tmp_path, resnet_small):
    path = tmp_path / "my_schedules.py"
    path.write_text("from stc_mlir.schedules.default import default_schedule\n"
                    "def everything_default(mod, batch=None):\n"
                    "    mod.module.attributes['my.mark'] = __import__('xdsl').dialects.builtin.UnitAttr()\n"
                    "    return mod\n")
    module, _ = resnet_small
    compile_module(module, f"{path}:everything_default", batch=2, stop_after="schedule-verify")
    assert "my.mark" in module.attributes
    assert placements(module) == {(DDR, ALL)}


@pytest.mark.parametrize("level", [1, 2, 3])
def test_pipeline_schedules_automatically_at_levels_1_to_3(resnet_small, level, tmp_path, monkeypatch):
    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path))
    module, inputs = resnet_small
    want = reference.run(Pipeline(stop_after="graph-fuse-conv-add-relu").run(module.clone()), inputs)
    pipeline = Pipeline(level=level, stop_after="schedule-verify")
    pipeline.run(module)
    assert module_level(module) == "schedule" and pipeline.decided[0].level == level
    for got, expected in zip(reference.run(module, inputs), want):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(PipelineError, match=f"^graph_schedule_level {level} applies only without a schedule "
                                            "function"):
        Pipeline("stc_mlir.schedules:resnet50_schedule", level=level)
    with pytest.raises(PipelineError, match=f"already scheduled: graph_schedule_level {level} applies to a "
                                            "graph-level module"):
        Pipeline(level=level).run(module)


@pytest.mark.parametrize(("options", "message"), [
    ({"level": 4}, "graph_schedule_level must be 0, 1, 2 or 3, got 4"),
    ({"level": "0"}, "graph_schedule_level must be 0, 1, 2 or 3, got '0'"),
    ({"batch": 0}, "batch must be a positive integer, got 0"),
    ({"schedule": "resnet50"}, "schedule 'resnet50' is not MODULE:FUNCTION"),
    ({"schedule": 3}, "a schedule is a function or 'module:function', got int"),
    ({"schedule": "stc_mlir.schedules:nothing"}, "module 'stc_mlir.schedules' has no function 'nothing'"),
    ({"schedule": "stc_mlir.schedules:SCHEDULES"}, "'SCHEDULES' in 'stc_mlir.schedules' is not a function"),
    ({"schedule": "no_such_module:f"}, "cannot import 'no_such_module': ModuleNotFoundError"),
    ({"schedule": "/no/such.py:f"}, "no such file '/no/such.py'"),
    ({"required_pass": ["graph-fuse"]}, "required_pass: unknown pass 'graph-fuse'; valid passes: "
                                        "convert-schedule-to-npu, graph-canonicalize, "),
    ({"disabled_pass": "stc-compile"}, "disabled_pass: unknown pass 'stc-compile'"),
    ({"required_pass": ["graph-externalize-weights{size=3}"]}, "required_pass: graph-externalize-weights: "),
    ({"required_pass": ["graph-canonicalize{"]}, "required_pass: cannot parse 'graph-canonicalize{'"),
    ({"required_pass": [3]}, "required_pass must be a list of pass names, got 3"),
    ({"required_pass": ["schedule-report"], "disabled_pass": ["schedule-report"]},
     "'schedule-report' is both in required_pass and in disabled_pass"),
    ({"stop_after": "lowering"}, "stop_after: unknown stage 'lowering'; stages: graph-canonicalize, "),
])
def test_pipeline_rejects_bad_options(options, message):
    with pytest.raises(PipelineError, match=re.escape(message)):
        Pipeline(**options)


@pytest.mark.parametrize("name", LOWERING)
def test_the_lowering_cannot_be_disabled(name):
    with pytest.raises(PipelineError, match=f"disabled_pass: '{name}' cannot be disabled: the pipeline needs it "
                                            "to produce an npu program"):
        Pipeline(disabled_pass=[name])


def test_disabled_and_required_passes(resnet_small):
    module, _ = resnet_small
    compile_module(module, disabled_pass=["graph-fuse-conv-add-relu", "graph-canonicalize"],
                   stop_after="schedule-verify")
    assert "graph.batch_norm" in text(module)
    # TensorTurbo's name for the fusion; it is in the pipeline already, so it runs once
    names = [name for name, _ in Pipeline(required_pass=["FuseConvAddBnRelu"]).stages]
    assert names.count("graph-fuse-conv-add-relu") == 1
    # extra passes go after their stage: graph- after the graph passes, schedule- after the check
    names = [name for name, _ in Pipeline(required_pass="schedule-report,graph-externalize-weights{file=\"w.bin\"}").stages]
    assert names == ["graph-canonicalize", "graph-fuse-conv-add-relu", "graph-externalize-weights", "schedule",
                     "schedule-verify", "schedule-report", *LOWERING]


def test_required_schedule_report_prints_the_schedule(capsys, resnet_small):
    module, _ = resnet_small
    compile_module(module, required_pass=["schedule-report"], stop_after="schedule-report")
    assert "schedule report for @main on stcp920: " in capsys.readouterr().out


def test_dump_ir_writes_every_stage(tmp_path, resnet_small):
    module, _ = resnet_small
    compile_module(module, dump_ir=tmp_path / "dump", stop_after="schedule-verify")
    files = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert files == ["00-input.mlir", "01-graph-canonicalize.mlir", "02-graph-fuse-conv-add-relu.mlir",
                     "03-schedule.mlir", "04-schedule-verify.mlir", "weights.bin"]
    scheduled = ir.parse_file(str(tmp_path / "dump" / "04-schedule-verify.mlir"))
    assert module_level(scheduled) == "schedule"
    assert '#graph.extern<"weights.bin"' in (tmp_path / "dump" / "00-input.mlir").read_text()


def test_a_scheduled_module_starts_at_the_schedule_stage(resnet_small):
    module, _ = resnet_small
    compile_module(module, disabled_pass=["graph-canonicalize"], level=0, stop_after="schedule-verify")
    again = ir.parse_text(text(module))
    seen = []
    compile_module(again, stop_after="schedule-verify", progress=lambda stage, t: seen.append(stage))
    assert seen[::2] == ["schedule", "schedule-verify"]
    assert "graph.batch_norm" in text(again)  # no graph pass ran on it
    with pytest.raises(PipelineError, match="the module is already scheduled: a schedule function applies to a "
                                            "graph-level module"):
        compile_module(again, "stc_mlir.schedules:resnet50_schedule")


def test_stc_compile_pass_in_stc_opt(tmp_path, capsys):
    path = tmp_path / "big.mlir"
    path.write_text(BIG)
    assert stc_opt.main([str(path), "-p", "stc-compile{stop-after=schedule-verify batch=16 level=0}"]) == 0
    out = capsys.readouterr().out
    assert out.count('schedule.group "relu_0"') == 2 and "schedule.split" in out
    capsys.readouterr()
    assert stc_opt.main([str(path), "-p", "stc-compile{level=5}"]) == 1
    assert "stc-opt: error: graph_schedule_level must be 0, 1, 2 or 3, got 5" in capsys.readouterr().err
