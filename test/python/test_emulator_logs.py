"""The hazard tracker's access logs as C numbers (`native.Log`: a memory's read log rows, each
thread's reads and writes, the pending strided writes' codes): read from Python as lists of
tuples; what the C loop keeps of a run; and a write against unseen reads found to overlap
them exactly (the write's rows merged, each read row against them), as the Python check."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from stc_mlir import models
from stc_mlir.emulator import native, prepare, run
from stc_mlir.emulator.memory import Footprint, Memory
from stc_mlir.frontend import import_onnx
from stc_mlir.pipeline import Pipeline
from stc_mlir.dialects.npu import program_from_module
from stc_mlir.target import load

KINDS = [native.ListLog] + ([native._loop.Log] if native._loop is not None else [])


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_a_log_reads_as_a_list_of_tuples(kind):
    log = kind(3, [(1, 2, 3), [4, 5, 6]])
    log.append((7, 8, 9))
    want = [(1, 2, 3), (4, 5, 6), (7, 8, 9)]
    assert len(log) == 3 and log[0] == (1, 2, 3) and log[-1] == (7, 8, 9) and log[-3] == (1, 2, 3)
    assert list(log) == want and log == want and not (log != want) and log != want[:2]
    assert repr(log) == repr(want)
    assert [e for e, _, _ in log] == [1, 4, 7] and bool(log) and not kind(3)
    for twin in (copy.deepcopy(log), pickle.loads(pickle.dumps(log))):
        assert type(twin) is kind and twin == log
        twin.append((10, 11, 12))
        assert len(twin) == 4 and len(log) == 3
    assert np.array(list(log), dtype=np.int64).tolist() == [list(e) for e in want]
    big = 1 << 62
    log.append((big, -big, 0))
    assert log[3] == (big, -big, 0)
    with pytest.raises(IndexError):
        log[4]  # noqa: B018
    log.clear()
    assert len(log) == 0 and log == []


@pytest.mark.skipif(native._loop is None, reason="the C module is not built")
def test_the_c_log_refuses_bad_entries():
    Log = native._loop.Log
    for width in (0, 9):
        with pytest.raises(ValueError):
            Log(width)
    log = Log(4)
    with pytest.raises(ValueError):
        log.append((1, 2, 3))
    with pytest.raises(TypeError):
        log.append((1, 2, 3, "x"))
    with pytest.raises(TypeError):
        log.append(5)
    assert len(log) == 0
    with pytest.raises(TypeError):
        hash(log)


@pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")
def test_a_run_of_the_c_loop_keeps_its_logs_as_c_numbers():
    proto = models.build("mobilenetv2", batch=1, **models.small_options("mobilenetv2"))
    program = program_from_module(Pipeline(None).run(import_onnx(proto)))
    once = prepare(program, load(program.target), numerics=False)
    assert once.plan is not None
    run(program, models.example_inputs("mobilenetv2", proto), numerics=False, prepared=once)
    reads = writes = 0
    for mem in once.memories.values():
        logs = [mem.reads.rows, mem.pending, *mem.reads.by.values(), *mem.writes.values()]
        assert all(type(x) is native._loop.Log for x in logs), mem.name
        reads += sum(len(x) for x in mem.reads.by.values())
        writes += sum(len(x) for x in mem.writes.values())
        assert all(len(e) == 4 for e in mem.reads.rows) and len(mem.reads.rows) == len(mem.reads.where)
    assert reads > 100 and writes > 100


class _Task:
    """What `native.command` reads of a prepared command."""

    def __init__(self, tid, number, reads, writes, expect):
        self.tid, self.number, self.reads, self.writes, self.expect = tid, number, reads, writes, expect


READ = Footprint(0, (4,), (16,), 4, 52)  # rows [0, 4), [16, 20), [32, 36), [48, 52)
WRITES = [  # (footprint, whether it shares a byte with READ)
    (Footprint(4, (4,), (16,), 4, 52), False),  # each row right after a read row
    (Footprint(4, (4,), (16,), 12, 60), False),  # the gaps, exactly
    (Footprint(3, (4,), (16,), 4, 52), True),  # one byte of each read row
    (Footprint(8, (), (), 8, 8), False),  # dense, in a gap
    (Footprint(4, (), (), 13, 13), True),  # dense, over a gap and the next row's first byte
    (Footprint(6, (2,), (24,), 10, 34), True),  # another period: [6, 16) misses, [30, 40) hits
    (Footprint(20, (2, 2), (32, 8), 4, 44), False),  # 2-d: [20, 24), [28, 32), [52, 56), [60, 64)
    (Footprint(18, (2, 2), (32, 8), 2, 42), True),  # 2-d: [18, 20) hits, [26, 28), [50, 52), [58, 60)
]


@pytest.mark.parametrize("fp,hits", WRITES)
def test_a_write_against_an_unseen_strided_read_is_a_race_only_over_its_bytes(fp, hits):
    """Thread 2 read READ (a strided tile) at an epoch the writer (thread 1) has not seen: the
    write is a race exactly when it shares a byte with it, found by the C check as by the
    Python one (`native.read_overlapping`)."""
    read_rows = {b for r in range(4) for b in range(16 * r, 16 * r + 4)}
    lo_all = fp.base
    mask = np.zeros(fp.span, dtype=bool)
    fp._replace(base=0).view(mask)[...] = True
    write_bytes = {lo_all + int(i) for i in np.flatnonzero(mask)}
    assert hits == bool(read_rows & write_bytes), (fp, sorted(read_rows & write_bytes))
    outcomes = []
    for fn in [native.python_command] + ([native._loop.command] if native._loop is not None else []):
        mem = Memory("m", "l1", 64, True, 1, numerics=False)
        mem.host_wrote(0, 64)
        mem.reads.add(READ, 2, 5)
        task = _Task(1, 0, [], [("x", mem, fp, None, fp.span, fp.hull(1), None)], ())
        calls: list = []
        hooks = tuple((lambda name: lambda *args: calls.append(name))(n) for n in ("provenance", "read", "write", "prune"))
        counts = {"l1": 0}
        fn(task, np.array([1, 1, 0, 0, 0], dtype=np.int64), [0], dict(counts), dict(counts), hooks)
        outcomes.append((calls, repr(mem.writes), mem.starts, mem.values))
    assert all(o == outcomes[0] for o in outcomes)
    assert outcomes[0][0] == (["write"] if hits else [])
    mem = Memory("m", "l1", 64, True, 1, numerics=False)
    mem.reads.add(READ, 2, 5)
    assert (native.read_overlapping(mem.reads, fp, 1, [1, 1, 0, 0, 0]) is not None) == hits
