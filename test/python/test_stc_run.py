"""stc-run: every kind of MODEL, the options, the report outputs, and a one-line diagnostic
with a non-zero exit for every bad input."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import onnx
import pytest

from stc_mlir import ir, models, stcobj
from stc_mlir.emulator import examples, program_to_module
from stc_mlir.pipeline import schedule_batch
from stc_mlir.schedules import SCHEDULES
from stc_mlir.tools import stc_run

from conftest import SMALL


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = stc_run.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error(capsys, *argv: str) -> str:
    """The diagnostic of a failing run, which ends stderr (after the progress lines)."""
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert "Traceback" not in err
    assert err.count("stc-run: error: ") == 1
    return err[err.index("stc-run: error: "):].removeprefix("stc-run: error: ").rstrip("\n")


@pytest.fixture
def matmul_program():
    weight = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    return examples.matmul_by_rows((64, 32), weight)


@pytest.fixture
def matmul_stcobj(tmp_path, matmul_program):
    path = tmp_path / "mm.stcobj"
    stcobj.save(matmul_program, path)
    return path


@pytest.fixture
def npu_mlir(tmp_path, matmul_program):
    path = tmp_path / "mm.mlir"
    with open(path, "w") as f:
        ir.print_module(program_to_module(matmul_program), f)
    return path


# -- running compiled programs


def test_runs_an_stcobj_and_prints_the_report(capsys, matmul_stcobj, tmp_path):
    code, out, err = run(capsys, matmul_stcobj, "--report-json", tmp_path / "r.json", "--trace", tmp_path / "t.json")
    assert code == 0
    assert "npu emulator report: program 'matmul_by_rows' on stcp920" in out
    summary = out[out.index("summary: "):]
    report = json.loads((tmp_path / "r.json").read_text())
    assert re.search(rf"cycles {report['cycles']:,} vs roofline {report['roofline_cycles']:,}: \d+\.\d\dx", summary)
    assert f"DDR bytes {report['ddr_bytes']:,} vs minimum {report['min_ddr_bytes']:,}" in summary
    assert f"peak L1 {report['peak_l1_bytes']:,} bytes per core, peak LLB {report['peak_llb_bytes']:,} bytes" in summary
    assert "MAC utilisation " in summary
    assert re.search(r"stc-run: emulate \.\.\. \d+\.\d\d s", err)
    # the trace is Chrome JSON: one process per core, complete events with times
    trace = json.loads((tmp_path / "t.json").read_text())
    events = trace["traceEvents"]
    assert {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"} == set(range(8))
    assert all({"ts", "dur", "pid", "tid", "name"} <= set(e) for e in events if e["ph"] == "X")
    assert sum(e["ph"] == "X" for e in events) >= 8 * 4


def test_report_json_is_the_report_as_dict(capsys, matmul_stcobj, matmul_program, tmp_path):
    from stc_mlir.emulator import run as emulate

    assert run(capsys, matmul_stcobj, "--report-json", tmp_path / "r.json")[0] == 0
    inputs = stc_run._random_inputs(matmul_program)
    _, report = emulate(matmul_program, inputs)
    assert json.loads((tmp_path / "r.json").read_text()) == json.loads(json.dumps(report.as_dict()))


def test_npu_mlir_round_trips_through_an_stcobj(capsys, npu_mlir, tmp_path):
    out_path = tmp_path / "again.stcobj"
    code, first, err = run(capsys, npu_mlir, "-o", out_path, "--report-json", tmp_path / "a.json")
    assert code == 0 and f"stc-run: wrote {out_path}" in err
    code, second, _ = run(capsys, out_path, "--report-json", tmp_path / "b.json")
    assert code == 0
    assert json.loads((tmp_path / "a.json").read_text())["cycles"] == json.loads((tmp_path / "b.json").read_text())["cycles"]
    assert first.split("summary: ")[1].split("\n", 1)[1] == second.split("summary: ")[1].split("\n", 1)[1]


def test_timing_only_prints_the_same_report(capsys, matmul_stcobj, tmp_path):
    assert run(capsys, matmul_stcobj, "--report-json", tmp_path / "full.json")[0] == 0
    code, out, _ = run(capsys, matmul_stcobj, "--timing-only", "--threads", "2",
                       "--report-json", tmp_path / "timing.json")
    assert code == 0 and "summary: " in out
    assert (tmp_path / "full.json").read_text() == (tmp_path / "timing.json").read_text()
    assert error(capsys, matmul_stcobj, "--timing-only", "--check") == \
        "--check compares output values, which --timing-only does not compute"
    assert error(capsys, matmul_stcobj, "--threads", "0") == "--threads must be at least 1, got 0"


@pytest.mark.parametrize("flag", [["--batch", "2"], ["--schedule", "default"], ["--level", "0", "-o", "x.stcobj"],
                                  ["--check"], ["--dump-ir", "d"], ["--required-pass", "schedule-report"]])
def test_compile_options_do_not_apply_to_an_stcobj(capsys, matmul_stcobj, flag):
    message = error(capsys, matmul_stcobj, *flag)
    shown = [f for f in flag if f.startswith("-") and f != "--level"][0]
    assert message == f"{shown} does not apply to {matmul_stcobj}: it is already compiled"


def test_compile_options_do_not_apply_to_an_npu_mlir(capsys, npu_mlir):
    assert error(capsys, npu_mlir, "--schedule", "default") == \
        f"--schedule does not apply to {npu_mlir} (an npu program): it is already compiled"
    assert error(capsys, npu_mlir, "--shape", "a=1x2") == "--shape does not apply to IR: its shapes are fixed"


# -- bad input: one line, exit 1


def test_bad_models(capsys, tmp_path):
    assert error(capsys, "resnet5") == ("'resnet5' is neither a file (.onnx, .mlir, .stcobj) nor a built-in model "
                                        f"({', '.join(models.names())})")
    assert error(capsys, tmp_path / "m.onnx") == f"cannot open '{tmp_path / 'm.onnx'}': no such file"
    assert error(capsys, tmp_path / "m.stcobj") == f"cannot open '{tmp_path / 'm.stcobj'}': no such file"
    (tmp_path / "junk.onnx").write_bytes(b"\x01\x02junk")
    assert error(capsys, tmp_path / "junk.onnx").startswith(f"cannot read ONNX model '{tmp_path / 'junk.onnx'}'")
    (tmp_path / "junk.stcobj").write_text("junk")
    assert error(capsys, tmp_path / "junk.stcobj").startswith(f"{tmp_path / 'junk.stcobj'}: cannot read .stcobj")
    (tmp_path / "junk.mlir").write_text("func.func @main( {\n")
    message = error(capsys, tmp_path / "junk.mlir")
    assert message == f"{tmp_path / 'junk.mlir'}:1:18: Expected argument or type"  # one line (stc_mlir.ir)


@pytest.mark.parametrize(("argv", "message"), [
    (["--level", "2", "--schedule", "stc_mlir.schedules:resnet50_schedule"],
     "graph_schedule_level 2 applies only without a schedule function"),
    (["--level", "0", "--emit-schedule", "x.py"],
     "--emit-schedule writes the schedule found by --level 1-3 or the default level 3 (without --schedule)"),
    (["--schedule", "default", "--emit-schedule", "x.py"],
     "--emit-schedule writes the schedule found by --level 1-3 or the default level 3 (without --schedule)"),
    (["--level", "9"], "graph_schedule_level must be 0, 1, 2 or 3, got 9"),
    (["--schedule", "resnet50_schedule"], "schedule 'resnet50_schedule' is not MODULE:FUNCTION (e.g. "
                                          "stc_mlir.schedules:resnet50_schedule, my_schedules.py:my_schedule) or "
                                          "'default'"),
    (["--schedule", "stc_mlir.schedules:resnet_schedule"],
     "schedule 'stc_mlir.schedules:resnet_schedule': module 'stc_mlir.schedules' has no function 'resnet_schedule'"),
    (["--schedule", "no_such_pkg.sched:f"],
     "schedule 'no_such_pkg.sched:f': cannot import 'no_such_pkg.sched': ModuleNotFoundError: "
     "No module named 'no_such_pkg'"),
    (["--batch", "0"], "batch must be a positive integer, got 0"),
    (["--option", "layers=2"], "--option: unknown option(s) layers for model 'resnet50'; valid options: "),
    (["--required-pass", "fuse"], "required_pass: unknown pass 'fuse'; valid passes: convert-schedule-to-npu, "),
    (["--disabled-pass", "convert-schedule-to-npu"],
     "disabled_pass: 'convert-schedule-to-npu' cannot be disabled: the pipeline needs it to produce an npu program"),
    (["--shape", "data=1x3x32x32"], "--shape applies to ONNX files, not to a built-in model (use --batch, --option)"),
])
def test_bad_options(capsys, argv, message):
    assert error(capsys, "resnet50", "--option", "image_size=32", "--batch", "2", *argv).startswith(message)


@pytest.mark.parametrize(("argv", "message"), [
    (["--level", "two"], "argument --level: invalid int value: 'two'"),
    (["--shape", "data"], "argument --shape: expected NAME=D0xD1x..., got 'data'"),
    (["--option", "size"], "argument --option: expected NAME=VALUE, got 'size'"),
    (["--fast"], "unrecognized arguments: --fast"),
])
def test_malformed_arguments(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        stc_run.main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"stc-run: error: {message} (see --help)\n"


def test_a_wrong_batch_for_a_manual_schedule(capsys):
    # deepfm_schedule puts the batch on 8 cores, one part each: 12 samples do not divide
    message = error(capsys, "deepfm", "--batch", "12", "--schedule", "stc_mlir.schedules:deepfm_schedule")
    assert message == ("@main: group 'deepfm': core_bind [0, 1, 2, 3, 4, 5, 6, 7] cuts the batch into 8 parts, "
                       "which do not divide its batch of 12")


def test_a_schedule_function_from_a_file(capsys, tmp_path):
    path = tmp_path / "mine.py"
    path.write_text("def mine(mod, batch=2):\n    raise ValueError(f'my schedule saw batch {batch}')\n")
    assert error(capsys, "deepfm", "--batch", "3", "--schedule", f"{path}:mine") == \
        "ValueError: my schedule saw batch 3"
    assert error(capsys, "resnet50", "--schedule", f"{tmp_path / 'no.py'}:mine") == \
        f"schedule '{tmp_path / 'no.py'}:mine': no such file '{tmp_path / 'no.py'}'"


def test_mlir_batch_is_fixed(capsys, tmp_path):
    path = tmp_path / "g.mlir"
    path.write_text("func.func @main(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {\n"
                    "  %r = graph.relu %x : tensor<4x8xf16>\n  func.return %r : tensor<4x8xf16>\n}\n")
    assert error(capsys, path, "--batch", "2") == \
        f"{path} has batch 4; --batch 2 cannot change it (import the model again with that batch)"


# -- schedule selection and help


def test_schedule_selection_for_built_in_models():
    select = stc_run.select_schedule
    assert select("resnet50", 16, None) == (SCHEDULES["resnet50"], 16)
    assert select("resnet50", None, None) == (SCHEDULES["resnet50"], 16)  # the schedule's batch by default
    assert select("resnet50", 16, "default") == ("default", 16)
    assert select("resnet50", 8, None) == (None, 8)
    assert select("bert-base", 8, "my.mod:f") == ("my.mod:f", 8)
    assert select("deepfm", None, None) == (SCHEDULES["deepfm"], 2560)
    assert select("mobilenetv2", None, None) == (None, 1)


def test_stc_run_says_when_it_uses_a_manual_schedule(capsys):
    # options are checked before anything runs; the note comes before the model is built
    assert error(capsys, "deepfm", "--required-pass", "nothing").startswith("required_pass: unknown pass 'nothing'")
    assert capsys.readouterr().err == ""
    _, _, err = run(capsys, "deepfm", "--option", "opset=99")
    assert err.startswith("stc-run: deepfm at batch 2560: using the built-in manual schedule deepfm_schedule "
                          "(--schedule default for the default one)\n")
    _, _, err = run(capsys, "deepfm", "--option", "opset=99", "--schedule", "default")
    assert "manual schedule" not in err and "--option: " in err


def test_help_describes_the_built_in_schedules_and_the_default_job():
    text = stc_run.build_parser().format_help()
    for name, fn in SCHEDULES.items():
        assert f"{name} {schedule_batch(fn)}" in text.replace("\n", " ")
    assert f"runs {stc_run.DEFAULT_MODEL} at batch {stc_run.DEFAULT_BATCH}" in text.replace("\n", " ")
    assert stc_run.DEFAULT_MODEL in models.names()


def test_list_models(capsys):
    code, out, err = run(capsys, "--list-models")
    assert (code, err) == (0, "")
    for name in models.names():  # each model with its options and their defaults
        assert f"  {name} " in out
        assert "options: " + ", ".join(f"{k}={v}" for k, v in models.options(name).items()) in out
    assert "manual schedule: resnet50_schedule, batch 16" in out


def test_console_script_gives_a_one_line_diagnostic():
    done = subprocess.run(["stc-run", "no-such-model"], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith("stc-run: error: 'no-such-model' is neither a file") and done.stderr.count("\n") == 1


# -- end to end


def test_the_default_job(capsys, tmp_path, small_model, monkeypatch):
    # the default job's model is the session's small ResNet-50: reuse it (building it takes seconds)
    assert (stc_run.DEFAULT_MODEL, stc_run.DEFAULT_BATCH, stc_run.DEFAULT_OPTIONS) == \
        ("resnet50", SMALL["resnet50"]["batch"], {"image_size": SMALL["resnet50"]["image_size"]})
    proto, build = small_model("resnet50"), models.build
    monkeypatch.setattr(models, "build", lambda name, batch, **options: proto if
                        (name, batch, options) == ("resnet50", 2, {"image_size": 32}) else build(name, batch, **options))
    code, out, err = run(capsys, "--check", "--report-json", tmp_path / "r.json")
    assert code == 0, err
    assert f"summary: {stc_run.DEFAULT_MODEL} batch {stc_run.DEFAULT_BATCH} image_size=32, graph_schedule_level 3" in out
    assert re.search(r"  output: cosine 0\.99\d+  max relative error \S+  ok", out)
    for stage in ("build and import resnet50", "graph-canonicalize", "schedule", "convert-schedule-to-npu",
                  "npu-allocate", "emulate", "golden outputs from onnxruntime"):
        assert re.search(rf"^stc-run: {stage} \.\.\. \d+\.\d\d s$", err, re.M), stage
    assert json.loads((tmp_path / "r.json").read_text())["hazards"] == []


def test_an_onnx_file_and_its_stcobj(capsys, small_model, tmp_path):
    onnx.save(small_model("deepfm"), str(tmp_path / "d.onnx"))
    code, out, err = run(capsys, tmp_path / "d.onnx", "--check", "-o", tmp_path / "d.stcobj",
                         "--report-json", tmp_path / "a.json", "--trace", tmp_path / "t.json")
    assert code == 0, err
    assert f"summary: {tmp_path / 'd.onnx'}, graph_schedule_level 3" in out  # the default level
    assert "check vs onnxruntime (cosine similarity >= 0.999):\n  output: cosine " in out
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    code, again, _ = run(capsys, tmp_path / "d.stcobj", "--report-json", tmp_path / "b.json")
    assert code == 0
    first, second = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert first == second  # same program; its example inputs are random, but the timing does not depend on them


def test_a_model_with_no_op_left_copies_inputs_and_constants(capsys, tmp_path):
    """Identity-only: nothing to schedule; the program copies the input and the constant."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Identity", ["c"], ["z"])],
        "identities", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        initializer=[numpy_helper.from_array(np.arange(4, dtype=np.float32), "c")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              str(tmp_path / "i.onnx"))
    code, out, err = run(capsys, tmp_path / "i.onnx", "--check", "-o", tmp_path / "i.stcobj")
    assert code == 0, err
    assert re.search(r"  y: cosine 1\.0+ .* ok\n  z: cosine 1\.0+ .* ok", out)
    code, _, err = run(capsys, tmp_path / "i.stcobj")
    assert code == 0, err


