"""The differential fuzzer (`stc_mlir.fuzz`, `bench/fuzz.py`): a few hundred random graphs
under random schedules, compiled, emulated and compared with the reference interpreter and
onnxruntime; plus the fuzzer's own parts (determinism, the comparison, reproducers)."""

from __future__ import annotations

import importlib.util
import json
import io
import os

import numpy as np
import onnx
import pytest

from stc_mlir import fuzz

SEED = 0
CASES = 400
"""~35 s of CPU on a quiet machine (0.08 s per case)."""


@pytest.fixture(autouse=True)
def _scratch_cache(tmp_path, monkeypatch):
    """Level 3's decision cache in a scratch directory (random graphs would fill the real one)."""
    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path / "cache"))


def test_fuzz_run(tmp_path):
    """CASES cases of seed 0: no mismatch, no traceback; most cases compile and run (the
    fuzzer must not decay into refusals), under every kind of schedule."""
    summary = fuzz.run_cases(SEED, range(CASES), reproducers=str(tmp_path / "repro"))
    print(summary.table())
    assert not summary.failures, "\n".join(f"{o.line()} (replay: python bench/fuzz.py --seed {SEED} "
                                           f"--case {o.number} --large 0)" for o in summary.failures)
    assert summary.status.get("ok", 0) >= 0.95 * CASES, summary.table()
    for name in ("manual", "level 0", "level 1", "level 2", "level 3"):
        assert summary.by_schedule.get(name, {}).get("ok", 0) >= 10, summary.table()
    for reason in summary.refusals:
        assert "\n" not in reason


def test_cases_are_reproducible():
    """A case depends on (seed, number) alone: the same model, inputs and plan every time."""
    for number in (3, 7, 11):
        a, b = fuzz.make_case(5, number), fuzz.make_case(5, number)
        assert a.model.SerializeToString() == b.model.SerializeToString()
        assert all(np.array_equal(a.inputs[k], b.inputs[k]) for k in a.inputs)
        assert (a.level, a.plan_seed) == (b.level, b.plan_seed)
    manual = next(n for n in range(50) if fuzz.make_case(5, n).level is None)
    first = fuzz.run_case(fuzz.make_case(5, manual))
    again = fuzz.run_case(fuzz.make_case(5, manual))
    replayed = fuzz.run_case(fuzz.make_case(5, manual), plan=first.plan)
    assert first.plan == again.plan == replayed.plan
    assert first.status == again.status == replayed.status


def test_graphs_are_valid_onnx_and_varied():
    """Generated models pass onnx.checker; over 60 cases the generator uses the op families
    the fuzzer is meant to cover."""
    seen = set()
    for number in range(60):
        model = fuzz.make_case(1, number).model
        onnx.checker.check_model(model, full_check=True)
        seen.update(n.op_type for n in model.graph.node)
        for node in model.graph.node:
            if node.op_type == "Conv":
                attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
                group, stride = attrs.get("group", 1), max(attrs.get("strides", [1]))
                depthwise = group > 1 and group == model_channels(model, node)
                seen.add(("depthwise" if depthwise else "conv") + f" stride {stride}")
    for op in ("Conv", "MatMul", "Gemm", "Add", "Mul", "Softmax", "LayerNormalization", "Concat", "Split",
               "Reshape", "Transpose", "MaxPool", "AveragePool"):
        assert op in seen, op
    assert {"conv stride 2", "depthwise stride 1"} <= seen


def model_channels(model: onnx.ModelProto, node: onnx.NodeProto) -> int:
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*inferred.graph.value_info, *inferred.graph.input]}
    return shapes[node.input[0]][1]


