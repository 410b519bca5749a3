"""Each hazard kind stops the run with a message naming the command, core and address."""

import re

import numpy as np
import pytest

from stc_mlir.emulator import HazardError, run, tile
from stc_mlir.emulator.builder import ProgramBuilder


def f16(*shape):
    return np.random.default_rng(3).standard_normal(shape).astype(np.float16)


def expect_hazard(program, inputs, kind, pattern):
    with pytest.raises(HazardError) as info:
        run(program, inputs)
    err = info.value
    assert re.fullmatch(kind, err.kind)
    assert re.search(pattern, str(err)), str(err)
    assert err.report is not None and err.report.as_dict()["hazards"][0]["kind"] == err.kind
    return err


def test_read_of_bytes_never_written():
    b = ProgramBuilder("uninit")
    y = b.output("y", (64,))
    t = b.buffer("t", "l1", 256, core=3, offset=1024)
    b.add(3, "dma", src=tile(t, (32,), 64), dst=tile(y.buffer, (32,)))
    err = expect_hazard(b.build(), {}, "uninitialized_read",
                        r"core 3, command #0 \(npu\.dma @t\[64\] : 32xf16 -> @y\[0\] : 32xf16\) "
                        r"reads l1\[3\]\+0x440, which was never written")
    assert (err.core, err.index, err.address) == (3, 0, 0x440)


def test_output_never_fully_written():
    b = ProgramBuilder("partial")
    x = b.input("x", (64,))
    y = b.output("y", (64,))
    b.add(0, "dma", src=tile(x.buffer, (32,)), dst=tile(y.buffer, (32,)))
    expect_hazard(b.build(), {"x": f16(64)}, "uninitialized_read",
                  r"output 'y' \(buffer @y\) has bytes never written, first at ddr\+0xc0")


def test_out_of_bounds_tile():
    b = ProgramBuilder("oob")
    x = b.input("x", (64,))
    t = b.buffer("t", "l1", 100, core=1, offset=0)
    b.add(1, "dma", src=x, dst=tile(t, (64,), 8))
    err = expect_hazard(b.build(), {"x": f16(64)}, "out_of_bounds",
                        r"core 1, command #0 \(npu\.dma @x\[0\] : 64xf16 -> @t\[8\] : 64xf16\): "
                        r"dst: tile bytes \[8, 136\) are outside buffer @t \(l1 of core 1, 100 bytes at offset 0\)")
    assert (err.core, err.index, err.address) == (1, 0, 100)  # the first byte past @t


def test_capacity_overflow():
    b = ProgramBuilder("overflow")
    b.buffer("big", "wb", 4096, core=2, offset=(256 << 10) - 1024)
    expect_hazard(b.build(), {}, "capacity_overflow",
                  r"buffer @big \(wb of core 2, 4096 bytes at offset 261120\) ends at byte 265216, "
                  r"beyond the 262144-byte wb capacity of stcp920")


def test_unallocated_buffer():
    b = ProgramBuilder("unallocated")
    b.buffer("t", "l1", 64, core=0)
    program = b.build()
    program.buffers["t"] = program.buffers["t"].__class__("t", "l1", 64, 0, None)
    expect_hazard(program, {}, "unallocated", r"buffer @t \(l1 of core 0, 64 bytes\) has no offset")


def _load_then(consumer_waits: bool):
    """Core 0 DMAs x into L1 and the vector unit applies relu, with or without waiting."""
    b = ProgramBuilder("w-r")
    x = b.input("x", (256,))
    y = b.output("y", (256,))
    t = tile(b.buffer("t", "l1", 512, core=0), (256,))
    s, d = b.semaphore("loaded"), b.semaphore("done")
    b.add(0, "dma", src=x, dst=t, signals=[s])
    b.add(0, "unary", waits=[s] if consumer_waits else [], signals=[d], input=t, output=t, kind="relu")
    b.add(0, "dma", waits=[d], src=t, dst=y)
    return b.build()


def test_write_then_unsynchronised_read_on_another_engine():
    run(_load_then(consumer_waits=True), {"x": f16(256)})  # the correct program runs
    expect_hazard(_load_then(consumer_waits=False), {"x": f16(256)}, "race",
                  r"core 0, command #1 \(npu\.unary relu @t\[0\] : 256xf16 -> @t\[0\] : 256xf16\) "
                  r"reads l1\[0\]\+0x0, written by core 0, command #0 \(npu\.dma @x\[0\] : 256xf16 "
                  r"-> @t\[0\] : 256xf16\) on dma_in with no synchronisation ordering them")


