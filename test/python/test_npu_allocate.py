"""npu-allocate on plain programs: buffers live at the same time never share a byte, the
high-water mark stays at the live peak for the lowering's typical patterns, and a buffer
that cannot fit is reported with the numbers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stc_mlir.isa.program import Buffer, Program
from stc_mlir.passes.npu_allocate import AllocationError, allocate


def program(buffers: list[tuple[str, int, str, int | None]]) -> Program:
    return Program(buffers={n: Buffer(n, space, size, core) for n, size, space, core in buffers})


def overlapping(a, b, live) -> bool:
    (a0, a1), (b0, b1) = live[a.name], live[b.name]
    return a0 <= b1 and b0 <= a1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 200_000), st.integers(0, 9), st.integers(0, 5)),
                min_size=1, max_size=30))
def test_buffers_live_together_never_share_bytes(specs):
    names = [f"b{i}" for i in range(len(specs))]
    prog = program([(n, size, "l1", 0) for n, (size, _, _) in zip(names, specs)])
    live = {n: (first, first + length) for n, (_, first, length) in zip(names, specs)}
    peak = max(sum(b.size for b in prog.buffers.values() if live[b.name][0] <= p <= live[b.name][1])
               for p in range(15))
    if peak > 1 << 20:  # may not fit: then it must say so
        try:
            placed = allocate(prog, live)
        except AllocationError:
            return
    else:
        placed = allocate(prog, live)
    bufs = list(placed.buffers.values())
    for i, a in enumerate(bufs):
        assert a.offset % 64 == 0 and a.offset + a.size <= 1 << 20
        for b in bufs[i + 1:]:
            if overlapping(a, b, live):
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset


def test_ping_pong_chain_stays_at_the_live_peak():
    # a group's values as the lowering makes them (DeepFM: 320 samples per core): two small
    # long-lived values and a chain of large ones, each live with the next
    live = {"emb": (1, 13), "first": (5, 22), "second": (6, 22), "mm0": (13, 16),
            "mm1": (16, 19), "mm2": (19, 22), "cat": (22, 23)}
    sizes = {"emb": 199_680, "first": 24_960, "second": 5_120, "mm0": 256_000, "mm1": 256_000,
             "mm2": 256_000, "cat": 286_080}
    prog = program([(n, sizes[n], "l1", 3) for n in live])
    placed = allocate(prog, live)
    peak = max(sum(sizes[n] for n in live if live[n][0] <= p <= live[n][1]) for p in range(24))
    assert max(b.offset + b.size for b in placed.buffers.values()) == peak == 572_160


def test_the_gap_reported_is_free_over_the_whole_live_range():
    # phase 0: a at [0, 600,000) leaves 448,576 bytes; phase 1: c at [600,000, 900,000)
    # leaves 600,000; x, live in both, has only [900,032, 1 MiB) = 148,544 bytes
    prog = Program(buffers={"a": Buffer("a", "l1", 600_000, 0, offset=0),
                            "c": Buffer("c", "l1", 300_000, 0, offset=600_000),
                            "x": Buffer("x", "l1", 200_000, 0)})
    with pytest.raises(AllocationError, match=r"^npu-allocate: buffer @x \(200,000 bytes, live in "
                                              r"phases 0-1\) does not fit the 1,048,576-byte l1 of "
                                              r"core 0: at phase 0, the fullest of them, the buffers placed "
                                              r"there take 600,000 bytes; the largest gap free in all "
                                              r"of phases 0-1 is 148,544 bytes$"):
        allocate(prog, {"a": (0, 0), "c": (1, 1), "x": (0, 1)})
    placed = allocate(prog, {"a": (0, 0), "c": (1, 1), "x": (1, 1)})
    assert placed.buffers["x"].offset == 0  # live in phase 1 only: it fits below c


def test_a_buffer_that_cannot_fit_names_the_item():
    prog = program([("a", 700_000, "l1", 2), ("b", 400_000, "l1", 2)])
    with pytest.raises(AllocationError, match=r"^npu-allocate: buffer @b \(400,000 bytes, live in "
                                              r"phase 1 \(group 'x' sub-group 1\)\) does not fit the "
                                              r"1,048,576-byte l1 of core 2: at phase 1 \(group 'x' "
                                              r"sub-group 1\) the buffers placed there take 700,000 "
                                              r"bytes and the largest free gap is 348,544 bytes$"):
        allocate(prog, {"a": (0, 1), "b": (1, 1)}, ["group 'x' sub-group 0", "group 'x' sub-group 1"])
