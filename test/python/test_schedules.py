"""The built-in manual schedules on the built-in models: the seeds' structure, verified
against stcp920, and the same results as the graph level.

Structure is checked at the seeds' sizes (ResNet-50 224 x 224 at batch 16, BERT-base seq
128 at batch 8, DeepFM at batch 2560); numerics on smaller images / sequences, where the
same schedules apply, to keep the reference interpreter quick.
"""

from __future__ import annotations

import functools
import io

import numpy as np
import pytest
from xdsl.context import Context

from stc_mlir import ir, models, reference
from stc_mlir import target as targets
from stc_mlir.dialects import schedule as s
from stc_mlir.frontend import import_onnx
from stc_mlir.graph_schedule import IRModule, ListItems, ListOps, NPUMemScope, ScheduleError
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize
from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu
from stc_mlir.passes.schedule_report import report
from stc_mlir.passes.schedule_verify import analyse, verify_function
from stc_mlir.schedules import bert_schedule, deepfm_schedule, resnet50_schedule

DDR, LLB, L1 = NPUMemScope.DDR, NPUMemScope.LLB, NPUMemScope.L1
A = ((0, 1, 2, 3), (4, 5, 6, 7))
B = ((1, 3), (5, 7), (0, 2), (4, 6))
C = tuple((c,) for c in (3, 7, 2, 6, 1, 5, 0, 4))
D = tuple((c,) for c in (7, 6, 5, 4, 3, 2, 1, 0))

# the seeds' resnet50_schedule listing: (kind, group, sub-group, mem_scope, core_bind)
RESNET_LISTING = [
    ("split", None, None, DDR, A),
    ("group", "group_0", 0, LLB, A), ("group", "group_0", 1, L1, A),
    ("concat", None, None, L1, B), ("group", "group_1", 0, LLB, B),
    ("group", "group_0", 2, LLB, A), ("group", "group_0", 3, L1, A),
    ("concat", None, None, L1, B), ("group", "group_1", 1, L1, B),
    ("concat", None, None, L1, C), ("group", "group_2", 0, LLB, C),
    ("group", "group_0", 4, LLB, A), ("group", "group_0", 5, L1, A),
    ("concat", None, None, L1, B), ("group", "group_1", 2, LLB, B),
    ("group", "group_0", 6, LLB, A), ("group", "group_0", 7, L1, A),
    ("concat", None, None, L1, B), ("group", "group_1", 3, L1, B),
    ("concat", None, None, L1, C), ("group", "group_2", 1, L1, C),
    ("concat", None, None, L1, D), ("group", "group_3", 0, DDR, D),
]


@functools.cache
def model(name: str, **options):
    return models.build(name, **options)


def graph_level(name: str, passes: bool = False, **options):
    onnx_model = model(name, **options)
    module = import_onnx(onnx_model)
    if passes:
        GraphCanonicalize().apply(Context(), module)
        GraphFuseConvAddRelu().apply(Context(), module)
    return module, models.example_inputs(name, onnx_model)


def listing(module) -> list[tuple]:
    rows = []
    for op in ListItems(IRModule(module)["main"]):
        group = (op.group_name.data, op.index.data) if isinstance(op, s.GroupOp) else (None, None)
        rows.append((s.op_kind(op), *group, op.mem_scope.data, op.core_bind.data))
    return rows


def reparsed(module):
    text = io.StringIO()
    ir.print_module(module, text)
    again = ir.parse_text(text.getvalue())
    again.verify()
    return again


@functools.cache
def resnet50_b16():
    module, _ = graph_level("resnet50", passes=True, batch=16)
    resnet50_schedule(IRModule(module), batch=16)
    return module


def test_resnet50_schedule_has_the_seeds_structure():
    module = resnet50_b16()
    assert listing(module) == RESNET_LISTING
    ops = ListOps(module.body.block.first_op)
    assert (len(ops["split"]), len(ops["concatenate"]), len(ops["group"])) == (1, 7, 8 + 4 + 2 + 1)
    # group_0 ends at layer2.0's residual block, group_1 at layer3.0's, group_2 at layer4.0's
    outputs = {op.group_name.data: op.output.type for op in ops["group"]}
    assert [str(outputs[f"group_{i}"]) for i in range(4)] == [
        "tensor<2x512x28x28xf16>", "tensor<4x1024x14x14xf16>", "tensor<8x2048x7x7xf16>", "tensor<16x1000xf16>"]


