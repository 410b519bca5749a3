"""Products and binary commands handed to a pool of C threads (`halves.handing`, `_f16.Pool`,
`_f16.Job`): each job's output bits are those of the same command computed where it is
called; a job waited for before any thread took it is computed by the waiter; a job dropped
unwaited is finished first; a NaN makes `wait` answer False (numpy's path then), and an
in-place binary job leaves its operands whole for it; and a two-thread run hands its
products and binaries over and keeps one thread's bits, NaNs included."""

import gc
import types

import numpy as np
import pytest

from stc_mlir.emulator import functional, halves, run, simulator, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator.examples import conv_by_rows

from test_products import CONVS, MATMULS, _conv_case, _values

pytestmark = [pytest.mark.skipif(not halves.PRODUCTS, reason="no C products (no _f16 module or numpy's BLAS not found)"),
              pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")]


def _matmul_case(rng, a, b):
    out = np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    ins = {"lhs": _values(rng, a), "rhs": _values(rng, b), "bias": _values(rng, (b[-1],)),
           "residual": _values(rng, out)}
    return types.SimpleNamespace(op="matmul", params={"act": "relu"}), ins, out


BINARIES = [("add", (64, 768), (64, 768)), ("add", (2, 64, 96), (96,)), ("sub", (1, 4, 33), (1,)),
            ("mul", (8, 300), (300,)), ("div", (3, 1001), (3, 1001))]


def _binary_case(rng, kind, a, b):
    ins = {"lhs": _values(rng, a), "rhs": _values(rng, b)}
    ins["rhs"][ins["rhs"] == 0] = 1  # (no 0 / 0)
    return types.SimpleNamespace(op="binary", params={"kind": kind}), ins, np.broadcast_shapes(a, b)


def _cases(rng):
    """Conv, depthwise, matmul and binary commands (those the C commands take, and some they
    decline)."""
    cases = [_conv_case(rng, *case, "relu6", True, np.float16) for case in CONVS]
    return (cases + [_matmul_case(rng, a, b) for a, b in MATMULS]
            + [_binary_case(rng, *case) for case in BINARIES])


def _compute(cmd, ins, shape):
    out = np.full(shape, np.nan, np.float16)
    functional.execute(cmd, dict(ins), {"output": out})
    return out


def test_jobs_give_the_bits_of_products_computed_here():
    rng = np.random.default_rng(3)
    cases = _cases(rng) * 4  # (many queued at once: the threads and the waiter take them in any order)
    want = [_compute(*case) for case in cases]
    pool = halves.pool(2)
    outs, jobs = [], []
    try:
        for cmd, ins, shape in cases:
            out = np.full(shape, np.nan, np.float16)
            jobs.append(halves.handing(pool, lambda: functional.execute(cmd, dict(ins), {"output": out})))
            outs.append(out)
        assert all(job.wait() for queued in jobs for job in queued)
    finally:
        pool.close()
    handed = sum(1 for queued in jobs if queued)
    assert handed >= len(cases) * 3 // 4  # (numpy's dot and einsum cases are computed where called)
    for got, expected in zip(outs, want):
        assert np.array_equal(got.view(np.uint16), expected.view(np.uint16))


def test_a_job_no_thread_took_is_computed_by_its_waiter():
    rng = np.random.default_rng(4)
    pool = halves.pool(1)
    try:
        # the pool's thread busy with a large product: the small one queued behind it
        big = _matmul_case(rng, (256, 512), (512, 256))
        small = _matmul_case(rng, (16, 32), (32, 24))
        outs = [np.empty(big[2], np.float16), np.empty(small[2], np.float16)]
        jobs = [halves.handing(pool, lambda c=c, o=o: functional.execute(c[0], dict(c[1]), {"output": o}))[0]
                for c, o in zip((big, small), outs)]
        assert jobs[1].wait() and jobs[0].wait()
        assert jobs[1].wait()  # (a second wait answers the same)
    finally:
        pool.close()
    for case, got in zip((big, small), outs):
        assert np.array_equal(got.view(np.uint16), _compute(*case).view(np.uint16))


def test_a_job_dropped_unwaited_is_finished_first():
    rng = np.random.default_rng(5)
    cmd, ins, shape = _matmul_case(rng, (128, 256), (256, 128))
    pool = halves.pool(1)
    out = np.full(shape, np.nan, np.float16)
    jobs = halves.handing(pool, lambda: functional.execute(cmd, dict(ins), {"output": out}))
    assert len(jobs) == 1
    del jobs
    gc.collect()
    pool.close()
    assert np.array_equal(out.view(np.uint16), _compute(cmd, ins, shape).view(np.uint16))


def test_a_nan_makes_the_wait_answer_false():
    rng = np.random.default_rng(6)
    cmd, ins, shape = _matmul_case(rng, (16, 32), (32, 24))
    ins["lhs"].reshape(-1)[::7] = np.inf
    ins["lhs"].reshape(-1)[3::11] = -np.inf  # (inf - inf in the products)
    pool = halves.pool(1)
    try:
        out = np.empty(shape, np.float16)
        (job,) = halves.handing(pool, lambda: functional.execute(cmd, dict(ins), {"output": out}))
        assert job.wait() is False
    finally:
        pool.close()


def test_an_in_place_binary_job_meeting_a_nan_leaves_its_operands_whole():
    """The job is declined at the NaN in its last chunk after writing the others: an
    in-place output is written through a copy, so numpy's redo reads the operands intact."""
    rng = np.random.default_rng(8)
    cmd, ins, shape = _binary_case(rng, "add", (128, 768), (128, 768))
    ins["lhs"][-1, -3], ins["rhs"][-1, -3] = np.inf, -np.inf
    before = {k: v.copy() for k, v in ins.items()}
    pool = halves.pool(1)
    try:
        (job,) = halves.handing(pool, lambda: functional.execute(cmd, dict(ins), {"output": ins["lhs"]}))
        assert job.wait() is False
    finally:
        pool.close()
    for k in ins:
        assert np.array_equal(ins[k].view(np.uint16), before[k].view(np.uint16))


def test_the_pool_argument_is_checked():
    a, b = np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)
    out = np.empty((4, 4), np.float16)
    with pytest.raises(TypeError, match="not a Pool"):
        halves._f16.matmul(a, b, out, None, None, 0, 1, 1, 1, 4, 4, 4, object())
    with pytest.raises(TypeError, match="not a Pool"):
        halves._f16.binary(0, a, b, out, object())
    with pytest.raises(ValueError, match="threads"):
        halves._f16.Pool(0)
    pool = halves.pool(1)
    pool.close()
    with pytest.raises(ValueError, match="closed"):
        halves._f16.matmul(a, b, out, None, None, 0, 1, 1, 1, 4, 4, 4, pool)
    with pytest.raises(ValueError, match="closed"):
        halves._f16.binary(0, a, b, out, pool)
    assert halves._f16.matmul(a, b, out, None, None, 0, 1, 1, 1, 4, 4, 4, None)  # (None: computed here)