def test_tolerance():
    """fp16 rounding passes; a wrong element or a sign flip does not."""
    rng = np.random.default_rng(0)
    golden = rng.standard_normal(1000).astype(np.float32)
    assert fuzz.REFERENCE.check(golden, golden.astype(np.float16))[0]
    assert fuzz.ONNXRUNTIME.check(golden, golden.astype(np.float16))[0]
    wrong = golden.astype(np.float16).copy()
    wrong[17] += 0.5
    ok, metrics = fuzz.REFERENCE.check(golden, wrong)
    assert not ok and metrics["max_abs"] == pytest.approx(0.5, abs=2e-3)
    assert not fuzz.ONNXRUNTIME.check(golden, -golden)[0]
    assert not fuzz.REFERENCE.check(golden, golden[:10])[0]
    # fp16 conditioning: our reference misses fp32 by more than the bound but keeps the
    # direction (excused when the emulator agrees with the reference); a wrong kernel does not
    off = golden + np.where(np.arange(1000) == 5, 0.2, 0.0).astype(np.float32)
    assert not fuzz.ONNXRUNTIME.check(golden, off)[0] and fuzz.fp16_conditioned(golden, off)
    assert not fuzz.fp16_conditioned(golden, -golden) and not fuzz.fp16_conditioned(golden, golden)


def test_a_wrong_number_is_a_mismatch(monkeypatch, tmp_path):
    """A real emulator run whose output is then corrupted in one element: reported as a
    mismatch naming the output, counted as a failure and written as a reproducer."""
    from stc_mlir import emulator

    number = next(n for n in range(40) if fuzz.run_case(fuzz.make_case(2, n)).status == "ok")
    real = emulator.run

    def corrupted(program, inputs, **kw):
        outputs, report = real(program, inputs, **kw)
        name = program.outputs[0].name
        bad = outputs[name].copy()
        bad.flat[0] += np.float16(4.0)
        return {**outputs, name: bad}, report

    monkeypatch.setattr(emulator, "run", corrupted)
    outcome = fuzz.run_case(fuzz.make_case(2, number))
    assert outcome.status == "mismatch" and outcome.failed
    assert "vs reference" in outcome.message and "max |diff|" in outcome.message
    summary = fuzz.run_cases(2, [number], reproducers=str(tmp_path))
    assert [o.number for o in summary.failures] == [number] and "FAIL seed 2 case" in summary.table()
    assert os.path.isfile(tmp_path / f"seed2-case{number}" / "model.onnx")


def test_refusals_are_one_line_and_classified():
    """A verifier refusal: a refused outcome at stage verify with a one-line message."""
    number = next(n for n in range(100) if fuzz.make_case(3, n).level is None)
    case = fuzz.make_case(3, number)
    plan = fuzz.run_case(case).plan
    assert plan is not None
    plan["items"] = [[k, scope, [[0, 0]]] for k, scope, _ in plan["items"]]   # core 0 twice
    outcome = fuzz.run_case(case, plan)
    assert outcome.status == "refused" and outcome.stage == "schedule API"
    assert "appears twice" in outcome.message and "\n" not in outcome.message
    assert not outcome.failed


