"""The values' per-command work made once (`prepare`): each command's views of its
memories' bytes, kept by the prepared program across runs (its memories keep their bytes'
array, zeroed by each run), and the dense DMAs copied without Python (`_values.hook`)."""

import numpy as np
import pytest

from stc_mlir.emulator import prepare, run, simulator, tile, tile_cache
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.target import load

RNG = np.random.default_rng(5)


def _reads_before_written():
    """`o = abs(q)` reads `q` before the DMA that writes it (a hazard a run without checks
    lets through: `q` holds whatever its bytes hold), then `y` = `o`."""
    b = ProgramBuilder("early")
    x, y = b.input("x", (4, 64)), b.output("y", (4, 64))
    q, o = (tile(b.buffer(n, "l1", 512, core=0), (4, 64)) for n in "qo")
    s = b.semaphore("s")
    b.add(0, "unary", signals=[s], input=q, output=o, kind="abs")
    b.add(0, "dma", waits=[s], src=x, dst=q)
    b.add(0, "dma", src=o, dst=y)
    return b.build()


def test_a_run_sees_none_of_the_bytes_the_run_before_left():
    """Without hazard checks a read of bytes not written yet sees zeros in every run of a
    prepared program, as in a fresh one (not the values the previous run left there)."""
    program = _reads_before_written()
    once = prepare(program, load(program.target), check_hazards=False)
    x = (RNG.standard_normal((4, 64)) + 2).astype(np.float16)
    for _ in range(2):
        got, _ = run(program, {"x": x}, check_hazards=False, prepared=once)
        np.testing.assert_array_equal(got["y"], np.zeros((4, 64), np.float16))


def test_the_views_are_made_once_and_stay_those_of_the_memories():
    program = _reads_before_written()
    once = prepare(program, load(program.target), check_hazards=False)
    data = {id(m.data) for m in once.memories.values()}
    views = [v for q in once.tasks for t in q if t.views is not None for d in t.views[:2] for v in d.values()]
    assert len(views) == 2 and all(id(v.base) in data for v in views)
    run(program, {"x": np.ones((4, 64), np.float16)}, check_hazards=False, prepared=once)
    run(program, {"x": np.ones((4, 64), np.float16)}, check_hazards=False, prepared=once)
    assert {id(m.data) for m in once.memories.values()} == data  # (the same arrays)
    copies = [t for q in once.tasks for t in q if t.copy is not None]
    assert len(copies) == 2 and all(t.views is None for t in copies)


@pytest.mark.skipif(not tile_cache.NATIVE, reason="the C module is not built here")
def test_the_commands_go_to_python_only_without_the_c_hook(monkeypatch):
    """With the C module, the event loop's hook copies the dense DMAs itself and computes
    the other commands with `_values.computer`: `_values` sees none of them; the outputs
    are those of the Python path."""
    program = _reads_before_written()
    seen = []
    compute = simulator.Simulator._values

    def recorded(self, task):
        seen.append(task.cmd.op)
        compute(self, task)

    monkeypatch.setattr(simulator.Simulator, "_values", recorded)
    x = RNG.standard_normal((4, 64)).astype(np.float16)
    got, report = run(program, {"x": x}, check_hazards=False)
    assert seen == []
    monkeypatch.setattr(tile_cache, "NATIVE", False)
    seen.clear()
    want, again = run(program, {"x": x}, check_hazards=False)
    assert seen == ["unary", "dma", "dma"]
    np.testing.assert_array_equal(got["y"], want["y"])
    assert report.as_dict() == again.as_dict()


