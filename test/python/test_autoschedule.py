"""Automatic scheduling (graph_schedule_level 1-3): random small networks always get a
schedule that verifies, keeps the graph's results and runs on the emulator without a
hazard; the decision cache is hit on a second compile; the emitted script gives back the
same schedule."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stc_mlir import reference
from stc_mlir.autoschedule import AutoScheduleError, auto_schedule, check_level
from stc_mlir.autoschedule.cost import Estimator
from stc_mlir.dialects import schedule as s
import io

from stc_mlir.ir import print_module as _print
from stc_mlir.passes.schedule_verify import verify_function
from stc_mlir import target as targets

import lowering_helpers
from lowering_helpers import f16, function, lower_and_run
from test_lowering_random import LAYERS, ROWS, network, rows_network

F = np.float16


def print_module(module) -> str:
    out = io.StringIO()
    _print(module, out)
    return out.getvalue()


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@st.composite
def graphs(draw):
    batch = draw(st.sampled_from([1, 2, 4, 8, 16]))
    channels = draw(st.sampled_from([4, 8, 16]))
    if draw(st.booleans()):
        layers = draw(st.lists(st.sampled_from(LAYERS), min_size=1, max_size=6))
        size = draw(st.sampled_from([(12, 10), (32, 32)]))
        return (batch, 4, *size), network(layers, channels)
    layers = draw(st.lists(st.sampled_from(ROWS), min_size=1, max_size=6))
    return (batch, draw(st.sampled_from([12, 64])), 16), rows_network(layers, 8 * channels)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs(), st.sampled_from([1, 2, 3]), st.integers(0, 2**32 - 1))
def test_levels_verify_and_match_the_reference(params, level, seed):
    shape, net = params
    saved, lowering_helpers.RNG = lowering_helpers.RNG, np.random.default_rng(seed)
    try:  # the weights and input drawn from the example's seed: a failure replays exactly
        module = function({"x": (shape, F)}, net)
        x = f16(*shape)
    finally:
        lowering_helpers.RNG = saved
    want = reference.run(module, {"x": x})
    (decided,) = auto_schedule(module, level, use_cache=False)
    f = module.body.block.first_op
    verify_function(f, targets.load("stcp920"))
    assert all(isinstance(op, s.ScheduledItem) for op in f.body.block.ops if op.name.startswith("schedule."))
    got = reference.run(module, {"x": x})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert decided.estimate >= 0 and decided.level == level
    lower_and_run(module, {"x": x}, max_ulps=2)


def _chain(batch: int = 16):
    from stc_mlir.dialects import graph as g

    rng = np.random.default_rng(0)  # the same weights every time: the IR texts compare

    def body(b, x):
        w = b.const((rng.standard_normal((64, 64)) * 0.1).astype(F))
        y = b(g.MatmulOp.make(x, w))
        y = b(g.ReluOp.make(y))
        y = b(g.AddOp.make(y, x))
        return b(g.MatmulOp.make(y, b.const((rng.standard_normal((64, 32)) * 0.1).astype(F))))

    return function({"x": ((batch, 128, 64), F)}, body)


def test_cache_is_hit_and_gives_the_same_schedule(cache_dir):
    first, second = _chain(), _chain()
    (a,) = auto_schedule(first, 3)
    (b,) = auto_schedule(second, 3)
    assert not a.cache_hit and b.cache_hit
    assert list(cache_dir.glob("*.json"))
    assert print_module(first) == print_module(second)
    (c,) = auto_schedule(_chain(batch=8), 3)  # another graph: another key
    assert not c.cache_hit


def test_a_corrupt_cache_entry_is_ignored(cache_dir):
    auto_schedule(_chain(), 3)
    for entry in cache_dir.glob("*.json"):
        entry.write_text("{not json")
    (again,) = auto_schedule(_chain(), 3)
    assert not again.cache_hit


def assert_script_replays(build, level: int, tmp_path, batch: int) -> str:
    """The script `level` emits for `build()`, run on a fresh `build()`, gives the same
    schedule; returns the script."""
    from stc_mlir.graph_schedule import IRModule

    found = build()
    (decided,) = auto_schedule(found, level, use_cache=False)
    path = tmp_path / "sched.py"
    path.write_text(decided.script(file=str(path)))
    spec = importlib.util.spec_from_file_location("sched", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    again = build()
    module.schedule(IRModule(again), batch=batch)
    assert print_module(again) == print_module(found)
    return path.read_text()


@pytest.mark.parametrize("level", [1, 2, 3])
def test_emitted_script_gives_the_same_schedule(tmp_path, level):
    assert_script_replays(_chain, level, tmp_path, batch=16)


def test_level_0_is_the_default_schedule():
    from stc_mlir.schedules.default import default_schedule

    a, b = _chain(), _chain()
    auto_schedule(a, 0)
    default_schedule(b)
    assert print_module(a) == print_module(b)
    with pytest.raises(AutoScheduleError, match="level 0 makes no groups"):
        auto_schedule(_chain(), 0)[0].script()


def test_bad_level_and_scheduled_input():
    with pytest.raises(AutoScheduleError, match="must be 0, 1, 2 or 3, got 7"):
        check_level(7)
    module = _chain()
    auto_schedule(module, 2)
    with pytest.raises(AutoScheduleError, match="already scheduled"):
        auto_schedule(module, 3)


def test_an_op_too_big_for_any_batch_split_is_reported():
    from stc_mlir.dialects import graph as g

    module = function({"x": ((1, 4096, 1024), F)}, lambda b, x: b(g.ReluOp.make(x)))
    with pytest.raises(AutoScheduleError, match=r"needs .* bytes of L1 per core even with one sample"):
        auto_schedule(module, 3, use_cache=False)


def test_level_3_estimate_is_not_above_level_2():
    estimates = {}
    for level in (1, 2, 3):
        (d,) = auto_schedule(_chain(), level, use_cache=False)
        estimates[level] = d.estimate
    assert estimates[3] <= estimates[2] <= estimates[1]


def test_estimator_counts_weights_once_per_sub_group():
    module = _chain()
    auto_schedule(module, 3, use_cache=False)
    est = Estimator(targets.load("stcp920")).function(module.body.block.first_op)
    # every item on all the cores: one after the other, none waiting for another's weights
    assert est.cycles == pytest.approx(sum(c for _, c in est.items), abs=len(est.items))
    assert all(c >= 0 for _, c in est.items) and not any(est.waits)


def test_estimator_follows_the_lowerings_fine_first_pieces():
    """A stage using each weight element at few output positions per core, streaming few
    chunks, gets its first chunk down the cores' tree in stage.FINE_PIECES pieces (as the
    lowering does): its chain start-up is PIECES / FINE_PIECES of the coarse one's."""
    from stc_mlir.autoschedule.cost import positions_per_core
    from stc_mlir.dialects import graph as g
    from stc_mlir.passes.lowering.stage import FINE_PIECES, FINE_REGIONS, FINE_REUSE, PIECES

    est = Estimator(targets.load("stcp920"))
    chunk = est.t.memory["wb"].size / 2
    coarse = est.features(1000, 8, 1, ddr=chunk, weights=chunk)[2]
    assert coarse > 0
    assert est.features(1000, 8, 1, ddr=chunk, weights=chunk, reuse=FINE_REUSE - 1)[2] == \
        pytest.approx(coarse * PIECES / FINE_PIECES)
    assert est.features(1000, 8, 1, ddr=chunk, weights=chunk, reuse=FINE_REUSE)[2] == coarse
    many = chunk * (FINE_REGIONS + 1)  # a long stream: DDR-bound, the lowering keeps PIECES
    assert est.features(1000, 8, 1, ddr=many, weights=many, reuse=1)[2] == \
        est.features(1000, 8, 1, ddr=many, weights=many)[2]
    for batch, positions in ((2, 2 * 128 / 8), (16, 16 * 128 / 8)):
        matmul = next(o for o in _chain(batch).walk() if isinstance(o, g.MatmulOp))
        assert positions_per_core(matmul, 8) == positions


