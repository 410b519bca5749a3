"""How the lowering follows a schedule: streaming what does not fit L1, weight chunks,
groups kept in L1 across cores with halos, LLB-scoped results, moves between core sets
over the NoC, batch splits and concats. Every program runs on the emulator with hazard
checks and gives the reference interpreter's results."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as s
from stc_mlir.graph_schedule import (
    FuseTargetOps, Group, GroupOps, ListItems, NPUMemScope, Schedule, ScheduleInfo, SplitGroups,
)
from stc_mlir import target as targets
from stc_mlir.emulator import run
from stc_mlir.passes.lowering import LoweringError, lower
from stc_mlir.passes.npu_allocate import allocate

from lowering_helpers import default_schedule, f16, function, lower_and_run

F = np.float16
L1, LLB, DDR = NPUMemScope.L1, NPUMemScope.LLB, NPUMemScope.DDR


def dmas(program, src_space, dst_space, cross_core=None):
    """The DMAs of `program` from one memory space to another (between different cores
    only, or the same core only, for L1 to L1)."""
    out = []
    for core, cmds in program.cores.items():
        for c in cmds:
            if c.op != "dma":
                continue
            src, dst = program.buffers[c.tiles["src"].buffer], program.buffers[c.tiles["dst"].buffer]
            if (src.space, dst.space) != (src_space, dst_space):
                continue
            if cross_core is not None and (src.core != dst.core) != cross_core:
                continue
            out.append(c)
    return out


def conv3x3(b, x, cin, cout, relu=True):
    w, bias = f16(cout, cin, 3, 3, scale=1 / (3 * cin ** 0.5)), f16(cout, scale=0.1)
    return b(g.Conv2DOp.make(x, b.const(w), b.const(bias), pads=(1, 1, 1, 1),
                             activation="relu" if relu else "none"))


def test_activation_larger_than_l1_streams_through_double_buffers():
    # 2 MB in and 2 MB out on two cores: 2 MB per core, twice the L1
    module = default_schedule(function({"x": ((1, 16, 256, 256), F)},
                                       lambda b, x: conv3x3(b, x, 16, 16)), cores=[0, 1])
    _, report, program = lower_and_run(module, {"x": f16(1, 16, 256, 256)}, max_ulps=2)
    convs = [c for c in program.cores[0] if c.op == "conv2d"]
    assert len(convs) >= 4  # many tiles of rows
    slots = {n for n, b in program.buffers.items() if b.core == 0 and b.space == "l1"}
    assert len(slots) == 4  # two input slots and two output slots
    loads = dmas(program, "ddr", "l1")
    assert len({c.tiles["dst"].buffer for c in loads if c.tiles["dst"].buffer in slots}) == 2
    # consecutive tiles overlap by the halo of the 3x3 window: one row each side
    rows = [c.tiles["input"].shape[2] for c in convs]
    assert sum(rows) > 256 // 2
    assert report.peak["l1"] <= 1 << 20


def test_conv_weights_larger_than_the_weight_buffer_come_in_chunks():
    # 256 x 256 x 3 x 3 fp16 = 1.2 MB of weights, the weight buffer holds 256 KiB
    module = default_schedule(function({"x": ((2, 256, 8, 8), F)},
                                       lambda b, x: conv3x3(b, x, 256, 256)))
    _, report, program = lower_and_run(module, {"x": f16(2, 256, 8, 8)}, max_ulps=2)
    convs = [c for c in program.cores[0] if c.op == "conv2d"]
    # 32 output channels per chunk (the N lanes), input channels cut too (fp32 partials)
    assert {c.tiles["weight"].shape[0] for c in convs} == {32}
    assert any(c.tiles["output"].dtype == "f32" for c in convs)
    assert any("residual" in c.tiles and c.tiles["residual"].dtype == "f32" for c in convs)
    wb = {n for n, b in program.buffers.items() if b.core == 0 and b.space == "wb"}
    assert len(wb) >= 2  # double-buffered chunks (and the bias)
    assert report.peak["wb"] <= 256 << 10
    # a chunk leaves DDR about once: the cores pass it on over the NoC
    weights = 256 * 256 * 9 * 2
    from_ddr = sum(c.tiles["dst"].numel * 2 for c in dmas(program, "ddr", "wb"))
    assert from_ddr < 2 * weights + 8 * 1024
    assert dmas(program, "wb", "wb", cross_core=True)


def test_matmul_weights_larger_than_the_weight_buffer_come_in_column_chunks():
    module = default_schedule(function(
        {"x": ((64, 512), F)}, lambda b, x: b(g.MatmulOp.make(x, b.const(f16(512, 640, scale=0.05))))))
    _, _, program = lower_and_run(module, {"x": f16(64, 512)}, max_ulps=2)
    mms = [c for c in program.cores[0] if c.op == "matmul"]
    assert len(mms) > 1 and all(c.tiles["rhs"].shape[1] % 32 == 0 for c in mms)


def two_convs(b, x):
    return conv3x3(b, conv3x3(b, x, 8, 16), 16, 8, relu=False)


def test_group_in_l1_over_four_cores_exchanges_halo_rows_over_the_noc():
    module = function({"x": ((1, 8, 32, 16), F)}, two_convs)
    f = module.body.block.first_op
    grp = Group([f.args[0]], f.body.block.last_op.operands[0])
    GroupOps([grp])(module)
    Schedule([ScheduleInfo(grp, L1, [[0, 1, 2, 3]])])(module)
    _, _, program = lower_and_run(module, {"x": f16(1, 8, 32, 16)}, max_ulps=2)
    halos = dmas(program, "l1", "l1", cross_core=True)
    # the second conv's input rows cross 3 core boundaries: one row (16 channels x 16
    # columns) each way, into the margin rows of the neighbour's frame
    assert len(halos) == 6 and all(c.tiles["dst"].shape == (16, 16) for c in halos)
    # the intermediate never leaves L1
    assert not [n for n, b in program.buffers.items() if b.space in ("ddr", "llb")
                and not n.startswith(("in_", "out_")) and b.init is None]


def test_llb_scoped_intermediate_and_a_consumer_on_other_cores():
    def body(b, x):
        return b(g.SigmoidOp.make(b(g.ReluOp.make(x))))

    module = function({"x": ((4, 64, 64), F)}, body)
    f = module.body.block.first_op
    relu, sigmoid = list(f.body.block.ops)[:2]
    Schedule([ScheduleInfo(relu, LLB, [[0, 1], [2, 3]]),
              ScheduleInfo(sigmoid, DDR, [[4, 5], [6, 7]])])(module)
    _, _, program = lower_and_run(module, {"x": f16(4, 64, 64)})
    assert any(b.space == "llb" for b in program.buffers.values())
    assert dmas(program, "l1", "llb") and dmas(program, "llb", "l1")
    assert {core for core, cmds in program.cores.items() if any(c.op == "unary" for c in cmds)} == set(range(8))


def relu_then_tanh(relu_cores, tanh_cores):
    """relu in L1 on `relu_cores`, then tanh (to DDR) on `tanh_cores`: the program."""
    module = function({"x": ((2, 16, 32, 32), F)},
                      lambda b, x: b(g.TanhOp.make(b(g.ReluOp.make(x)))))
    f = module.body.block.first_op
    relu, tanh = list(f.body.block.ops)[:2]
    Schedule([ScheduleInfo(relu, L1, relu_cores), ScheduleInfo(tanh, DDR, tanh_cores)])(module)
    return lower_and_run(module, {"x": f16(2, 16, 32, 32)})[2]


def test_producer_and_consumer_on_different_cores_move_over_the_noc():
    program = relu_then_tanh([[0, 1], [2, 3]], [[4, 5], [6, 7]])
    moves = dmas(program, "l1", "l1", cross_core=True)
    assert moves
    for c in moves:  # pulled by the consumer's cores from the producer's
        src, dst = program.buffers[c.tiles["src"].buffer], program.buffers[c.tiles["dst"].buffer]
        assert src.core in (0, 1, 2, 3) and dst.core in (4, 5, 6, 7)
    # the relu's result stays in L1: DDR sees only the model's input and output
    assert not [b for n, b in program.buffers.items() if b.space == "ddr" and not n.startswith(("in_", "out_"))]


def test_same_core_bind_reads_the_producer_in_place():
    program = relu_then_tanh([[0, 1], [2, 3]], [[0, 1], [2, 3]])
    assert not dmas(program, "l1", "l1")  # no move at all


def test_batch_split_sub_groups_in_l1_and_llb_joined_by_a_concat():
    def body(b, x):
        return conv3x3(b, b(g.ReluOp.make(x)), 8, 8)

    module = function({"x": ((4, 8, 16, 16), F)}, body)
    f = module.body.block.first_op
    grp = Group([f.args[0]], f.body.block.last_op.operands[0])
    GroupOps([grp])(module)
    SplitGroups({grp: 2})(module)
    items = ListItems(f)
    split, concat = items[0], items[-1]
    Schedule([ScheduleInfo(split, DDR, [0, 1]),
              ScheduleInfo(grp[0], LLB, [[0, 1], [2, 3]]),
              ScheduleInfo(grp[1], L1, [[4, 5], [6, 7]]),
              ScheduleInfo(concat, DDR, [0, 1, 2, 3])])(module)
    _, _, program = lower_and_run(module, {"x": f16(4, 8, 16, 16)}, max_ulps=2)
    # the split in DDR is a view of the input: no copy
    assert not dmas(program, "ddr", "ddr")


def test_unsupported_op_names_the_item_and_the_op():
    module = default_schedule(function(
        {"x": ((2, 8), F)}, lambda b, x: b(g.ReduceL2Op.make(x, axes=(1,), keepdims=True))))
    with pytest.raises(LoweringError, match=r"^@main: group 'reduce_l2_0': graph.reduce_l2 is "
                                            r"not supported: the npu lowering has no rule for it"):
        lower(module)
    module = default_schedule(function({"x": ((4, 3), np.int64)},
                                       lambda b, x: b(g.ReduceMeanOp.make(x, axes=(1,), keepdims=True))))
    with pytest.raises(LoweringError, match=r"^@main: group 'reduce_mean_0': graph.reduce_mean: a mean of "
                                            r"i64 tensors is not supported \(cast to f16 first\)"):
        lower(module)


def test_integer_and_bool_tensors_are_computed_exactly_on_the_npu():
    """ids plus offsets in i64 beyond f16/f32 precision, a bool mask from a comparison and
    a select: the vector unit's integer ALU (no float rounding)."""
    big = np.array([[2**40 + 1, 3, -7], [5, 2**33 + 3, 9]], dtype=np.int64)

    def build(b, x):
        offset = b.const(np.array([1, 2, 3], dtype=np.int64))
        ids = b(g.AddOp.make(x, offset))
        return b(g.WhereOp.make(b(g.GreaterOp.make(ids, offset)), ids, b(g.NegOp.make(ids))))
    module = default_schedule(function({"x": ((2, 3), np.int64)}, build))
    outputs, _, program = lower_and_run(module, {"x": big})  # equal to the reference, bit for bit
    ids = big + np.array([1, 2, 3])
    np.testing.assert_array_equal(next(iter(outputs.values())), np.where(ids > [1, 2, 3], ids, -ids))
    assert {c.op for _, _, c in program.commands()} >= {"binary", "compare", "select", "unary"}


