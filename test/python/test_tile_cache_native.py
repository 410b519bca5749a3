"""The derived-value cache's bookkeeping in C (`_values`) against its Python reference
(`TileCache` with `native=False`): the same state after every call, the same values."""

from __future__ import annotations

import random
from functools import partial

import numpy as np
import pytest

from stc_mlir.emulator import tile_cache
from stc_mlir.emulator.tile_cache import TileCache

needs_c = pytest.mark.skipif(not tile_cache.NATIVE, reason="the C module is not built here")

MEMORIES = [("ddr", None), ("l1", 0), ("l1", 1)]
SIZE = 256


def _state(cache: TileCache) -> tuple:
    """Everything the cache knows, in its dicts' orders (the LRU order and the order
    `origin` tries aliases in matter)."""
    return ({m: [(k, e[0], e[1], e[2].tobytes()) for k, e in d.items()] for m, d in cache.memories.items()},
            {m: list(d) for m, d in cache.aliases.items()}, {m: list(d) for m, d in cache.sources.items()},
            cache.dropped, cache.nbytes)


def _random_calls(rng: random.Random, n: int):
    for _ in range(n):
        kind = rng.choice(["copy", "copy", "piece", "written", "get", "get", "get", "get", "get", "get"])
        mem, other = rng.choice(MEMORIES), rng.choice(MEMORIES)
        step = rng.choice([1, 8])
        lo = rng.randrange(0, SIZE - 8, step)
        hi = rng.randrange(lo + step, min(SIZE, lo + 96) + 1, step)
        at = rng.randrange(0, SIZE - (hi - lo) + 1, step)
        if kind == "piece":  # a region copied in two or three pieces, then read whole or in part
            ends = [hi]
            for _ in range(rng.choice([1, 2])):
                ends.append(ends[-1] + rng.randrange(1, 24))
            if ends[-1] > SIZE or at + ends[-1] - lo > SIZE:
                continue
            for start, end in zip([lo, *ends], ends):
                yield ("copy", mem, start, end, other, at + start - lo)
            yield ("get", mem, rng.randrange(lo, hi), rng.randrange(ends[-2], ends[-1]) + 1, "f32")
        elif kind == "get":  # (tiles on a coarse grid: many are read again)
            lo = rng.randrange(0, SIZE - 32, 32)
            yield ("get", mem, lo, lo + rng.choice([32, 64]), rng.choice(["f32", "columns"]))
        else:
            yield (kind, mem, lo, hi, other, at)


def _apply(cache: TileCache, data: dict, call: tuple) -> object:
    kind, mem, lo, hi = call[:4]
    if kind == "copy":
        cache.copy(data[mem], lo, hi, mem, data[call[4]], call[5], call[4])
    elif kind == "written":
        data[mem][lo:hi] = np.arange(lo, hi, dtype=np.uint8)
        cache.written(mem, lo, hi)
    else:
        made = []

        def make():
            made.append(call)
            return data[mem][lo:hi].astype(np.float32) + len(call[4])

        return cache.get(mem, lo, hi, (lo, (hi - lo,), call[4]), make).tobytes(), bool(made)
    return None


@needs_c
@pytest.mark.parametrize("seed", range(8))
def test_the_c_bookkeeping_is_the_python_one(seed):
    rng = random.Random(seed)
    calls = list(_random_calls(rng, 400))
    caches = [TileCache(budget=4096, per_memory=6, native=native) for native in (False, True)]
    datas = [{m: np.random.default_rng(seed).integers(0, 256, SIZE, dtype=np.uint8) for m in MEMORIES}
             for _ in caches]
    hits = 0
    for call in calls:
        got = [_apply(cache, data, call) for cache, data in zip(caches, datas)]
        assert got[0] == got[1], call
        hits += got[0] is not None and not got[0][1]
        assert _state(caches[0]) == _state(caches[1]), call
        for m in MEMORIES:
            assert np.array_equal(datas[0][m], datas[1][m])
    assert caches[1].dropped > 0 and any(caches[1].aliases.values()) and hits > 10  # (the calls did exercise it)


@needs_c
def test_origin_follows_pieces_in_c():
    cache = TileCache(native=True)
    cache.copied("l1", 0, 8, "ddr", 100)
    cache.copied("l1", 8, 16, "ddr", 108)
    cache.copied("l1", 16, 24, "ddr", 200)  # not where the second piece ended
    assert tile_cache._values.origin(cache, "l1", 4, 12) == ("ddr", 104)
    assert tile_cache._values.origin(cache, "l1", 0, 16) == ("ddr", 100)
    assert tile_cache._values.origin(cache, "l1", 4, 20) == ("l1", 4)
    value = cache.get("l1", 4, 12, (4, "f32"), lambda: np.zeros(2, np.float32))  # kept at ddr 104
    assert cache.memories["ddr"][(104, "f32")][2] is value
    assert tile_cache._values.get(cache, "l1", 4, 12, (4, "f32"), list) is value
    other = np.ones(2, np.float32)
    assert tile_cache._values.get(cache, "l1", 4, 12, (4, "other"), lambda: other) is other


