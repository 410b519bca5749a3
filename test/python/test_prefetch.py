"""Weight prefetch (lowering/prefetch.py): a phase's first weight loads run before the
barrier that opens it, under the previous phase's compute. The programs run on the
emulator with its hazard and provenance checks and give the same bytes as without."""

from __future__ import annotations

import numpy as np

from stc_mlir.dialects import graph as g
from stc_mlir.emulator import run
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate
from stc_mlir.target import load

from stc_mlir import reference

from lowering_helpers import default_schedule, f16, function, ulps

F = np.float16


def convs(channels, size=8, layers=3):
    """A maker of `layers` 3x3 convs with relu (different weights each), one item each."""
    weights = [(f16(channels, channels, 3, 3, scale=1 / (3 * channels ** 0.5)),
                f16(channels, scale=0.1)) for _ in range(layers)]

    def body(b, x):
        for w, bias in weights:
            x = b(g.Conv2DOp.make(x, b.const(w), b.const(bias), pads=(1, 1, 1, 1),
                                  activation="relu"))
        return x
    return lambda: default_schedule(function({"x": ((2, channels, size, size), F)}, body))


def run_both(make, inputs):
    out = {}
    for prefetch in (False, True):
        lowered = lower(make(), prefetch=prefetch)
        program = allocate(lowered.program, lowered.live, lowered.phase_items)
        outputs, report = run(program, dict(inputs))
        assert not report.hazards, report.hazards[:3]
        out[prefetch] = (lowered, program, outputs, report)
    return out


def hoisted(program):
    """(core, buffer) of the weight-buffer loads placed together right before a barrier's
    fences."""
    found = []
    wb_load = lambda c: c.op == "dma" and program.buffers[c.tiles["dst"].buffer].space == "wb"
    for core, cmds in program.cores.items():
        for j in range(1, len(cmds)):
            if cmds[j].op == "fence" and cmds[j - 1].op != "fence":
                i = j - 1
                while i >= 0 and wb_load(cmds[i]):
                    found.append((core, cmds[i].tiles["dst"].buffer))
                    i -= 1
    return found


def test_prefetch_loads_weights_before_the_barrier_and_keeps_the_results():
    make = convs(16)
    x = {"x": f16(2, 16, 8, 8)}
    res = run_both(make, x)
    (low0, prog0, out0, _), (low1, prog1, out1, _) = res[False], res[True]
    for name in out0:
        np.testing.assert_array_equal(out0[name], out1[name])  # same commands, same bytes
    assert not hoisted(prog0)
    moved = hoisted(prog1)
    # the second and third convs' weights, on the first core of the chain at least
    assert len({buf.split("_")[0] for _, buf in moved}) == 2
    for core, buf in moved:
        # live from the phase before its reader's: npu-allocate keeps it apart from that
        # phase's weights (the double buffer)
        readers = [prog1.origins[c.origin].phase for c in prog1.cores[core]
                   if c.op == "conv2d" and any(t.buffer == buf for t in c.tiles.values())]
        assert readers and low1.live[buf][0] == min(readers) - 1
    # the weights are loaded once either way: prefetch moves loads, it adds none
    loads = lambda p: sum(1 for cmds in p.cores.values() for c in cmds if c.op == "dma"
                          and p.buffers[c.tiles["src"].buffer].space == "ddr"
                          and p.buffers[c.tiles["dst"].buffer].space == "wb")
    assert loads(prog0) == loads(prog1)


def test_prefetch_never_overfills_the_weight_buffer():
    # 128 channels: 295 KB of weights per conv, more than the weight buffer: chunked, the
    # stage fills it; a prefetch fits only beside what the previous phase keeps there
    make = convs(128, size=8, layers=2)
    x = {"x": f16(2, 128, 8, 8)}
    res = run_both(make, x)
    lowered, program = res[True][0], res[True][1]
    wb = load("stcp920").memory["wb"].size
    phases = len(lowered.phase_items)
    for core in program.cores:
        for p in range(phases):
            live = sum(b.size for n, b in program.buffers.items() if b.space == "wb" and b.core == core
                       and lowered.live[n][0] <= p <= lowered.live[n][1])
            assert live <= wb
    assert hoisted(program)
    # half the weight buffer per phase cuts K in other chunks: fp32 sums in another order
    (want,) = reference.run(make(), x)
    for on in (False, True):
        (got,) = res[on][2].values()
        assert ulps(got, want) <= 2


def test_an_op_too_big_for_half_the_weight_buffer_takes_all_of_it_and_the_rest_prefetch():
    # a 33 x 33 kernel: 32 output channels x one input channel x 2 chunks = 139,392 bytes,
    # more than half the weight buffer (128,450 usable), less than all of it (256,901).
    # That op alone takes the whole buffer; the convs after it are still prefetched (the
    # whole function used to be lowered again without prefetch)
    big = (f16(64, 2, 33, 33, scale=1 / (33 * 2 ** 0.5)), f16(64, scale=0.1))
    small = [(f16(64, 64, 3, 3, scale=1 / 24), f16(64, scale=0.1)) for _ in range(2)]

    def body(b, x):
        x = b(g.Conv2DOp.make(x, b.const(big[0]), b.const(big[1]), pads=(16, 16, 16, 16),
                              activation="relu"))
        for w, bias in small:
            x = b(g.Conv2DOp.make(x, b.const(w), b.const(bias), pads=(1, 1, 1, 1),
                                  activation="relu"))
        return x

    def make():
        return default_schedule(function({"x": ((2, 2, 12, 12), F)}, body))
    x = {"x": f16(2, 2, 12, 12)}
    res = run_both(make, x)
    program = res[True][1]
    assert {buf.split("_")[0] for _, buf in hoisted(program)} == {"g1", "g2"}
    wb = load("stcp920").memory["wb"].size
    big_slots = sum(b.size for n, b in program.buffers.items()
                    if n.startswith("g0_0_1_c0_s"))  # the big conv's weight ring on core 0
    assert wb // 2 < big_slots <= wb
    (want,) = reference.run(make(), x)
    for on in (False, True):
        (got,) = res[on][2].values()
        assert ulps(got, want) <= 2