def test_pipeline_and_model_compile_take_levels(tmp_path):
    from stc_mlir import models
    from stc_mlir.model import from_onnx

    proto = models.build("resnet50", batch=2, image_size=32)
    path = tmp_path / "r.onnx"
    path.write_bytes(proto.SerializeToString())
    model = from_onnx(str(path))
    out = model.compile(str(tmp_path / "r.stcobj"), graph_schedule_level=3)
    assert (tmp_path / "r.stcobj").exists() and out.endswith("r.stcobj")


def _onnx(nodes, inputs, outputs, inits=()):
    from onnx import helper, numpy_helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                              [numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _multi_result_models():
    from onnx import TensorProto as T, helper

    split = _onnx([helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1),  # c: unused
                   helper.make_node("Relu", ["a"], ["ra"]), helper.make_node("Sigmoid", ["b"], ["sb"]),
                   helper.make_node("Mul", ["ra", "sb"], ["y"]), helper.make_node("Tanh", ["b"], ["z"])],
                  [("x", T.FLOAT, [4, 20, 6, 6])], [("y", T.FLOAT, None), ("z", T.FLOAT, None)],
                  [("sizes", np.array([8, 8, 4], np.int64))])
    topk = _onnx([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1),
                  helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
                  helper.make_node("Add", ["v", "fi"], ["y"])],
                 [("x", T.FLOAT, [4, 8, 16])], [("y", T.FLOAT, None), ("i", T.INT64, None)],
                 [("k", np.array([5], np.int64))])
    return {"split": (split, (4, 20, 6, 6)), "topk": (topk, (4, 8, 16))}


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("name", ["split", "topk"])
def test_multi_result_ops_whose_results_feed_later_ops(name, level):
    """A Split whose results feed different ops and a TopK whose values and indices are both
    used: a group boundary is one value, so every level first gives each used result an op
    of its own (slices; one TopK per result), compiles, and matches onnxruntime."""
    import onnxruntime as ort

    from stc_mlir.emulator import program_from_module, run
    from stc_mlir.frontend import import_onnx
    from stc_mlir.pipeline import Pipeline

    m, shape = _multi_result_models()[name]
    x = np.random.default_rng(3).permutation(int(np.prod(shape))).reshape(shape).astype(np.float32) / 64
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    pipeline = Pipeline(None, level=level, stop_after="schedule-verify")
    scheduled = pipeline.run(import_onnx(m, dtype="float16"))
    names = [op.name for op in scheduled.walk()]
    assert "graph.split" not in names
    assert names.count("graph.topk") == (2 if name == "topk" else 0)
    if level > 0:  # the emitted script makes the same rewrite, so its handles name the same ops
        from stc_mlir.graph_schedule import IRModule

        a = import_onnx(m, dtype="float16")
        namespace: dict = {}
        exec(auto_schedule(a, level, use_cache=False)[0].script(), namespace)
        b = import_onnx(m, dtype="float16")
        namespace["schedule"](IRModule.of(b))
        assert print_module(a) == print_module(b)
    program = program_from_module(Pipeline(None, level=level).run(import_onnx(m, dtype="float16")))
    outputs, _ = run(program, {"x": x})
    for w, io in zip(want, program.outputs):
        got = outputs[io.name]
        assert got.shape == w.shape
        if w.dtype == np.int64:
            np.testing.assert_array_equal(got, w)
            continue
        got, w = got.astype(np.float64).ravel(), w.astype(np.float64).ravel()
        assert got @ w / (np.linalg.norm(got) * np.linalg.norm(w)) >= 0.999


