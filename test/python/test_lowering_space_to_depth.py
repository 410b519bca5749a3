"""Strided convs on few input channels (stems) lowered in space-to-depth form (conv.py,
`ConvRule._space_to_depth`): the input moved into L1 as s*s strided DMAs per tile, the
weights rearranged at compile time into a stride-1 kernel. Results equal to the reference
interpreter up to fp32 summation order (2 fp16 ulps), no hazards, from DDR, from an earlier
item's L1 result and inside a resident group."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import Group, GroupOps, ListItems, NPUMemScope, Schedule, ScheduleInfo
from stc_mlir.passes.lowering import conv as cv
from stc_mlir.passes.lowering.conv import s2d_axis

from lowering_helpers import default_schedule, f16, function, lower_and_run

F = np.float16

STEMS = {
    # name: (input shape, weight shape, strides, pads, the space-to-depth weight shape)
    "7x7/2 on 3 channels": ((2, 3, 64, 64), (16, 3, 7, 7), (2, 2), (3, 3, 3, 3), (16, 12, 4, 4)),
    "3x3/2 on 3 channels, odd sizes": ((2, 3, 129, 127), (64, 3, 3, 3), (2, 2), (1, 1, 1, 1),
                                       (64, 12, 2, 2)),
    "3x3/2 on 3 channels, odd sizes, no pads": ((2, 3, 131, 97), (64, 3, 3, 3), (2, 2), (0, 0, 0, 0),
                                                (64, 12, 2, 2)),
    "5x5/2 asymmetric pads, odd sizes": ((2, 3, 77, 61), (32, 3, 5, 5), (2, 2), (2, 1, 0, 2),
                                         (32, 12, 3, 3)),
    "4x4/3 on 4 channels": ((2, 4, 190, 191), (64, 4, 4, 4), (3, 3), (1, 2, 2, 0),
                            (64, 36, 2, 2)),
    "3x3/3 on 4 channels, trailing phase rows unread": ((2, 4, 190, 191), (32, 4, 3, 3), (3, 3),
                                                        (0, 0, 0, 0), (32, 36, 1, 1)),
}


def stem(w, bias, strides, pads):
    def body(b, x):
        return b(g.Conv2DOp.make(x, b.const(w), b.const(bias), None, strides=strides, pads=pads,
                                 activation="relu"))
    return body


def conv_weights(program) -> set[tuple[int, ...]]:
    return {cmd.tiles["weight"].shape for _, _, cmd in program.commands() if cmd.op == "conv2d"}


@pytest.mark.parametrize("name", list(STEMS))
def test_stem_in_space_to_depth_form_matches_the_reference(name):
    xs, ws, strides, pads, s2d = STEMS[name]
    body = stem(f16(*ws, scale=0.3), f16(ws[0]), strides, pads)
    module = default_schedule(function({"x": (xs, F)}, body))
    _, _, program = lower_and_run(module, {"x": f16(*xs)}, max_ulps=2)
    assert conv_weights(program) == {s2d}


def test_small_strided_conv_keeps_its_form(monkeypatch):
    """A 3 x 3 / 2 conv on a 17 x 19 image saves too little (MIN_SAVED) for the s*s DMAs."""
    body = stem(f16(8, 3, 3, 3, scale=0.3), f16(8), (2, 2), (1, 1, 1, 1))
    module = default_schedule(function({"x": ((1, 3, 17, 19), F)}, body))
    _, _, program = lower_and_run(module, {"x": f16(1, 3, 17, 19)}, max_ulps=2)
    assert conv_weights(program) == {(8, 3, 3, 3)}


def test_switched_off_the_stem_is_a_strided_conv(monkeypatch):
    monkeypatch.setattr(cv, "SPACE_TO_DEPTH", False)
    xs, ws, strides, pads, _ = STEMS["7x7/2 on 3 channels"]
    module = default_schedule(function({"x": (xs, F)}, stem(f16(*ws, scale=0.3), f16(ws[0]),
                                                             strides, pads)))
    _, _, program = lower_and_run(module, {"x": f16(*xs)}, max_ulps=2)
    assert conv_weights(program) == {ws}


def _relu_then_stem(b, x, w, bias):
    y = b(g.ReluOp.make(x))
    return b(g.Conv2DOp.make(y, b.const(w), b.const(bias), None, strides=(2, 2),
                             pads=(3, 3, 3, 3), activation="relu"))


@pytest.mark.parametrize("grouped", [False, True])
def test_stem_reading_an_l1_result(grouped):
    """The stem's input is an earlier op's result in the cores' L1 (a separate item, or
    the same resident group): the phases are copied L1 to L1 (over the NoC for rows
    another core holds)."""
    w, bias = f16(16, 3, 7, 7, scale=0.3), f16(16)
    module = function({"x": ((2, 3, 64, 64), F)}, lambda b, x: _relu_then_stem(b, x, w, bias))
    f = module.body.block.first_op
    if grouped:
        grp = Group([f.args[0]], f.body.block.last_op.operands[0])
        GroupOps([grp])(module)
        Schedule([ScheduleInfo(grp, NPUMemScope.DDR, [list(range(8))])])(module)
    else:
        relu, conv = ListItems(f)
        Schedule([ScheduleInfo(relu, NPUMemScope.L1, [list(range(8))]),
                  ScheduleInfo(conv, NPUMemScope.DDR, [list(range(8))])])(module)
    _, _, program = lower_and_run(module, {"x": f16(2, 3, 64, 64)}, max_ulps=2)
    assert conv_weights(program) == {(16, 12, 4, 4)}


def test_one_weight_read_by_two_stems_with_other_pads():
    """Each conv gets its own rearranged kernel (pads 3 and 2 shift the taps differently)."""
    w, bias = f16(16, 3, 7, 7, scale=0.3), f16(16)

    def body(b, x):
        wc, bc = b.const(w), b.const(bias)
        return [b(g.Conv2DOp.make(x, wc, bc, None, strides=(2, 2), pads=pads, activation="relu"))
                for pads in ((3, 3, 3, 3), (2, 2, 2, 2))]

    module = default_schedule(function({"x": ((2, 3, 64, 64), F)}, body))
    _, _, program = lower_and_run(module, {"x": f16(2, 3, 64, 64)}, max_ulps=2)
    assert conv_weights(program) == {(16, 12, 4, 4)}
    assert sum(1 for name in program.buffers if name.endswith(("_s2d", "_s2d_1"))) == 2


def test_axis_geometry():
    # 224 rows, 7 taps, stride 2, pad 3 (ResNet's stem): 112 rows of phases, 4 taps, pads 2 and 1
    assert s2d_axis(224, 7, 2, 3, 112) == (112, 4, 2, 1)
    # an odd extent: the last row of phase 1 lies past the image (zero-filled)
    assert s2d_axis(33, 3, 2, 1, 17) == (17, 2, 1, 0)
    # the last phase row is read by no output: dropped
    assert s2d_axis(10, 2, 2, 0, 5) == (5, 1, 0, 0)
    assert s2d_axis(11, 2, 2, 0, 5) == (5, 1, 0, 0)
    assert s2d_axis(8, 3, 2, 3, 5) is None  # a pad as large as the kernel: not mapped
