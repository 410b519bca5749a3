"""Weight regions down the cores' tree (lowering/stage.py): a stage that uses each weight
element at few output positions per core (`Rule.reuse` below `stage.FINE_REUSE`) copies its
first region from core to core in up to `stage.FINE_PIECES` pieces, others in `stage.PIECES`;
the bytes and the results are the same."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from stc_mlir.dialects import graph as g
from stc_mlir.passes.lowering import stage

from lowering_helpers import default_schedule, f16, function, lower_and_run

F = np.float16


def copies_per_core(program):
    """Per core, the weight-buffer DMAs it issued from another core's weight buffer."""
    out = collections.Counter()
    for core, _, cmd in program.commands():
        if cmd.op != "dma":
            continue
        src, dst = (program.buffers[cmd.tiles[k].buffer] for k in ("src", "dst"))
        if src.space == dst.space == "wb" and src.core != dst.core:
            out[dst.core] += 1
    return out


@pytest.mark.parametrize("size, pieces", [(7, stage.FINE_PIECES), (56, stage.PIECES)])
def test_first_region_pieces_follow_the_reuse(size, pieces):
    w = f16(128, 256, 1, 1, scale=0.05)  # 64 KB: one region in half the weight buffer

    def body(b, x):
        return b(g.Conv2DOp.make(x, b.const(w), None))

    module = default_schedule(function({"x": ((2, 256, size, size), F)}, body))
    # 2 x 7 x 7 outputs over 8 cores: at most 14 positions per core; 2 x 56 x 56: 784
    _, _, program = lower_and_run(module, {"x": f16(2, 256, size, size)}, max_ulps=2)
    copies = copies_per_core(program)
    assert len(copies) == 7  # every core but the first copies from its parent
    assert set(copies.values()) == {pieces}
