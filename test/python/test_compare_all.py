"""Per-tensor comparison (`stc-run --compare-all`, `Model.compare_all`, stc_mlir.compare_all):
every graph value read back from the emulator agrees with the reference interpreter on real
models and schedules (values fused in L1 across cores included), and an injected fault, in a
weight or in one command, is named at the op where it enters."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import models, stcobj
from stc_mlir.compare_all import (
    DIVERGES, EQUAL, SIMILAR, CompareError, compare_program, compare_values, compile_and_keep,
)
from stc_mlir.executor import Executor
from stc_mlir.graph_schedule import (
    GetNPUSubFunctions, Group, GroupOps, ListItems, ListOps, NPUMemScope, Schedule, ScheduleInfo,
    SplitGroups, SplitRows,
)
from stc_mlir.isa.program import DTYPES
from stc_mlir.model import Model
from stc_mlir.tools import stc_run

from conftest import SMALL
from stcobj_edit import edited_stcobj

BATCH = 4


def handmade() -> onnx.ModelProto:
    """conv-relu, conv + residual add, sigmoid, max pool, then a classifier head."""
    rng = np.random.default_rng(0)

    def w(name, *shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"], name="add"),
        helper.make_node("Sigmoid", ["s"], ["sg"], name="sigmoid"),
        helper.make_node("MaxPool", ["sg"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "handmade", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, 8, 16, 16])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [BATCH, 10])],
        [w("w1", 16, 8, 3, 3, scale=0.2), w("b1", 16, scale=0.1), w("w2", 16, 16, 3, 3, scale=0.1),
         w("wfc", 10, 16, scale=0.3), w("bfc", 10, scale=0.1)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def fused(mod, batch=BATCH):
    """The convs, sigmoid and pool in one group kept in L1, split in two sub-groups of two
    images, each spread over four cores (rows, with halos); the head in DDR."""
    ops = ListOps(GetNPUSubFunctions(mod["main"])[0])
    group = Group([GetNPUSubFunctions(mod["main"])[0].params[0]], ops["max_pool"][0], name="body")
    mod = SplitGroups({group: 2})(GroupOps([group])(mod))
    infos = {group[0]: ScheduleInfo(group[0], NPUMemScope.L1, [[0, 1, 2, 3]]),
             group[1]: ScheduleInfo(group[1], NPUMemScope.L1, [[4, 5, 6, 7]])}
    items = ListItems(GetNPUSubFunctions(mod["main"])[0])
    return Schedule([infos.get(op) or ScheduleInfo(op, NPUMemScope.DDR, [list(range(8))])
                     for op in items])(mod)


def compiled(proto: onnx.ModelProto, schedule=None):
    """(schedule-level module, program) of a model."""
    return compile_and_keep(Model(proto).graph_module(), schedule)


def inputs(program, seed=0):
    rng = np.random.default_rng(seed)
    return {io.name: rng.standard_normal(io.shape).astype(DTYPES[io.dtype]) for io in program.inputs}


@pytest.fixture(scope="module")
def fused_program():
    return compiled(handmade(), fused)


def row(comparison, op_name: str, item: str):
    return next(r for r in comparison.rows if r.op.endswith(f"'{op_name}'") and r.item == item)


# -- every value agrees


def test_fused_group_values_in_l1_all_compare(fused_program):
    scheduled, program = fused_program
    comparison = compare_program(scheduled, program, inputs(program))
    assert comparison.ok and comparison.first_divergence is None
    # one row per graph value, in graph order: the fused ops twice (one per sub-group)
    assert [r.index for r in comparison.rows] == list(range(13))
    body = [r for r in comparison.rows if r.item.startswith("group 'body'")]
    assert [r.op.split()[0] for r in body[:4]] == ["graph.conv2d", "graph.conv2d", "graph.sigmoid",
                                                    "graph.max_pool"]
    assert {r.item for r in body} == {"group 'body' sub-group 0", "group 'body' sub-group 1"}
    assert all(r.cosine >= 0.999 and r.euclidean >= 0.99 and r.status in (EQUAL, SIMILAR)
               and r.tolerance == "cos>=0.999,eu>=0.99" for r in comparison.rows)
    # the fused values really live in L1, in pieces on the sub-group's four cores
    probe = program.probes[row(comparison, "s", "group 'body' sub-group 1").index]
    assert {program.buffers[p.tile.buffer].space for p in probe.pieces} == {"l1"}
    assert sorted(program.buffers[p.tile.buffer].core for p in probe.pieces) == [4, 5, 6, 7]


def test_values_are_read_before_their_bytes_are_reused(fused_program):
    """The sigmoid writes over the residual add's result (same L1 buffers): the add's
    value is read at the barrier ending its phase. Read at the end, it would be the
    sigmoid's."""
    scheduled, program = fused_program
    s = next(p for p in program.probes if p.op == "graph.conv2d 's'")
    sg = next(p for p in program.probes if p.op == "graph.sigmoid 'sg'" and p.item == s.item)
    assert [p.tile.buffer for p in s.pieces] == [p.tile.buffer for p in sg.pieces]
    late = dataclasses.replace(program, probes=[dataclasses.replace(p, after=()) if p is s else p
                                                for p in program.probes])
    comparison = compare_program(scheduled, late, inputs(program))
    assert comparison.first_divergence.index == s.index
    assert compare_program(scheduled, program, inputs(program)).ok