def test_a_refusal_names_each_reason_once(monkeypatch):
    """Levels 1-2 try several fills of L1 / LLB: the same refusal is reported once."""
    import stc_mlir.autoschedule.decide as decide

    monkeypatch.setattr(decide, "_lowering_fails", lambda *_: "LoweringError: no")
    with pytest.raises(AutoScheduleError) as e:
        auto_schedule(_chain(), 2, use_cache=False)
    assert str(e.value) == "no schedule found that the lowering takes: LoweringError: no"


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs())
def test_levels_never_run_slower_than_the_level_below(params):
    """Level N + 1 keeps level N's choice where its own runs slower: on graphs this small the
    emulator judges every level against the one below, so the emulated cycles never grow
    with the level (where the estimates alone would: they are up to ~30% off here)."""
    from stc_mlir.emulator import run
    from stc_mlir.passes.lowering import lower
    from stc_mlir.passes.npu_allocate import allocate

    shape, net = params
    cycles = []
    for level in (0, 1, 2, 3):
        module = function({"x": (shape, F)}, net)
        auto_schedule(module, level, use_cache=False)
        lowered = lower(module)
        program = allocate(lowered.program, lowered.live, lowered.phase_items)
        cycles.append(run(program, {"x": f16(*shape)}, numerics=False)[1].cycles)
    assert cycles == sorted(cycles, reverse=True), cycles


def test_a_level_keeps_the_level_below_when_its_own_runs_slower(monkeypatch):
    """Where the emulator judges, the level below's choice wins when it runs in fewer cycles:
    here every level's own schedule is made to run slower, so level 2 ends with level 0's
    default schedule (and has no script of its own to write); where the estimates are far
    apart, the estimator ranks alone."""
    import stc_mlir.autoschedule.decide as decide
    from stc_mlir.schedules.default import default_schedule

    judged = []

    def lower_level_faster(self, choices):  # the emulator's verdict, made up: the lowest level runs fastest
        judged.append([c.style for c in choices])
        return min((c for c in choices if self.lowers(c) is True), key=lambda c: c.style)

    monkeypatch.setattr(decide.Decider, "judge", lower_level_faster)
    monkeypatch.setattr(decide, "DOUBT", 1.0)  # every estimate in doubt: the emulator always asked
    a, b = _chain(), _chain()
    (d,) = auto_schedule(a, 2, use_cache=False)
    default_schedule(b)
    assert judged == [[1, 0], [2, 0]]  # level 1 against level 0, then level 2 against level 1's choice
    assert d.kept_default and print_module(a) == print_module(b)
    with pytest.raises(AutoScheduleError, match="kept the default schedule"):
        d.script()
    monkeypatch.setattr(decide, "DOUBT", 0.0)  # every estimate trusted, however small the program
    monkeypatch.setattr(decide, "JUDGE_ALWAYS_CYCLES", 0)
    judged.clear()
    (d,) = auto_schedule(_chain(), 2, use_cache=False)
    assert d.built is not None and not d.kept_default and all(len(styles) == 1 for styles in judged)


