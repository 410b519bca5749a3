"""A read's provenance settled in the C loop without its granule codes (`_loop.c`
`covered_since`): when the writes of the commands it expects cover all its granules and no
other command wrote bytes near it since the first of them started (or only bytes a period
apart from its rows); and a strided write's codes left pending until something looks at them
(`defer`, `Memory.pending`). These programs write strided tiles (their codes are kept per
granule) so that only the shortcut or the granule scan can settle the read; each compares
the C loop with the Python loop and checks (`native.python_command`), which have neither, and
the hazard cases fail if the shortcut settles a read it must not (a write since that
overlaps the read, a cover that misses some of its granules) or a pending code is missed.
After each run every granule's writer code is compared too (`cover_programs.codes`)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stc_mlir.emulator import native

from cover_programs import WIDTH, grid_program, same

pytestmark = pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")

ROWS = 4  # the L1 buffer's rows (of cover_programs.WIDTH f16)


def _program(writes: list[tuple[int, ...]], read: tuple[int, int], expects: list[int], wait: bool = True):
    """`grid_program` of ROWS rows, its writes (offset, n) of every row ((offset, n, rows): of
    its first rows only)."""
    blocks = [(0, rows[0] if rows else ROWS, offset, n) for offset, n, *rows in writes]
    return grid_program(blocks, read, expects, ROWS, wait)


def test_two_writers_covering_the_read_settle_it():
    # each row's [0, 32) from two commands, then [32, 64) from a third, a period apart
    got = same(*_program([(0, 16), (16, 16), (32, 32)], (0, 32), [0, 1]))
    assert got[0] == "ok"


def test_a_write_since_over_some_of_the_read_is_a_provenance_error():
    # the second write covers [16, 48) of each row after the expected one: not apart
    got = same(*_program([(0, 32), (16, 32)], (0, 32), [0]))
    assert got[:2] == ("hazard", "provenance") and "core 0, command #2" in got[2]
    assert "last written by core 0, command #1" in got[2]


def test_a_cover_missing_granules_is_a_provenance_error():
    # the expected write covers [0, 16) of each row; [16, 32) is an earlier command's
    got = same(*_program([(16, 16), (0, 16)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]
    # the same on a grid of its own (more rows than the read's): looked at granule by granule
    got = same(*_program([(16, 16), (0, 24)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]
    # the rest of the rows written by a dense write (one run) before the strided one: their
    # codes come from that run when the strided write's are put in (`defer`'s fills)
    got = same(*_program([(0, WIDTH), (0, 16)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]
    # the expected write covers the read's first row only, on a grid of its own (one row):
    # the read's first row is not all of it
    got = same(*_program([(0, 32), (0, 32, 1)], (0, 32), [1]))
    assert got[:2] == ("hazard", "provenance") and "last written by core 0, command #0" in got[2]


def test_a_covered_read_of_an_unsynchronised_writer_is_a_race():
    """The read's granules are its expected writer's (the cover settles its provenance), but
    the relu does not wait for that write: the writer's code alone says it is a race."""
    got = same(*_program([(0, 32)], (0, 32), [0], wait=False))
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
        got = same(*_program(writes, read, expects))
        kinds.add(got[1] if got[0] == "hazard" else "ok")
    assert {"ok", "provenance"} <= kinds, kinds


def test_codes_under_runs_a_read_settled_without_them_as_the_python_loop():
    """A strided write's hull made unknown (rows 0-4), then dense writes of row 5 (known runs)
    and a read of every row the C loop's cover settles: the Python loop fills row 5's codes
    in from its runs when it looks at the read's, the C loop never does; the tracker's codes
    (the runs' where known) are the same. (test_emulator_cover_grid's first random case.)"""
    writes = [(0, 6, 0, 64), (2, 1, 18, 35), (0, 5, 54, 10), (5, 1, 23, 29), (5, 1, 54, 10), (5, 1, 5, 29)]
    got = same(*grid_program(writes, (57, 7), [1, 2, 3, 4, 5], 6))
    assert got[0] == "ok"
    # row 5's first 10 granules of the L1 buffer: the whole buffer's write, then the last one's
    l1 = np.frombuffer(got[-1], np.int32)
    assert list(l1[320:330]) == [(1 << 8) | 1] * 5 + [(6 << 8) | 1] * 5


