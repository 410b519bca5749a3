"""Barriers that wait only for the cores involved (lowering/barriers.py): the programs
run on the emulator with its hazard and provenance checks, give the same bytes as with
full barriers, and every graph value read back at its barrier (per-tensor comparison)
matches the reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir.compare_all import DIVERGES, MISSING, compare_program
from stc_mlir.dialects import graph as g
from stc_mlir.emulator import run
from stc_mlir.graph_schedule import ListItems, NPUMemScope, Schedule, ScheduleInfo
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate

from lowering_helpers import f16, function

F = np.float16
L1, DDR = NPUMemScope.L1, NPUMemScope.DDR


def branches(w):
    """Two branches on disjoint core sets (convs in L1 on cores 0-3 and 4-7, weights `w`),
    joined by an add on all cores: most barriers need only one set."""

    def body(b, x):
        a = c = x
        for i in range(2):
            a = b(g.Conv2DOp.make(a, b.const(w[i][0]), b.const(w[i][1]), pads=(1, 1, 1, 1),
                                  activation="relu"))
            c = b(g.Conv2DOp.make(c, b.const(w[2 + i][0]), b.const(w[2 + i][1]),
                                  pads=(1, 1, 1, 1), activation="relu"))
        return b(g.AddOp.make(a, c))

    module = function({"x": ((2, 8, 16, 16), F)}, body)
    f = module.body.block.first_op
    ops = list(ListItems(f))
    sets = [[0, 1, 2, 3], [4, 5, 6, 7]]
    infos = [ScheduleInfo(op, L1 if k < len(ops) - 1 else DDR,
                          [list(range(8))] if k == len(ops) - 1 else [sets[k % 2]])
             for k, op in enumerate(ops)]
    Schedule(infos, verify=False)(module)
    return module


@pytest.mark.parametrize("prefetch", [False, True])
def test_narrow_barriers_keep_results_and_wait_for_fewer_cores(prefetch):
    x = {"x": f16(2, 8, 16, 16)}
    w = [(f16(8, 8, 3, 3, scale=0.1), f16(8, scale=0.1)) for _ in range(4)]
    runs = {}
    for narrow in (False, True):
        module = branches(w)
        lowered = lower(module, prefetch=prefetch, narrow_barriers=narrow)
        program = allocate(lowered.program, lowered.live, lowered.phase_items)
        outputs, report = run(program, dict(x))
        assert not report.hazards
        runs[narrow] = (program, outputs, report)
        if narrow:  # every value read back at its barrier is the reference's
            comparison = compare_program(module, program, x)
            assert not comparison.error
            assert all(r.status not in (DIVERGES, MISSING) for r in comparison.rows), comparison.rows
    for name, value in runs[False][1].items():
        np.testing.assert_array_equal(value, runs[True][1][name])
    waits = {n: sum(len(c.waits) for cmds in runs[n][0].cores.values() for c in cmds
                    if c.op == "fence") for n in (False, True)}
    assert waits[True] < waits[False]
    # the barrier semaphores pair each signalling core with each waiting one
    assert all(name.startswith("bar_o") for name in runs[True][0].semaphores if name.startswith("bar"))