@needs_c
def test_a_dense_copy_out_of_range_raises():
    cache = TileCache(native=True)
    dst, src = np.zeros(16, np.uint8), np.zeros(16, np.uint8)
    with pytest.raises(IndexError):
        cache.copy(dst, 8, 24, "l1", src, 0, "ddr")
    assert not cache.aliases


def test_the_built_module_is_the_interface_tile_cache_calls():
    if tile_cache._values is not None:
        assert tile_cache._values.INTERFACE == tile_cache.INTERFACE


class _Task:
    strided = None

    def __init__(self, views):
        self.cmd, self.views, self.core, self.index = "cmd", views, 0, 0


def _commands(rng: random.Random, n: int):
    """Computed commands (fp16 tiles read by slot, converted or derived; a span written)
    between dense copies and other writes."""
    for _ in range(n):
        if rng.random() < 0.3:
            mem, other = rng.choice(MEMORIES), rng.choice(MEMORIES)
            lo = rng.randrange(0, SIZE - 64, 8)
            hi = lo + rng.choice([8, 32, 64])
            yield ("copy", mem, lo, hi, other, rng.randrange(0, SIZE - (hi - lo) + 1, 8))
            continue
        places, slots = {}, rng.sample(["lhs", "rhs", "bias"], rng.choice([1, 2, 3]))
        for slot in slots:
            mem, lo = rng.choice(MEMORIES), rng.randrange(0, SIZE - 64, 32)
            hi = lo + rng.choice([32, 64])
            places[slot] = (mem, lo, hi, (lo, ((hi - lo) // 2,), (2,), np.dtype(np.float16)))
        mem, lo = rng.choice(MEMORIES), rng.randrange(0, SIZE - 32, 16)
        yield ("compute", places, ((mem, lo, lo + rng.choice([16, 32])),), rng.sample(slots, len(slots)),
               rng.choice(["upcast", "derived"]))


@needs_c
@pytest.mark.parametrize("seed", range(6))
def test_the_c_computer_is_the_python_one(seed, monkeypatch):
    """`_values.computer` (C: its `derived`, `derived.upcast`, the written walk) against
    `simulator._computed` with the Python cache: the same values handed to the command,
    the same made, the same cache after each command."""
    from stc_mlir.emulator import functional, halves, simulator

    rng = random.Random(seed)
    caches = [TileCache(budget=4096, per_memory=6, native=native) for native in (False, True)]
    datas = [{m: np.random.default_rng(seed).integers(0, 256, SIZE, dtype=np.uint8) for m in MEMORIES}
             for _ in caches]
    seen: list[list] = [[], []]

    def executes(i):
        def execute(cmd, ins, outs, derived):
            data, places, spans, order, how = ins
            views = {slot: data[places[slot][0]][places[slot][1]:places[slot][2]].view(np.float16) for slot in order}
            if how == "upcast":
                got = functional._upcast(views, derived, keep=order[-1:])
                seen[i].append([(s, v.dtype.name, v.tobytes()) for s, v in got.items()])
            for slot in order:
                made = []

                def make(slot=slot, made=made):
                    made.append(slot)
                    with np.errstate(all="ignore"):
                        return halves.to_f32(views[slot]) * 2

                value = derived(slot, ("twice",), make)
                seen[i].append((slot, value.tobytes(), made, value.flags.writeable))
            for mem, lo, hi in spans:
                data[mem][lo:hi] = written[: hi - lo]
        return execute

    monkeypatch.setattr(simulator, "execute", executes(0))
    python = partial(simulator._computed, caches[0], None)
    c = tile_cache._values.computer(caches[1], executes(1), None, halves.to_f32, np.dtype(np.float16))
    ok = 0
    written = None
    for call in _commands(rng, 300):
        written = np.frombuffer(rng.randbytes(64), np.uint8)
        if call[0] == "copy":
            for cache, data in zip(caches, datas):
                _apply(cache, data, call)
        else:
            _, places, spans, order, how = call
            python(_Task(((datas[0], places, spans, order, how), {}, places, spans)))
            c(_Task(((datas[1], places, spans, order, how), {}, places, spans)))
            ok += how == "upcast"
        assert seen[0] == seen[1], call
        assert _state(caches[0]) == _state(caches[1]), call
    assert ok and caches[1].dropped and any(s[2] == [] for s in seen[1] if isinstance(s, tuple))


@needs_c
def test_the_c_computer_raises_what_fail_raises_for_an_index_error():
    cache, failed = TileCache(native=True), []

    def execute(cmd, ins, outs, derived):
        raise IndexError("gather index 9 is out of range for axis size 4")

    def fail(task, err):
        failed.append((task, str(err)))
        raise RuntimeError("hazard")

    from stc_mlir.emulator import halves
    compute = tile_cache._values.computer(cache, execute, fail, halves.to_f32, np.dtype(np.float16))
    task = _Task(({}, {}, {}, (("l1", 0, 8),)))
    with pytest.raises(RuntimeError, match="hazard"):
        compute(task)
    assert failed == [(task, "gather index 9 is out of range for axis size 4")]
