"""The vector-clock join (`stc_mlir.emulator.clocks`): the C module, where built, gives
numpy's element-wise maximum in place, and refuses what it cannot join."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir.emulator import clocks

native = pytest.mark.skipif(clocks._clocks is None, reason="the optional C module _clocks is not built")


def _cases():
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 33, 257):
        for _ in range(20):
            yield (rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64),
                   rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64))


@pytest.mark.parametrize("join", [clocks.numpy_join, pytest.param("native", marks=native)])
def test_join_is_an_in_place_maximum(join):
    join = clocks._clocks.join if join == "native" else join
    for a, b in _cases():
        want = np.maximum(a, b)
        before_b = b.copy()
        join(a, b)
        assert np.array_equal(a, want)
        assert np.array_equal(b, before_b)  # the source is left as it was
    rows = np.arange(12, dtype=np.int64).reshape(3, 4)  # rows of a 2-d array: the clocks' case
    join(rows[0], rows[2])
    assert rows.tolist() == [[8, 9, 10, 11], [4, 5, 6, 7], [8, 9, 10, 11]]


@native
def test_native_join_refuses_what_it_cannot_join():
    a = np.zeros(4, dtype=np.int64)
    for bad in (np.zeros(3, dtype=np.int64), np.zeros(4, dtype=np.int32), np.zeros(4, dtype=np.float64)):
        with pytest.raises(ValueError):
            clocks._clocks.join(a, bad)
    with pytest.raises((ValueError, BufferError)):
        clocks._clocks.join(np.zeros(8, dtype=np.int64)[::2], a)  # not contiguous
    frozen = np.zeros(4, dtype=np.int64)
    frozen.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        clocks._clocks.join(frozen, a)
    assert not a.any()