def test_resnet50_schedule_fits_stcp920_with_these_numbers():
    items = verify_function(resnet50_b16().body.block.first_op, targets.load("stcp920"))
    # every sub-group needs the same 882 KiB per core: the inverted pyramid at work
    assert {it.l1_peak[1] for it in items if it.label.startswith("group")} == {903_168}
    assert max(it.llb for it in items) == 4_816_896  # three 1,568 KiB results waiting in LLB
    text = report(resnet50_b16().body.block.first_op, targets.load("stcp920"))
    assert "16  0/8        2  LLB        [[0, 1, 2, 3], [4, 5, 6, 7]]            903,168  1,605,632" in text
    assert text.endswith("peak LLB: 4,816,896 bytes (57.4%) at group 'group_0' sub-group 6\n")


def test_resnet50_schedule_keeps_the_results():
    # the imported graph (BatchNorm and the residual adds not fused) at 32 x 32: the same
    # groups, split the same way
    module, inputs = graph_level("resnet50", batch=16, image_size=32)
    want = reference.run(module, inputs)
    resnet50_schedule(IRModule(module), batch=16)
    assert [row[:3] for row in listing(module)] == [row[:3] for row in RESNET_LISTING]
    np.testing.assert_array_equal(reference.run(module, inputs)[0], want[0])


def test_resnet50_schedule_is_written_for_one_batch():
    module, _ = graph_level("resnet50", batch=16, image_size=32)
    with pytest.raises(ScheduleError, match=r"resnet50_schedule\(batch=8\) is applied to a model with batch 16: "
                                            r"pass batch=16 or build the model with batch 8"):
        resnet50_schedule(IRModule(module), batch=8)


def test_bert_schedule_has_the_seeds_table():
    module, _ = graph_level("bert-base", batch=8)
    bert_schedule(IRModule(module), batch=8)
    rows = listing(module)
    flat = tuple((c,) for c in range(8))
    pairs = ((0, 1), (2, 3), (4, 5), (6, 7))
    assert rows[:2] == [("group", "pre_encoding", 0, L1, flat), ("group", "attention_mask", 0, L1, flat)]
    for layer in range(12):
        name = f"encoder.{layer}"
        assert rows[2 + 9 * layer: 11 + 9 * layer] == [
            *[("group", f"{name}.group_{i}", 0, L1, flat) for i in range(5)],
            ("split", None, None, L1, pairs),
            ("group", f"{name}.double_matmul", 0, L1, pairs),
            ("group", f"{name}.double_matmul", 1, L1, pairs),
            ("concat", None, None, DDR if layer == 11 else L1, flat),
        ]
    assert len(rows) == 2 + 12 * 9
    items = analyse(module.body.block.first_op)
    peak = max(items, key=lambda it: it.l1_peak[1])
    assert (peak.label, peak.l1_peak[1]) == ("group 'encoder.0.group_2'", 983_296)
    assert max(it.llb for it in items) == 0


def test_bert_schedule_keeps_the_results():
    module, inputs = graph_level("bert-base", batch=8, seq_len=32, num_layers=2, pooler=True)
    want = reference.run(module, inputs)
    bert_schedule(IRModule(module), batch=8)
    names = [op.group_name.data for op in ListItems(IRModule(module)["main"]) if isinstance(op, s.GroupOp)]
    assert names[-1] == "post_encoding"
    for a, b in zip(want, reference.run(module, inputs), strict=True):
        np.testing.assert_array_equal(a, b)


def test_deepfm_schedule():
    module, inputs = graph_level("deepfm", batch=320 * 8)
    want = reference.run(module, inputs)
    deepfm_schedule(IRModule(module))
    assert listing(module) == [("group", "deepfm", 0, DDR, tuple((c,) for c in range(8)))]
    (item,) = analyse(module.body.block.first_op)
    assert item.l1_peak == (0, 572_160)  # 320 samples per core
    np.testing.assert_array_equal(reference.run(module, inputs)[0], want[0])
    # printed and parsed back, it is still the same schedule computing the same results
    again = reparsed(module)
    assert listing(again) == listing(module)
    np.testing.assert_array_equal(reference.run(again, inputs)[0], want[0])
