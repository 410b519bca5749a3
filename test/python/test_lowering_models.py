"""The built-in models lowered, allocated and emulated (hazard checks on), against
onnxruntime: with the default schedule at small sizes, and with the seeds' manual
schedules at their batch (smaller images / sequences, where the same schedules apply)."""

from __future__ import annotations

import functools

import onnxruntime as ort
import pytest
from xdsl.context import Context

from stc_mlir import models
from stc_mlir.compare import MIN_COSINE, cosine
from stc_mlir.emulator import run
from stc_mlir.frontend import import_onnx
from stc_mlir.graph_schedule import IRModule
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize
from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate
from stc_mlir.schedules import bert_schedule, deepfm_schedule, resnet50_schedule
from stc_mlir.schedules.default import default_schedule


@functools.cache
def _model(name: str, options: tuple):
    onnx_model = models.build(name, **dict(options))
    inputs = models.example_inputs(name, onnx_model)
    options = ort.SessionOptions()  # one thread: its pool would fight the emulator's BLAS
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    golden = ort.InferenceSession(onnx_model.SerializeToString(), options).run(None, inputs)
    return onnx_model, inputs, golden


def compile_and_run(name: str, schedule, **options):
    onnx_model, inputs, golden = _model(name, tuple(sorted(options.items())))
    module = import_onnx(onnx_model)
    GraphCanonicalize().apply(Context(), module)
    GraphFuseConvAddRelu().apply(Context(), module)
    schedule(IRModule(module))
    lowered = lower(module)
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    outputs, report = run(program, inputs)
    assert not report.hazards
    for got, want in zip(outputs.values(), golden):
        assert got.shape == want.shape
        assert cosine(want, got) >= MIN_COSINE
    return program, report


DEFAULT = {
    "resnet50": {"batch": 2, "image_size": 32},
    "mobilenetv2": {"batch": 2, "image_size": 32},
    "bert-base": {"batch": 2, "num_layers": 1, "seq_len": 32},
    "deepfm": {"batch": 16},
}


@pytest.mark.parametrize("name", list(DEFAULT))
def test_default_schedule(name):
    program, report = compile_and_run(name, default_schedule, **DEFAULT[name])
    assert len(program.cores) == 8
    assert report.peak["l1"] <= 1 << 20 and report.peak["wb"] <= 256 << 10


def test_deepfm_manual_schedule_keeps_the_network_in_l1():
    program, report = compile_and_run("deepfm", lambda m: deepfm_schedule(m, batch=2560), batch=2560)
    # one group, resident: nothing but the inputs, the output and the weights in DDR
    ddr = [n for n, b in program.buffers.items() if b.space == "ddr" and b.init is None]
    assert sorted(ddr) == ["in_feat_index", "in_feat_value", "out_output"]
    assert 500_000 < report.peak["l1"] <= 1 << 20


def test_bert_manual_schedule():
    program, report = compile_and_run("bert-base", lambda m: bert_schedule(m, batch=8),
                                      batch=8, num_layers=1, seq_len=32)
    assert report.peak["llb"] == 0  # every result but the last stays in L1


def test_resnet50_manual_schedule():
    program, report = compile_and_run("resnet50", lambda m: resnet50_schedule(m, batch=16),
                                      batch=16, image_size=32)
    assert report.peak["llb"] > 0  # the sub-groups' results waiting in LLB