def test_cross_core_read_of_unsynchronised_ddr_write():
    b = ProgramBuilder("x-core")
    x = b.input("x", (128,))
    y = b.output("y", (128,))
    mid = b.buffer("mid", "ddr", 256)
    t0, t1 = tile(b.buffer("t0", "l1", 256, core=0), (128,)), tile(b.buffer("t1", "l1", 256, core=6), (128,))
    s = b.semaphore("in0")
    b.add(0, "dma", src=x, dst=t0, signals=[s])
    b.add(0, "dma", waits=[s], src=t0, dst=tile(mid, (128,)))
    b.add(6, "dma", src=tile(mid, (128,)), dst=t1)  # no wait for core 0's store
    b.add(6, "dma", src=t1, dst=y)
    expect_hazard(b.build(), {"x": f16(128)}, "uninitialized_read",
                  r"core 6, command #0 .* reads ddr\+0x200, which was never written")


def test_cross_core_race_after_first_write():
    """Core 5 reads a DDR tile core 0 keeps rewriting: the second write is unordered."""
    b = ProgramBuilder("x-core-2")
    x = b.input("x", (2, 128))
    y = b.output("y", (128,))
    mid = tile(b.buffer("mid", "ddr", 256), (128,))
    t0 = tile(b.buffer("t0", "l1", 512, core=0), (2, 128))
    t5 = tile(b.buffer("t5", "l1", 256, core=5), (128,))
    b.add(0, "dma", src=x, dst=t0, signals=[b.semaphore("in")])
    b.add(0, "dma", waits=["in"], signals=[b.semaphore("first", core=5)],
          src=tile("t0", (128,)), dst=mid)
    b.add(0, "dma", src=tile("t0", (128,), 256), dst=mid)  # rewrites mid, nobody waits
    b.add(5, "dma", waits=["first"], src=mid, dst=t5, signals=[b.semaphore("got", core=5)])
    b.add(5, "dma", waits=["got"], src=t5, dst=y)
    err = expect_hazard(b.build(), {"x": f16(2, 128)}, "race", r"with no synchronisation ordering them")
    text = str(err)
    assert "core 0, command #2" in text and "core 5, command #0" in text
    assert "ddr+0x300" in text  # mid follows x (512 bytes) and y (256 bytes)


def test_double_buffer_overwritten_while_being_read():
    """The classic pipelining bug: the next tile's DMA overwrites the buffer the matrix unit
    is still reading, because it does not wait for the 'free' semaphore."""
    def program(wait_free: bool):
        b = ProgramBuilder("double-buffer")
        a = b.input("a", (2, 64, 32))
        w = b.constant("w", f16(32, 32))
        y = b.output("y", (2, 64, 32))
        wt = tile(b.buffer("wt", "wb", w.span, 0), (32, 32))
        buf = tile(b.buffer("buf", "l1", 64 * 32 * 2, 0), (64, 32))
        out = [tile(b.buffer(f"o{i}", "l1", 64 * 32 * 2, 0), (64, 32)) for i in range(2)]
        for s in ("w", "full", "free", "done"):
            b.semaphore(s)
        b.add(0, "dma", src=w, dst=wt, signals=["w"])
        for i in range(2):
            b.add(0, "dma", waits=["free"] if i and wait_free else [], signals=["full"],
                  src=tile(a.buffer, (64, 32), i * 4096), dst=buf)
        for i in range(2):
            b.add(0, "matmul", waits=["full"] + (["w"] if i == 0 else []), signals=["free", "done"],
                  lhs=buf, rhs=wt, output=out[i])
            b.add(0, "dma", waits=["done"], src=out[i], dst=tile(y.buffer, (64, 32), i * 4096))
        return b.build()

    a = f16(2, 64, 32)
    out, _ = run(program(wait_free=True), {"a": a})
    w = program(True).buffers["w"].init
    wv = np.frombuffer(w, np.float16).reshape(32, 32).astype(np.float32)
    np.testing.assert_array_equal(out["y"], (a.astype(np.float32) @ wv).astype(np.float16))
    # the second tile's DMA starts as soon as the first one ends, when the matmul starts
    err = expect_hazard(program(wait_free=False), {"a": a}, "race",
                        r"l1\[0\]\+0x0, (read|written) by .* with no synchronisation ordering them")
    assert "core 0, command #2 (npu.dma @a[4096] : 64x32xf16 -> @buf[0] : 64x32xf16)" in str(err)
    assert "core 0, command #3 (npu.matmul @buf[0]" in str(err)


def test_two_cores_write_the_same_bytes():
    b = ProgramBuilder("w-w")
    x = b.input("x", (2, 64))
    y = b.output("y", (64,))
    for core in (2, 3):
        t = tile(b.buffer(f"t{core}", "l1", 128, core), (64,))
        b.add(core, "dma", src=tile(x.buffer, (64,), (core - 2) * 128), dst=t, signals=[b.semaphore(f"s{core}", core)])
        b.add(core, "dma", waits=[f"s{core}"], src=t, dst=y)
    expect_hazard(b.build(), {"x": f16(2, 64)}, "race",
                  r"core \d, command #1 .* writes ddr\+0x100, written by core \d, command #1 .* on dma_out")


