"""Progress inside long steps: the lowering reports each schedule item, the automatic
scheduler's search each op it extends its groups to (shown live only on a terminal, never
with -q: test_progress.py), never from a forked search worker."""

from __future__ import annotations

import contextlib
import multiprocessing

import pytest

from stc_mlir import progress
from stc_mlir.autoschedule import auto_schedule
from stc_mlir.passes.lowering import lower
from stc_mlir.progress import counted

from test_autoschedule import _chain
from test_report_origins import split_module


def test_counted_reports_each_item(recorded):
    assert list(counted(iter("abc"), "letters")) == ["a", "b", "c"]
    assert recorded == [["letters", 3, 3]]


def test_lowering_reports_each_schedule_item(recorded):
    lower(split_module())
    assert recorded == [["lower: schedule items", 4, 4]]  # split, two sub-groups, concat


def test_search_reports_each_op_and_candidate(recorded, tmp_path, monkeypatch):
    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path))
    auto_schedule(_chain(), 3, use_cache=False)
    searches = [r for r in recorded if r[0].startswith("search:")]
    # every loop runs to its end but the lowering of ranked candidates, which stops once it has
    # the candidates to judge (and the emulation of them, when there are two or more)
    lower, emulate = "search: lower the best candidates", "search: emulate the candidates"
    lowering = [r for r in searches if r[0] == lower]
    assert lowering and all(0 <= done <= total for _, total, done in lowering)
    assert all(total == done > 0 for what, total, done in searches if what != lower)
    assert {"search: a group per op", "search: the best groups ending at each op",
            "search: estimate candidates (L1 fill 92%)", lower} <= {r[0] for r in searches}
    assert {r[0] for r in searches} <= {"search: a group per op", "search: the best groups ending at each op",
                                        "search: estimate candidates (L1 fill 92%)", lower, emulate}


def _in_a_child(queue):
    seen = []
    progress.steps = lambda *a, **k: seen.append(a) or contextlib.nullcontext(lambda n=1: None)
    queue.put((list(counted(range(3), "child")), seen))


def test_a_forked_worker_shows_nothing():
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_in_a_child, args=(queue,))
    child.start()
    items, seen = queue.get(timeout=60)
    child.join(60)
    assert items == [0, 1, 2] and seen == []