@pytest.mark.skipif(not tile_cache.NATIVE, reason="the C module is not built here")
def test_the_c_hook_waits_for_what_completed_as_values_completed_does():
    """Before each command (with helper threads), the hook waits for the values of the
    commands whose slices the timeline got since its last call, and only those."""
    from stc_mlir.emulator.report import Slice

    class FakeValues:
        def __init__(self):
            self.pending = {(0, 1): "job01", (1, 0): "job10", (2, 5): "job25"}
            self.seen = 1
            self.waited = []

        def _wait(self, job):
            self.waited.append(job)

    class Task:
        copy = None

        def __init__(self, hand=0):
            self.hand = hand

    values, timeline, handed, offloaded = FakeValues(), [], [], []
    hook = tile_cache._values.hook(tile_cache.TileCache(), handed.append, values, timeline, offloaded.append, 100)
    timeline += [Slice(0, "vector", 1, "x", 0.0, 1.0), Slice(1, "dma", 0, "y", 0.0, 2.0),
                 Slice(0, "matrix", 2, "z", 0.0, 3.0)]
    task = Task()
    hook(task)
    assert values.waited == ["job10"] and values.seen == 3  # (slice 0 was seen before)
    assert values.pending == {(0, 1): "job01", (2, 5): "job25"} and handed == [task]
    timeline.append(Slice(2, "matrix", 5, "w", 1.0, 4.0))
    hook(task)
    assert values.waited == ["job10", "job25"] and values.seen == 4 and len(handed) == 2
    large = Task(100)  # (host work of offload_macs or more: to a helper)
    hook(large)
    assert offloaded == [large] and len(handed) == 2


def _product_twice_around_a_write():
    """c1 = a w; a = -a (in place); c2 = a w: the second product must not use the fp32
    copy of `a` the first one left in the cache."""
    b = ProgramBuilder("twice")
    a, w = b.input("a", (32, 64)), b.input("w", (64, 32))
    c1, c2 = b.output("c1", (32, 32)), b.output("c2", (32, 32))
    at = tile(b.buffer("at", "l1", 32 * 64 * 2, core=0), (32, 64))
    wt = tile(b.buffer("wt", "wb", 64 * 32 * 2, core=0), (64, 32))
    ct1, ct2 = (tile(b.buffer(n, "l1", 32 * 32 * 2, core=0), (32, 32)) for n in ("ct1", "ct2"))
    loaded, first, negated, second = (b.semaphore(n) for n in ("loaded", "first", "negated", "second"))
    b.add(0, "dma", signals=[loaded], src=a, dst=at)
    b.add(0, "dma", signals=[loaded], src=w, dst=wt)
    b.add(0, "matmul", waits=[loaded, loaded], signals=[first], lhs=at, rhs=wt, output=ct1)
    b.add(0, "unary", waits=[first], signals=[negated], input=at, output=at, kind="neg")
    b.add(0, "matmul", waits=[negated], signals=[second], lhs=at, rhs=wt, output=ct2)
    b.add(0, "dma", waits=[second], src=ct1, dst=c1)
    b.add(0, "dma", src=ct2, dst=c2)
    return b.build()


@pytest.mark.parametrize("threads", [1, 2])
def test_a_write_drops_the_values_derived_from_its_bytes_in_c_and_python(threads, monkeypatch):
    """The C path (`_values.computer`) and the Python one (`simulator._computed`) give the
    same bits, on one value thread or two (every command handed over), and a command
    writing a tile drops its fp32 copy: the product after it sees the new bytes."""
    monkeypatch.setattr(simulator, "OFFLOAD_MACS", 0)
    program = _product_twice_around_a_write()
    a, w = RNG.standard_normal((32, 64)).astype(np.float16), RNG.standard_normal((64, 32)).astype(np.float16)
    got, report = run(program, {"a": a, "w": w}, threads=threads)
    np.testing.assert_array_equal(got["c2"], -got["c1"])
    np.testing.assert_allclose(got["c1"], a.astype(np.float32) @ w.astype(np.float32), rtol=2e-2, atol=2e-2)
    monkeypatch.setattr(tile_cache, "NATIVE", False)
    want, again = run(program, {"a": a, "w": w}, threads=threads)
    for name in ("c1", "c2"):
        np.testing.assert_array_equal(got[name].view(np.uint16), want[name].view(np.uint16))
    assert report.as_dict() == again.as_dict()


