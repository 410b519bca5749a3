"""The lowering's `Sync` in C (`_sync.c`) against its Python version (sync.py): the same
waits, signals, expected writers and semaphores, on random access streams and on the
built-in models lowered both ways."""

from __future__ import annotations

import random

import pytest
from xdsl.context import Context

from stc_mlir import models
from stc_mlir.frontend import import_onnx
from stc_mlir.graph_schedule import IRModule
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize
from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu
from stc_mlir.isa.program import Tile
from stc_mlir.passes.lowering import lower, sync
from stc_mlir.passes.lowering.emitter import Emitter, Ref
from stc_mlir.passes.lowering.sync import Access, Cmd, Sync
from stc_mlir.schedules import bert_schedule, resnet50_schedule
from stc_mlir.schedules.default import default_schedule
from stc_mlir.target import load

pytestmark = pytest.mark.skipif(sync._sync is None, reason="the C module _sync is not built")

_OPS = ("dma", "binary", "matmul", "unary", "gather")


def _box(rng: random.Random, rank: int) -> tuple:
    out = []
    for _ in range(rank):
        lo = rng.randrange(0, 6)
        out.append((lo, lo + rng.randrange(0, 4)))  # empty ranges too
    return tuple(out)


def _access(rng: random.Random, buffers: list[str], frames: list, write: bool) -> Access:
    buffer = rng.choice(buffers)
    lo = rng.randrange(0, 96, 8)
    hi = lo + rng.choice((8, 16, 32, 64))
    frame = rng.choice(frames)
    box = None if rng.random() < 0.2 else _box(rng, rng.choice((1, 2, 3)))
    return Access(buffer, lo, hi, write, frame, box, rng.random() < 0.4)


def _stream(seed: int, n: int = 400, cores: int = 2):
    """Random commands with their accesses, and the barriers between them."""
    rng = random.Random(seed)
    buffers = [f"b{i}" for i in range(4)] + ["ro0", "ro1"]
    frames = [None, ("b0", 0, ((0, 8),)), ("b1", 0, ((0, 8), (0, 8))), ("b2", 64, ((0, 4),))]
    index = [0] * cores
    out = []
    for _ in range(n):
        if rng.random() < 0.03:
            out.append(None)
            continue
        op = rng.choice(_OPS)
        spec = sync.OPS[op]
        slots = [s for s in spec.ins] + [s for s in spec.optional if rng.random() < 0.5]
        core = rng.randrange(cores)
        thread = Sync.thread(core, rng.choice(sync.UNITS))
        reads = [_access(rng, buffers, frames, False) for _ in slots]
        writes = [_access(rng, buffers[:4], frames, True) for _ in spec.outs]
        out.append((core, index[core], op, tuple(slots + list(spec.outs)), thread, reads + writes))
        index[core] += 1
    return out


def _run(stream, native: bool, cores: int = 2):
    s = Sync(cores, native=native)
    s.readonly.update({"ro0", "ro1"})
    cmds = []
    for step in stream:
        if step is None:
            s.barrier()
            continue
        core, index, op, slots, thread, accesses = step
        cmd = Cmd(core, op, dict.fromkeys(slots), {})
        cmd.index = index
        s.order(cmd, thread, accesses)
        cmds.append(cmd)
    return [(c.waits, c.signals, c.expects) for c in cmds], s.semaphores


@pytest.mark.parametrize("seed", range(12))
def test_random_streams_agree(seed):
    stream = _stream(seed)
    got, got_sems = _run(stream, native=True)
    want, want_sems = _run(stream, native=False)
    assert sum(len(w) for w, _, _ in want) > 0  # the stream has conflicts to order
    assert got == want
    assert got_sems == want_sems


def test_c_version_is_the_default_when_built():
    assert sync.NATIVE  # built here (setup.py), so the lowering uses it
    assert Sync(1).order != Sync(1, native=False).order


