"""The event loop's helpers in C (`stc_mlir.emulator.native`): the vector-clock join gives
numpy's element-wise maximum in place and refuses what it cannot join; `settled` gives
what its Python version gives, on random writer runs, clocks and ranges."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stc_mlir.emulator import native
from stc_mlir.emulator.memory import Memory

built = pytest.mark.skipif(native._loop is None, reason="the optional C module _loop is not built")


def _cases():
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 33, 257):
        for _ in range(20):
            yield (rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64),
                   rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64))


@pytest.mark.parametrize("join", [native.numpy_join, pytest.param("native", marks=built)])
def test_join_is_an_in_place_maximum(join):
    join = native._loop.join if join == "native" else join
    for a, b in _cases():
        want = np.maximum(a, b)
        before_b = b.copy()
        join(a, b)
        assert np.array_equal(a, want)
        assert np.array_equal(b, before_b)  # the source is left as it was
    rows = np.arange(12, dtype=np.int64).reshape(3, 4)  # rows of a 2-d array: the clocks' case
    join(rows[0], rows[2])
    assert rows.tolist() == [[8, 9, 10, 11], [4, 5, 6, 7], [8, 9, 10, 11]]


@built
def test_native_join_refuses_what_it_cannot_join():
    a = np.zeros(4, dtype=np.int64)
    for bad in (np.zeros(3, dtype=np.int64), np.zeros(4, dtype=np.int32), np.zeros(4, dtype=np.float64)):
        with pytest.raises(ValueError):
            native._loop.join(a, bad)
    with pytest.raises((ValueError, BufferError)):
        native._loop.join(np.zeros(8, dtype=np.int64)[::2], a)  # not contiguous
    frozen = np.zeros(4, dtype=np.int64)
    frozen.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        native._loop.join(frozen, a)
    assert not a.any()


def _random_runs(rng: random.Random) -> tuple[list[int], list[int], int]:
    size = rng.randint(1, 60)
    starts, values = [0], [0]
    for _ in range(rng.randint(0, 12)):
        lo, hi = sorted(rng.sample(range(size + 1), 2))
        code = rng.choice([-rng.randint(2, 9), (rng.randint(1, 6) << 8) | rng.randint(0, 4),
                           1 << 8, 0])
        mem = Memory("m", "l1", size, True, 1, numerics=False)
        mem.starts, mem.values = starts, values
        mem.mark(lo, hi, code)
        starts, values = mem.starts, mem.values
    return starts, values, size


@built
def test_native_settled_matches_python():
    rng = random.Random(0)
    for _ in range(3000):
        starts, values, size = _random_runs(rng)
        seen = [rng.randint(0, 6) for _ in range(5)]
        writers = rng.choice([{}, {1: [1, 0, 1]}])
        lo, hi = rng.randint(-1, size + 1), rng.randint(-1, size + 1)
        lo, hi = max(lo, 0), min(hi, size)
        want = native.python_settled(starts, values, lo, hi, seen, writers, 8)
        got = native._loop.settled(starts, values, lo, hi, seen, writers, 8)
        assert got == want, (starts, values, lo, hi, seen, writers)
        if want[0] is not None:  # the codes themselves: `Memory.known`
            mem = Memory("m", "l1", size, True, 1, numerics=False)
            mem.starts, mem.values = list(starts), list(values)
            assert mem.known(lo, hi) == want[0]
    with pytest.raises(TypeError):
        native._loop.settled((0,), [0], 0, 1, [1], {}, 8)
