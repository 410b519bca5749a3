"""The event loop's helpers in C (`stc_mlir.emulator.native`): the vector-clock join gives
numpy's element-wise maximum in place and refuses what it cannot join; `settled` gives
what its Python version gives, on random writer runs, clocks and ranges."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stc_mlir.emulator import native
from stc_mlir.emulator.memory import Footprint, Memory

built = pytest.mark.skipif(native._loop is None, reason="the optional C module _loop is not built")


def _cases():
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 33, 257):
        for _ in range(20):
            yield (rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64),
                   rng.integers(-(1 << 62), 1 << 62, n, dtype=np.int64))


@pytest.mark.parametrize("join", [native.numpy_join, pytest.param("native", marks=built)])
def test_join_is_an_in_place_maximum(join):
    join = native._loop.join if join == "native" else join
    for a, b in _cases():
        want = np.maximum(a, b)
        before_b = b.copy()
        join(a, b)
        assert np.array_equal(a, want)
        assert np.array_equal(b, before_b)  # the source is left as it was
    rows = np.arange(12, dtype=np.int64).reshape(3, 4)  # rows of a 2-d array: the clocks' case
    join(rows[0], rows[2])
    assert rows.tolist() == [[8, 9, 10, 11], [4, 5, 6, 7], [8, 9, 10, 11]]


@built
def test_native_join_refuses_what_it_cannot_join():
    a = np.zeros(4, dtype=np.int64)
    for bad in (np.zeros(3, dtype=np.int64), np.zeros(4, dtype=np.int32), np.zeros(4, dtype=np.float64)):
        with pytest.raises(ValueError):
            native._loop.join(a, bad)
    with pytest.raises((ValueError, BufferError)):
        native._loop.join(np.zeros(8, dtype=np.int64)[::2], a)  # not contiguous
    frozen = np.zeros(4, dtype=np.int64)
    frozen.flags.writeable = False
    with pytest.raises((ValueError, BufferError)):
        native._loop.join(frozen, a)
    assert not a.any()


def _random_runs(rng: random.Random) -> tuple[list[int], list[int], int]:
    size = rng.randint(1, 60)
    starts, values = [0], [0]
    for _ in range(rng.randint(0, 12)):
        lo, hi = sorted(rng.sample(range(size + 1), 2))
        code = rng.choice([-rng.randint(2, 9), (rng.randint(1, 6) << 8) | rng.randint(0, 4),
                           1 << 8, 0])
        mem = Memory("m", "l1", size, True, 1, numerics=False)
        mem.starts, mem.values = starts, values
        mem.mark(lo, hi, code)
        starts, values = mem.starts, mem.values
    return starts, values, size


@built
def test_native_settled_matches_python():
    rng = random.Random(0)
    for _ in range(3000):
        starts, values, size = _random_runs(rng)
        seen = [rng.randint(0, 6) for _ in range(5)]
        writers = rng.choice([{}, {1: [1, 0, 1]}])
        lo, hi = rng.randint(-1, size + 1), rng.randint(-1, size + 1)
        lo, hi = max(lo, 0), min(hi, size)
        want = native.python_settled(starts, values, lo, hi, seen, writers, 8)
        got = native._loop.settled(starts, values, lo, hi, seen, writers, 8)
        assert got == want, (starts, values, lo, hi, seen, writers)
        if want[0] is not None:  # the codes themselves: `Memory.known`
            mem = Memory("m", "l1", size, True, 1, numerics=False)
            mem.starts, mem.values = list(starts), list(values)
            assert mem.known(lo, hi) == want[0]
    with pytest.raises(TypeError):
        native._loop.settled((0,), [0], 0, 1, [1], {}, 8)


class _Task:
    """What `native.command` reads of a prepared command."""

    def __init__(self, tid, number, reads, writes, expect):
        self.tid, self.number, self.reads, self.writes, self.expect = tid, number, reads, writes, expect


def _random_memory(rng: random.Random, name: str) -> Memory:
    size = rng.randint(4, 48)
    mem = Memory(name, rng.choice(["l1", "llb", "ddr"]), size, True, 1, numerics=False)
    for _ in range(rng.randint(0, 8)):  # writer runs: known codes, unknown tokens, never written
        lo, hi = sorted(rng.sample(range(size + 1), 2))
        mem.mark(lo, hi, rng.choice([None, (rng.randint(1, 5) << 8) | rng.randint(1, 4), 1 << 8]))
    mem.code[:] = [rng.choice([0, 1 << 8, (rng.randint(1, 5) << 8) | rng.randint(1, 4)]) for _ in range(size)]
    for tid in rng.sample(range(1, 5), rng.randint(0, 3)):  # threads that wrote here
        log = [(e, *sorted(rng.sample(range(size + 1), 2))) for e in sorted(rng.choices(range(1, 6), k=rng.randint(1, 40)))]
        mem.writes[tid] = native.Log(3, log)
        mem.writers[tid] = [log[-1][0], min(lo for _, lo, _ in log), max(hi for _, _, hi in log)]
    for _ in range(rng.randint(0, 70)):  # reads logged (the log may be due for a pruning)
        tid = rng.randint(1, 4)
        base = rng.randrange(size)
        span = rng.randint(1, size - base)
        mem.reads.add(Footprint(base, (), (), span, span), tid, rng.randint(1, 5))
    mem.reads.pruned_at = rng.choice([64, 16])
    mem.BLOCK = rng.choice([1024, 4, 7])  # its `full` flags: hulls over several blocks too
    mem.full = bytearray(-(-size // mem.BLOCK))
    return mem


def _random_access(rng: random.Random, mem: Memory):
    base = rng.randrange(mem.size)
    if rng.random() < 0.5:
        span = rng.randint(0, mem.size - base)
        fp = Footprint(base, (), (), span, span)
    else:  # strided: two runs
        run = rng.randint(1, max(1, (mem.size - base) // 3))
        stride = rng.randint(run, max(run, (mem.size - base - run)))
        fp = Footprint(base, (2,), (stride,), run, stride + run)
        if fp.base + fp.span > mem.size:
            fp = Footprint(base, (), (), run, run)
    return ("x", mem, fp, None, rng.randint(1, 100), fp.hull(1), None)


def _state(mems, code_of, counts, calls):
    out = [list(code_of), counts, calls]
    for m in mems:
        log = m.reads
        out.append((m.starts, m.values, m.token, m.writers, m.writes, m.code.tolist(), bytes(m.full), m.passed, log.rows,
                    log.where, log.n, log.readers, log.by))
    return repr(out)


@built
def test_native_command_matches_python():
    """The C command and its Python version: the same state changes, byte counts and slow
    paths called (with the same arguments) on random memories, logs, clocks and commands."""
    import copy

    rng = random.Random(1)
    slow_paths = 0
    for case in range(1500):
        mems = [_random_memory(rng, f"m{i}") for i in range(rng.randint(1, 3))]
        tid = rng.randint(1, 4)
        seen = [1] + [rng.randint(0, 6) for _ in range(4)]
        reads = [_random_access(rng, rng.choice(mems)) for _ in range(rng.randint(0, 3))]
        writes = [_random_access(rng, rng.choice(mems)) for _ in range(rng.randint(0, 2))]
        code_of = [rng.choice([0, (rng.randint(1, 5) << 8) | rng.randint(1, 4)]) for _ in range(6)]
        expect = tuple((i, rng.random() < 0.3, tuple(rng.choice([-1, *range(6)]) for _ in range(rng.randint(1, 3))))
                       for i in range(len(reads)) if rng.random() < 0.7)
        if reads and rng.random() < 0.3:  # the same read again: `passed` caches the first's check
            reads.append(reads[0])
            expect += tuple((len(reads) - 1, x[1], x[2]) for x in expect if x[0] == 0)
        for i, _, writers in expect:  # `passed` entries: for the state now (trusted) or stale
            if rng.random() < 0.3:
                _, mem, fp = reads[i][:3]
                state = mem.state(*fp.hull(1)[:2]) if rng.random() < 0.5 else ("stale",)
                mem.passed[(fp, *[256 if w < 0 else code_of[w] or -1 for w in writers])] = state
        task = _Task(tid, rng.randrange(6), reads, writes, expect)
        levels = {"l1": 0, "llb": 0, "ddr": 0}
        results = []
        for fn in (native.python_command, native._loop.command):
            t, c, br, bw = copy.deepcopy((task, code_of, levels, levels))
            calls: list = []

            def hook(name):
                return lambda task, *args: calls.append((name, task is t, repr(args)))

            def prune(mem):
                calls.append(("prune", mem.name))
                mem.reads.pruned_at = mem.reads.n

            fn(t, np.array(seen, dtype=np.int64), c, br, bw, (hook("provenance"), hook("read"), hook("write"), prune))
            m = list({id(a[1]): a[1] for a in t.reads + t.writes}.values())
            results.append(_state(sorted(m, key=lambda x: x.name), c, (br, bw), calls))
            slow_paths += len(calls)
        assert results[0] == results[1], case
    assert slow_paths > 500  # (the slow paths were exercised)


@pytest.mark.skipif(native._loop is None, reason="the C module is not built here")
def test_the_built_module_is_the_interface_native_calls():
    # a build from an older _loop.c (a source tree pulled, not rebuilt) is not used: its
    # functions may be missing or take other arguments
    assert native._loop.INTERFACE == native.INTERFACE
    assert native.NATIVE or native.os.environ.get("STC_LOOP_NATIVE") == "0"


@built
def test_native_prune_matches_python():
    """`native.prune` (a read log's pruning in C) leaves the log as
    `native.python_prune` does: rows, footprints, count, summaries in thread order,
    the next pruning's mark; on random logs, clocks and active threads (none active too)."""
    import copy

    rng = random.Random(23)
    kept = pruned = 0
    for _ in range(600):
        log = _random_memory(rng, "m").reads
        n = rng.choice([5, 9])
        vc = np.array([[rng.randint(0, 6) for _ in range(n)] for _ in range(n)], dtype=np.int64)
        active = np.array([rng.random() < 0.6 for _ in range(n)], dtype=bool)
        twin = copy.deepcopy(log)
        before = log.n
        native._loop.prune(log, vc, active)
        native.python_prune(twin, vc, active)
        state = [(x.rows, x.where, x.n, x.readers, list(x.readers), x.pruned_at, x.by) for x in (log, twin)]
        assert repr(state[0]) == repr(state[1])
        kept += log.n
        pruned += before - log.n
    assert kept > 1000 and pruned > 1000  # both ways, many times
    with pytest.raises(ValueError):
        native._loop.prune(log, np.zeros((3, 3), dtype=np.int32), np.zeros(3, dtype=bool))
    with pytest.raises(ValueError):
        native._loop.prune(log, np.zeros((3, 3), dtype=np.int64), np.zeros(4, dtype=bool))
