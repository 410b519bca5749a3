"""npu.fence (a per-core barrier of all units) and npu.cast (element type conversion): the
checker, the functional model, the cycle model and the hazard tracker know both. And the
report counts the rows a gather reads, not its whole table (bytes moved, roofline)."""

import numpy as np
import pytest

from stc_mlir.emulator import HazardError, run, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.isa.check import ProgramError, check_program
from stc_mlir.dialects.npu import program_from_module, program_to_module
from stc_mlir.ir import parse_text
from stc_mlir.target import load

T = load("stcp920")


def f16(*shape):
    return np.random.default_rng(5).standard_normal(shape).astype(np.float16)


def dma_then_relu(fence: bool):
    """core 0 loads x into L1 (DMA-in engine) and relus it (vector unit): ordered only by
    a fence between them."""
    b = ProgramBuilder("fenced")
    x = b.input("x", (1024,))
    y = b.output("y", (1024,))
    t = tile(b.buffer("t", "l1", 2048, core=0), (1024,))
    u = tile(b.buffer("u", "l1", 2048, core=0), (1024,))
    b.add(0, "dma", src=x, dst=t)
    if fence:
        b.add(0, "fence")
    b.add(0, "unary", kind="relu", input=t, output=u)
    if fence:
        b.add(0, "fence")
    b.add(0, "dma", src=u, dst=y)
    return b.build()


def test_fence_orders_the_units_of_its_core():
    x = f16(1024)
    out, report = run(dma_then_relu(True), {"x": x})
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    by_op = {s.label: s for s in report.timeline if not s.wait}
    dma_end = min(s.end for s in report.timeline if s.label == "dma")
    fences = sorted(s.start for s in report.timeline if s.label == "fence")
    assert fences[0] >= dma_end  # the fence waits for the DMA issued before it
    assert by_op["unary"].start >= fences[0]
    assert report.as_dict()["cores"][0]["units"]["sync"]["commands"] == 2


def test_without_the_fence_it_is_a_race():
    with pytest.raises(HazardError) as info:
        run(dma_then_relu(False), {"x": f16(1024)})
    assert info.value.kind == "race"


def barrier_program(fences: bool):
    """core 0 writes DDR, core 5 reads it: a two-fence barrier (arrive, then wait) orders
    them; with `fences` False nothing does."""
    b = ProgramBuilder("barrier")
    x = b.input("x", (512,))
    y = b.output("y", (512,))
    mid = b.buffer("mid", "ddr", 1024)
    t0 = tile(b.buffer("t0", "l1", 1024, core=0), (512,))
    t5 = tile(b.buffer("t5", "l1", 1024, core=5), (512,))
    arrive = {c: b.semaphore(f"bar{c}", core=c) for c in (0, 5)}
    loaded = b.semaphore("loaded", core=0)
    b.add(0, "dma", src=x, dst=t0, signals=[loaded])
    b.add(0, "dma", waits=[loaded], src=t0, dst=tile(mid, (512,)))
    if fences:
        for me, other in ((0, 5), (5, 0)):
            b.add(me, "fence", signals=[arrive[other]])
            b.add(me, "fence", waits=[arrive[me]])
    b.add(5, "dma", src=tile(mid, (512,)), dst=t5, signals=[b.semaphore("got", core=5)])
    b.add(5, "dma", waits=["got"], src=t5, dst=y)
    return b.build()


def test_a_barrier_of_fences_orders_cores():
    x = f16(512)
    out, report = run(barrier_program(True), {"x": x})
    np.testing.assert_array_equal(out["y"], x)
    stores = [s for s in report.timeline if s.core == 0 and s.label == "dma"]
    loads = [s for s in report.timeline if s.core == 5 and s.label == "dma"]
    assert min(s.start for s in loads) >= max(s.end for s in stores)
    with pytest.raises(HazardError) as info:
        run(barrier_program(False), {"x": x})
    assert info.value.kind in ("race", "uninitialized_read")


def test_fence_waiting_forever_is_a_deadlock():
    b = ProgramBuilder("stuck")
    b.semaphore("a", core=2)
    b.semaphore("b", core=3)
    b.add(2, "fence", waits=["a"])  # each core waits before it signals the other
    b.add(2, "fence", signals=["b"])
    b.add(3, "fence", waits=["b"])
    b.add(3, "fence", signals=["a"])
    with pytest.raises(HazardError) as info:
        run(b.build(), {})
    err = info.value
    assert err.kind == "deadlock"
    assert "core 3, command #0 (npu.fence) on sync waits for @b (count 0, needs 1; " \
           "pending signallers: core 2 #1)" in str(err)
    assert str(err).count("core 3, command #0") == 1  # one line per fence, not per unit


@pytest.mark.parametrize("src, dst", [("i64", "f16"), ("i32", "f16"), ("f16", "f32"), ("f32", "f16")])
def test_cast_converts_like_numpy(src, dst):
    from stc_mlir.isa.program import DTYPES

    values = (np.arange(-100, 100) * 3).astype(DTYPES[src])
    b = ProgramBuilder("cast")
    x = b.input("x", values.shape, dtype=src)
    y = b.output("y", values.shape, dtype=dst)
    t = tile(b.buffer("t", "l1", x.span, core=1), values.shape, dtype=src)
    u = tile(b.buffer("u", "l1", y.span, core=1), values.shape, dtype=dst)
    loaded, done = b.semaphore("loaded", 1), b.semaphore("done", 1)
    b.add(1, "dma", src=x, dst=t, signals=[loaded])
    b.add(1, "cast", input=t, output=u, waits=[loaded], signals=[done])
    b.add(1, "dma", src=u, dst=y, waits=[done])
    out, report = run(b.build(), {"x": values})
    np.testing.assert_array_equal(out["y"], values.astype(DTYPES[dst]))
    cast = next(s for s in report.timeline if s.label == "cast")
    width = {"i64": 4, "i32": 2}.get(src, 1)  # integer lanes: i32 / i64 elements take 2 / 4 fp16 lanes
    assert cast.end - cast.start == -(-values.size * width // T.vector_elements)  # one pass


def test_cast_shapes_are_checked_and_fence_round_trips_through_ir():
    b = ProgramBuilder("bad")
    t = tile(b.buffer("t", "l1", 64, core=0), (8,), dtype="i32")
    u = tile(b.buffer("u", "l1", 64, core=0), (4,))
    b.add(0, "cast", input=t, output=u)
    with pytest.raises(ProgramError, match=r"output tile has shape \[4\], expected \[8\]"):
        check_program(b.build(), T)
    program = barrier_program(True)
    again = program_from_module(parse_text(str(program_to_module(program))))
    assert again == program
    assert program.cores[0][2].describe() == "npu.fence"


def test_gather_counts_the_rows_it_reads_not_the_table():
    b = ProgramBuilder("embed")
    table = b.constant("table", f16(1000, 64))
    ids = b.input("ids", (8,), dtype="i64")
    y = b.output("y", (8, 64))
    b.add(0, "gather", data=table, indices=ids, output=y)
    _, report = run(b.build(), {"ids": np.arange(8) * 100})
    assert report.bytes_read["ddr"] == 8 * 64 * 2 + 8 * 8  # rows + indices
    # the roofline's minimum DDR traffic counts the rows a gather can pick, not the table
    assert report.min_ddr_bytes == 8 * 64 * 2 + 8 * 8 + 8 * 64 * 2