@pytest.mark.parametrize("name", ["deepfm", "resnet50"])
def test_built_in_models_compare_every_value(small_model, name):
    proto = small_model(name)
    comparison = Model(proto).compare_all(models.example_inputs(name, proto), batch=SMALL[name]["batch"])
    assert comparison.ok, comparison.table()
    assert len(comparison.rows) >= 20
    assert min(r.cosine for r in comparison.rows) >= 0.999
    assert set(comparison.npu) == set(comparison.reference) == {r.key for r in comparison.rows}


def test_probes_survive_an_stcobj(fused_program, tmp_path):
    scheduled, program = fused_program
    stcobj.save(program, tmp_path / "m.stcobj")
    loaded = stcobj.load(tmp_path / "m.stcobj")
    assert loaded.probes == program.probes
    assert compare_program(scheduled, loaded, inputs(program)).ok


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(pieces=[[["nope", 0, [1], [1], "f16"], [0]]]),
     r"probes\[1\].pieces\[0\]\[0\]: unknown buffer \"nope\""),
    (lambda p: p["pieces"][0].__setitem__(1, [1, 0, 12, 0]),
     r"probes\[1\].pieces\[0\]: a 1x16x8x16xf16 tile at \[1, 0, 12, 0\] does not fit the 2x16x16x16xf16 value"),
    (lambda p: p.update(after=[[0, 10 ** 6]]), r"probes\[1\].after\[0\]\[1\]: 1,000,000 is above the maximum"),
    (lambda p: p.update(after=[[9, 0]]), r"probes\[1\].after\[0\]: core 9 has no command stream"),
    (lambda p: p.update(item=3), r"probes\[1\].item: expected a string, got 3"),
    (lambda p: p.update(region=[[0, 2], [0, 16], [12, 20], [0, 16]]),
     r"probes\[1\].region: a list is not a box of the 2x16x16x16 value"),
])
def test_malformed_probes_in_an_stcobj_are_named(fused_program, tmp_path, change, message):
    path = edited_stcobj(fused_program[1], tmp_path / "m.stcobj", lambda m: change(m["probes"][1]))
    with pytest.raises(stcobj.StcobjError, match=message):
        stcobj.load(path)


def test_a_program_from_another_module_is_refused(fused_program):
    scheduled, program = fused_program
    with pytest.raises(CompareError, match="no probes"):
        compare_program(scheduled, dataclasses.replace(program, probes=[]), inputs(program))
    other, _ = compiled(handmade())  # default schedule: no sub-groups, fewer values
    with pytest.raises(CompareError, match="was not lowered from this module: it probes 13 values, "
                                           "the module has 9"):
        compare_program(other, program, inputs(program))


