"""Commands' values on several threads (`stc_mlir.emulator.parallel`): the same bits and
the same report as on one thread, the same hazards, and the helpers do compute."""


import numpy as np
import pytest

from stc_mlir import models
from stc_mlir.emulator import HazardError, halves, prepare, program_from_module, run, simulator, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator.examples import conv_by_rows
from stc_mlir.emulator.tile_cache import TileCache
from stc_mlir.frontend import import_onnx
from stc_mlir.pipeline import Pipeline
from stc_mlir.target import load

RNG = np.random.default_rng(11)


def f16(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


@pytest.fixture
def every_command_handed_over(monkeypatch):
    """Every command's values handed over (not only large products'); the commands handed
    over (which thread computes them depends on the machine's load)."""
    monkeypatch.setattr(simulator, "OFFLOAD_MACS", 0)
    handed = []
    start = simulator.Values.start

    def recorded(self, key, work):
        handed.append(key)
        start(self, key, work)

    monkeypatch.setattr(simulator.Values, "start", recorded)
    return handed


def _bits(outputs):
    return {k: np.ascontiguousarray(v).view(np.uint8).tobytes() for k, v in outputs.items()}


def test_two_threads_give_the_bits_of_one_compiled_model(every_command_handed_over):
    proto = models.build("mobilenetv2", batch=1, image_size=32)
    inputs = models.example_inputs("mobilenetv2", proto)
    program = program_from_module(Pipeline().run(import_onnx(proto)))
    one, report = run(program, inputs, threads=1)
    assert not every_command_handed_over
    for _ in range(2):
        two, again = run(program, inputs, threads=2)
        assert _bits(two) == _bits(one)
        assert again.as_dict() == report.as_dict() and again.timeline == report.timeline
    # (a dense DMA's bytes are copied where it starts, as a small command's values)
    tasks = prepare(program, load(program.target)).tasks
    computed = sum(1 for q in tasks for t in q if t.fence is None and t.copy is None)
    assert 0 < computed < sum(len(q) for q in program.cores.values())
    assert len(every_command_handed_over) == 2 * computed


def test_two_threads_give_the_bits_of_one_conv_over_cores(every_command_handed_over):
    x, w = f16(2, 16, 12, 12), f16(24, 16, 3, 3, scale=0.2)
    program = conv_by_rows(x.shape, w, cores=4, out_chunks=3)
    one, _ = run(program, {"x": x}, threads=1)
    for _ in range(3):
        two, _ = run(program, {"x": x}, threads=3)
        assert _bits(two) == _bits(one)
    assert every_command_handed_over


def _racy_after_products():
    """A product on a helper, then a unary that does not wait for the load it reads."""
    b = ProgramBuilder("racy_after_products")
    a, m = b.input("a", (64, 64)), b.input("m", (64, 64))
    x, y, c = b.input("x", (256,)), b.output("y", (256,)), b.output("c", (64, 64))
    la, lm, lc = (tile(b.buffer(n, "l1", 64 * 64 * 2, core=0), (64, 64)) for n in ("la", "lm", "lc"))
    t = tile(b.buffer("t", "l1", 512, core=0), (256,))
    s, d, loaded, done = b.semaphore("s"), b.semaphore("d"), b.semaphore("loaded"), b.semaphore("done")
    b.add(0, "dma", signals=[loaded], src=a, dst=la)
    b.add(0, "dma", signals=[loaded], src=m, dst=lm)
    b.add(0, "matmul", waits=[loaded, loaded], signals=[done], lhs=la, rhs=lm, output=lc)
    b.add(0, "dma", waits=[done], src=lc, dst=c)
    b.add(0, "dma", src=x, dst=t, signals=[s])
    b.add(0, "unary", signals=[d], input=t, output=t, kind="relu")  # no wait on the load
    b.add(0, "dma", waits=[d], src=t, dst=y)
    return b.build()


def test_a_hazard_is_reported_the_same_with_two_threads(every_command_handed_over, made_pools):
    inputs = {"a": f16(64, 64), "m": f16(64, 64), "x": f16(256)}
    errors = []
    for threads in (1, 2):
        with pytest.raises(HazardError) as info:
            run(_racy_after_products(), inputs, threads=threads)
        errors.append((info.value.kind, str(info.value), info.value.report.as_dict()))
    assert errors[0] == errors[1] and errors[0][0] == "uninitialized_read"
    assert made_pools and all(pool.threads == 0 for pool in made_pools)  # (every pool stopped)


@pytest.fixture
def made_pools(monkeypatch):
    """The pools of product threads the runs make."""
    pools = []
    make = halves.pool

    def recorded(threads):
        pool = make(threads)
        pools.append(pool)
        return pool

    monkeypatch.setattr(halves, "pool", recorded)
    return pools


def test_the_pool_runs_while_products_are_handed_over_and_stops_after(every_command_handed_over, made_pools,
                                                                      monkeypatch):
    seen = []
    start = simulator.Values.start

    def looked(self, key, work):
        start(self, key, work)
        seen.append(self.pool.threads)

    monkeypatch.setattr(simulator.Values, "start", looked)
    x, w = f16(1, 8, 8, 8), f16(8, 8, 3, 3, scale=0.2)
    run(conv_by_rows(x.shape, w, cores=2), {"x": x}, threads=3)
    assert seen and set(seen) == {2} and len(made_pools) == 1
    assert made_pools[0].threads == 0 and made_pools[0].stats()["by_threads"] + made_pools[0].stats()["by_waiters"] > 0
