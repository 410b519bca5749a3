"""The cycle model against answers worked out by hand from the target's figures
(DESIGN section 2): issue 16 cycles/command, DDR 64 B/cycle shared + 200 cycles latency,
LLB 256 B/cycle shared + 40, engine 64 B/cycle, NoC 4 cycles/hop and 64 B/cycle/link,
16x32 matrix unit, 64-element vector unit with special functions at 4x."""

import math

import numpy as np
import pytest

from stc_mlir import target
from stc_mlir.emulator import run, tile
from stc_mlir.emulator.builder import ProgramBuilder

T = target.load("stcp920")
ISSUE = T.issue_cycles
DDR_LAT = T.memory["ddr"].latency


def f16(*shape):
    return np.random.default_rng(7).standard_normal(shape).astype(np.float16)


def slices(report, op=None):
    return [s for s in report.timeline if not s.wait and (op is None or s.label == op)]


def load_program(cores, nbytes, space="l1", src_space="ddr"):
    """Every core in `cores` copies its own `nbytes` from DDR (or LLB) into its L1."""
    b = ProgramBuilder("load")
    x = b.input("x", (len(cores), nbytes // 2))
    for i, core in enumerate(cores):
        src = tile(x.buffer, (nbytes // 2,), i * nbytes)
        if src_space == "llb":
            stage = b.buffer(f"stage{core}", "llb", nbytes)
            b.add(core, "dma", src=src, dst=tile(stage, (nbytes // 2,)), signals=[b.semaphore(f"s{core}", core)])
            src = tile(stage, (nbytes // 2,))
            b.add(core, "dma", waits=[f"s{core}"], src=src,
                  dst=tile(b.buffer(f"t{core}", space, nbytes, core), (nbytes // 2,)))
        else:
            b.add(core, "dma", src=src, dst=tile(b.buffer(f"t{core}", space, nbytes, core), (nbytes // 2,)))
    return b.build(), x.shape


N = 64 * 1024


def test_one_dma_of_n_bytes():
    program, shape = load_program([0], N)
    _, report = run(program, {"x": f16(*shape)})
    assert report.cycles == ISSUE + DDR_LAT + N // 64 == 1240
    (s,) = slices(report)
    assert (s.unit, s.start, s.end) == ("dma_in", ISSUE, 1240)
    assert report.bytes_read["ddr"] == N and report.bytes_written["l1"] == N


def test_two_cores_contending_for_ddr_take_twice_the_transfer_time():
    program, shape = load_program([0, 5], N)
    _, report = run(program, {"x": f16(*shape)})
    one = N // 64
    assert report.cycles == ISSUE + DDR_LAT + 2 * one == 2264
    assert [s.end for s in slices(report)] == [2264, 2264]


def test_llb_is_shared_but_four_times_wider():
    # stage 1 (DDR -> LLB) of both cores contends for DDR; stage 2 (LLB -> L1) runs both
    # at the engine rate: 2 x 64 B/cycle fit in the LLB's 256
    program, shape = load_program([0, 1], N, src_space="llb")
    _, report = run(program, {"x": f16(*shape)})
    stage1 = ISSUE + (DDR_LAT + T.memory["llb"].latency) + 2 * N // 64
    stage2 = T.memory["llb"].latency + N // 64
    assert report.cycles == stage1 + stage2 == 2304 + 1064


def test_l1_to_l1_over_the_noc_pays_hops_and_shares_links():
    b = ProgramBuilder("noc")
    x = b.input("x", (4, N // 2))
    for core in range(4):
        b.add(core, "dma", src=tile(x.buffer, (N // 2,), core * N),
              dst=tile(b.buffer(f"a{core}", "l1", N, core), (N // 2,)),
              signals=[b.semaphore(f"s{core}", core)])
    # core 0 -> core 2 and core 1 -> core 3 both cross link 1 -> 2; core 3 -> core 7 is alone
    for src, dst in ((0, 2), (1, 3)):
        b.add(src, "dma", waits=[f"s{src}"], src=tile(f"a{src}", (N // 2,)),
              dst=tile(b.buffer(f"r{src}", "l1", N, dst), (N // 2,)))
    b.add(3, "dma", waits=["s3"], src=tile("a3", (N // 2,)),
          dst=tile(b.buffer("r3", "l1", N, 7), (N // 2,)))
    _, report = run(b.build(), {"x": f16(4, N // 2)})
    loads_done = ISSUE + DDR_LAT + 4 * N // 64  # four cores share DDR
    noc = {s.core: s for s in slices(report) if s.unit == "dma_out"}
    assert noc[0].start == noc[1].start == noc[3].start == loads_done
    assert noc[0].end == noc[1].end == loads_done + 2 * T.hop_latency + N // 32
    assert noc[3].end == loads_done + 1 * T.hop_latency + N // 64


def matmul_program(m, k, n):
    b = ProgramBuilder("mm")
    a = b.input("a", (m, k))
    w = b.constant("w", f16(k, n))
    c = b.output("c", (m, n))
    s = [b.semaphore(f"s{i}") for i in range(2)]
    at = tile(b.buffer("at", "l1", a.span, 0), (m, k))
    wt = tile(b.buffer("wt", "wb", w.span, 0), (k, n))
    ct = tile(b.buffer("ct", "l1", c.span, 0), (m, n))
    b.add(0, "dma", src=a, dst=at, signals=[s[0]])
    b.add(0, "dma", src=w, dst=wt, signals=[s[0]])
    b.add(0, "matmul", waits=[s[0], s[0]], signals=[s[1]], lhs=at, rhs=wt, output=ct)
    b.add(0, "dma", waits=[s[1]], src=ct, dst=c)
    return b.build()


@pytest.mark.parametrize("m, k, n, mm_cycles", [
    (64, 64, 64, 64 * 4 * 2),    # aligned: 64 rows x 4 K-steps x 2 N-steps, no waste
    (64, 65, 33, 64 * 5 * 2),    # one element past 64 / 32: a whole extra K and N step
])
def test_aligned_and_misaligned_matmul(m, k, n, mm_cycles):
    _, report = run(matmul_program(m, k, n), {"a": f16(m, k)})
    (mm,) = slices(report, "matmul")
    assert mm.end - mm.start == mm_cycles
    a_in = ISSUE + DDR_LAT + m * k * 2 / 64
    w_in = a_in + DDR_LAT + k * n * 2 / 64  # same inbound engine, after the first DMA
    assert mm.start == w_in
    assert report.cycles == math.ceil(w_in + mm_cycles + DDR_LAT + m * n * 2 / 64)  # whole cycles
    d = report.as_dict()
    assert d["matrix_lane_efficiency"] == pytest.approx(m * k * n / (512 * mm_cycles))
    assert d["roofline_cycles"] == int(np.ceil(max(mm_cycles / 8, (m * k + k * n + m * n) * 2 / 64)))


def test_dma_overlaps_compute_when_the_program_allows_it():
    """Two tiles: the second tile's DMA runs while the first tile computes."""
    rows, k, n = 64, 128, 256  # a tile is 16 KiB: 256 + 200 cycles of DMA
    b = ProgramBuilder("overlap")
    a = b.input("a", (2 * rows, k))
    w = b.constant("w", f16(k, n))
    wt = tile(b.buffer("wt", "wb", w.span, 0), (k, n))
    b.add(0, "dma", src=w, dst=wt, signals=[b.semaphore("w")])
    for i in range(2):
        t = tile(b.buffer(f"a{i}", "l1", rows * k * 2, 0), (rows, k))
        b.add(0, "dma", src=tile(a.buffer, (rows, k), i * rows * k * 2), dst=t,
              signals=[b.semaphore(f"in{i}")])
    for i in range(2):
        o = tile(b.buffer(f"o{i}", "l1", rows * n * 2, 0), (rows, n))
        b.add(0, "matmul", waits=["w", f"in{i}"] if i == 0 else [f"in{i}"],
              lhs=tile(f"a{i}", (rows, k)), rhs=wt, output=o)
    _, report = run(b.build(), {"a": f16(2 * rows, k)})
    w_done = ISSUE + DDR_LAT + k * n * 2 // 64            # 1240
    tile_dma = DDR_LAT + rows * k * 2 // 64               # 456
    mm = rows * (k // 16) * (n // 32)                     # 4096
    assert report.cycles == w_done + tile_dma + 2 * mm    # the 2nd DMA hides under the 1st matmul
    dma2 = [s for s in slices(report, "dma")][2]
    mm1 = slices(report, "matmul")[0]
    assert mm1.start < dma2.end <= mm1.end
    serial = w_done + 2 * tile_dma + 2 * mm
    assert report.cycles == serial - tile_dma


def test_vector_rates_and_special_functions():
    b = ProgramBuilder("vec")
    x = b.input("x", (4096,))
    t, u = tile(b.buffer("t", "l1", 8192, 0), (4096,)), tile(b.buffer("u", "l1", 8192, 0), (4096,))
    b.add(0, "dma", src=x, dst=t, signals=[b.semaphore("in")])
    b.add(0, "unary", waits=["in"], input=t, output=u, kind="relu")
    b.add(0, "unary", input=t, output=u, kind="exp")
    b.add(0, "softmax", input=tile("t", (64, 64)), output=tile("u", (64, 64)))
    _, report = run(b.build(), {"x": f16(4096)})
    durations = [s.end - s.start for s in slices(report) if s.unit == "vector"]
    passes = 4096 / 64
    assert durations == [passes, 4 * passes, (1 + 1 + 4 + 1 + 4) * passes]


def test_conv_alignment_and_depthwise_cost():
    from stc_mlir.emulator import command
    from stc_mlir.emulator.cost import compute_cost

    def conv(cin, cout, groups=1):
        return command("conv2d", input=tile("x", (1, cin, 10, 10)),
                       weight=tile("w", (cout, cin // groups, 3, 3)),
                       output=tile("y", (1, cout, 8, 8)), groups=groups)

    assert compute_cost(conv(16, 32), T).cycles == 64 * 9          # one pass per window
    assert compute_cost(conv(17, 32), T).cycles == 64 * 9 * 2      # 17 channels: 2 K steps
    assert compute_cost(conv(3, 64), T).cycles == 64 * 9 * 2       # RGB input wastes 13/16
    dw = compute_cost(conv(64, 64, groups=64), T)
    assert (dw.cycles, dw.macs) == (64 * 9 * 2, 64 * 9 * 64)       # channels on the N lanes


def test_waiting_on_a_semaphore_is_reported():
    b = ProgramBuilder("wait")
    x = b.input("x", (N // 2,))
    t = tile(b.buffer("t", "l1", N, 1), (N // 2,))
    b.add(1, "dma", src=x, dst=t, signals=[b.semaphore("loaded", core=1)])
    b.add(1, "unary", waits=["loaded"], input=t, output=t, kind="relu")
    _, report = run(b.build(), {"x": f16(N // 2)})
    (wait,) = [s for s in report.timeline if s.wait]
    assert (wait.core, wait.unit, wait.start, wait.end) == (1, "vector", 2 * ISSUE, 1240)
    d = report.as_dict()
    assert d["cores"][1]["units"]["vector"]["wait"] == 1240 - 2 * ISSUE
    assert d["cores"][1]["busy"] == 1240 - ISSUE + N // 2 / 64
