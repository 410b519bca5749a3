"""Programs for the C loop's cover tests (test_emulator_covered, test_emulator_cover_grid):
DMA writes of row blocks of an L1 buffer, then a relu reading a slice of every row that
expects some of them; and the outcome of a run under the C loop or the Python loop and
checks (`native.python_command`, the reference), with every granule's writer code."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from stc_mlir import target as targets
from stc_mlir.emulator import HazardError, native, prepare, run, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator.memory import Footprint

TARGET = targets.load("stcp920")
WIDTH = 64  # f16 per row of the L1 buffer (128 bytes: the period of the tiles' rows)


def grid_program(writes: list[tuple[int, int, int, int]], read: tuple[int, int], expects: list[int],
                 rows: int, wait: bool = True):
    """Core 0's DMA writes, one command per (first row, rows, offset, n) of `writes`, in
    order, elements [offset, offset + n) of those rows of a `rows` x WIDTH f16 L1 buffer from
    an input; then a relu reads elements `read` (offset, n) of every row (after the last
    write signals, if `wait`), expecting the writes numbered `expects`, and a DMA stores it."""
    b = ProgramBuilder("cover")
    b.input("x", (rows, WIDTH))
    y = b.output("y", (rows, read[1]))
    buf = b.buffer("t", "l1", rows * WIDTH * 2, core=0)
    out = tile(b.buffer("o", "l1", rows * read[1] * 2, core=0), (rows, read[1]))
    b.semaphore("in")
    b.semaphore("done")
    for k, (row, count, offset, n) in enumerate(writes):
        at = 2 * (row * WIDTH + offset)
        b.add(0, "dma", signals=["in"] if k == len(writes) - 1 else [],
              src=tile("x", (count, n), at, (WIDTH, 1)), dst=tile(buf, (count, n), at, (WIDTH, 1)))
    b.add(0, "unary", waits=["in"] if wait else [], signals=["done"], kind="relu",
          input=tile(buf, (rows, read[1]), 2 * read[0], (WIDTH, 1)), output=out)
    b.add(0, "dma", waits=["done"], src=out, dst=y)
    program = b.build()
    stream = program.cores[0]
    n = len(writes)
    stream[n] = dataclasses.replace(stream[n], expects={"input": tuple((0, e) for e in expects)})
    stream[n + 1] = dataclasses.replace(stream[n + 1], expects={"src": ((0, n),)})
    return program, {"x": np.random.default_rng(1).standard_normal((rows, WIDTH)).astype(np.float16)}


def codes(mem) -> bytes:
    """Every granule's writer code, as the tracker holds it: `Memory.code` (the C loop's
    pending codes applied) with the runs' known codes filled in. (Not `Memory.code` alone:
    under a known run it is filled in only where some check looked, and the two loops look
    at different granules: the C loop's cover settles a read without them.)"""
    n = mem.size * mem.granule
    return mem.codes(Footprint(0, (), (), n, n)).tobytes()


def outcome(program, inputs, use_c: bool, numerics: bool = False):
    """Two runs of a prepared `program` (the second with the plan's covers found already):
    per run, the result or hazard, the report and every memory's writer codes after it
    (`codes`). Without `use_c`: the Python loop and the Python checks, the reference."""
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
            out[-1] += tuple(codes(m) for _, m in sorted(prepared.memories.items(), key=str))
    return out


def same(program, inputs):
    """The C loop's outcome of two runs (`outcome`), checked equal to the Python loop's and
    the same in both runs; the first run's."""
    c = outcome(program, inputs, True)
    assert c == outcome(program, inputs, False)
    assert c[0] == c[1]
    return c[0]