@pytest.fixture
def handed(monkeypatch):
    """Every product handed to the pool (not only large ones); the jobs queued."""
    monkeypatch.setattr(simulator, "OFFLOAD_MACS", 0)
    jobs = []
    hand = halves.handing

    def recorded(pool, work):
        queued = hand(pool, work)
        jobs.extend(queued)
        return queued

    monkeypatch.setattr(halves, "handing", recorded)
    return jobs


@pytest.mark.parametrize("nan", [False, True])
def test_two_threads_hand_products_over_and_keep_the_bits(handed, nan):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((2, 16, 12, 12))).astype(np.float16)
    w = (rng.standard_normal((24, 16, 3, 3)) * 0.2).astype(np.float16)
    if nan:  # (inf - inf in some products: numpy's path redoes those commands)
        x.reshape(-1)[::37] = np.inf
        x.reshape(-1)[5::41] = -np.inf
    program = conv_by_rows(x.shape, w, cores=4, out_chunks=3)
    one, report = run(program, {"x": x}, threads=1)
    assert not handed
    two, again = run(program, {"x": x}, threads=2)
    assert handed and again.as_dict() == report.as_dict()
    for name in one:
        assert np.array_equal(one[name].view(np.uint16), two[name].view(np.uint16))
    assert np.isnan(one["y"].astype(np.float32)).any() == nan


def _residual_adds(rows, cols, chunks):
    """x + y in `chunks` row blocks on two cores, each add in place into x's tile (BERT's
    residual add), then + a bias row: binary commands for the pool."""
    b = ProgramBuilder("adds")
    x, y, bias = b.input("x", (rows, cols)), b.input("y", (rows, cols)), b.input("bias", (cols,))
    z = b.output("z", (rows, cols))
    part = rows // chunks
    for i in range(chunks):
        core = i % 2
        xt, yt = (tile(b.buffer(f"{n}{i}", "l1", part * cols * 2, core=core), (part, cols)) for n in "xy")
        bt = tile(b.buffer(f"b{i}", "l1", cols * 2, core=core), (cols,))
        loaded, added, biased = (b.semaphore(f"{n}{i}") for n in ("loaded", "added", "biased"))
        rows_of = dict(offset=i * part * cols * 2, strides=(cols, 1))
        for src, dst in ((tile("x", (part, cols), **rows_of), xt), (tile("y", (part, cols), **rows_of), yt), (bias, bt)):
            b.add(core, "dma", signals=[loaded], src=src, dst=dst)
        b.add(core, "binary", waits=[loaded] * 3, signals=[added], lhs=xt, rhs=yt, output=xt, kind="add")
        b.add(core, "binary", waits=[added], signals=[biased], lhs=xt, rhs=bt, output=yt, kind="mul")
        b.add(core, "dma", waits=[biased], src=yt, dst=tile("z", (part, cols), **rows_of))
    return b.build()


@pytest.mark.parametrize("nan", [False, True])
def test_two_threads_hand_binaries_over_and_keep_the_bits(handed, nan):
    rng = np.random.default_rng(9)
    x, y, bias = (rng.standard_normal(s).astype(np.float16) for s in ((64, 96), (64, 96), (96,)))
    if nan:  # (inf - inf in one add: numpy's path redoes it, from operands left whole)
        x[40, 7], y[40, 7] = np.inf, -np.inf
    program = _residual_adds(64, 96, 4)
    one, report = run(program, {"x": x, "y": y, "bias": bias}, threads=1)
    assert not handed
    two, again = run(program, {"x": x, "y": y, "bias": bias}, threads=2)
    assert len(handed) == 8 and again.as_dict() == report.as_dict()
    assert np.array_equal(one["z"].view(np.uint16), two["z"].view(np.uint16))
    want = ((x.astype(np.float32) + y).astype(np.float16).astype(np.float32) * bias).astype(np.float16)
    assert np.array_equal(one["z"].view(np.uint16), want.view(np.uint16))
