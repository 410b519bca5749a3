"""A read's cover by writes on grids other than its own (`_loop.c` `writers_cover`): the
expected writes' rows near the read merged and each of the read's rows looked up in them;
when those writes have one grid, their first rows merged stand for them (`one_grid`: a
footprint per merged first row), and rows that touch are kept as one pair (`near_row`).
Each case compares the C loop with the Python loop and checks (`native.python_command`),
which have no cover: a cover that settles a read some of whose granules another command
wrote last is a provenance error missed."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from stc_mlir import target as targets
from stc_mlir.emulator import HazardError, native, prepare, run, tile
from stc_mlir.emulator.builder import ProgramBuilder

pytestmark = pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")

TARGET = targets.load("stcp920")
ROWS, WIDTH = 6, 64  # the L1 buffer: ROWS rows of WIDTH f16


def _program(writes: list[tuple[int, int, int, int]], read: tuple[int, int], expects: list[int]):
    """Core 0's DMA writes, one command per (first row, rows, offset, n) of `writes`, in order,
    elements [offset, offset + n) of those rows of an L1 buffer; then a relu reads elements
    `read` (offset, n) of every row, expecting the writes numbered `expects`, and a DMA stores
    it."""
    b = ProgramBuilder("cover")
    b.input("x", (ROWS, WIDTH))
    y = b.output("y", (ROWS, read[1]))
    buf = b.buffer("t", "l1", ROWS * WIDTH * 2, core=0)
    out = tile(b.buffer("o", "l1", ROWS * read[1] * 2, core=0), (ROWS, read[1]))
    b.semaphore("in")
    b.semaphore("done")
    for k, (row, rows, offset, n) in enumerate(writes):
        at = 2 * (row * WIDTH + offset)
        b.add(0, "dma", signals=["in"] if k == len(writes) - 1 else [],
              src=tile("x", (rows, n), at, (WIDTH, 1)), dst=tile(buf, (rows, n), at, (WIDTH, 1)))
    b.add(0, "unary", waits=["in"], signals=["done"], kind="relu",
          input=tile(buf, (ROWS, read[1]), 2 * read[0], (WIDTH, 1)), output=out)
    b.add(0, "dma", waits=["done"], src=out, dst=y)
    program = b.build()
    stream = program.cores[0]
    n = len(writes)
    stream[n] = dataclasses.replace(stream[n], expects={"input": tuple((0, e) for e in expects)})
    stream[n + 1] = dataclasses.replace(stream[n + 1], expects={"src": ((0, n),)})
    return program, {"x": np.random.default_rng(1).standard_normal((ROWS, WIDTH)).astype(np.float16)}


def _outcome(program, inputs, use_c: bool):
    """Two timing-only runs of a prepared `program` (the second with the plan's covers found):
    the result or hazard of each. Without `use_c`: the Python loop and checks, the reference."""
    with pytest.MonkeyPatch.context() as mp:
        if not use_c:
            mp.setattr(native, "command", native.python_command)
            mp.setattr(native, "prune", native.python_prune)
        prepared = prepare(program, TARGET, True, False)
        if not use_c:
            prepared.plan = None
        out = []
        for _ in range(2):
            try:
                _, report = run(program, dict(inputs), TARGET, numerics=False, prepared=prepared)
                out.append(("ok", repr(report.as_dict())))
            except HazardError as err:
                out.append(("hazard", err.kind, str(err), err.core, err.index, err.address))
    return out


def _same(writes, read, expects):
    program, inputs = _program(writes, read, expects)
    c = _outcome(program, inputs, True)
    assert c == _outcome(program, inputs, False)
    assert c[0] == c[1]
    return c[0]


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