def test_transitive_synchronisation_is_not_a_race():
    """Core 0 writes DDR and signals core 1, whose DMA then signals core 2, which reads what
    core 0 wrote: ordered through core 1."""
    b = ProgramBuilder("chain")
    x = b.input("x", (64,))
    y = b.output("y", (64,))
    mid, mid2 = tile(b.buffer("mid", "ddr", 128), (64,)), tile(b.buffer("mid2", "ddr", 128), (64,))
    t0, t2 = tile(b.buffer("t0", "l1", 128, 0), (64,)), tile(b.buffer("t2", "l1", 128, 2), (64,))
    b.add(0, "dma", src=x, dst=t0, signals=[b.semaphore("a")])
    b.add(0, "dma", waits=["a"], src=t0, dst=mid, signals=[b.semaphore("b", core=1)])
    b.add(1, "dma", waits=["b"], src=mid, dst=mid2, signals=[b.semaphore("c", core=2)])
    b.add(2, "dma", waits=["c"], src=mid, dst=t2, signals=[b.semaphore("d", core=2)])
    b.add(2, "dma", waits=["d"], src=t2, dst=y)
    xv = f16(64)
    out, report = run(b.build(), {"x": xv})
    np.testing.assert_array_equal(out["y"], xv)
    assert report.hazards == []
    # without core 1 in between, core 2 reads core 0's store unordered
    b.program.cores[2][0] = b.program.cores[2][0].__class__(
        "dma", {"src": mid, "dst": t2}, {}, (), ("d",))
    expect_hazard(b.build(), {"x": xv}, "uninitialized_read|race",
                  r"core 2, command #0 .* reads ddr\+0x100")


def test_deadlock_names_who_waits_on_what():
    b = ProgramBuilder("deadlock")
    x = b.input("x", (64,))
    for core, (wait, signal) in ((0, ("b", "a")), (1, ("a", "b"))):
        b.semaphore(signal, core=1 - core)
        t = tile(b.buffer(f"t{core}", "l1", 128, core), (64,))
        b.add(core, "dma", src=x, dst=t, waits=[wait], signals=[signal])
    err = expect_hazard(b.build(), {"x": f16(64)}, "deadlock", r"no command can start after cycle 0")
    text = str(err)
    assert ("core 0, command #0 (npu.dma @x[0] : 64xf16 -> @t0[0] : 64xf16) on dma_in waits for "
            "@b (count 0, needs 1; pending signallers: core 1 #0)") in text
    assert ("core 1, command #0 (npu.dma @x[0] : 64xf16 -> @t1[0] : 64xf16) on dma_in waits for "
            "@a (count 0, needs 1; pending signallers: core 0 #0)") in text


def test_overlapping_allocation_really_corrupts_data():
    """Two live L1 buffers placed on top of each other: every access is ordered, so no
    hazard, but the first tile is overwritten and the result is wrong."""
    def program(offset_b):
        b = ProgramBuilder("overlap")
        x = b.input("x", (2, 128))
        y = b.output("y", (128,))
        ta = tile(b.buffer("ta", "l1", 256, 0, offset=0), (128,))
        tb = tile(b.buffer("tb", "l1", 256, 0, offset=offset_b), (128,))
        b.add(0, "dma", src=tile(x.buffer, (128,)), dst=ta)
        b.add(0, "dma", src=tile(x.buffer, (128,), 256), dst=tb, signals=[b.semaphore("in")])
        b.add(0, "binary", waits=["in"], signals=[b.semaphore("done")], kind="add",
              lhs=ta, rhs=tb, output=ta)
        b.add(0, "dma", waits=["done"], src=ta, dst=y)
        return b.build()

    xv = f16(2, 128)
    want = (xv[0].astype(np.float32) + xv[1]).astype(np.float16)
    good, _ = run(program(256), {"x": xv})
    np.testing.assert_array_equal(good["y"], want)
    bad, report = run(program(128), {"x": xv})
    assert report.hazards == []
    assert not np.array_equal(bad["y"], want)
    # tb's first half landed on ta's second half
    np.testing.assert_array_equal(bad["y"][:64], want[:64])
    np.testing.assert_array_equal(bad["y"][64:], (xv[1, :64].astype(np.float32) + xv[1, 64:]).astype(np.float16))