def _near_the_bar(monkeypatch, over: float) -> list[tuple[list[int], int]]:
    """Level 3's candidates estimated `over` times the best first estimate of levels 0-2 (the
    bar) through `Decider.trial`, the estimate's one seam; the styles of every set of choices
    the emulator is asked to judge, with the style of the one it keeps."""
    import stc_mlir.autoschedule.decide as decide

    trial, judge, judged = decide.Decider.trial, decide.Decider.judge, []

    def near(self, segments, style, *args, **kw):
        made = trial(self, segments, style, *args, **kw)
        if made is not None and style == 3:
            made.estimate = over * min(self.first_estimate(level) for level in (0, 1, 2))
        return made

    def spy(self, choices):
        kept = judge(self, choices)
        judged.append(([c.style for c in choices], kept.style))
        return kept

    monkeypatch.setattr(decide.Decider, "trial", near)
    monkeypatch.setattr(decide.Decider, "judge", spy)
    return judged


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("within", [True, False])
def test_a_candidate_within_doubt_of_the_bar_is_judged(monkeypatch, big, within):
    """A level-3 candidate estimated above the levels below's best first estimate (the bar)
    but within the estimator's doubt (`DOUBT`) of it is lowered and judged by the emulator
    beside level 2's choice, whatever the program's size (`big`: every program taken as above
    `JUDGE_ALWAYS_CYCLES`): a big program near the bar lost all its candidates and ran level
    2's schedule (as DLRM b2 did, eighth session, when its bar was not widened); the fewer
    emulated cycles win (here level 3's own). Beyond the doubt, none is lowered."""
    import stc_mlir.autoschedule.decide as decide

    if big:
        monkeypatch.setattr(decide, "JUDGE_ALWAYS_CYCLES", 0)
    judged = _near_the_bar(monkeypatch, 1 + decide.DOUBT * (0.5 if within else 2))
    auto_schedule(_chain(), 3, use_cache=False)
    if within:
        styles, kept = judged[-1]
        assert styles[0] == 3 and styles[-1] < 3 and kept == 3  # level 3's own beside the level below's
    else:
        assert all(3 not in styles for styles, _ in judged)


