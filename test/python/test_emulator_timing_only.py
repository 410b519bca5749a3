"""A timing-only run's own shortcuts (branch emu-timing3): its inputs' bytes are marked
written without their values being converted, and the C loop sums the report's byte counts
in C per level, adding them to the report's dicts at the end of the run, with the same ints
(and floats) as the additions one access at a time."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from stc_mlir import models
from stc_mlir import target as targets
from stc_mlir.dialects.npu import program_from_module
from stc_mlir.emulator import native, prepare, run, simulator
from stc_mlir.frontend import import_onnx
from stc_mlir.pipeline import Pipeline


@pytest.fixture(scope="module")
def compiled():
    proto = models.build("mobilenetv2", batch=1, **models.small_options("mobilenetv2"))
    inputs = models.example_inputs("mobilenetv2", proto)
    program = program_from_module(Pipeline(None).run(import_onnx(proto)))
    return program, inputs, targets.load(program.target)


def test_a_timing_only_run_marks_its_inputs_without_converting_them(compiled):
    program, inputs, target = compiled
    _, plain = run(program, inputs, target, numerics=False)
    # values fp16 cannot hold: converting them warns (an error here); a timing-only run
    # does not look at them, and its report is the same
    big = {k: np.full(v.shape, 1e6, dtype=np.float32) for k, v in inputs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, report = run(program, big, target, numerics=False)
    assert report.as_dict() == plain.as_dict()
    with pytest.raises(RuntimeWarning), warnings.catch_warnings():  # (a run with values converts them)
        warnings.simplefilter("error")
        run(program, big, target)
    wrong = {k: np.zeros((2, *v.shape), dtype=np.float32) for k, v in inputs.items()}
    with pytest.raises(Exception, match="has shape"):  # the shape is still checked
        run(program, wrong, target, numerics=False)


def _counts(program, inputs, target, use_c: bool, counted) -> tuple:
    prepared = prepare(program, target, True, False)
    tasks = [t for queue in prepared.tasks for t in queue if t.reads]
    for task, n in zip(tasks, counted):  # some accesses count what no int sum in C takes
        task.reads[0] = (*task.reads[0][:4], n, *task.reads[0][5:])
    prepared.plan = simulator._native_plan(prepared.tasks, True) if use_c else None
    _, report = run(program, dict(inputs), target, numerics=False, prepared=prepared)
    return ([(k, type(v).__name__, v) for k, v in report.bytes_read.items()],
            [(k, type(v).__name__, v) for k, v in report.bytes_written.items()])


@pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")
@pytest.mark.parametrize("counted", [
    (),  # all small ints: summed in C
    (1 << 50, 3, 1 << 62),  # ints too large to sum in C: the sums so far added first
    (7, 0.5, 11, 1e17, 5),  # floats: from the first one on, the dict adds one at a time
])
def test_the_c_loop_counts_bytes_as_the_python_loop(compiled, counted):
    program, inputs, target = compiled
    c = _counts(program, inputs, target, True, counted)
    py = _counts(program, inputs, target, False, counted)
    assert c == py
    if any(isinstance(n, float) for n in counted):
        assert any(kind == "float" for _, kind, _ in c[0])


class _Task:
    """What `native.command` reads of a prepared command."""

    def __init__(self, tid, number, reads, writes, expect):
        self.tid, self.number, self.reads, self.writes, self.expect = tid, number, reads, writes, expect


@pytest.mark.skipif(native._loop is None, reason="the C module is not built here")
def test_a_read_expecting_many_writers_is_checked_as_in_python():
    """A provenance expectation of more than 8 writers (BERT-base has reads of 24 to 100):
    the C granule scan searches their codes sorted; the same verdicts, hook calls and
    `passed` entries as `native.python_command`, on reads over runs the writers' codes do
    not settle (unknown runs: per-granule codes), a granule by no expected writer in some."""
    import copy
    import random

    from stc_mlir.emulator.memory import Footprint, Memory

    rng = random.Random(3)
    verdicts = set()
    for case in range(800):
        size = rng.randint(8, 64)
        mem = Memory("m", "l1", size, True, 1, numerics=False)
        code_of = [(rng.randint(1, 40) << 8) | rng.randint(1, 4) for _ in range(60)]
        writers = tuple(rng.sample(range(60), rng.randint(9, 60)))
        codes = [0] + [code_of[w] for w in writers]
        mem.code[:] = [rng.choice(codes) for _ in range(size)]
        if rng.random() < 0.5:  # some granule by a writer not expected
            mem.code[rng.randrange(size)] = (41 << 8) | 1
        for _ in range(rng.randint(1, 3)):  # unknown runs: the per-granule codes count
            lo, hi = sorted(rng.sample(range(size + 1), 2))
            mem.mark(lo, hi, None)
        base = rng.randrange(size)
        if rng.random() < 0.5:
            span = rng.randint(1, size - base)
            fp = Footprint(base, (), (), span, span)
        else:
            run = rng.randint(1, max(1, (size - base) // 3))
            stride = rng.randint(run, max(run, size - base - run))
            fp = Footprint(base, (2,), (stride,), run, stride + run)
            if fp.base + fp.span > size:
                fp = Footprint(base, (), (), run, run)
        read = ("x", mem, fp, None, 8, fp.hull(1), None)
        task = _Task(0, 0, [read], [], ((0, False, writers),))
        results = []
        for fn in (native.python_command, native._loop.command):
            t, c = copy.deepcopy((task, code_of))
            calls: list = []
            hooks = tuple((lambda name: lambda *args: calls.append(name))(n) for n in ("provenance", "read", "write"))
            fn(t, np.array([1, 1], dtype=np.int64), c, {"l1": 0}, {"l1": 0}, (*hooks, lambda m: None))
            m = t.reads[0][1]
            results.append(repr((calls, m.passed, m.code.tolist())))
            verdicts.add("provenance" in calls)
        assert results[0] == results[1], case
    assert verdicts == {True, False}
