"""A memory's read log (`memory._ReadLog`): its rows, their array form, the per-thread
summaries a write looks at first, and pruning, against the reads logged kept in plain
lists; and a pruning forgets exactly the reads every live thread has seen."""

from __future__ import annotations

import random

import numpy as np

from stc_mlir.emulator.memory import Footprint, HazardTracker, Memory, _ReadLog


def _summaries(reads: list[tuple[int, int, int, int]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for epoch, lo, hi, tid in reads:
        mine = out.setdefault(tid, [epoch, lo, hi])
        mine[:] = [max(mine[0], epoch), min(mine[1], lo), max(mine[2], hi)]
    return out


def test_rows_summaries_and_keep_match_plain_lists():
    rng = random.Random(0)
    for _ in range(200):
        log = _ReadLog()
        truth: list[tuple[int, int, int, int]] = []
        every: list[tuple[int, int, int, int]] = []  # (never pruned)
        fps: list[Footprint] = []
        epochs: dict[int, int] = {}
        for _ in range(rng.randint(0, 60)):
            tid = rng.randint(1, 6)
            epochs[tid] = epochs.get(tid, 0) + rng.randint(0, 2)  # a thread's epochs only grow
            base, span = rng.randint(0, 1000), rng.randint(1, 100)
            fp = Footprint(base, (), (), span, span)
            log.add(fp, tid, epochs[tid])
            truth.append((epochs[tid], base, base + span, tid))
            every.append(truth[-1])
            fps.append(fp)
            if rng.random() < 0.1:  # keep a random subset, as a pruning does
                mask = [rng.random() < 0.6 for _ in truth]
                log.keep(mask)
                truth = [r for r, k in zip(truth, mask) if k]
                fps = [f for f, k in zip(fps, mask) if k]
                assert list(log.readers) == sorted(log.readers)
            assert log.n == len(truth) == len(log.where)
            assert log.where == fps
            assert log.rows == truth
            assert log.readers == _summaries(truth)
            cols = log.cols
            assert cols.shape == (4, len(truth)) and cols.dtype == np.int64
            assert cols.T.tolist() == [[lo, hi, tid, epoch] for epoch, lo, hi, tid in truth]
        # the per-thread history a writer scans is never pruned: every read of the thread, in order
        assert {t: list(v) for t, v in log.by.items()} == {t: [r for r in every if r[3] == t] for t in log.by}
        assert sorted(log.by) == sorted({r[3] for r in every})


def test_pruning_forgets_only_reads_every_live_thread_has_seen():
    rng = random.Random(1)
    for _ in range(50):
        tracker = HazardTracker(2, lambda core, index: f"core {core} #{index}")
        mem = Memory("m", "l1", 4096, True, 1, numerics=False)
        reads = []
        for _ in range(rng.randint(1, 40)):
            tid, epoch = rng.randint(1, tracker.n - 1), rng.randint(1, 9)
            base = rng.randint(0, 4000)
            mem.reads.add(Footprint(base, (), (), 8, 8), tid, epoch)
            reads.append((epoch, base, base + 8, tid))
        tracker.vc[:] = np.array([[rng.randint(0, 9) for _ in range(tracker.n)] for _ in range(tracker.n)])
        tracker.active[:] = [rng.random() < 0.7 for _ in range(tracker.n)]
        live = np.flatnonzero(tracker.active)
        tracker._prune(mem)
        if live.size:
            seen = tracker.vc[live].min(axis=0)
            kept = [r for r in reads if r[0] > seen[r[3]]]
        else:
            kept = []
        assert mem.reads.rows == kept
        assert mem.reads.readers == _summaries(kept)
        assert mem.reads.pruned_at == max(64, len(kept))