def _strided_dmas():
    """DMAs between tiles that are not contiguous (column blocks, a transpose, a copy
    within one buffer over bytes it also reads), one after the other, and a product that
    reads a tile before and after a strided DMA rewrites it."""
    b = ProgramBuilder("strided")
    x, w = b.input("x", (8, 64)), b.input("w", (32, 16))
    c1, c2 = b.output("c1", (8, 16)), b.output("c2", (8, 16))
    b.output("y", (8, 64))
    t = b.output("t", (64, 8))
    at = tile(b.buffer("at", "l1", 8 * 32 * 2, core=0), (8, 32))
    wt = tile(b.buffer("wt", "wb", 32 * 16 * 2, core=0), (32, 16))
    ct1, ct2 = (tile(b.buffer(n, "l1", 8 * 16 * 2, core=0), (8, 16)) for n in ("ct1", "ct2"))
    tt = tile(b.buffer("tt", "l1", 64 * 8 * 2, core=0), (64, 8))
    ov = b.buffer("ov", "l1", 8 * 64 * 2, core=0)
    steps = [
        ("dma", dict(src=w, dst=wt)),
        ("dma", dict(src=tile("x", (8, 32), offset=32, strides=(64, 1)), dst=at)),  # (offsets in bytes)
        ("matmul", dict(lhs=at, rhs=wt, output=ct1)),
        ("dma", dict(src=tile("x", (8, 32), offset=0, strides=(64, 1)), dst=at)),
        ("matmul", dict(lhs=at, rhs=wt, output=ct2)),
        ("dma", dict(src=at, dst=tile("y", (8, 32), offset=64, strides=(64, 1)))),
        ("dma", dict(src=tile("x", (64, 8), strides=(1, 64)), dst=tt)),
        ("dma", dict(src=tt, dst=t)),
        ("dma", dict(src=x, dst=tile(ov, (8, 64)))),
        ("dma", dict(src=tile(ov, (8, 32), strides=(64, 1)), dst=tile(ov, (8, 32), offset=32, strides=(64, 1)))),
        ("dma", dict(src=tile(ov, (8, 32), offset=32, strides=(64, 1)), dst=tile("y", (8, 32), strides=(64, 1)))),
        ("dma", dict(src=ct1, dst=c1)),
        ("dma", dict(src=ct2, dst=c2)),
    ]
    sems = [b.semaphore(f"s{i}") for i in range(len(steps))]
    for i, (op, tiles) in enumerate(steps):
        b.add(0, op, waits=[sems[i - 1]] if i else [], signals=[sems[i]], **tiles)
    return b.build()


def test_the_strided_dmas_are_copied_in_c_as_numpy_copies_them(monkeypatch):
    """A DMA between tiles that are not contiguous is copied by its runs in C (`strided`,
    made at `prepare`), but one over bytes it also reads (numpy's copy): the bits of the
    Python path, and what it writes drops what was derived from those bytes."""
    program = _strided_dmas()
    once = prepare(program, load(program.target))
    dmas = [t for q in once.tasks for t in q if t.cmd.op == "dma"]
    within = [t for t in dmas if t.cmd.tiles["src"].buffer == t.cmd.tiles["dst"].buffer]
    assert len(within) == 1 and within[0].strided is None and within[0].copy is None
    assert sum(t.strided is not None for t in dmas) == 5 and sum(t.copy is not None for t in dmas) == 5
    x, w = RNG.standard_normal((8, 64)).astype(np.float16), RNG.standard_normal((32, 16)).astype(np.float16)
    got, report = run(program, {"x": x, "w": w})
    f32 = np.float32
    np.testing.assert_allclose(got["c1"], x[:, 16:48].astype(f32) @ w.astype(f32), rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(got["c2"], x[:, :32].astype(f32) @ w.astype(f32), rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(got["t"], x.T)
    np.testing.assert_array_equal(got["y"][:, 32:], x[:, :32])
    np.testing.assert_array_equal(got["y"][:, :32], x[:, :32])  # (ov's first 32 columns, moved 16 on)
    monkeypatch.setattr(tile_cache, "NATIVE", False)
    want, again = run(program, {"x": x, "w": w})
    for name in want:
        np.testing.assert_array_equal(got[name].view(np.uint16), want[name].view(np.uint16))
    assert report.as_dict() == again.as_dict()