def test_fused_group_inside_a_group_is_lowered_with_it():
    def body(b, x):
        return b(g.TanhOp.make(conv3x3(b, b(g.ReluOp.make(x)), 8, 8)))

    module = function({"x": ((2, 8, 16, 16), F)}, body)
    f = module.body.block.first_op
    relu, _, _, conv, tanh = [o for o in f.body.block.ops][:5]
    fused = Group([relu.results[0]], conv.results[0])
    FuseTargetOps([fused])(module)
    outer = Group([f.args[0]], f.body.block.last_op.operands[0])
    GroupOps([outer])(module)
    Schedule([ScheduleInfo(outer, DDR, [[0, 1], [2, 3]])])(module)
    assert any(isinstance(o, s.GroupOp) and o.fused is not None for o in outer[0].body_ops())
    _, _, program = lower_and_run(module, {"x": f16(2, 8, 16, 16)}, max_ulps=2)
    assert {c.op for cmds in program.cores.values() for c in cmds} >= {"conv2d", "unary"}


def test_group_too_big_for_l1_streams_op_by_op_through_llb():
    def body(b, x):
        return b(g.SigmoidOp.make(conv3x3(b, b(g.ReluOp.make(x)), 16, 16, relu=False)))

    module = function({"x": ((1, 16, 192, 192), F)}, body)
    f = module.body.block.first_op
    grp = Group([f.args[0]], f.body.block.last_op.operands[0])
    GroupOps([grp])(module)
    Schedule([ScheduleInfo(grp, DDR, [[0, 1]])], verify=False)(module)
    _, report, program = lower_and_run(module, {"x": f16(1, 16, 192, 192)}, max_ulps=2)
    scratch = [n for n, b in program.buffers.items() if b.space == "llb"]
    assert len(scratch) == 2  # the relu's and the conv's results
    assert report.peak["l1"] <= 1 << 20


@pytest.mark.parametrize("scope", [L1, LLB, DDR])
def test_model_outputs_from_any_scope_returned_twice_or_an_input(scope):
    def body(b, x):
        r = b(g.ReluOp.make(x))
        return [r, b(g.TanhOp.make(r)), r, x]

    module = default_schedule(function({"x": ((2, 8, 8), F)}, body), scope=scope)
    outputs, _, program = lower_and_run(module, {"x": f16(2, 8, 8)})
    assert len(outputs) == len(program.outputs) == 4


def test_another_target_description_sizes_the_tiles(tmp_path):
    text = open(targets.load("stcp920").path).read()
    path = tmp_path / "tiny.toml"
    path.write_text(text.replace('name = "stcp920"', 'name = "tiny"').replace(
        "size = 1_048_576", "size = 65_536"))
    module = default_schedule(function({"x": ((2, 16, 64, 64), F)},
                                       lambda b, x: conv3x3(b, x, 16, 16)))
    lowered = lower(module, str(path))
    assert lowered.program.target == str(path)
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    _, report = run(program, {"x": f16(2, 16, 64, 64)})
    assert not report.hazards and report.peak["l1"] <= 65_536