def test_reproducer_replays(tmp_path):
    """A failing case's directory holds the model, the inputs, the plan as a schedule script
    and the scheduled IR; the script, run by the pipeline on the model, schedules it again."""
    from stc_mlir.frontend import import_onnx
    from stc_mlir.ir import print_module
    from stc_mlir.pipeline import VERIFY, Pipeline

    case = next(c for c in (fuzz.make_case(4, n) for n in range(60)) if c.level is None)
    outcome = fuzz.run_case(case)
    outcome.status = "mismatch"   # write it as if it had failed
    path = fuzz.write_reproducer(case, outcome, str(tmp_path))
    assert sorted(os.listdir(path)) == ["inputs.npz", "model.onnx", "outcome.json", "schedule.py", "scheduled.mlir"]
    assert json.load(open(os.path.join(path, "outcome.json")))["number"] == case.number
    spec = importlib.util.spec_from_file_location("repro_schedule", os.path.join(path, "schedule.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    module = import_onnx(onnx.load(os.path.join(path, "model.onnx")))
    Pipeline(script.schedule, stop_after=VERIFY).run(module)
    text = io.StringIO()
    print_module(module, text)
    assert text.getvalue() == outcome.scheduled_ir


def test_bench_cli(tmp_path, capsys):
    """`bench/fuzz.py --seed S --cases N` prints the summary; `--case N` replays one case."""
    spec = importlib.util.spec_from_file_location(
        "bench_fuzz", os.path.join(os.path.dirname(__file__), "..", "..", "bench", "fuzz.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "summary.json"
    assert bench.main(["--seed", "0", "--cases", "4", "-q", "--out", str(tmp_path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "seed 0: 4 cases" in text
    assert json.load(open(out))["cases"] == 4
    assert bench.main(["--seed", "0", "--case", "2"]) == 0
    assert "seed 0 case 2" in capsys.readouterr().out


def test_a_hang_is_a_crash():
    """A case past its time limit is reported as a hang, not waited for."""
    outcome = fuzz.run_case(fuzz.make_case(0, 1), timeout=0.001)
    assert outcome.status == "crash" and outcome.message.startswith("CaseTimeout: no result after 0.001 s")


def test_a_hang_inside_a_wrapping_stage_is_a_hang(monkeypatch):
    """The alarm may land inside a stage that wraps what it catches (the importer reading an
    initializer turns any error into an OnnxImportError): the case is still a hang."""
    from stc_mlir.frontend import onnx_importer

    def hang(*args, **kwargs):
        raise fuzz.CaseTimeout("no result after 0.001 s (a hang)")

    monkeypatch.setattr(onnx_importer.numpy_helper, "to_array", hang)
    outcome = fuzz.run_case(fuzz.make_case(0, 1), timeout=None)
    assert outcome.status == "crash" and outcome.message.startswith("CaseTimeout: no result after 0.001 s")


# ----------------------------------------------------------------------------- bugs it found


def _handover_ir(consumer_cores: str) -> str:
    """A sample kept in L1 over all 8 cores (a row each), then a group on fewer cores that
    computes on it (relu) and views the result (flatten): a core's rows of the relu are not
    the rows it holds."""
    all8 = "[[0, 1, 2, 3, 4, 5, 6, 7]]"
    t = "tensor<1x4x8x11xf16>"
    return f'''
    func.func @main(%x: {t} {{graph.name = "x"}}) -> (tensor<1x352xf16> {{graph.name = "y"}}) {{
      %h = schedule.group "h" (%p = %x : {t}) -> {t} attributes {{mem_scope = #schedule.mem_scope<L1>,
          core_bind = #schedule.core_bind<{all8}>}} {{
        %q = graph.relu %p : {t}
        schedule.yield %q : {t}
      }}
      %y = schedule.group "g" (%a = %h : {t}) -> tensor<1x352xf16> attributes {{
          mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<{consumer_cores}>}} {{
        %b = graph.sigmoid %a : {t}
        %f = graph.flatten %b : ({t}) -> tensor<1x352xf16>
        schedule.yield %f : tensor<1x352xf16>
      }}
      func.return %y : tensor<1x352xf16>
    }}'''


@pytest.mark.parametrize("cores", ["[[0, 1, 4, 5]]", "[[4, 5, 6, 7]]", "[[7, 6]]"])
def test_l1_piece_read_by_another_distribution(cores):
    """Found by the fuzzer (seed 1 cases 201 and 296): a streamed group read an operand
    from the core's own L1 piece although its tiles need rows held by other cores, and the
    lowering died with `AssertionError: region ... outside frame ...`. Now the piece serves
    only when it holds every region the core reads; else the rows are fetched."""
    from stc_mlir import reference
    from stc_mlir.dialects.npu import program_from_module
    from stc_mlir.emulator import run
    from stc_mlir.ir import parse_ir
    from stc_mlir.pipeline import Pipeline

    module = parse_ir(_handover_ir(cores))
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 11)).astype(np.float32)
    (want,) = reference.run(module, {"x": x})
    Pipeline().run(module)
    got, report = run(program_from_module(module), {"x": x})
    assert not report.hazards
    np.testing.assert_array_equal(got["y"], want)
