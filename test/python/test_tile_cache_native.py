"""The derived-value cache's bookkeeping in C (`_values`) against its Python reference
(`TileCache` with `native=False`): the same state after every call, the same values."""

from __future__ import annotations

import random

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
