"""Channel concats in L1 (DenseNet's dense blocks): the concat's result is spread over the
cores as its NCHW producers and consumers are (batch, then rows), so each core copies the
rows it already holds and nothing crosses the NoC (lowering/movement.py, ConcatRule)."""

from __future__ import annotations

import numpy as np

from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import Group, GroupOps, NPUMemScope, Schedule, ScheduleInfo

from lowering_helpers import f16, function, lower_and_run

F = np.float16
C, GROWTH = 16, 8


def dense_block(b, x):
    """Two pre-activation dense layers: concat -> BN -> ReLU -> 1x1 conv -> ReLU -> 3x3 conv."""
    features = [x]
    for layer in range(2):
        cat = features[0] if layer == 0 else b(g.ConcatOp.make(features, axis=1))
        ch = C + GROWTH * layer
        scale, shift = f16(ch, 1, 1, scale=0.5), f16(ch, 1, 1, scale=0.1)
        y = b(g.ReluOp.make(b(g.AddOp.make(b(g.MulOp.make(cat, b.const(scale))), b.const(shift)))))
        y = b(g.Conv2DOp.make(y, b.const(f16(32, ch, 1, 1, scale=0.3)), b.const(f16(32, scale=0.1)),
                              activation="relu"))
        y = b(g.Conv2DOp.make(y, b.const(f16(GROWTH, 32, 3, 3, scale=0.1)), None,
                              pads=(1, 1, 1, 1)))
        features.append(y)
    return b(g.ConcatOp.make(features, axis=1))


def schedule(module, one_op_items: bool):
    """Each op its own item with its result in L1 (as level 2), or the whole block as one
    resident group; two parts of four cores (one sample each)."""
    f = module.body.block.first_op
    binds = [[0, 1, 2, 3], [4, 5, 6, 7]]
    last = f.body.block.last_op.operands[0]
    if not one_op_items:
        grp = Group([f.args[0]], last)
        GroupOps([grp])(module)
        Schedule([ScheduleInfo(grp, NPUMemScope.DDR, binds)])(module)
        return module
    ops = [o for o in f.body.block.ops if isinstance(o, g.GraphOp) and not isinstance(o, g.ConstantOp)]
    groups = [Group([v for v in o.operands if not isinstance(v.owner, g.ConstantOp)], o.results[0])
              for o in ops]
    GroupOps(groups)(module)
    Schedule([ScheduleInfo(grp, NPUMemScope.DDR if o.results[0] is last else NPUMemScope.L1, binds)
              for grp, o in zip(groups, ops)])(module)
    return module


def concat_dmas(program):
    """(source core, destination core) of every DMA a graph.concat's stage issued between L1
    buffers."""
    out = []
    for _, _, cmd in program.commands():
        origin = program.origin_of(cmd)
        if cmd.op != "dma" or origin is None or not origin.op.startswith("graph.concat"):
            continue
        src, dst = (program.buffers[cmd.tiles[k].buffer] for k in ("src", "dst"))
        if src.space == dst.space == "l1":
            out.append((src.core, dst.core))
    return out


def test_dense_block_concats_copy_on_their_own_cores():
    for one_op_items in (True, False):
        module = schedule(function({"x": ((2, C, 12, 12), F)}, dense_block), one_op_items)
        _, report, program = lower_and_run(module, {"x": f16(2, C, 12, 12)}, max_ulps=2)
        moves = concat_dmas(program)
        # the concats in L1 items, or in the resident group (its last one goes to DDR):
        # every core copies the rows it holds, on itself
        assert moves and all(s == d for s, d in moves), moves
        assert {s for s, _ in moves} == set(range(8))