def _stream(tiles: int, skip_wait_at: int | None):
    """Core 4 streams `tiles` tiles through two L1 buffers (DMA in, relu, DMA out), the
    buffers recycled through `free` semaphores; optionally one load skips its wait."""
    b = ProgramBuilder("stream")
    n = 64
    x, y = b.input("x", (tiles, n)), b.output("y", (tiles, n))
    bufs = [tile(b.buffer(f"t{k}", "l1", n * 2, 4), (n,)) for k in range(2)]
    for k in range(2):
        b.semaphore(f"full{k}", 4)
        b.semaphore(f"free{k}", 4, init=1)
        b.semaphore(f"done{k}", 4)
    for i in range(tiles):
        k = i % 2
        b.add(4, "dma", waits=[] if i == skip_wait_at else [f"free{k}"], signals=[f"full{k}"],
              src=tile(x.buffer, (n,), i * n * 2), dst=bufs[k])
        b.add(4, "unary", waits=[f"full{k}"], signals=[f"done{k}"], input=bufs[k], output=bufs[k],
              kind="relu")
        b.add(4, "dma", waits=[f"done{k}"], signals=[f"free{k}"], src=bufs[k],
              dst=tile(y.buffer, (n,), i * n * 2))
    return b.build()


def test_long_stream_keeps_checking_after_the_read_log_is_pruned():
    xv = f16(150, 64)
    out, _ = run(_stream(150, None), {"x": xv})
    np.testing.assert_array_equal(out["y"], np.maximum(xv, 0))
    # the 141st load does not wait for its buffer: it overwrites what tile 138's relu wrote
    expect_hazard(_stream(150, 140), {"x": xv}, "race",
                  r"core 4, command #420 \(npu\.dma @x\[17920\] .*\) writes l1\[4\]\+0x0, "
                  r"written by core 4, command #415 \(npu\.unary relu .*\) on vector")


def test_write_over_bytes_an_unordered_command_read():
    """Core 0's second load into `t` waits only for core 1, not for the relu reading `t`."""
    b = ProgramBuilder("r-w")
    x = b.input("x", (2, 256))
    big = b.input("big", (32768,))
    y = b.output("y", (256,))
    t, u = tile(b.buffer("t", "l1", 512, 0), (256,)), tile(b.buffer("u", "l1", 512, 0), (256,))
    b.add(0, "dma", src=tile(x.buffer, (256,)), dst=t, signals=[b.semaphore("s")])
    b.add(0, "dma", waits=[b.semaphore("c1")], src=tile(x.buffer, (256,), 512), dst=t)
    b.add(0, "unary", waits=["s"], signals=[b.semaphore("done")], input=t, output=u, kind="relu")
    b.add(0, "dma", waits=["done"], src=u, dst=y)
    b.add(1, "dma", src=big, dst=tile(b.buffer("v", "l1", 65536, 1), (32768,)), signals=["c1"])
    expect_hazard(b.build(), {"x": f16(2, 256), "big": f16(32768)}, "race",
                  r"core 0, command #1 \(npu\.dma @x\[512\] : 256xf16 -> @t\[0\] : 256xf16\) "
                  r"writes l1\[0\]\+0x0, read by core 0, command #2 \(npu\.unary relu .*\) on "
                  r"vector with no synchronisation ordering them")


def test_large_reads_find_the_first_byte_never_written():
    """Reads of thousands of granules are checked per block of granules known to be
    written: the first never-written byte is still found, after the written part was read."""
    n = 8192
    b = ProgramBuilder("uninit_large")
    x = b.input("x", (n,))
    y = b.output("y", (2 * n,))
    t = b.buffer("t", "l1", 4 * n, core=0, offset=0)
    loaded = b.semaphore("loaded")
    b.add(0, "dma", src=tile(x.buffer, (n,)), dst=tile(t, (n,)), signals=[loaded])
    b.add(0, "dma", src=tile(t, (n,)), dst=tile(y.buffer, (n,)), waits=[loaded])
    b.add(0, "dma", src=tile(t, (n + 3,)), dst=tile(y.buffer, (n + 3,), n - 3))
    err = expect_hazard(b.build(), {"x": f16(n)}, "uninitialized_read",
                        rf"command #2 .* reads l1\[0\]\+{2 * n:#x}, which was never written")
    assert err.address == 2 * n


def test_wrote_since_misses_only_when_no_unseen_write_touches():
    """The write log lets an access skip a writer's per-granule check only when none of its
    writes after the epoch seen touches the access; past the scan limit it says True."""
    from stc_mlir.emulator.memory import _wrote_since

    log = [(1, 0, 64), (2, 64, 128), (2, 512, 576), (3, 128, 192)]
    assert _wrote_since(log, 1, 96, 100)  # epoch 2 wrote [64, 128)
    assert not _wrote_since(log, 2, 0, 128)  # only epoch 3 is unseen: [128, 192)
    assert not _wrote_since(log, 3, 0, 1024)  # everything seen
    assert not _wrote_since(log, 0, 256, 512)  # nothing there
    assert _wrote_since(log, 0, 256, 512, limit=2)  # unseen writes left beyond the limit
    assert not _wrote_since(log, 1, 256, 512, limit=3)  # exactly the unseen ones scanned
