"""stc_mlir.gc_pause: no automatic collection inside, the previous state restored, and with
`long_lived` the block's survivors moved to the oldest generation (nothing frozen thawed)."""

from __future__ import annotations

import gc

import pytest

from stc_mlir.gc_pause import gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture
def collector():
    was = gc.isenabled()
    gc.enable()
    gc.collect()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_restored(collector):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused(long_lived=True):  # nested: the outer pause decides
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with gc_paused(long_lived=True):
        pass
    assert not gc.isenabled()  # left disabled as it was


def test_long_lived_survivors_in_oldest_generation(collector):
    with gc_paused(long_lived=True):
        kept = [_Node() for _ in range(1000)]
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in kept)
    assert gc.get_count()[0] < 100


def test_default_leaves_survivors_young(collector):
    with gc_paused():
        kept = [_Node() for _ in range(1000)]
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert not any(id(o) in oldest for o in kept)  # (a young collection may have moved them to 1)


def test_long_lived_cycles_still_collected(collector):
    with gc_paused(long_lived=True):
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        del a, b
    assert gc.collect() >= 2


def test_frozen_objects_stay_frozen(collector):
    frozen = _Node()
    gc.freeze()
    count = gc.get_freeze_count()
    with gc_paused(long_lived=True):
        kept = _Node()
    assert gc.get_freeze_count() == count  # not thawed by the pause
    assert id(frozen) not in {id(o) for o in gc.get_objects()}
    assert kept is not None
