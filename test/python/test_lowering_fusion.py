"""Streamed elementwise chains computed in one stage (lowering/vector.py, ChainRule): a
group too big for L1 streams op by op through LLB, except that consecutive unary / binary
ops each feeding only the next are computed tile by tile in L1 and stored once."""

from __future__ import annotations

import numpy as np

from stc_mlir.dialects import graph as g
from stc_mlir.emulator import run
from stc_mlir.graph_schedule import Group, GroupOps, NPUMemScope, Schedule, ScheduleInfo
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate

from lowering_helpers import f16, function, lower_and_run

F = np.float16
SHAPE = (1, 16, 192, 192)  # 1.2 MB: with two cores the group cannot stay in L1


def conv3x3(b, x, c):
    w, bias = f16(c, c, 3, 3, scale=1 / (3 * c ** 0.5)), f16(c, scale=0.1)
    return b(g.Conv2DOp.make(x, b.const(w), b.const(bias), pads=(1, 1, 1, 1), activation="none"))


def streamed(body):
    """`body` as one group on cores 0 and 1 with its result in DDR (streamed: too big for L1)."""
    module = function({"x": (SHAPE, F)}, body)
    f = module.body.block.first_op
    grp = Group([f.args[0]], f.body.block.last_op.operands[0])
    GroupOps([grp])(module)
    Schedule([ScheduleInfo(grp, NPUMemScope.DDR, [[0, 1]])], verify=False)(module)
    return module


def bn_relu_conv(b, x):
    scale, shift = f16(16, 1, 1, scale=0.5), f16(16, 1, 1, scale=0.1)
    y = b(g.ReluOp.make(b(g.AddOp.make(b(g.MulOp.make(x, b.const(scale))), b.const(shift)))))
    return b(g.SigmoidOp.make(conv3x3(b, y, 16)))


def lowered(module, **options):
    low = lower(module, **options)
    return low, allocate(low.program, low.live, low.phase_items)


def test_bn_and_relu_stream_as_one_stage_with_the_same_bytes():
    module = streamed(bn_relu_conv)
    x = {"x": f16(*SHAPE)}
    outputs, report, program = lower_and_run(module, x, max_ulps=2)
    # the mul, add and relu leave one LLB scratch (the relu's), the conv another
    assert sorted(b.space for b in program.buffers.values() if b.space == "llb") == ["llb"] * 2
    low_off, off = lowered(module, fuse_elementwise=False)
    assert len([b for b in off.buffers.values() if b.space == "llb"]) == 4
    low_on, _ = lowered(module)
    assert len(low_on.phase_items) == len(low_off.phase_items) - 2
    # each op still rounds to f16 in turn: the same bytes as op by op
    unfused, report_off = run(off, dict(x))
    assert not report_off.hazards
    for a, b in zip(outputs.values(), unfused.values()):
        np.testing.assert_array_equal(a, b)
    # one pass over the data instead of three: fewer LLB bytes moved
    moved = lambda r: r.bytes_read["llb"] + r.bytes_written["llb"]  # noqa: E731
    assert moved(report) < moved(report_off)


def test_a_value_used_twice_ends_the_chain():
    def body(b, x):
        shift = f16(16, 1, 1, scale=0.1)
        y = b(g.AddOp.make(x, b.const(shift)))
        r = b(g.ReluOp.make(y))  # y is used again below: add is a stage of its own
        t = b(g.TanhOp.make(b(g.MulOp.make(r, y))))  # relu, mul (y from LLB) and tanh are one
        return b(g.SigmoidOp.make(conv3x3(b, t, 16)))

    module = streamed(body)
    lower_and_run(module, {"x": f16(*SHAPE)}, max_ulps=2)
    low_on, _ = lowered(module)
    low_off, _ = lowered(module, fuse_elementwise=False)
    assert len(low_on.phase_items) == len(low_off.phase_items) - 2