def test_verdicts_of_single_values():
    a = np.linspace(-1, 1, 101).astype(np.float16)
    assert compare_values(a, a)[0] == EQUAL
    near = (a + np.float16(0.001)).astype(np.float16)
    status, cos, euclid, max_abs, tolerance = compare_values(a, near)
    assert status == SIMILAR and cos > 0.999 and euclid > 0.99 and max_abs < 0.002
    assert tolerance == "cos>=0.999,eu>=0.99"
    assert compare_values(a, near, min_cosine=0.99999999)[0] == DIVERGES
    assert compare_values(a, a * np.float16(1.1))[0] == DIVERGES  # cosine 1, euclidean 0.905
    nan = a.copy()
    nan[3] = np.nan
    assert compare_values(a, nan)[0] == DIVERGES and compare_values(nan, nan)[0] == EQUAL
    idx = np.arange(10)
    assert compare_values(idx, idx)[:1] == (EQUAL,)
    assert compare_values(idx, idx[::-1])[0] == DIVERGES and compare_values(idx, idx[::-1])[4] == "exact"
    assert compare_values(np.zeros((0, 3)), np.zeros((0, 3)))[0] == EQUAL


# -- injected faults are found where they enter


# -- row stripes: each stripe's values exist only on its rows (halos included)


def striped(scope: str, stripes: int = 3):
    """The convs, sigmoid and pool of `handmade` in one group cut into `stripes` row stripes
    (each spread over the eight cores by rows), kept in `scope`; the concat in DDR."""

    def schedule(mod, batch=BATCH):
        f = GetNPUSubFunctions(mod["main"])[0]
        group = Group([f.params[0]], ListOps(f)["max_pool"][0], name="body")
        mod = SplitRows({group: stripes})(GroupOps([group])(mod))
        items = ListItems(GetNPUSubFunctions(mod["main"])[0])
        return Schedule([ScheduleInfo(op, scope if op in list(group) else NPUMemScope.DDR,
                                      [list(range(8))]) for op in items])(mod)

    return schedule


@pytest.fixture(scope="module")
def striped_program():
    return compiled(handmade(), striped("L1"))


def _rows(note: str) -> tuple[int, int]:
    lo, hi, n = map(int, re.match(r"rows (\d+)-(\d+) of (\d+)", note).groups())
    return lo, hi + 1


@pytest.mark.parametrize("scope", ["L1", "DDR"])
def test_row_stripes_compare_each_stripe_on_its_rows(striped_program, scope):
    scheduled, program = striped_program if scope == "L1" else compiled(handmade(), striped(scope))
    comparison = compare_program(scheduled, program, inputs(program))
    assert comparison.ok, comparison.table()
    items = [f"group 'body' row stripe {i}" for i in range(3)]
    by_op = {op: [row(comparison, op, item) for item in items] for op in ("r1", "s", "sg", "p")}
    # the pool's stripes are the output's rows: 8 rows in 3, joined without overlap
    assert [_rows(r.note) for r in by_op["p"]] == [(0, 2), (2, 5), (5, 8)]
    # the values before it: the rows the pool's stripes need; the first conv's, read by the
    # second conv's 3x3 window, with a halo row on each side shared by two stripes (each
    # stripe compared with the reference's same rows, so the two stripes' copies agree)
    assert [_rows(r.note) for r in by_op["sg"]] == [(0, 4), (4, 10), (10, 16)]
    assert [_rows(r.note) for r in by_op["s"]] == [(0, 4), (4, 10), (10, 16)]
    assert [_rows(r.note) for r in by_op["r1"]] == [(0, 5), (3, 11), (9, 16)]
    assert "equal: rows 3-10 of 16" in comparison.table() or "similar: rows 3-10 of 16" in comparison.table()
    # a stripe's value is read on its rows only: the npz dump holds those rows on both sides
    r = by_op["sg"][1]
    lo, hi = _rows(r.note)
    assert comparison.npu[r.key].shape == comparison.reference[r.key].shape == (BATCH, 16, hi - lo, 16)
    probe = program.probes[r.index]
    assert probe.region == ((0, BATCH), (0, 16), (lo, hi), (0, 16))
    assert {program.buffers[p.tile.buffer].space for p in probe.pieces} == {"l1"}
    # the stripe's result: in L1 pieces, or in place in the rows of the concat's DDR buffer
    pool = program.probes[by_op["p"][1].index]
    assert {program.buffers[p.tile.buffer].space for p in pool.pieces} == {scope.lower()}
    # read after its own phase, before the next stripe's: stripe 0's pool before stripe 1's convs
    assert by_op["p"][0].cycle < by_op["r1"][1].cycle


