"""Emulator run modes: timing-only runs give the full run's report without values; tiles
derived once (fp32 copies, im2col columns) never outlive a write; the threads computing
values are chosen explicitly or by the load."""

import numpy as np
import pytest

from stc_mlir import compare, kernels, models
from stc_mlir.emulator import EmulatorError, HazardError, run, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator.examples import conv_by_rows, matmul_by_rows
from stc_mlir.emulator.simulator import THREADS_VARIABLE, numerics_threads
from stc_mlir.frontend import import_onnx
from stc_mlir.emulator import program_from_module
from stc_mlir.pipeline import Pipeline

RNG = np.random.default_rng(7)


def f16(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def _same_report(program, inputs):
    outputs, full = run(program, inputs)
    none, timing = run(program, inputs, numerics=False)
    assert none == {} and outputs
    assert timing.as_dict() == full.as_dict()
    assert timing.timeline == full.timeline
    return outputs, full


@pytest.mark.parametrize("chunks", [1, 3])
def test_timing_only_gives_the_same_report_hand_written(chunks):
    x, w = f16(2, 8, 16, 12), f16(12, 8, 3, 3, scale=0.2)
    _same_report(conv_by_rows(x.shape, w, cores=4, out_chunks=chunks), {"x": x})
    a, m = f16(64, 48), f16(48, 40, scale=0.3)
    _same_report(matmul_by_rows(a.shape, m), {"a": a})


def test_timing_only_gives_the_same_report_compiled_model():
    proto = models.build("mobilenetv2", batch=1, image_size=32)
    inputs = models.example_inputs("mobilenetv2", proto)
    program = program_from_module(Pipeline().run(import_onnx(proto)))
    outputs, _ = _same_report(program, inputs)
    golden = compare.onnxruntime_outputs(proto, inputs)
    assert compare.cosine(golden[0], next(iter(outputs.values()))) >= compare.MIN_COSINE


def _racy():
    b = ProgramBuilder("racy")
    x, y = b.input("x", (256,)), b.output("y", (256,))
    t = tile(b.buffer("t", "l1", 512, core=0), (256,))
    s, d = b.semaphore("s"), b.semaphore("d")
    b.add(0, "dma", src=x, dst=t, signals=[s])
    b.add(0, "unary", signals=[d], input=t, output=t, kind="relu")  # no wait on the load
    b.add(0, "dma", waits=[d], src=t, dst=y)
    return b.build()


def test_timing_only_finds_the_same_hazards():
    errors = []
    for numerics in (True, False):
        with pytest.raises(HazardError) as info:
            run(_racy(), {"x": f16(256)}, numerics=numerics)
        errors.append((info.value.kind, str(info.value), info.value.report.as_dict()))
    assert errors[0] == errors[1] and errors[0][0] == "race"


def test_a_tile_rewritten_in_place_is_read_again_fresh():
    """The fp32 copy of `t` made for the first command must not serve the second: the
    first one overwrote `t` in place."""
    b = ProgramBuilder("in-place")
    x, y = b.input("x", (4, 64)), b.output("y", (4, 64))
    t = tile(b.buffer("t", "l1", 512, core=0), (4, 64))
    s = [b.semaphore(f"s{i}") for i in range(3)]
    b.add(0, "dma", src=x, dst=t, signals=[s[0]])
    b.add(0, "unary", waits=[s[0]], signals=[s[1]], input=t, output=t, kind="exp")
    b.add(0, "binary", waits=[s[1]], signals=[s[2]], lhs=t, rhs=t, output=t, kind="add")
    b.add(0, "dma", waits=[s[2]], src=t, dst=y)
    value = f16(4, 64)
    out, _ = run(b.build(), {"x": value})
    e = kernels.unary("exp", value).astype(np.float16)
    np.testing.assert_array_equal(out["y"], kernels.binary("add", e, e).astype(np.float16))


def test_numerics_threads_are_two_if_a_cpu_is_idle_unless_chosen(monkeypatch):
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr("os.getloadavg", lambda: (2.9, 0.0, 0.0))
    assert numerics_threads() == 2 and numerics_threads(3) == 3 and numerics_threads(1) == 1
    monkeypatch.setattr("os.getloadavg", lambda: (3.2, 0.0, 0.0))  # (no CPU idle)
    assert numerics_threads() == 1
    monkeypatch.setattr("os.getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {5})
    assert numerics_threads() == 1
    monkeypatch.setenv(THREADS_VARIABLE, "3")
    assert numerics_threads() == 3
    monkeypatch.setenv(THREADS_VARIABLE, "many")
    with pytest.raises(EmulatorError, match="STC_EMULATOR_THREADS='many'"):
        numerics_threads()
    with pytest.raises(EmulatorError, match="at least one"):
        run(_racy(), {"x": f16(256)}, threads=0)


def test_a_copy_outlives_a_write_to_its_source():
    """`c` is a DMA copy of `o`; after `o` is rewritten in place and read again (its new
    fp32 copy cached), reading `c` must still give the values `o` had when copied."""
    b = ProgramBuilder("copies")
    x, y = b.input("x", (4, 64)), b.output("y", (4, 64))
    a, o, c, p = (tile(b.buffer(n, "l1", 512, core=0), (4, 64)) for n in "aocp")
    s = [b.semaphore(f"s{i}") for i in range(6)]
    b.add(0, "dma", src=x, dst=a, signals=[s[0]])
    b.add(0, "unary", waits=[s[0]], signals=[s[1]], input=a, output=o, kind="abs")
    b.add(0, "dma", waits=[s[1]], signals=[s[2]], src=o, dst=c)
    b.add(0, "unary", waits=[s[2]], signals=[s[3]], input=o, output=o, kind="neg")
    b.add(0, "unary", waits=[s[3]], signals=[s[4]], input=o, output=p, kind="exp")
    b.add(0, "binary", waits=[s[4]], signals=[s[5]], lhs=c, rhs=p, output=a, kind="add")
    b.add(0, "dma", waits=[s[5]], src=a, dst=y)
    value = f16(4, 64)
    out, _ = run(b.build(), {"x": value})
    absolute = np.abs(value)
    p_want = kernels.unary("exp", -absolute).astype(np.float16)
    np.testing.assert_array_equal(out["y"], kernels.binary("add", absolute, p_want).astype(np.float16))


@pytest.mark.parametrize("check_hazards", [True, False])
def test_a_prepared_program_runs_again_as_if_fresh(check_hazards):
    """`prepare` once, `run(..., prepared=)` many times (an Executor's calls): every run gives
    the outputs and report of a run made from scratch, whatever ran before it (the memories
    are cleared: a read of bytes the run has not written yet is still caught)."""
    from stc_mlir.emulator import prepare
    from stc_mlir.target import load

    x1, x2, w = f16(2, 8, 16, 12), f16(2, 8, 16, 12), f16(12, 8, 3, 3, scale=0.2)
    program = conv_by_rows(x1.shape, w, cores=4, out_chunks=3)
    once = prepare(program, load(program.target), check_hazards)
    for x in (x1, x2, x1):
        got, report = run(program, {"x": x}, check_hazards=check_hazards, prepared=once)
        want, fresh = run(program, {"x": x}, check_hazards=check_hazards)
        np.testing.assert_array_equal(got["y"], want["y"])
        assert report.as_dict() == fresh.as_dict() and report.timeline == fresh.timeline
    assert once.runs == 3
    with pytest.raises(EmulatorError, match="serves only the program, target and modes"):
        run(program, {"x": x1}, check_hazards=not check_hazards, prepared=once)


def test_an_executor_prepares_its_program_once(tmp_path):
    import stc_mlir

    program = conv_by_rows((2, 8, 16, 12), f16(12, 8, 3, 3, scale=0.2), cores=4)
    executor = stc_mlir.Executor(program)
    outputs = []
    for x in (f16(2, 8, 16, 12), f16(2, 8, 16, 12)):
        executor.set_input({"x": x})
        outputs.append(executor()[0])
        np.testing.assert_array_equal(outputs[-1], run(program, {"x": x})[0]["y"])
    assert executor._preparations[True].runs == 2
    executor.program = conv_by_rows((2, 8, 16, 12), f16(12, 8, 3, 3, scale=0.2), cores=2)  # another program
    executor()
    assert executor._preparations[True].program is executor.program and executor._preparations[True].runs == 1