def _emitted(seed: int, native: bool, n: int = 300):
    """Random commands through `Emitter.emit` (C or Python): DMAs between cores' L1, weight
    buffers and DDR, vector and matrix ops, narrowed barriers and staged buffers."""
    rng = random.Random(seed)
    em = Emitter(load())
    em.sync = Sync(em.target.cores, native=native)
    em.native = native
    em.narrow = seed % 2 == 0
    bufs = [em.buffer(f"l1_{c}", "l1", 4096, core=c) for c in (0, 1)]
    bufs += [em.buffer(f"wb_{c}_{i}", "wb", 1024, core=c) for c in (0, 1) for i in range(3)]
    bufs += [em.buffer("ddr", "ddr", 1 << 16), em.buffer("small", "ddr", 256),
             em.buffer("w", "ddr", 4096, init=bytes(4096))]
    em.staged[bufs[-3]] = set()
    frames = [None, ("f", 0, ((0, 4), (0, 8))), ("g", 64, ((0, 4), (0, 8)))]

    def ref():
        buffer = rng.choice(bufs)
        shape = (rng.randrange(1, 4), rng.choice((4, 8)))
        t = Tile(buffer, rng.randrange(0, 128, 16), shape, (8, 1))
        box = ((0, shape[0]), (0, shape[1])) if rng.random() < 0.7 else None
        return Ref(t, rng.choice(frames), box)

    for i in range(n):
        if rng.random() < 0.05:
            em.barrier(f"item{i}")
            em.set_origin(f"item{i}")
            continue
        core = rng.randrange(em.target.cores if rng.random() < 0.1 else 2)
        op = rng.choice(("dma", "binary", "matmul"))
        if op == "dma":
            cmd = em.emit(core, "dma", src=ref(), dst=ref())
        elif op == "binary":
            cmd = em.emit(core, "binary", lhs=ref(), rhs=ref(), output=ref(), kind="add")
        else:
            cmd = em.emit(core, "matmul", lhs=ref(), rhs=ref(), output=ref(),
                          bias=ref() if rng.random() < 0.5 else None)
        assert cmd is em.cmds[core][cmd.index]
    cmds = {c: [(x.op, x.tiles, x.params, x.waits, x.signals, x.index, x.expects) for x in s]
            for c, s in em.cmds.items()}
    return (cmds, em.origin_of, em.live, em._wb_bufs, em.touches.reads, em.touches.writes,
            em.staged, em.sync.semaphores)


@pytest.mark.parametrize("seed", range(6))
def test_emit_agrees(seed):
    got, want = _emitted(seed, True), _emitted(seed, False)
    assert sum(len(x[3]) for s in want[0].values() for x in s) > 0  # waits to derive
    assert want[3]  # weight buffers first used (each core's list emptied by the barriers)
    if seed % 2 == 0:
        assert want[4] and want[5]  # the narrowed barriers' touches
    for g, w in zip(got, want):
        assert g == w


def _lowered(name: str, schedule, options: dict, native: bool, monkeypatch):
    monkeypatch.setattr(sync, "NATIVE", native)
    module = import_onnx(models.build(name, **options))
    GraphCanonicalize().apply(Context(), module)
    GraphFuseConvAddRelu().apply(Context(), module)
    schedule(IRModule(module))
    return lower(module).program


@pytest.mark.parametrize("name,schedule,options", [
    ("resnet50", resnet50_schedule, {"batch": 16, "image_size": 32}),
    ("bert-base", bert_schedule, {"batch": 8, "num_layers": 1, "seq_len": 32}),
    ("mobilenetv2", default_schedule, {"batch": 2, "image_size": 32}),
])
def test_models_lower_the_same(name, schedule, options, monkeypatch):
    got = _lowered(name, schedule, options, True, monkeypatch)
    want = _lowered(name, schedule, options, False, monkeypatch)
    assert got.semaphores == want.semaphores
    assert got.cores.keys() == want.cores.keys()
    for core in want.cores:
        assert got.cores[core] == want.cores[core]
