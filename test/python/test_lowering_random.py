"""Random small networks under random schedules: grouping, batch splits, mem_scopes and
core_binds drawn by hypothesis. Every lowered program must run without a hazard and give
the reference interpreter's results."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import (
    Group, GroupOps, ListItems, NPUMemScope, Schedule, ScheduleInfo, SplitGroups,
)

from lowering_helpers import f16, function, lower_and_run

F = np.float16
SCOPES = [NPUMemScope.L1, NPUMemScope.LLB, NPUMemScope.DDR]
LAYERS = ["conv", "relu", "pool", "add_skip", "sigmoid", "conv_s2"]


def network(layers: list[str], channels: int):
    def body(b, x):
        skip = x
        body.ends = []  # each layer's result: where groups may be cut
        for kind in layers:
            c = g.shape_of(x.type)[1]
            if kind == "conv":
                w = f16(channels, c, 3, 3, scale=1 / (3 * c ** 0.5))
                x = b(g.Conv2DOp.make(x, b.const(w), b.const(f16(channels, scale=0.1)),
                                      pads=(1, 1, 1, 1), activation="relu"))
            elif kind == "conv_s2":
                w = f16(channels, c, 1, 1, scale=1 / c ** 0.5)
                x = b(g.Conv2DOp.make(x, b.const(w), strides=(2, 2)))
            elif kind == "relu":
                x = b(g.ReluOp.make(x))
            elif kind == "sigmoid":
                x = b(g.SigmoidOp.make(x))
            elif kind == "pool":
                x = b(g.MaxPoolOp.make(x, kernel=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1)))
            elif kind == "add_skip" and skip.type == x.type:
                x = b(g.AddOp.make(x, skip))
            if x is not skip:
                body.ends.append(x)
            skip = x
        return x

    return body


ROWS = ["matmul", "gelu", "layer_norm", "softmax", "add_bias", "transpose", "add_skip", "reshape",
        "concat", "slice", "centre"]


def rows_network(layers: list[str], width: int):
    """Transformer-like ops on [batch, rows, width]."""
    def body(b, x):
        skip = x
        body.ends = []  # each layer's result: where groups may be cut
        for kind in layers:
            d = g.shape_of(x.type)[-1]
            if kind == "matmul":
                x = b(g.MatmulOp.make(x, b.const(f16(d, width, scale=1 / d ** 0.5))))
            elif kind == "gelu":
                x = b(g.GeluOp.make(x))
            elif kind == "layer_norm":
                x = b(g.LayerNormOp.make(x, b.const(f16(d)), b.const(f16(d))))
            elif kind == "softmax":
                x = b(g.SoftmaxOp.make(x))
            elif kind == "add_bias":
                x = b(g.AddOp.make(b.const(f16(d)), x))
            elif kind == "transpose":
                x = b(g.TransposeOp.make(x, perm=(0, 2, 1)))
            elif kind == "concat":
                x = b(g.ConcatOp.make([x, b(g.ReluOp.make(x))], axis=2))
            elif kind == "slice" and g.shape_of(x.type)[1] > 2:
                x = b(g.SliceOp.make(x, starts=(1,), ends=(-1,), axes=(1,)))
            elif kind == "centre":  # x - mean(x): a broadcast binary op on two activations
                x = b(g.SubOp.make(x, b(g.ReduceMeanOp.make(x, axes=(2,)))))
            elif kind == "reshape" and d % 2 == 0:
                n, r, _ = g.shape_of(x.type)
                x = b(g.ReshapeOp.make(x, shape=(n, r * 2, d // 2)))
            elif kind == "add_skip" and skip.type == x.type:
                x = b(g.AddOp.make(x, skip))
            if x is not skip:
                body.ends.append(x)
            skip = x
        return x

    return body


@st.composite
def schedules(draw):
    batch = draw(st.sampled_from([1, 2, 4]))
    channels = draw(st.sampled_from([4, 8]))
    if draw(st.booleans()):
        layers = draw(st.lists(st.sampled_from(LAYERS), min_size=1, max_size=5))
        net, shape = network(layers, channels), (batch, 4, 12, 10)
    else:
        layers = draw(st.lists(st.sampled_from(ROWS), min_size=1, max_size=5))
        net, shape = rows_network(layers, 8 * channels), (batch, 12, 16)
    cut = draw(st.lists(st.booleans(), min_size=len(layers), max_size=len(layers)))
    return shape, net, cut, draw(st.randoms(use_true_random=False))


def core_bind(rng, batch: int) -> list[list[int]]:
    parts = rng.choice([p for p in (1, 2, 4) if batch % p == 0])
    per = rng.choice([c for c in (1, 2, 4) if parts * c <= 8])
    cores = rng.sample(range(8), parts * per)
    return [cores[i * per:(i + 1) * per] for i in range(parts)]


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(schedules())
def test_random_schedules_lower_and_run(params):
    shape, net, cut, rng = params
    batch = shape[0]
    module = function({"x": (shape, F)}, net)
    f = module.body.block.first_op
    ends = net.ends
    # cut the chain of layers into groups where `cut` says so
    groups, start = [], f.args[0]
    for i, end in enumerate(ends):
        if cut[i] or i == len(ends) - 1:
            groups.append(Group([start], end))
            start = end
    GroupOps(groups)(module)
    split = {grp: 2 for grp in groups if batch % 2 == 0 and rng.random() < 0.3}
    if split:
        SplitGroups(split)(module)
    infos = [ScheduleInfo(item, rng.choice(SCOPES), core_bind(rng, item.batch or batch))
             for item in ListItems(f)]
    Schedule(infos, verify=False)(module)
    lower_and_run(module, {"x": f16(*shape)}, max_ulps=2)
