"""The event loop in C (`native.simulate` over `simulator._native_plan`) against the
simulator's Python loop, its authority: on compiled programs and on mutants of them (drawn
at random sites: dropped commands, waits, signals, fences, swapped commands, overlapping
buffers), with and without hazard checks and numerics, both give the same report, the same
whole timeline (values and their int / float types), the same outputs, and the same hazard
(kind, message, command, address) with the same partial report."""

from __future__ import annotations

import random

import numpy as np
import pytest

from stc_mlir import models, mutate
from stc_mlir import target as targets
from stc_mlir.emulator import HazardError, native, prepare, run
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator import tile
from stc_mlir.frontend import import_onnx
from stc_mlir.isa.check import ProgramError
from stc_mlir.pipeline import Pipeline
from stc_mlir.dialects.npu import program_from_module

pytestmark = pytest.mark.skipif(not native.NATIVE, reason="the C loop is not built (or STC_LOOP_NATIVE=0)")


def _outcome(program, inputs, target, check_hazards: bool, numerics: bool, use_c: bool, runs: int = 1):
    """What a run says, everything compared: (result or hazard, report, timeline)."""
    try:
        prepared = prepare(program, target, check_hazards, numerics)
    except ProgramError as err:  # the checker's (no loop runs)
        return [("checker", err.kind, str(err))]
    assert prepared.plan is not None
    if not use_c:
        prepared.plan = None
    seen = []
    for _ in range(runs):  # a prepared program runs again from a clean state
        try:
            outputs, report = run(program, dict(inputs), target, check_hazards=check_hazards,
                                  numerics=numerics, prepared=prepared)
            result: tuple = ("ok", sorted((k, v.dtype.str, v.shape, v.tobytes()) for k, v in outputs.items()))
        except HazardError as err:
            report = err.report
            result = ("hazard", err.kind, str(err), err.core, err.index, err.address)
        timeline = [tuple((type(v).__name__, v) for v in s) for s in report.timeline]
        seen.append((result, repr(report.as_dict()), report.macs, report.cycles, dict(report.bytes_read),
                     dict(report.bytes_written), timeline))
    return seen


@pytest.fixture(scope="module")
def compiled():
    out = []
    for name, batch in (("mobilenetv2", 1), ("deepfm", 2)):
        proto = models.build(name, batch=batch, **models.small_options(name))
        inputs = models.example_inputs(name, proto)
        program = program_from_module(Pipeline(None).run(import_onnx(proto)))
        out.append((program, inputs, targets.load(program.target)))
    return out


@pytest.mark.parametrize("check_hazards,numerics", [(True, True), (True, False), (False, True), (False, False)])
def test_the_c_loop_runs_a_compiled_program_as_the_python_loop(compiled, check_hazards, numerics):
    for program, inputs, target in compiled:
        c = _outcome(program, inputs, target, check_hazards, numerics, True, runs=2)
        py = _outcome(program, inputs, target, check_hazards, numerics, False)
        assert c[0][0][0] == "ok" and c[0] == c[1]
        assert c[0] == py[0]


def test_the_c_loop_finds_every_mutant_s_hazard_as_the_python_loop(compiled):
    rng = random.Random(11)
    program, inputs, target = compiled[1]  # deepfm: small, every mutant kind applies
    made = mutate.mutants(program, target, per_kind=4, seed=rng.randrange(1 << 30))
    kinds = set()
    for m in made:
        for check_hazards, numerics in ((True, True), (True, False), (False, False)):
            c = _outcome(m.program, inputs, target, check_hazards, numerics, True)
            py = _outcome(m.program, inputs, target, check_hazards, numerics, False)
            assert c == py, (m.kind, m.where, check_hazards, numerics)
            if c[0][0] == "checker":
                kinds.add("checker")
            elif c[0][0][0] == "hazard":
                kinds.add(c[0][0][1])
    # the comparison saw the hazards the loop itself raises, not only clean runs
    assert {"provenance", "uninitialized_read"} <= kinds and ("race" in kinds or "deadlock" in kinds), kinds


def test_an_observer_runs_the_python_loop_with_the_same_report(compiled):
    program, inputs, target = compiled[1]

    class Count:
        n = 0

        def command_done(self, sim, core, index):
            Count.n += 1

        def finished(self, sim):
            pass

    _, plain = run(program, dict(inputs), target)
    _, watched = run(program, dict(inputs), target, observer=Count())
    assert Count.n == plain.commands and repr(plain.as_dict()) == repr(watched.as_dict())
    assert plain.timeline == watched.timeline


