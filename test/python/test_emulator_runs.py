"""A memory's writer runs (`Memory.mark` / `Memory.known`) hold exactly what a per-granule
array of the same writes holds, and a footprint's hull covers its granules."""

from __future__ import annotations

import random

from stc_mlir.emulator.memory import Footprint, Memory


def _expand(mem: Memory) -> list:
    ends = mem.starts[1:] + [mem.size]
    out: list = []
    for start, end, value in zip(mem.starts, ends, mem.values):
        assert start < end  # sorted, no empty run
        out += [None if value < 0 else value] * (end - start)  # below 0: an unknown run
    return out


def test_runs_match_a_per_granule_array():
    rng = random.Random(0)
    for _ in range(300):
        size = rng.randint(1, 120)
        mem = Memory("m", "l1", size, True, 1, numerics=False)
        truth: list = [0] * size
        for _ in range(40):
            lo, hi = sorted(rng.sample(range(size + 1), 2)) if size else (0, 0)
            code = rng.choice([3, 4, 5, 7, None])  # None: a strided write, unknown over its hull
            before = {(a, b): mem.state(a, b) for a in range(size + 1) for b in range(a + 1, size + 1)}
            if code is not None:  # each write has its own code
                code = 1000 * len(before) + rng.randint(0, 999) + 10 ** 6 * rng.randint(1, 10 ** 6)
            mem.mark(lo, hi, code)
            truth[lo:hi] = [code] * (hi - lo)
            assert _expand(mem) == truth
            assert all(a != b for a, b in zip(mem.values, mem.values[1:]))  # no two runs could be one
            if lo < hi:  # a write changes the state of every range it touches, and no other
                for qlo, qhi in [sorted(rng.sample(range(size + 1), 2)) for _ in range(4)]:
                    touched = qlo < hi and lo < qhi
                    assert (before[qlo, qhi] != mem.state(qlo, qhi)) == touched
            qlo, qhi = sorted(rng.sample(range(size + 1), 2))
            seen = truth[qlo:qhi]
            known = mem.known(qlo, qhi)
            if None in seen or not seen:
                assert known is None
            else:
                assert known is not None and set(known) == set(seen)


def test_host_writes_are_runs():
    mem = Memory("m", "ddr", 64, True, 4, numerics=False)
    mem.host_write(8, bytes(8))
    mem.host_write(16, bytes(4))
    assert mem.known(0, 2) == [0]
    assert set(mem.known(2, 5)) == {256}  # HazardTracker.HOST_CODE
    assert 0 in mem.known(4, 6)


def test_footprint_hull():
    # 2 planes x 3 rows of 8 bytes, 2-byte granules: the hull spans first to last byte
    fp = Footprint(base=8, shape=(2, 3), strides=(64, 16), run=8, span=64 + 32 + 8)
    lo, hi, dense = fp.hull(2)
    byte_set = {fp.base + i * 64 + j * 16 + k for i in range(2) for j in range(3) for k in range(8)}
    assert (lo * 2, hi * 2) == (min(byte_set), max(byte_set) + 1) and not dense
    assert Footprint(base=6, shape=(), strides=(), run=10, span=10).hull(2) == (3, 8, True)


def test_codes_filled_in_from_the_runs_when_looked_at():
    mem = Memory("m", "ddr", 64, True, 4, numerics=False)
    mem.host_write(8, bytes(8))
    mem.host_write(32, bytes(16))
    mem.mark(10, 12, 7)  # a dense write: its run only
    assert not mem.code.any()  # nothing filled yet
    assert (mem.codes(Footprint(base=8, shape=(), strides=(), run=8, span=8)) == 256).all()
    assert list(mem.code[:12]) == [0, 0, 256, 256] + [0] * 8  # only what was looked at
    assert mem.unwritten(8, 8) is None and mem.unwritten(4, 8) == 4
    assert mem.unwritten(32, 16) is None
    assert list(mem.code) == [0, 0, 256, 256, 0, 0, 0, 0, 256, 256, 7, 7, 0, 0, 0, 0]
    # a strided write keeps its codes per granule and leaves its hull's runs unknown
    strided = Footprint(base=16, shape=(2,), strides=(8,), run=4, span=12)
    mem.codes(strided)[...] = 9
    mem.mark(4, 7, None)
    assert mem.known(4, 7) is None and mem.known(2, 4) == [256]
    assert list(mem.codes(Footprint(base=8, shape=(), strides=(), run=24, span=24))) == \
        [256, 256, 9, 0, 9, 0]
