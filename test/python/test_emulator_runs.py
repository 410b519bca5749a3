"""A memory's writer runs (`Memory.mark` / `Memory.known`) hold exactly what a per-granule
array of the same writes holds, whichever way a write is merged in."""

from __future__ import annotations

import random

import pytest

from stc_mlir.emulator.memory import MAX_SPANS, Footprint, Memory


def _expand(mem: Memory) -> list:
    ends = mem.starts[1:] + [mem.size]
    out: list = []
    for start, end, value in zip(mem.starts, ends, mem.values):
        assert start < end  # sorted, no empty run
        out += [value] * (end - start)
    return out


def _spans(rng: random.Random, size: int) -> tuple[tuple[int, int], ...]:
    points = sorted(rng.sample(range(size + 1), min(size + 1, 2 * rng.randint(1, 6))))
    spans: list[tuple[int, int]] = []
    for lo, hi in zip(points[::2], points[1::2]):
        if spans and spans[-1][1] >= lo:  # touching runs are one span (as `Footprint.spans` gives)
            spans[-1] = (spans[-1][0], hi)
        else:
            spans.append((lo, hi))
    return tuple(spans)


@pytest.mark.parametrize("how", ["mark", "python", "numpy"])
def test_runs_match_a_per_granule_array(how):
    rng = random.Random(how)
    for _ in range(200):
        size = rng.randint(1, 120)
        mem = Memory("m", "l1", size, True, 1, numerics=False)
        truth: list = [0] * size
        for _ in range(40):
            spans = _spans(rng, size)
            if rng.random() < 0.1:  # a write left unknown over its hull
                lo, hi = spans[0][0], spans[-1][1]
                mem.mark(None, 0, lo, hi)
                truth[lo:hi] = [None] * (hi - lo)
            else:
                code = rng.choice([3, 4, 5, 7])
                if how == "python" and len(spans) > 1:
                    mem._set_many(spans, code)
                elif how == "numpy" and len(spans) > 1:
                    mem._set_array(spans, code)
                else:
                    mem.mark(spans, code)
                for lo, hi in spans:
                    truth[lo:hi] = [code] * (hi - lo)
            assert _expand(mem) == truth
            # neighbours differ: no two runs that could be one
            assert all(a != b for a, b in zip(mem.values, mem.values[1:]))
            query = _spans(rng, size)
            seen = [truth[i] for lo, hi in query for i in range(lo, hi)]
            known = mem.known(query)
            if None in seen:
                assert known is None
            else:
                assert known is not None and set(known) == set(seen)


def test_footprint_spans_cover_its_granules():
    # a 3-d tile of 2-byte elements in a larger buffer: rows of 4 elements, a gap, 3 rows
    # per plane, 2 planes; spans in 2-byte granules
    fp = Footprint(base=8, shape=(2, 3), strides=(64, 16), run=8, span=64 + 32 + 8)
    byte_set = {fp.base + i * 64 + j * 16 + k for i in range(2) for j in range(3) for k in range(8)}
    for write in (False, True):
        spans = fp.spans(2, write)
        assert {g * 2 + b for lo, hi in spans for g in range(lo, hi) for b in range(2)} == byte_set
    # beyond MAX_SPANS runs: a read looks at its hull, a write is not kept as runs
    many = Footprint(base=0, shape=(MAX_SPANS + 1,), strides=(16,), run=8, span=16 * MAX_SPANS + 8)
    assert many.spans(1, write=False) == ((0, 16 * MAX_SPANS + 8),)
    assert len(many.spans(1, write=True)) == MAX_SPANS + 1
    assert Footprint(base=0, shape=(0,), strides=(4,), run=4, span=0).spans(1, False) is None
