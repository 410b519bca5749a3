"""The search's forked workers (`decide.forked_map`): a worker that dies does not hang the
search (a multiprocessing.Pool waits for ever on a worker the out-of-memory killer took)."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

from stc_mlir.autoschedule.decide import WorkerLostWarning, forked_map

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="the search forks its workers only where fork exists")

_PARENT = os.getpid()


def _square_dying_in_a_worker(x: int) -> int:
    if x == 3 and os.getpid() != _PARENT:
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer does
    return x * x


def test_the_workers_map_in_order():
    assert forked_map(abs, [-3, 1, -2], 2) == [3, 1, 2]


def _hung(signum, frame):
    raise TimeoutError("the map still waits for its dead worker after 60 s")


def test_a_worker_killed_is_said_and_its_work_redone_here():
    before = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(60)
    try:
        with pytest.warns(WorkerLostWarning, match="worker process died"):
            assert forked_map(_square_dying_in_a_worker, [1, 2, 3, 4], 2) == [1, 4, 9, 16]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