def test_row_stripe_regions_survive_an_stcobj(striped_program, tmp_path):
    scheduled, program = striped_program
    path = tmp_path / "striped.stcobj"
    stcobj.save(program, path)
    loaded = stcobj.load(path)
    assert [p.region for p in loaded.probes] == [p.region for p in program.probes]
    assert any(p.region for p in loaded.probes)
    assert compare_program(scheduled, loaded, inputs(program)).ok


def test_a_level_3_schedule_with_row_stripes_compares_every_value(tmp_path, monkeypatch):
    """One 384 x 384 sample with 32 channels: the auto-scheduler cuts its convs into stripes."""
    from test_spatial import _wide

    monkeypatch.setenv("STC_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    scheduled, program = compile_and_keep(_wide(), level=3, batch=1)
    comparison = compare_program(scheduled, program, inputs(program))
    assert comparison.ok, comparison.table()
    striped = [r for r in comparison.rows if " row stripe " in r.item]
    assert len({r.item for r in striped}) >= 2 and all(r.note.startswith("rows ") for r in striped)


def test_a_fault_inside_a_row_stripe_diverges_at_its_op_and_stripe(striped_program):
    """The sigmoid of stripe 1 made a relu on core 2 only: stripe 0 and the ops before the
    sigmoid in stripe 1 still agree."""
    scheduled, program = striped_program
    stream = list(program.cores[2])
    at = next(i for i, c in enumerate(stream) if c.op == "unary" and c.params["kind"] == "sigmoid"
              and program.origins[c.origin].subgroup == "1")
    stream[at] = dataclasses.replace(stream[at], params={**stream[at].params, "kind": "relu"})
    comparison = compare_program(scheduled, dataclasses.replace(program, cores={**program.cores, 2: stream}),
                                 inputs(program))
    first = comparison.first_divergence
    assert (first.op, first.item) == ("graph.sigmoid 'sg'", "group 'body' row stripe 1")
    assert first.note.startswith("rows ")
    assert all(r.status in (EQUAL, SIMILAR) for r in comparison.rows[:first.index])
    assert row(comparison, "sg", "group 'body' row stripe 2").status in (EQUAL, SIMILAR)


def test_a_corrupted_weight_diverges_at_its_conv(fused_program):
    scheduled, program = fused_program
    w2 = program.buffers["w2"]
    weights = np.frombuffer(w2.init, np.float16).copy()
    weights[::7] *= -3  # every 7th weight of the second conv
    buffers = {**program.buffers, "w2": dataclasses.replace(w2, init=weights.tobytes())}
    comparison = compare_program(scheduled, dataclasses.replace(program, buffers=buffers), inputs(program))
    first = comparison.first_divergence
    assert (first.op, first.item, first.status) == ("graph.conv2d 's'", "group 'body' sub-group 0", DIVERGES)
    assert first.cosine < 0.99
    assert comparison.rows[0].status in (EQUAL, SIMILAR)  # the conv before it is fine
    assert "first divergent op: #1 graph.conv2d 's' in item group 'body' sub-group 0 (cosine" in comparison.table()


def test_a_value_off_by_a_scale_factor_diverges_by_euclidean_similarity(fused_program):
    """The classifier's weights times 1.25: its matmul's value is the reference's times
    1.25, a cosine of 1, but far from it (TPU-MLIR's euclidean similarity)."""
    scheduled, program = fused_program
    fc = next(b for b in program.buffers.values() if b.init is not None and len(b.init) == 10 * 16 * 2)
    weights = (np.frombuffer(fc.init, np.float16) * np.float16(1.25)).astype(np.float16)
    buffers = {**program.buffers, fc.name: dataclasses.replace(fc, init=weights.tobytes())}
    comparison = compare_program(scheduled, dataclasses.replace(program, buffers=buffers), inputs(program))
    first = comparison.first_divergence
    assert first.op == "graph.matmul 'logits'"
    assert first.cosine > 0.9999 and abs(first.euclidean - (1 - 0.25 / 1.125)) < 0.01


def test_one_wrong_command_on_one_core_diverges_at_its_op(fused_program):
    """The sigmoid of sub-group 1 made a relu on core 5 only: a quarter of one fused value."""
    scheduled, program = fused_program
    stream = list(program.cores[5])
    at = next(i for i, c in enumerate(stream) if c.op == "unary" and c.params["kind"] == "sigmoid")
    stream[at] = dataclasses.replace(stream[at], params={**stream[at].params, "kind": "relu"})
    bad = dataclasses.replace(program, cores={**program.cores, 5: stream})
    comparison = compare_program(scheduled, bad, inputs(program))
    first = comparison.first_divergence
    assert (first.op, first.item) == ("graph.sigmoid 'sg'", "group 'body' sub-group 1")
    assert all(r.status in (EQUAL, SIMILAR) for r in comparison.rows[:first.index])
    assert not comparison.ok


def test_a_run_stopped_by_a_hazard_still_compares_what_was_read(fused_program):
    """The barrier after the fused group waits, on one of the cores that computed its last
    value, for a signal from that core's own last command: a deadlock the emulator finds at
    run time, after the group's values were read."""
    from stc_mlir.isa.program import Semaphore

    scheduled, program = fused_program
    gap = next(p for p in program.probes if p.op.startswith("graph.global_avg_pool"))
    core, first = min(program.probes[gap.index - 1].after)
    stream = list(program.cores[core])
    fence = first + 1  # the barrier's second fence: the one that waits
    stream[fence] = dataclasses.replace(stream[fence], waits=(*stream[fence].waits, "late"))
    stream[-1] = dataclasses.replace(stream[-1], signals=(*stream[-1].signals, "late"))
    bad = dataclasses.replace(program, cores={**program.cores, core: stream},
                              semaphores={**program.semaphores, "late": Semaphore("late", 0)})
    comparison = compare_program(scheduled, bad, inputs(program))
    assert comparison.error.startswith("deadlock: no command can start")
    assert not comparison.ok and comparison.first_divergence is None
    assert all(r.status in (EQUAL, SIMILAR) for r in comparison.rows[:gap.index])
    assert {(r.status, r.note) for r in comparison.rows[gap.index:]} == {("not read", "the run stopped before it")}
    # the 8 values read compare (equal or, by one fp16 ulp of a conv's summation order, similar)
    assert sum(r.status in (EQUAL, SIMILAR) for r in comparison.rows) == 8
    assert "5 not read)" in comparison.summary()
    assert "; the run stopped: deadlock: no command can start" in comparison.summary()


# -- stc-run


def run(capsys, *argv):
    code = stc_run.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_stc_run_compare_all_prints_the_table_and_dumps_both_sides(capsys, tmp_path):
    path = tmp_path / "handmade.onnx"
    onnx.save(handmade(), path)
    code, out, err = run(capsys, path, "--compare-all", "--dump-tensors", tmp_path / "dump", "-q")
    assert code == 0, err
    table = out[out.index("#  "):]
    header = table.splitlines()[0].split()
    assert header == ["#", "item", "op", "shape", "cosine", "euclid", "max", "abs", "err", "tolerance", "status"]
    assert "graph.conv2d 'r1'" in table and "graph.softmax 'prob'" in table
    assert re.search(r"compare-all: 9 values \(\d+ equal(, \d+ similar)?\); every value within tolerance", out)
    assert "cycles" in out  # the run's report comes first
    ref, npu = np.load(tmp_path / "dump" / "reference.npz"), np.load(tmp_path / "dump" / "npu.npz")
    assert sorted(ref.files) == sorted(npu.files) and len(ref.files) == 9
    assert ref["0000_r1"].shape == (BATCH, 16, 16, 16)
    np.testing.assert_allclose(ref["0008_prob"].astype(np.float32), npu["0008_prob"].astype(np.float32),
                               atol=2e-3)


@pytest.mark.parametrize("argv, message", [
    (["--compare-all", "--timing-only"], "--compare-all compares values, which --timing-only does not compute"),
    (["--dump-tensors", "d"], "--dump-tensors applies to --compare-all: add it"),
    (["--tolerance", "0.9,0.9"], "--tolerance applies to --compare-all: add it"),
    (["--scheduled", "s.mlir"], "--scheduled applies to --compare-all: add it"),
    (["--compare-all", "--scheduled", "s.mlir"], "--scheduled applies to an .stcobj: deepfm is compiled here, "
                                                 "its scheduled graph is known"),
])
def test_stc_run_compare_all_bad_usage(capsys, argv, message):
    code, _, err = run(capsys, "deepfm", *argv)
    assert code == 1 and "Traceback" not in err
    assert err.strip().endswith(f"stc-run: error: {message}")


@pytest.mark.parametrize("value", ["2,0.9", "0.99", "a,b"])
def test_stc_run_bad_tolerance(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        stc_run.main(["deepfm", "--compare-all", "--tolerance", value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "argument --tolerance: " in err and len(err.strip().splitlines()) == 1


def test_stc_run_compares_an_stcobj_with_the_scheduled_ir_it_was_compiled_from(capsys, tmp_path):
    onnx.save(handmade(), tmp_path / "h.onnx")
    code, _, err = run(capsys, tmp_path / "h.onnx", "--dump-ir", tmp_path / "ir", "-o", tmp_path / "h.stcobj", "-q")
    assert code == 0, err
    scheduled = tmp_path / "ir" / "04-schedule-verify.mlir"
    code, out, err = run(capsys, tmp_path / "h.stcobj", "--compare-all", "--scheduled", scheduled, "-q")
    assert code == 0, err
    assert "graph.softmax 'prob'" in out and "every value within tolerance" in out
    # the Python equivalent
    executor = Executor.load_from_stcobj(tmp_path / "h.stcobj")
    executor.set_input({"x": np.ones((BATCH, 8, 16, 16), np.float32)})
    comparison = executor.compare_all(scheduled)
    assert comparison.ok and len(comparison.rows) == 9 and executor.report is comparison.report


def test_stc_run_compare_all_needs_the_graph(capsys, tmp_path):
    scheduled, program = compiled(handmade())
    stcobj.save(program, tmp_path / "m.stcobj")
    code, _, err = run(capsys, tmp_path / "m.stcobj", "--compare-all")
    assert code == 1 and "Traceback" not in err
    assert err.strip().endswith(f"stc-run: error: --compare-all needs the graph the program comes from: "
                                f"{tmp_path / 'm.stcobj'} holds none; give the schedule-level IR it was compiled "
                                "from with --scheduled FILE.mlir (--dump-ir writes it), or run the model itself "
                                "(ONNX, built-in or .mlir)")
    code, _, err = run(capsys, "deepfm", "--batch", "16", "--dump-ir", tmp_path / "ir", "-q")
    for scheduled, message in (
            (tmp_path / "ir" / "00-input.mlir", "expected schedule-level IR (the graph the program was lowered "
                                                "from), got graph-level IR"),
            (tmp_path / "ir" / "04-schedule-verify.mlir", "program 'main' was not lowered from this module: it "
                                                          "probes 9 values, the module has 26 graph op results")):
        code, _, err = run(capsys, tmp_path / "m.stcobj", "--compare-all", "--scheduled", scheduled)
        assert code == 1 and "Traceback" not in err
        assert err.strip().endswith(message), err
