"""The TensorTurbo-style Python API: stc_mlir.model.from_onnx -> Model (input/output info,
set_input_shape, compile with its config) and stc_mlir.Executor (load_from_stcobj,
set_input, call, report)."""

from __future__ import annotations

import functools
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest

import stc_mlir
from stc_mlir import compare, models, stcobj
from stc_mlir.emulator import examples
from stc_mlir.executor import Executor, ExecutorError
from stc_mlir.model import CONFIG_KEYS, Model, ModelError, from_onnx
from stc_mlir.pipeline import PipelineError
from stc_mlir.schedules import SCHEDULES

REPORT_KEYS = {"cycles", "roofline_cycles", "ddr_bytes", "min_ddr_bytes", "peak_l1_bytes", "peak_llb_bytes",
               "mac_utilization", "hazards"}


@functools.cache
def dynamic_proto() -> onnx.ModelProto:
    return models.build("mobilenetv2", image_size=32, dynamic_batch=True)  # batch 'N'


@pytest.fixture
def resnet_proto(small_model):
    return small_model("resnet50")  # batch 2, 32 x 32


@pytest.fixture
def resnet_file(tmp_path, resnet_proto):
    path = tmp_path / "r50.onnx"
    onnx.save(resnet_proto, str(path))
    return path


def test_import_stc_mlir_is_cheap_and_exports_the_api():
    code = ("import sys, stc_mlir; heavy = [m for m in sys.modules if m.split('.')[0] in ('xdsl', 'onnx', 'numpy')]; "
            "assert not heavy, heavy; assert stc_mlir.from_onnx is stc_mlir.model.from_onnx; "
            "assert stc_mlir.Executor.__module__ == 'stc_mlir.executor'")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert stc_mlir.Model is Model


def test_input_and_output_info_in_tensorturbo_shape(resnet_file):
    model = from_onnx(str(resnet_file))
    assert model.get_input_info() == {"data": {"shape": [2, 3, 32, 32], "dtype": "float16"}}
    assert model.get_output_info() == {"output": {"shape": [2, 1000], "dtype": "float16"}}
    assert model.name == "r50"


def test_set_input_shape_changes_the_batch(resnet_proto):
    model = from_onnx(resnet_proto)
    model.set_input_shape({"data": [4, 3, 32, 32]})
    assert model.get_output_info()["output"]["shape"] == [4, 1000]
    model.set_input_shape("data", [1, 3, 32, 32])
    assert model.get_input_info()["data"]["shape"] == [1, 3, 32, 32]
    assert model.get_output_info()["output"]["shape"] == [1, 1000]
    module = model.graph_module(batch=8)  # a copy at another batch; the model keeps its shapes
    assert "tensor<8x3x32x32xf16>" in str(module.body.block.first_op.function_type)
    assert model.get_input_info()["data"]["shape"] == [1, 3, 32, 32]


def test_a_dynamic_batch_is_fixed_with_shape_or_set_input_shape():
    model = from_onnx(dynamic_proto())
    assert model.get_input_info()["input"]["shape"] == [-1, 3, 32, 32]
    with pytest.raises(stc_mlir.errors.StcError, match=r"input 'input' has a dynamic dimension 0"):
        model.get_output_info()
    model.set_input_shape({"input": [2, 3, 32, 32]})
    assert model.get_output_info()["output"]["shape"] == [2, 1000]
    fixed = from_onnx(dynamic_proto(), shape={"input": [3, 3, 32, 32]})
    assert fixed.get_output_info()["output"]["shape"] == [3, 1000]


def test_integer_inputs_are_int64():
    info = from_onnx(models.build("deepfm", batch=4)).get_input_info()
    assert info == {"feat_index": {"shape": [4, 39], "dtype": "int64"},
                    "feat_value": {"shape": [4, 39], "dtype": "float16"}}


