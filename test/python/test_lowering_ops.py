"""Every op family lowered with the default schedule (each op its own item in DDR, spread
over all 8 cores), allocated and emulated: no hazards, results equal to the reference
interpreter (up to 2 fp16 ulps for convolutions and matmuls, whose fp32 summation order changes with
the tiling)."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import Group, GroupOps, NPUMemScope, Schedule, ScheduleInfo

from lowering_helpers import default_schedule, f16, function, lower_and_run

F = np.float16
I64 = np.int64
IDX = np.random.default_rng(7).integers(0, 50, (2, 6))


def conv(b, x, w, bias=None, residual=None, **p):
    return b(g.Conv2DOp.make(x, b.const(w), None if bias is None else b.const(bias), residual, **p))


CASES = {
    # name: (inputs {name: (shape, dtype)}, body, fp16 ulps allowed)
    "relu": ({"x": ((2, 8, 16, 16), F)}, lambda b, x: b(g.ReluOp.make(x)), 0),
    "clip": ({"x": ((2, 8, 16), F)}, lambda b, x: b(g.ClipOp.make(x, min=-0.5, max=0.5)), 0),
    "leaky_relu": ({"x": ((4, 40), F)}, lambda b, x: b(g.LeakyReluOp.make(x, alpha=0.2)), 0),
    "gelu": ({"x": ((2, 16, 8), F)}, lambda b, x: b(g.GeluOp.make(x)), 0),
    "sigmoid": ({"x": ((3, 5, 7), F)}, lambda b, x: b(g.SigmoidOp.make(x)), 0),
    "conv 3x3 stride 2 bias relu": (
        {"x": ((2, 16, 32, 32), F)},
        lambda b, x: conv(b, x, f16(32, 16, 3, 3, scale=0.2), f16(32), strides=(2, 2),
                          pads=(1, 1, 1, 1), activation="relu"), 2),
    "conv 7x7 asymmetric pads dilation": (
        {"x": ((1, 3, 20, 18), F)},
        lambda b, x: conv(b, x, f16(8, 3, 3, 3, scale=0.3), pads=(2, 1, 0, 3), dilations=(2, 1)), 2),
    "conv residual": (
        {"x": ((2, 8, 16, 16), F), "r": ((2, 16, 16, 16), F)},
        lambda b, x, r: conv(b, x, f16(16, 8, 1, 1, scale=0.3), f16(16), r, activation="relu"), 2),
    "conv grouped": (
        {"x": ((2, 8, 16, 16), F)},
        lambda b, x: conv(b, x, f16(16, 2, 3, 3, scale=0.3), strides=(2, 2), pads=(1, 1, 1, 1), group=4), 2),
    "conv depthwise relu6": (
        {"x": ((2, 8, 16, 16), F)},
        lambda b, x: conv(b, x, f16(8, 1, 3, 3), f16(8), pads=(1, 1, 1, 1), group=8,
                          activation="relu6"), 2),
    "max_pool": ({"x": ((2, 8, 16, 16), F)},
                 lambda b, x: b(g.MaxPoolOp.make(x, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))), 0),
    "avg_pool ceil_mode": ({"x": ((2, 8, 15, 15), F)},
                           lambda b, x: b(g.AvgPoolOp.make(x, kernel=(3, 3), strides=(2, 2),
                                                           pads=(0, 0, 1, 1), ceil_mode=True)), 0),
    "avg_pool count_include_pad": ({"x": ((2, 8, 16, 16), F)},
                                   lambda b, x: b(g.AvgPoolOp.make(x, kernel=(3, 3), pads=(1, 1, 1, 1),
                                                                   count_include_pad=True)), 0),
    "global_avg_pool": ({"x": ((2, 8, 16, 16), F)}, lambda b, x: b(g.GlobalAvgPoolOp.make(x)), 0),
    "matmul weights": ({"x": ((2, 24, 64), F)},
                       lambda b, x: b(g.MatmulOp.make(x, b.const(f16(64, 48, scale=0.2)))), 2),
    "matmul batched": ({"x": ((2, 4, 16, 32), F), "y": ((2, 4, 32, 16), F)},
                       lambda b, x, y: b(g.MatmulOp.make(x, y)), 2),
    "matmul broadcast batch": ({"x": ((3, 16, 32), F), "y": ((1, 32, 8), F)},
                               lambda b, x, y: b(g.MatmulOp.make(x, y)), 2),
    "softmax last axis": ({"x": ((2, 4, 16, 32), F)}, lambda b, x: b(g.SoftmaxOp.make(x, axis=-1)), 0),
    "softmax axis 1": ({"x": ((2, 4, 16, 32), F)}, lambda b, x: b(g.SoftmaxOp.make(x, axis=1)), 0),
    "layer_norm": ({"x": ((2, 16, 64), F)},
                   lambda b, x: b(g.LayerNormOp.make(x, b.const(f16(64)), b.const(f16(64)))), 0),
    "layer_norm two axes": ({"x": ((4, 6, 32), F)},
                            lambda b, x: b(g.LayerNormOp.make(x, b.const(f16(6, 32)), axis=1)), 0),
    "add weight broadcast": ({"x": ((2, 16, 64), F)},
                             lambda b, x: b(g.AddOp.make(b.const(f16(64)), x)), 0),
    "mul activations broadcast": ({"x": ((2, 16, 64), F), "y": ((2, 16, 1), F)},
                                  lambda b, x, y: b(g.MulOp.make(x, y)), 0),
    "sub from scalar": ({"x": ((2, 16), F)},
                        lambda b, x: b(g.SubOp.make(b.const(np.array(1.0, F)), x)), 0),
    "div by scalar": ({"x": ((2, 12, 8, 8), F)},
                      lambda b, x: b(g.DivOp.make(x, b.const(np.array(8.0, F)))), 0),
    "transpose 0213": ({"x": ((2, 16, 4, 8), F)},
                       lambda b, x: b(g.TransposeOp.make(x, perm=(0, 2, 1, 3))), 0),
    "transpose 0231": ({"x": ((2, 16, 4, 8), F)},
                       lambda b, x: b(g.TransposeOp.make(x, perm=(0, 2, 3, 1))), 0),
    "concat axis 1": ({"x": ((2, 8), F), "y": ((2, 5), F)},
                      lambda b, x, y: b(g.ConcatOp.make([x, y], axis=1)), 0),
    "slice with steps": ({"x": ((2, 16, 10), F)},
                         lambda b, x: b(g.SliceOp.make(x, starts=(1,), ends=(9,), axes=(2,), steps=(2,))), 0),
    "gather rows": ({"i": ((2, 6), I64)}, lambda b, i: b(g.GatherOp.make(b.const(f16(50, 16)), i)), 0),
    "reduce_sum axis 1": ({"x": ((2, 39, 8), F)},
                          lambda b, x: b(g.ReduceSumOp.make(x, axes=(1,), keepdims=False)), 0),
    "reduce_mean keepdims": ({"x": ((4, 6, 8), F)},
                             lambda b, x: b(g.ReduceMeanOp.make(x, axes=(2,))), 0),
    "reduce_max everything": ({"x": ((2, 39, 8), F)},
                              lambda b, x: b(g.ReduceMaxOp.make(x, axes=(), keepdims=False)), 0),
    "cast i64 to f16": ({"x": ((2, 1, 1, 8), I64)},
                        lambda b, x: b(g.CastOp.make(x, shape=(2, 1, 1, 8), dtype=g.f16)), 0),
    "expand": ({"x": ((2, 1, 8), F)}, lambda b, x: b(g.ExpandOp.make(x, shape=(2, 3, 8))), 0),
    "reshape then relu": ({"x": ((2, 16, 8), F)},
                          lambda b, x: b(g.ReluOp.make(b(g.ReshapeOp.make(x, shape=(2, 128))))), 0),
}


def _inputs(spec):
    out = {}
    for name, (shape, dtype) in spec.items():
        if dtype is I64:
            out[name] = IDX if shape == IDX.shape else np.random.default_rng(3).integers(0, 2, shape)
        else:
            out[name] = f16(*shape)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_op_lowers_and_runs(name):
    spec, body, max_ulps = CASES[name]
    module = default_schedule(function(spec, body))
    outputs, _, program = lower_and_run(module, _inputs(spec), max_ulps)
    used = {c for c, cmds in program.cores.items() if any(x.op != "fence" for x in cmds)}
    if next(iter(outputs.values())).size > 1:
        assert len(used) > 1  # the work is spread over the cores


def test_split_with_its_users_in_one_group():
    def body(b, x):
        first, second = b(g.SplitOp.make(x, axis=1, sizes=(5, 7)))
        return b(g.ConcatOp.make([b(g.ReluOp.make(second)), first], axis=1))

    module = function({"x": ((2, 12), F)}, body)
    f = module.body.block.first_op
    groups = [Group([f.args[0]], f.body.block.last_op.operands[0])]
    GroupOps(groups)(module)
    Schedule([ScheduleInfo(groups[0], NPUMemScope.DDR, [[0, 1], [2, 3]])])(module)
    lower_and_run(module, {"x": f16(2, 12)})