def test_onnx_batch_and_shape(capsys, small_model, tmp_path):
    onnx.save(small_model("deepfm"), str(tmp_path / "d.onnx"))
    code, out, _ = run(capsys, tmp_path / "d.onnx", "--batch", "8", "--check")
    assert code == 0 and "  output: cosine " in out
    assert error(capsys, tmp_path / "d.onnx", "--shape", "feat_idx=2x39").startswith(
        "set_input_shape: unknown input 'feat_idx'; the model's inputs are 'feat_index', 'feat_value'")


def test_a_check_below_the_threshold_fails(capsys, small_model, tmp_path, monkeypatch):
    from stc_mlir import compare

    onnx.save(small_model("deepfm"), str(tmp_path / "d.onnx"))
    monkeypatch.setattr(compare, "MIN_COSINE", 1.5)  # no cosine reaches it
    code, out, _ = run(capsys, tmp_path / "d.onnx", "--check")
    assert code == 1
    assert re.search(r"  output: cosine \S+  max relative error \S+  FAIL", out)


def test_mlir_files_graph_and_schedule_level(capsys, tmp_path, monkeypatch):
    from stc_mlir.tools import stc_import

    assert stc_import.main(["deepfm", "--batch", "4", "-o", str(tmp_path / "d.mlir")]) == 0
    monkeypatch.chdir("/")  # the side-car weights are found next to the IR
    code, out, err = run(capsys, tmp_path / "d.mlir", "--check", "--dump-ir", tmp_path / "ir")
    assert code == 0, err
    assert "check vs the reference interpreter (cosine similarity >= 0.999):\n  output: cosine 1.000000" in out
    scheduled = tmp_path / "ir" / "04-schedule-verify.mlir"
    code, out, err = run(capsys, scheduled, "--check")
    assert code == 0, err
    assert re.search(r"^stc-run: schedule \.\.\. ", err, re.M) and "graph-canonicalize" not in err
    assert "  output: cosine 1.000000" in out
    assert error(capsys, scheduled, "--schedule", "stc_mlir.schedules:deepfm_schedule") == (
        "the module is already scheduled: a schedule function applies to a graph-level module "
        "(use the default schedule)")


def test_emit_schedule_round_trips(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "sched.py"
    common = ["resnet50", "--option", "image_size=32", "--batch", "4"]
    code, _, err = run(capsys, *common, "--level", "3", "--emit-schedule", script, "--report-json", tmp_path / "a.json")
    assert code == 0 and f"wrote the level 3 schedule to {script}" in err
    assert "def schedule(mod, batch=4):" in script.read_text()
    code, _, _ = run(capsys, *common, "--schedule", f"{script}:schedule", "--report-json", tmp_path / "b.json")
    assert code == 0
    a, b = (json.loads((tmp_path / f"{x}.json").read_text()) for x in "ab")
    assert a["cycles"] == b["cycles"] and a["commands"] == b["commands"]