@pytest.mark.parametrize(("args", "message"), [
    (({"image": [1, 3, 32, 32]},), "set_input_shape: unknown input 'image'; the model's inputs are 'data'"),
    (({"data": [1, 3, 32]},), "set_input_shape: 'data' has rank 4, got shape [1, 3, 32]"),
    (({"data": [0, 3, 32, 32]},), "the shape of 'data' must be a list of positive integers, got [0, 3, 32, 32]"),
    (({"data": [1.5, 3, 32, 32]},), "must be a list of positive integers, got [1.5, 3, 32, 32]"),
    (("data",), "set_input_shape('data', shape): the shape is missing"),
])
def test_set_input_shape_errors(args, message, resnet_proto):
    with pytest.raises(ModelError, match=re.escape(message)):
        from_onnx(resnet_proto).set_input_shape(*args)


def test_from_onnx_errors(tmp_path, resnet_proto):
    with pytest.raises(stc_mlir.errors.StcError, match="cannot open ONNX model '.*missing.onnx': no such file"):
        from_onnx(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(stc_mlir.errors.StcError, match="cannot read ONNX model"):
        from_onnx(bad)
    with pytest.raises(ModelError, match="unknown input 'x'; the model's inputs are 'data'"):
        from_onnx(resnet_proto, shape={"x": [1]})


def test_compile_checks_its_config_first(tmp_path, resnet_proto):
    model = from_onnx(resnet_proto)
    with pytest.raises(ModelError, match=f"compile: unknown config key 'opt_level'; valid keys: {', '.join(CONFIG_KEYS)}"):
        model.compile(tmp_path / "x.stcobj", opt_level=3)
    with pytest.raises(PipelineError, match="graph_schedule_level must be 0, 1, 2 or 3, got 4"):
        model.compile(tmp_path / "x.stcobj", graph_schedule_level=4)
    with pytest.raises(PipelineError, match="graph_schedule_level 1 applies only without a schedule function"):
        model.compile(tmp_path / "x.stcobj", schedule="stc_mlir.schedules:resnet50_schedule",
                      **{"tb.graph_schedule_level": 1})  # TensorTurbo's spelling
    with pytest.raises(PipelineError, match="disabled_pass: unknown pass 'FuseLargeOps'"):
        model.compile(tmp_path / "x.stcobj", disabled_pass=["FuseLargeOps"])
    with pytest.raises(PipelineError, match="schedule 'x' is not MODULE:FUNCTION"):
        model.compile(tmp_path / "x.stcobj", schedule="x")
    assert not (tmp_path / "x.stcobj").exists()


def test_default_output_file(resnet_file, tmp_path, monkeypatch, resnet_proto):
    assert from_onnx(str(resnet_file)).default_output() == str(tmp_path / "r50.stcobj")
    monkeypatch.chdir(tmp_path)
    assert from_onnx(resnet_proto).default_output() == str(tmp_path / f"{resnet_proto.graph.name}.stcobj")


# -- Executor on a hand-written program (matmul split by rows over 8 cores)


@pytest.fixture
def matmul_stcobj(tmp_path):
    weight = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    path = tmp_path / "mm.stcobj"
    stcobj.save(examples.matmul_by_rows((64, 32), weight), path)
    return path, weight


def test_executor_runs_an_stcobj(matmul_stcobj):
    path, weight = matmul_stcobj
    executor = stc_mlir.Executor.load_from_stcobj(path)
    assert executor.get_input_info() == {"a": {"shape": [64, 32], "dtype": "float16"}}
    assert executor.get_output_info() == {"c": {"shape": [64, 64], "dtype": "float16"}}
    assert executor.report is None
    a = np.random.default_rng(2).standard_normal((64, 32)).astype(np.float32)
    executor.set_input({"a": a})
    (c,) = executor()
    want = a.astype(np.float16).astype(np.float32) @ weight.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    report = executor.report.as_dict()
    assert REPORT_KEYS <= set(report)
    assert report["cycles"] > 0 and report["hazards"] == []
    (again,) = executor.call()  # TensorTurbo's name for the call
    np.testing.assert_array_equal(again, c)


def test_executor_errors(matmul_stcobj, tmp_path):
    executor = Executor.load_from_stcobj(matmul_stcobj[0])
    with pytest.raises(ExecutorError, match="input\\(s\\) 'a' not set: call set_input first"):
        executor()
    with pytest.raises(ExecutorError, match="unknown input\\(s\\) 'b'; the model's inputs are 'a'"):
        executor.set_input({"b": np.zeros(3)})
    executor.set_input({"a": np.zeros((3, 3))})
    with pytest.raises(stc_mlir.errors.StcError, match=r"input 'a' has shape \[3, 3\]"):
        executor()
    with pytest.raises(ExecutorError, match="cannot open '.*nothing.stcobj': no such file"):
        Executor.load_from_stcobj(tmp_path / "nothing.stcobj")
    (tmp_path / "junk.stcobj").write_text("junk")
    with pytest.raises(stc_mlir.errors.StcError, match="cannot read .stcobj"):
        Executor.load_from_stcobj(tmp_path / "junk.stcobj")


# -- end to end: compile to an .stcobj, run it, compare with onnxruntime


@pytest.mark.parametrize("name", ["bert-base", "deepfm"])  # ResNet-50: stc-run's default job (test_stc_run)
def test_compile_and_execute_small_models(name, small_model, tmp_path):
    proto = small_model(name)
    model = from_onnx(proto)
    path = model.compile(tmp_path / f"{name}.stcobj")
    assert path == str(tmp_path / f"{name}.stcobj")
    executor = Executor.load_from_stcobj(path)
    assert executor.get_input_info() == model.get_input_info()
    assert executor.get_output_info() == model.get_output_info()
    inputs = models.example_inputs(name, proto)
    executor.set_input(inputs)
    outputs = executor()
    golden = compare.onnxruntime_outputs(proto, inputs)
    for want, got in zip(golden, outputs, strict=True):
        assert got.shape == want.shape
        assert compare.cosine(want, got) >= compare.MIN_COSINE
    report = executor.report.as_dict()
    assert REPORT_KEYS <= set(report) and report["hazards"] == []
    assert report["cycles"] >= report["roofline_cycles"] > 0
    assert report["ddr_bytes"] >= report["min_ddr_bytes"] > 0


def test_compile_a_manual_schedule_at_another_batch(small_model, tmp_path, monkeypatch):
    # the model has batch 16; batch=2560 compiles it at the batch deepfm_schedule is written for
    model = from_onnx(small_model("deepfm"))
    monkeypatch.chdir(tmp_path)
    path = model.compile(schedule=SCHEDULES["deepfm"], batch=2560, required_pass=["FuseConvAddBnRelu"],
                         dump_ir="ir")
    assert path == str(tmp_path / f"{small_model('deepfm').graph.name}.stcobj")  # default: in the cwd
    assert model.get_input_info()["feat_index"]["shape"] == [16, 39]  # the model itself is unchanged
    proto = models.build("deepfm", batch=2560)
    inputs = models.example_inputs("deepfm", proto)
    executor = Executor.load_from_stcobj(path)
    executor.set_input(inputs)
    (out,) = executor()
    assert compare.cosine(compare.onnxruntime_outputs(proto, inputs)[0], out) >= compare.MIN_COSINE
    # the seeds' schedule: the whole network one group, 320 samples on each core
    scheduled = (tmp_path / "ir" / "04-schedule-verify.mlir").read_text()
    assert scheduled.count("schedule.group") == 1
    assert ("schedule.group \"deepfm\" (%feat_index_1 = %feat_index : tensor<2560x39xi64>" in scheduled
            and "core_bind = #schedule.core_bind<[0, 1, 2, 3, 4, 5, 6, 7]>" in scheduled)


def test_compile_dumps_every_stage(small_model, tmp_path):
    model = from_onnx(small_model("deepfm"))
    model.compile(tmp_path / "d.stcobj", dump_ir=tmp_path / "ir")
    files = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert files == ["00-input.mlir", "01-graph-canonicalize.mlir", "02-graph-fuse-conv-add-relu.mlir",
                     "03-schedule.mlir", "04-schedule-verify.mlir", "05-convert-schedule-to-npu.mlir",
                     "06-npu-allocate.mlir", "weights.bin"]
    assert "npu.program" in (tmp_path / "ir" / "06-npu-allocate.mlir").read_text()