def test_fences_and_waits_in_the_c_loop():
    """A fence (a leg on each unit of its core) between a DMA and a relu; the fence waiting
    for a semaphore another core's fence signals (a wait slice), and the same two waiting
    for each other (a deadlock): same timeline, same result or message."""
    target = targets.load("stcp920")
    inputs = {"x": np.random.default_rng(1).standard_normal(1024).astype(np.float16)}
    for case in ("plain", "signalled", "deadlock"):
        b = ProgramBuilder("fenced")
        x = b.input("x", (1024,))
        y = b.output("y", (1024,))
        t = tile(b.buffer("t", "l1", 2048, core=0), (1024,))
        u = tile(b.buffer("u", "l1", 2048, core=0), (1024,))
        if case != "plain":
            b.semaphore("a", core=0)
            b.semaphore("b", core=1)
            b.add(1, "dma", src=x, dst=tile(b.buffer("v", "l1", 2048, core=1), (1024,)))
            if case == "deadlock":
                b.add(1, "fence", waits=["b"])
                b.add(1, "fence", signals=["a"])
            else:
                b.add(1, "fence", signals=["a"])
                b.add(1, "fence", waits=["b"])
        b.add(0, "dma", src=x, dst=t)
        b.add(0, "fence", waits=["a"] if case != "plain" else [])
        b.add(0, "unary", kind="relu", input=t, output=u)
        b.add(0, "fence", signals=["b"] if case != "plain" else [])
        b.add(0, "dma", src=u, dst=y)
        program = b.build()
        c = _outcome(program, inputs, target, True, True, True)
        assert c == _outcome(program, inputs, target, True, True, False)
        assert c[0][0][0] == ("hazard" if case == "deadlock" else "ok")
        if case == "deadlock":
            assert c[0][0][1] == "deadlock"
        if case == "signalled":
            assert any(s[6] == ("bool", True) for s in c[0][6])  # the fence waited


def test_the_plan_refuses_what_it_cannot_run():
    with pytest.raises(TypeError):
        native.plan([[("not", "a", "task")]])
    with pytest.raises(TypeError):
        native.plan("threads")
    b = ProgramBuilder("one")
    x = b.input("x", (16,))
    y = b.output("y", (16,))
    b.add(0, "dma", src=x, dst=y)
    program = b.build()
    prepared = prepare(program, targets.load("stcp920"))
    rows = [[(t, t.core, t.index, t.unit, t.cmd.op, t.wait_label, t.tid, t.ready, 1, False, 0.0, (), 0,
              ((5, 1),), (), None, None) for t in queue] for queue in prepared.tasks]
    bad = native.plan(rows)  # a wait on semaphore 5 of a program with none
    prepared.plan = bad
    with pytest.raises(ValueError, match="semaphore out of range"):
        run(program, {"x": np.zeros(16, np.float16)}, prepared.target, prepared=prepared)


def test_a_flow_whose_end_would_not_move_the_clock_is_done():
    """BERT-base S512 b2's level-2 program looped for ever: at 19,908,188.3 cycles a 2-byte
    transfer had 1.6e-8 bytes left at 12.8 B/cycle, an end 1.2e-9 cycles on, below the
    clock's float step (3.7e-9), so its end event came at the same time again and again.
    Such a flow is done (the C loop's `reflow` has the same test; the emulator's own tests
    compare the two loops)."""
    from stc_mlir.emulator.simulator import Simulator, _Flow

    b = ProgramBuilder("tiny")
    x = b.input("x", (1,))
    b.add(0, "dma", src=x, dst=tile(b.buffer("t", "l1", 2, core=0), (1,)))
    sim = Simulator(b.build(), targets.load("stcp920"), numerics=False)
    (task,) = [t for queue in sim.prepared_tasks for t in queue]
    sim.now = sim.flow_time = 19_908_188.30
    sim.flow_generation = 0
    flow = _Flow(task, 2)
    flow.remaining, flow.rate = 1.59e-8, 12.8
    sim.flows = [flow]
    assert sim._reflow(None) == [flow] and sim.flows == []
