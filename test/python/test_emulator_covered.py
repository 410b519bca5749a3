"""A read's provenance settled in the C loop without its granule codes (`_loop.c`
`covered_since`): when the writes of the commands it expects cover all its granules and no
other command wrote bytes near it since the first of them started (or only bytes a period
apart from its rows); and a strided write's codes left pending until something looks at them
(`defer`, `Memory.pending`). These programs write strided tiles (their codes are kept per
granule) so that only the shortcut or the granule scan can settle the read; each compares
the C loop with the Python loop and checks (`native.python_command`), which have neither, and
the hazard cases fail if the shortcut settles a read it must not (a write since that
overlaps the read, a cover that misses some of its granules) or a pending code is missed.
After each run every granule's writer code is compared too (`_codes`)."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from stc_mlir import target as targets
from stc_mlir.emulator import HazardError, native, prepare, run, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator.memory import Footprint
from test_emulator_cover_grid import _program as _rows_program

pytestmark = pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")

TARGET = targets.load("stcp920")
ROWS, WIDTH = 4, 64  # the L1 buffer: ROWS rows of WIDTH f16 (128 bytes: the period of the tiles' rows)


def _program(writes: list[tuple[int, ...]], read: tuple[int, int], expects: list[int], wait: bool = True):
    """Core 0's DMA writes slices [offset, offset + n) of every row of an L1 buffer (one
    command per (offset, n) of `writes`, in order, from an input; (offset, n, rows): of its
    first rows only); then a relu reads slice
    `read` of every row (after the last write signals, if `wait`), expecting the writes
    numbered `expects`, and a DMA stores it."""
    b = ProgramBuilder("covered")
    b.input("x", (ROWS, WIDTH))
    y = b.output("y", (ROWS, read[1]))
    buf = b.buffer("t", "l1", ROWS * WIDTH * 2, core=0)
    out = tile(b.buffer("o", "l1", ROWS * read[1] * 2, core=0), (ROWS, read[1]))
    b.semaphore("in")
    b.semaphore("done")
    for k, (offset, n, *rows) in enumerate(writes):
        shape = (rows[0] if rows else ROWS, n)
        b.add(0, "dma", signals=["in"] if k == len(writes) - 1 else [],
              src=tile("x", shape, 2 * offset, (WIDTH, 1)), dst=tile(buf, shape, 2 * offset, (WIDTH, 1)))
    b.add(0, "unary", waits=["in"] if wait else [], signals=["done"], kind="relu",
          input=tile(buf, (ROWS, read[1]), 2 * read[0], (WIDTH, 1)), output=out)
    b.add(0, "dma", waits=["done"], src=out, dst=y)
    program = b.build()
    stream = program.cores[0]
    n = len(writes)
    stream[n] = dataclasses.replace(stream[n], expects={"input": tuple((0, e) for e in expects)})
    stream[n + 1] = dataclasses.replace(stream[n + 1], expects={"src": ((0, n),)})
    return program, {"x": np.random.default_rng(1).standard_normal((ROWS, WIDTH)).astype(np.float16)}


def _codes(mem) -> bytes:
    """Every granule's writer code, as the tracker holds it: `Memory.code` (the C loop's
    pending codes applied) with the runs' known codes filled in. (Not `Memory.code` alone:
    under a known run it is filled in only where some check looked, and the two loops look
    at different granules: the C loop's cover settles a read without them.)"""
    n = mem.size * mem.granule
    return mem.codes(Footprint(0, (), (), n, n)).tobytes()


def _outcome(program, inputs, use_c: bool, numerics: bool = False):
    """Two runs of a prepared `program` (the second with the plan's covers found already):
    per run, the result or hazard, the report and every memory's writer codes after it
    (`_codes`). Without `use_c`: the Python loop and the Python checks
    (`native.python_command`), the reference."""
    with pytest.MonkeyPatch.context() as mp:
        if not use_c:
            mp.setattr(native, "command", native.python_command)
            mp.setattr(native, "prune", native.python_prune)
        prepared = prepare(program, TARGET, True, numerics)
        if not use_c:
            prepared.plan = None
        else:
            assert prepared.plan is not None
        out = []
        for _ in range(2):
            try:
                _, report = run(program, dict(inputs), TARGET, numerics=numerics, prepared=prepared)
                out.append(("ok", repr(report.as_dict())))
            except HazardError as err:
                out.append(("hazard", err.kind, str(err), err.core, err.index, err.address,
                            repr(err.report.as_dict())))
            out[-1] += tuple(_codes(m) for _, m in sorted(prepared.memories.items(), key=str))
    return out


def _same(program, inputs):
    c = _outcome(program, inputs, True)
    assert c == _outcome(program, inputs, False)
    assert c[0] == c[1]
    return c[0]


def test_two_writers_covering_the_read_settle_it():
    # each row's [0, 32) from two commands, then [32, 64) from a third, a period apart
    got = _same(*_program([(0, 16), (16, 16), (32, 32)], (0, 32), [0, 1]))
    assert got[0] == "ok"


