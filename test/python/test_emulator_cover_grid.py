"""A read's cover by writes on grids other than its own (`_loop.c` `writers_cover`): the
expected writes' rows near the read merged and each of the read's rows looked up in them;
when those writes have one grid, their first rows merged stand for them (`one_grid`: a
footprint per merged first row), and rows that touch are kept as one pair (`near_row`).
Each case compares the C loop with the Python loop and checks (`native.python_command`),
which have no cover (outcome, report and every granule's writer code: `cover_programs.same`): a cover that settles a read some of whose granules another command
wrote last is a provenance error missed."""

from __future__ import annotations

import random

import pytest

from stc_mlir.emulator import native

from cover_programs import WIDTH, grid_program, same

pytestmark = pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")

ROWS = 6  # the L1 buffer's rows (of WIDTH f16)


def _same(writes, read, expects):
    return same(*grid_program(writes, read, expects, ROWS))


def test_writes_of_half_the_rows_each_cover_the_read():
    assert _same([(0, 3, 0, 32), (3, 3, 0, 32)], (0, 32), [0, 1])[0] == "ok"
    # slices starting before the read's; the first rows' blocks of one grid, then another
    assert _same([(0, 3, 1, 9), (0, 3, 10, 30), (3, 3, 0, 40)], (3, 33), [0, 1, 2])[0] == "ok"
    # all the buffer, read whole (one row), by two slices of every row: one pair
    assert _same([(0, 6, 0, 40), (0, 6, 40, 24)], (0, WIDTH), [0, 1])[0] == "ok"


@pytest.mark.parametrize("writes, read", [
    ([(0, 6, 0, WIDTH), (0, 3, 0, 32), (3, 3, 0, 31)], (0, 32)),  # the last rows' last element
    ([(0, 6, 0, WIDTH), (0, 3, 1, 31), (3, 3, 0, 32)], (0, 32)),  # the first rows' first element
    ([(0, 6, 0, WIDTH), (0, 2, 0, 32), (3, 3, 0, 32)], (0, 32)),  # a row between
    ([(0, 6, 0, WIDTH), (0, 3, 0, 13), (0, 3, 14, 18), (3, 3, 0, 32)], (0, 32)),  # an element between
    ([(0, 6, 0, WIDTH), (0, 3, 0, 32), (3, 3, 8, 32)], (0, 32)),  # the last rows' first 8 elements
    # read whole (one row): an element of every row; the last of every row (the rows of one
    # write a granule apart); the 4th row's first (after three rows that touch); the 3rd row's
    # second half (the first rows' writes of two grids)
    ([(0, 6, 0, WIDTH), (0, 6, 0, 40), (0, 6, 41, 23)], (0, WIDTH)),
    ([(0, 6, 0, WIDTH), (0, 6, 0, WIDTH - 1)], (0, WIDTH)),
    ([(0, 6, 0, WIDTH), (0, 3, 0, 40), (0, 3, 40, 24), (3, 3, 1, WIDTH - 1)], (0, WIDTH)),
    ([(0, 6, 0, WIDTH), (0, 3, 0, 32), (0, 2, 32, 32), (3, 3, 0, WIDTH)], (0, WIDTH)),
])
def test_a_cover_missing_a_granule_is_a_provenance_error(writes, read):
    got = _same(writes, read, list(range(1, len(writes))))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]


def test_random_row_blocks_and_slices_as_the_python_loop():
    """Two blocks of rows over a random slice's columns (at any element, sometimes an
    element short) and random other blocks, written in random order, a read of the slice
    expecting a random subset of them: the C loop's verdicts are the Python loop's."""
    rng = random.Random(11)
    kinds = set()
    for _ in range(40):
        offset = rng.randrange(WIDTH)
        read = (offset, rng.randint(1, WIDTH - offset))
        split = rng.randint(1, ROWS - 1)
        blocks = []
        for row, rows in ((0, split), (split, ROWS - split)):
            first = rng.randint(0, read[0]) + (rng.random() < 0.2)
            end = rng.randint(read[0] + read[1], WIDTH) - (rng.random() < 0.2)
            if first < end:
                blocks.append((row, rows, first, end - first))
        for _ in range(rng.randint(0, 3)):
            row, first = rng.randrange(ROWS), rng.randrange(WIDTH)
            blocks.append((row, rng.randint(1, ROWS - row), first, rng.randint(1, WIDTH - first)))
        rng.shuffle(blocks)
        writes = [(0, ROWS, 0, WIDTH)] + blocks
        expects = sorted(rng.sample(range(1, len(writes)), rng.randint(1, len(writes) - 1)))
        got = _same(writes, read, expects)
        kinds.add(got[1] if got[0] == "hazard" else "ok")
    assert {"ok", "provenance"} <= kinds, kinds