def _flattened_batch(shape: tuple[int, ...], rows: tuple[int, ...], relu: tuple[int, ...], out: tuple[int, ...]):
    """A gather over the batch flattened into rows: `shape` reshaped to `rows`, rows gathered
    by constant indices, reshaped to `relu` for a relu, then to `out` (GatherND of a constant
    grid after the graph passes: test_export_corpus.test_gather_nd_of_constant_index_grids)."""
    from stc_mlir.dialects import graph as g

    index = np.random.default_rng(1).integers(0, rows[0], size=int(np.prod(out) // np.prod(rows[1:])))

    def body(b, x):
        y = b(g.GatherOp.make(b(g.ReshapeOp.make(x, shape=rows)), b.const(index.astype(np.int64)), axis=0))
        y = b(g.ReluOp.make(b(g.ReshapeOp.make(y, shape=relu))))
        return y if relu == out else b(g.ReshapeOp.make(y, shape=out))

    return function({"x": (shape, F)}, body)


@pytest.mark.parametrize("shape, rows, relu, out, uncut", [
    ((2, 16), (32,), (2, 1, 1, 16), (2, 1, 1, 16), (1, "graph.gather (tensor<32xf16>) combines elements across")),
    ((2, 2, 2, 8), (4, 2, 8), (576,), (3, 2, 3, 2, 2, 8), (4, "hands on no batch that 2 divides"))])
def test_the_search_cuts_no_batch_the_verifier_refuses(monkeypatch, shape, rows, relu, out, uncut):
    """A group's batch, to the verifier, is its output's axis 0: a gather over a flattened
    batch (2 x 16 -> 32 rows) has batch 32 there and combines elements along it, and a group
    handing on 3 x ... cannot take 2 parts; the search's test (`GraphView.mixing`) once took
    the function's batch for every op, saw the gather reading no batch-carrying value, and
    offered batch parts of such groups, which `Decider.trial` then had to refuse. The search
    offers none now: no candidate is refused, and level 3 still schedules the graph."""
    import stc_mlir.autoschedule.decide as decide
    from stc_mlir.autoschedule.graph import GraphView

    module = _flattened_batch(shape, rows, relu, out)
    k, why = uncut  # the op alone (the gather; the reshape handing on 3 x ...) is not cut
    alone = GraphView(module.body.block.first_op).mixing(k, k + 1)
    trial, refused = decide.Decider.trial, []

    def spy(self, segments, *args, **kw):
        made = trial(self, segments, *args, **kw)
        if made is None:
            refused.append(self.reasons[-1])
        return made

    monkeypatch.setattr(decide.Decider, "trial", spy)
    x = f16(*shape)
    want = reference.run(module, {"x": x})
    (d,) = auto_schedule(module, 3, use_cache=False)
    assert refused == [] and d.built is not None
    assert why in alone
    for a, b in zip(reference.run(module, {"x": x}), want):
        np.testing.assert_array_equal(a, b)


def _spy_levels(monkeypatch, refuse_above: int = 3) -> list[int]:
    """The levels the pipeline asks auto_schedule for; levels above `refuse_above` refuse."""
    import stc_mlir.autoschedule as autoschedule

    real, asked = autoschedule.auto_schedule, []

    def spy(mod, level, target="stcp920", **kw):
        asked.append(level)
        if level > refuse_above:
            raise AutoScheduleError(f"level {level} says no")
        return real(mod, level, target, **kw)

    monkeypatch.setattr(autoschedule, "auto_schedule", spy)
    return asked


def test_the_default_level_is_3(monkeypatch):
    from stc_mlir.pipeline import DEFAULT_LEVEL, Pipeline

    assert DEFAULT_LEVEL == 3
    asked = _spy_levels(monkeypatch)
    pipeline = Pipeline(stop_after="schedule-verify")
    pipeline.run(_chain())
    assert asked == [3] and pipeline.level_used == 3 and pipeline.decided[0].level == 3 and not pipeline.notes
    # a schedule function (or "default", the default schedule) means level 0
    for schedule in ("default", "stc_mlir.schedules.default:default_schedule"):
        assert Pipeline(schedule).level == 0
    asked.clear()
    Pipeline(level=0, stop_after="schedule-verify").run(_chain())
    assert asked == []


def test_model_compile_defaults_to_level_3(tmp_path, monkeypatch, small_model):
    from stc_mlir.model import from_onnx

    asked = _spy_levels(monkeypatch)
    model = from_onnx(small_model("resnet50"))
    model.compile(str(tmp_path / "r.stcobj"))
    assert asked == [3]
    model.compile(str(tmp_path / "r0.stcobj"), graph_schedule_level=0)
    assert asked == [3]


def test_the_default_level_falls_back_when_it_refuses(monkeypatch, tmp_path, small_model):
    from stc_mlir.model import ScheduleFallbackWarning, from_onnx
    from stc_mlir.pipeline import Pipeline, PipelineError

    asked = _spy_levels(monkeypatch, refuse_above=1)
    pipeline = Pipeline(stop_after="schedule-verify")
    pipeline.run(_chain())
    assert asked == [3, 2, 1] and pipeline.level_used == 1 and pipeline.decided[0].level == 1
    assert len(pipeline.notes) == 2 and "level 3 says no" in pipeline.notes[0] and "trying level 2" in pipeline.notes[0]
    # every level refuses: the default schedule (level 0)
    asked = _spy_levels(monkeypatch, refuse_above=0)
    pipeline = Pipeline(stop_after="schedule-verify")
    pipeline.run(module := _chain())
    assert pipeline.level_used == 0 and not pipeline.decided and "default schedule (level 0)" in pipeline.notes[-1]
    from stc_mlir.schedules.default import default_schedule

    assert print_module(module) == print_module(default_schedule(_chain()).module)
    # a level given explicitly is honoured or refused
    with pytest.raises(PipelineError, match="graph_schedule_level 3: level 3 says no"):
        Pipeline(level=3, stop_after="schedule-verify").run(_chain())
    with pytest.warns(ScheduleFallbackWarning) as caught:
        from_onnx(small_model("resnet50")).compile(str(tmp_path / "r.stcobj"))
    assert [str(w.message).split(" (")[0] for w in caught] == [
        f"graph_schedule_level {n} refused the graph" for n in (3, 2, 1)]


def test_stc_run_defaults_to_level_3(capsys, monkeypatch):
    """The README's first command (the built-in default job) and a built-in model without
    --level run at level 3; --level 0 and --schedule default at level 0."""
    from stc_mlir.tools import stc_run

    asked = _spy_levels(monkeypatch)
    assert stc_run.main(["--timing-only", "-q"]) == 0
    assert "resnet50 batch 2 image_size=32, graph_schedule_level 3" in capsys.readouterr().out
    assert stc_run.main(["deepfm", "--batch", "16", "--timing-only", "-q"]) == 0
    assert "graph_schedule_level 3" in capsys.readouterr().out and asked == [3, 3]
    for flags in (["--level", "0"], ["--schedule", "default"]):
        assert stc_run.main(["deepfm", "--batch", "16", "--timing-only", "-q", *flags]) == 0
        assert "default schedule" in capsys.readouterr().out and asked == [3, 3]


def test_stc_run_notes_the_fallback(capsys, monkeypatch):
    from stc_mlir.tools import stc_run

    _spy_levels(monkeypatch, refuse_above=2)
    assert stc_run.main(["deepfm", "--batch", "16", "--timing-only"]) == 0
    captured = capsys.readouterr()
    assert "stc-run: graph_schedule_level 3 refused the graph (level 3 says no); trying level 2" in captured.err
    assert "graph_schedule_level 2" in captured.out


def test_a_graph_the_lowering_never_takes_goes_to_level_0_at_once(monkeypatch):
    """An op kind the lowering does not support refuses every schedule: the search stops at
    the first refusal and the default level goes straight to level 0 (then the lowering
    names the op)."""
    import stc_mlir.autoschedule.decide as decide
    from stc_mlir.pipeline import Pipeline, PipelineError

    calls = []

    def refuse(*_):
        calls.append(1)
        return "LoweringError: graph.gemm 'y' is not supported: run graph-canonicalize first"

    monkeypatch.setattr(decide, "_lowering_fails", refuse)
    pipeline = Pipeline(stop_after="schedule-verify")
    pipeline.run(_chain())
    assert len(calls) == 1 and pipeline.level_used == 0 and len(pipeline.notes) == 1
    assert "whatever its schedule" in pipeline.notes[0] and "default schedule (level 0)" in pipeline.notes[0]
    with pytest.raises(PipelineError, match="graph_schedule_level 2: the lowering does not take the graph"):
        Pipeline(level=2, stop_after="schedule-verify").run(_chain())


def test_the_emulator_judges_between_candidates():
    """Level 3 lowers its best-estimated candidate, the best one of its biased searches
    (towards longer groups) and, where in doubt, level 2's choice, and keeps the one the
    emulator runs in the fewest cycles, whatever order the estimator put them in."""
    from stc_mlir.autoschedule.decide import Choice, Decider
    from stc_mlir.emulator import program_from_module, run
    from stc_mlir.pipeline import Pipeline

    t = targets.load("stcp920")
    programs = [program_from_module(Pipeline(None, level=level).run(_chain())) for level in (0, 3)]
    cycles = [run(p, {"x": f16(16, 128, 64)}, numerics=False)[1].cycles for p in programs]
    assert cycles[0] != cycles[1]
    faster = cycles.index(min(cycles))
    choices = [Choice([], 0, program=p) for p in programs]
    judge = Decider(None, "main", None, t).judge  # the choices are lowered already
    assert judge(choices) is choices[faster]
    assert judge(choices[::-1]) is choices[faster]


def _v_first():
    """BERT's attention in miniature, in the exporters' order: the V chain first."""
    from stc_mlir.dialects import graph as g

    rng = np.random.default_rng(1)

    def body(b, x):
        v = b(g.ReluOp.make(b(g.MatmulOp.make(x, b.const((rng.standard_normal((64, 64)) * 0.1).astype(F))))))
        scores = b(g.SigmoidOp.make(b(g.MatmulOp.make(x, b.const((rng.standard_normal((64, 64)) * 0.1).astype(F))))))
        return b(g.AddOp.make(scores, v))

    return function({"x": ((4, 32, 64), F)}, body)


def test_level_3_computes_each_op_as_late_as_it_can():
    """The exporters' order computes BERT's V projection before the attention scores; level 3
    sinks each op to just before its first user (`sink_to_first_use`), so the V chain sits
    next to the matmul that uses it and can be grouped with it. The values do not change."""
    from stc_mlir.schedules.default import sink_to_first_use

    module = _v_first()
    x = f16(4, 32, 64)
    want = reference.run(module, {"x": x})
    f = module.body.block.first_op
    kinds = lambda: [op.name for op in f.body.block.ops if op.name.startswith("graph.") and op.name != "graph.constant"]  # noqa: E731
    assert kinds() == ["graph.matmul", "graph.relu", "graph.matmul", "graph.sigmoid", "graph.add"]
    assert sink_to_first_use(f)
    assert kinds() == ["graph.matmul", "graph.sigmoid", "graph.matmul", "graph.relu", "graph.add"]
    for a, b in zip(reference.run(module, {"x": x}), want):
        np.testing.assert_array_equal(a, b)


def test_level_3_also_groups_runs_of_the_graphs_order(monkeypatch):
    """Where sinking moved ops, level 3 also searches the graph's order (BERT-base S512 b2:
    the scores cut in row stripes keep the probabilities in L1 for the context matmul only
    with the V projection before them, 31.6 M cycles against 36.0 M sunk). Both orders'
    candidates are estimated; one of the graph's order, made the best estimated here, is
    built in that order and computes the same values (the sunk ones, estimated far behind,
    are above the bar; the emulator judges it beside level 2's, and it runs faster here)."""
    import stc_mlir.autoschedule.decide as decide

    trial, orders = decide.Decider.trial, []

    def spy(self, segments, style, *args, sunk=False, **kw):
        made = trial(self, segments, style, *args, sunk=sunk, **kw)
        if style == 3:
            orders.append(sunk)
            if made is not None and sunk:
                made.estimate *= 10  # the sunk order's candidates estimated far behind
        return made

    decide_level, chosen = decide.Decider.decide, []

    def decided(self, level):
        choice = decide_level(self, level)
        chosen.append((level, choice.style, choice.sunk))
        return choice

    monkeypatch.setattr(decide.Decider, "trial", spy)
    monkeypatch.setattr(decide.Decider, "decide", decided)
    module = _v_first()
    x = f16(4, 32, 64)
    want = reference.run(module, {"x": x})
    (d,) = auto_schedule(module, 3, use_cache=False)
    assert set(orders) == {True, False}  # candidates of both orders were estimated
    assert chosen[-1] == (3, 3, False) and d.built is not None and not d.built.sunk
    for a, b in zip(reference.run(module, {"x": x}), want):
        np.testing.assert_array_equal(a, b)
    lower_and_run(module, {"x": x}, max_ulps=2)


def test_a_big_program_lowers_the_graphs_order_only_where_it_is_estimated_best(monkeypatch):
    """Each lowering of a big program costs seconds (ResNet-50 b16's search doubled when the
    graph's order's candidates were lowered beside the sunk order's): there, a candidate of
    the graph's order is lowered only when it is the best estimated of all."""
    import stc_mlir.autoschedule.cost as cost
    import stc_mlir.autoschedule.decide as decide

    trial, lowers, lowered = decide.Decider.trial, decide.Decider.lowers, []

    def spy(self, segments, style, *args, sunk=False, **kw):
        made = trial(self, segments, style, *args, sunk=sunk, **kw)
        if made is not None and style == 3 and not sunk:
            made.estimate *= 1.01  # the graph's order just behind the sunk order's best
        return made

    def lowering(self, choice):
        lowered.append((choice.style, choice.sunk))
        return lowers(self, choice)

    monkeypatch.setattr(cost, "SMALL_PROGRAM", 0)  # a big program: the big figures, few lowerings
    monkeypatch.setattr(decide.Decider, "trial", spy)
    monkeypatch.setattr(decide.Decider, "lowers", lowering)
    (d,) = auto_schedule(_v_first(), 3, use_cache=False)
    assert (3, True) in lowered and (3, False) not in lowered


def _branches(n: int = 8):
    """n small independent branches (a matmul and a sigmoid on a batch of 2), concatenated
    and multiplied: DLRM's embedding lookups in miniature."""
    from stc_mlir.dialects import graph as g

    rng = np.random.default_rng(2)

    def body(b, x):
        outs = [b(g.SigmoidOp.make(b(g.MatmulOp.make(x, b.const((rng.standard_normal((64, 16)) * 0.1).astype(F))))))
                for _ in range(n)]
        z = b(g.ConcatOp.make(outs, axis=1))
        return b(g.MatmulOp.make(z, b.const((rng.standard_normal((16 * n, 8)) * 0.1).astype(F))))

    return function({"x": ((2, 64), F)}, body)


def _built(narrow: bool):
    """`_branches` with a group per branch (on one core each when `narrow`) and one for the
    concat and the matmul: (module, the group segments, emulated cycles, estimate)."""
    from stc_mlir.autoschedule.build import build
    from stc_mlir.autoschedule.graph import GraphView
    from stc_mlir.autoschedule.search import Search
    from stc_mlir.graph_schedule import IRModule

    t = targets.load("stcp920")
    module = _branches()
    f = module.body.block.first_op
    search = Search(GraphView(f), t)
    segments = [search.best(i, i + 2) for i in range(0, 16, 2)] + [search.best(16, 18)]
    if narrow:
        segments = [search.narrow(seg) for seg in segments]
    x = f16(2, 64)
    want = reference.run(module, {"x": x})
    build(IRModule(module), f, segments, 3, t)
    verify_function(f, t)
    for a, b in zip(reference.run(module, {"x": x}), want):
        np.testing.assert_array_equal(a, b)
    _, report, _ = lower_and_run(module, {"x": x}, max_ulps=2)
    return module, segments, report.cycles, Estimator(t).function(f)


def test_groups_too_small_to_spread_run_on_one_core_each_side_by_side():
    """A group whose work is too small to spread over the 8 cores (`Search.narrow`) is bound
    to the one core free soonest: the 8 branches take the 8 cores, run side by side, verify,
    match the reference, and take fewer cycles than on all the cores one after the other;
    the estimate sees them overlap (the longest path, not the sum of the items)."""
    module, segments, cycles, est = _built(narrow=True)
    assert [seg.cores for seg in segments[:8]] == [1] * 8
    binds = [op.core_bind.data for op in module.body.block.first_op.body.block.ops
             if isinstance(op, s.GroupOp) and [o.name for o in op.body_ops() if o.name != "graph.constant"] == ["graph.matmul", "graph.sigmoid"]]
    assert sorted(tuple(b[0]) for b in binds) == [(c,) for c in range(8)]
    _, _, spread_cycles, spread_est = _built(narrow=False)
    assert cycles < spread_cycles
    assert est.cycles < sum(c for _, c in est.items)
    assert est.cycles < spread_est.cycles
    path = est.critical()
    assert path[-1] == len(est.items) - 1
    assert est.cycles == int(sum(est.items[k][1] + est.waits[k] for k in path))


def test_a_spread_matmul_on_batch_parts_loads_its_columns_per_part():
    """A matmul of 2 rows spread along N: on two batch parts of 4 cores each core loads a
    quarter of the columns, a hop behind the first part; on one part of 8 an eighth (the
    estimate of the one-part bind is the lower: DLRM's MLPs)."""
    from stc_mlir.autoschedule.graph import GraphView
    from stc_mlir.autoschedule.search import Search

    rng = np.random.default_rng(3)
    from stc_mlir.dialects import graph as g

    module = function({"x": ((2, 1024), F)},
                      lambda b, x: b(g.MatmulOp.make(x, b.const((rng.standard_normal((1024, 512)) * 0.1).astype(F)))))
    search = Search(GraphView(module.body.block.first_op), targets.load("stcp920"))
    assert search.cost(0, 1, 1, 1) < search.cost(0, 1, 1, 2)
    assert search.best(0, 1).parts == 1


def test_fork_join_candidate_groups_each_branch():
    """`Search.branches`, level 3's fork-join candidate: two chains that fork from one input
    and join at an op that reads both are a group each, the join and what follows it another
    (a residual add reads the forked input, which other ops read too: it stays in its chain),
    each cut the fewest ways that fit. Built, the schedule verifies and matches the reference."""
    from stc_mlir.autoschedule.build import build
    from stc_mlir.autoschedule.graph import GraphView
    from stc_mlir.autoschedule.search import Search
    from stc_mlir.dialects import graph as g
    from stc_mlir.graph_schedule import IRModule
    from stc_mlir.schedules.default import sink_to_first_use

    rng = np.random.default_rng(4)
    w = lambda: (rng.standard_normal((64, 64)) * 0.1).astype(F)  # noqa: E731

    def body(b, x):
        q = b(g.ReluOp.make(b(g.MatmulOp.make(x, b.const(w())))))
        k = b(g.SigmoidOp.make(b(g.MatmulOp.make(x, b.const(w())))))
        joined = b(g.MatmulOp.make(b(g.MulOp.make(q, k)), b.const(w())))
        return b(g.ReluOp.make(b(g.AddOp.make(joined, x))))

    module = function({"x": ((4, 32, 64), F)}, body)
    f = module.body.block.first_op
    sink_to_first_use(f)
    t = targets.load("stcp920")
    view = GraphView(f)
    segments = Search(view, t).branches()
    groups = [[op.name for op in view.ops[seg.start:seg.stop]] for seg in segments]
    assert sorted(groups[:2]) == [["graph.matmul", "graph.relu"], ["graph.matmul", "graph.sigmoid"]]
    assert groups[2:] == [["graph.mul", "graph.matmul", "graph.add", "graph.relu"]]
    assert all(seg.split == 1 for seg in segments)  # a small batch fits whole: weights read once
    x = f16(4, 32, 64)
    want = reference.run(module, {"x": x})
    build(IRModule(module), f, segments, 3, t)
    verify_function(f, t)
    for a, b in zip(reference.run(module, {"x": x}), want):
        np.testing.assert_array_equal(a, b)
    lower_and_run(module, {"x": x}, max_ulps=2)


def test_small_graphs_are_estimated_with_their_own_figures():
    """A graph whose compute and weights each take fewer than `SMALL_PROGRAM` cycles is
    estimated with `SMALL_CALIBRATION`, a bigger one with `CALIBRATION`; the regime is the
    graph's, so its schedules (sub-groups of a split re-read the weights) keep it, and figures
    given to the estimator are used whatever the graph."""
    from stc_mlir.autoschedule.cost import CALIBRATION, SMALL_CALIBRATION, SMALL_PROGRAM
    from stc_mlir.autoschedule.graph import GraphView
    from stc_mlir.dialects import graph as g
    from stc_mlir.pipeline import Pipeline

    t = targets.load("stcp920")
    small = _chain()
    assert Estimator(t).regime(GraphView(small.body.block.first_op).ops) is SMALL_CALIBRATION
    assert Estimator(t, CALIBRATION).regime(GraphView(small.body.block.first_op).ops) is CALIBRATION
    for level in (0, 3):
        scheduled = Pipeline(None, level=level, stop_after="schedule-verify").run(_chain())
        from stc_mlir.passes.schedule_verify import scheduled_functions

        (f,) = scheduled_functions(scheduled)
        assert any(isinstance(op, s.GroupOp) for op in f.body.block.ops)
        est = Estimator(t)
        est.function(f)
        assert est.c is SMALL_CALIBRATION
    w = np.zeros((1024, 1024), F)
    big = function({"x": ((16, 256, 1024), F)}, lambda b, x: b(g.MatmulOp.make(x, b.const(w))))
    ops = GraphView(big.body.block.first_op).ops
    assert Estimator(t).compute(ops[0]) / t.cores >= SMALL_PROGRAM
    assert Estimator(t).regime(ops) is CALIBRATION
    # the chain's start-up beyond the phase's work only, with the small figures
    assert SMALL_CALIBRATION.start_up(100.0, 300.0) == 200.0 and SMALL_CALIBRATION.start_up(400.0, 300.0) == 0.0
    assert CALIBRATION.start_up(400.0, 300.0) == 300.0



def test_a_gather_from_a_table_out_of_ddr_is_estimated_where_the_table_lives():
    """The lowering picks a gather's rows from wherever its table lives (DDR, LLB or the
    core's own L1): XLNet's relative shift gathers along the last axis of scores held in L1
    (8 KB of DDR, its indices; estimated 13,796 cycles as rows read from DDR, emulated 2,004
    at batch 2). Here level 2 puts the table in LLB: the gather item's estimate must be near
    its emulated cycles (4,672 against 2,288 when charged as DDR rows)."""
    from onnx import TensorProto, helper

    from stc_mlir.emulator import run
    from stc_mlir.frontend import import_onnx
    from stc_mlir.passes.lowering import lower
    from stc_mlir.passes.npu_allocate import allocate
    from stc_mlir.passes.schedule_verify import scheduled_functions
    from stc_mlir.pipeline import Pipeline

    m = _onnx([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Gather", ["r", "i"], ["y"], axis=3)],
              [("x", TensorProto.FLOAT, (2, 8, 64, 127))], [("y", TensorProto.FLOAT, (2, 8, 64, 64))],
              [("i", np.arange(64, dtype=np.int64))])
    module = Pipeline(None, level=2, stop_after="schedule-verify").run(import_onnx(m, dtype="float16"))
    (f,) = scheduled_functions(module)
    t = targets.load("stcp920")
    est = Estimator(t).function(f)
    lowered = lower(module, t)
    program = allocate(lowered.program, lowered.live, lowered.phase_items, t)
    _, report = run(program, {"x": np.zeros((2, 8, 64, 127), F)}, numerics=False)
    (gather,) = [(op, cycles, row) for (op, cycles), row in zip(est.items, report.items())
                 if any(o.name == "graph.gather" for o in op.body_ops())]
    op, cycles, row = gather
    table = dict(zip(op.body.block.args, op.inputs))[next(
        o for o in op.body_ops() if o.name == "graph.gather").operands[0]]
    assert table.owner.mem_scope.data != s.NPUMemScope.DDR  # the case this test is about
    assert cycles == pytest.approx(row["span"], rel=0.2)
