"""Big weights of DDR-bound ops staged in LLB under earlier ops' compute
(lowering/staging.py): a classifier-like matmul at batch 2 after compute-bound convs."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir.dialects import graph as g
from stc_mlir.emulator import run
from stc_mlir.graph_schedule import NPUMemScope
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate

from lowering_helpers import default_schedule, f16, function, lower_and_run

F = np.float16


def convs_then_classifier(b, x):
    for _ in range(2):  # compute-bound: ~18k cycles each on 8 cores, 74 KB of weights
        w, bias = f16(64, 64, 3, 3, scale=1 / 24), f16(64, scale=0.1)
        x = b(g.Conv2DOp.make(x, b.const(w), b.const(bias), pads=(1, 1, 1, 1), activation="relu"))
    pooled = b(g.ReshapeOp.make(b(g.GlobalAvgPoolOp.make(x)), shape=(2, 64)))
    # 64 x 4096 f16: 512 KB, 8,192 cycles of DDR for a 64-cycle product
    return b(g.MatmulOp.make(pooled, b.const(f16(64, 4096, scale=1 / 8))))


def module():
    return default_schedule(function({"x": ((2, 64, 32, 32), F)}, convs_then_classifier),
                            scope=NPUMemScope.L1)


def program(m, **options):
    low = lower(m, **options)
    return allocate(low.program, low.live, low.phase_items)


@pytest.mark.parametrize("narrow", [True, False])
def test_classifier_weight_is_staged_in_llb_with_the_same_results(narrow):
    m = module()
    x = {"x": f16(2, 64, 32, 32)}
    staged = program(m, narrow_barriers=narrow)
    plain = program(m, narrow_barriers=narrow, stage_weights=False)
    llb = [b for b in staged.buffers.values() if b.space == "llb" and b.name.startswith("staged_")]
    assert len(llb) == 1 and llb[0].size == 64 * 4096 * 2
    assert not [b for b in plain.buffers.values() if b.name.startswith("staged_")]
    # the weight leaves DDR only through the copies into LLB, on the outbound engines, and
    # the product reads it from there
    weight = next(n for n, b in staged.buffers.items()
                  if b.space == "ddr" and b.init is not None and b.size == 64 * 4096 * 2)
    readers = [c for _, _, c in staged.commands() if any(t.buffer == weight for t in c.tiles.values())]
    assert readers and all(c.op == "dma" and c.tiles["dst"].buffer == llb[0].name for c in readers)
    assert any(c.op == "dma" and c.tiles["src"].buffer == llb[0].name
               and staged.buffers[c.tiles["dst"].buffer].space == "wb" for _, _, c in staged.commands())
    got, report = run(staged, dict(x))
    want, report_plain = run(plain, dict(x))
    assert not report.hazards and not report_plain.hazards
    for a, b in zip(got.values(), want.values()):
        np.testing.assert_array_equal(a, b)


def test_staged_program_matches_the_reference():
    lower_and_run(module(), {"x": f16(2, 64, 32, 32)}, max_ulps=2)