def test_a_write_since_over_some_of_the_read_is_a_provenance_error():
    # the second write covers [16, 48) of each row after the expected one: not apart
    got = _same(*_program([(0, 32), (16, 32)], (0, 32), [0]))
    assert got[:2] == ("hazard", "provenance") and "core 0, command #2" in got[2]
    assert "last written by core 0, command #1" in got[2]


def test_a_cover_missing_granules_is_a_provenance_error():
    # the expected write covers [0, 16) of each row; [16, 32) is an earlier command's
    got = _same(*_program([(16, 16), (0, 16)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]
    # the same on a grid of its own (more rows than the read's): looked at granule by granule
    got = _same(*_program([(16, 16), (0, 24)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]
    # the rest of the rows written by a dense write (one run) before the strided one: their
    # codes come from that run when the strided write's are put in (`defer`'s fills)
    got = _same(*_program([(0, WIDTH), (0, 16)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]
    # the expected write covers the read's first row only, on a grid of its own (one row):
    # the read's first row is not all of it
    got = _same(*_program([(0, 32), (0, 32, 1)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]


def test_a_covered_read_of_an_unsynchronised_writer_is_a_race():
    """The read's granules are its expected writer's (the cover settles its provenance), but
    the relu does not wait for that write: the writer's code alone says it is a race."""
    got = _same(*_program([(0, 32)], (0, 32), [0], wait=False))
    assert got[:2] == ("hazard", "race") and "core 0, command #1" in got[2]
    assert "written by core 0, command #0" in got[2]


def test_random_writers_and_expectations_as_the_python_loop():
    """Slices of the rows written in random order, a read of a random slice expecting a
    random subset of them: the C loop's verdicts are the Python loop's (about half are
    provenance errors, some settled by the cover, some by a write since a period apart)."""
    rng = random.Random(5)
    kinds = set()
    for _ in range(40):
        writes = []
        for _ in range(rng.randint(1, 5)):
            offset = rng.randrange(0, WIDTH, 8)
            writes.append((offset, rng.randrange(8, WIDTH - offset + 1, 8)))
        offset = rng.randrange(0, WIDTH, 8)
        read = (offset, rng.randrange(8, WIDTH - offset + 1, 8))
        expects = sorted(rng.sample(range(len(writes)), rng.randint(1, len(writes))))
        got = _same(*_program(writes, read, expects))
        kinds.add(got[1] if got[0] == "hazard" else "ok")
    assert {"ok", "provenance"} <= kinds, kinds


def test_codes_under_runs_a_read_settled_without_them_as_the_python_loop():
    """A strided write's hull made unknown (rows 0-4), then dense writes of row 5 (known runs)
    and a read of every row the C loop's cover settles: the Python loop fills row 5's codes
    in from its runs when it looks at the read's, the C loop never does; the tracker's codes
    (the runs' where known) are the same. (test_emulator_cover_grid's first random case.)"""
    writes = [(0, 6, 0, 64), (2, 1, 18, 35), (0, 5, 54, 10), (5, 1, 23, 29), (5, 1, 54, 10), (5, 1, 5, 29)]
    got = _same(*_rows_program(writes, (57, 7), [1, 2, 3, 4, 5]))
    assert got[0] == "ok"
    # row 5's first 10 granules of the L1 buffer: the whole buffer's write, then the last one's
    l1 = np.frombuffer(got[-1], np.int32)
    assert list(l1[320:330]) == [(1 << 8) | 1] * 5 + [(6 << 8) | 1] * 5


def test_random_row_blocks_codes_as_the_python_loop():
    """After a write of the whole buffer, two blocks of rows over a random slice's columns
    (at any element, sometimes an element short) and random other blocks (any first row,
    any slice; strided or one row each), in random order, then a read of the slice of every
    row expecting a random subset of them: the C loop's outcome, report and every granule's
    writer code are the Python loop's."""
    rng = random.Random(3)
    kinds = set()
    for _ in range(20):
        offset = rng.randrange(64)
        read = (offset, rng.randint(1, 64 - offset))
        split = rng.randint(1, 5)
        writes = [(0, 6, 0, 64)]
        for row, rows in ((0, split), (split, 6 - split)):
            first = rng.randint(0, read[0]) + (rng.random() < 0.2)
            end = rng.randint(read[0] + read[1], 64) - (rng.random() < 0.2)
            if first < end:
                writes.append((row, rows, first, end - first))
        for _ in range(rng.randint(1, 4)):
            row, first = rng.randrange(6), rng.randrange(64)
            writes.append((row, rng.randint(1, 6 - row), first, rng.randint(1, 64 - first)))
        writes[1:] = rng.sample(writes[1:], len(writes) - 1)
        expects = sorted(rng.sample(range(1, len(writes)), rng.randint(1, len(writes) - 1)))
        got = _same(*_rows_program(writes, read, expects))
        kinds.add(got[1] if got[0] == "hazard" else "ok")
    assert {"ok", "provenance"} <= kinds, kinds
