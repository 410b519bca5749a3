"""Provenance checks: the lowering records which writers each read expects
(`Command.expects`), the text and `.stcobj` keep them, the checker validates them and the
emulator reports a read of bytes last written by any other command."""

from __future__ import annotations

import dataclasses
import random
import json
import zipfile

import numpy as np
import pytest

from stc_mlir import stcobj
from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.emulator import run
from stc_mlir.emulator.memory import HazardError
from stc_mlir.isa import text
from stc_mlir.isa.check import ProgramError, check_program
from stc_mlir.isa.program import HOST, Program
from stc_mlir.mutate import mutate, without_expectations
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate

from lowering_helpers import default_schedule, f16, function
from stcobj_edit import edited_stcobj

TARGET = targets.load("stcp920")


def _relu_program() -> tuple[Program, dict[str, np.ndarray]]:
    """A relu streamed over two cores in tiles through two L1 slots (as in
    test/passes/convert-schedule-to-npu.mlir)."""
    module = function({"x": ((1, 8, 128, 64), np.float16)},
                      lambda b, x: b(g.ReluOp.make(x)))
    lowered = lower(default_schedule(module, cores=range(2)))
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    return program, {"x": f16(1, 8, 128, 64)}


@pytest.fixture(scope="module")
def relu():
    return _relu_program()


def test_lowering_records_the_writer_of_every_read(relu):
    program, _ = relu
    inputs = {io.buffer for io in program.inputs}
    reads = 0
    for core, index, cmd in program.commands():
        if cmd.spec.unit == "sync":
            assert cmd.expects is None
            continue
        assert set(cmd.expects) == {s for s in cmd.spec.reads if s in cmd.tiles}
        for slot, writers in cmd.expects.items():
            reads += 1
            if cmd.tiles[slot].buffer in inputs:
                assert writers == (HOST,)
            else:  # one tile in, one relu, one tile out: the command just before on its core
                assert writers == ((core, index - 1),), program.where(core, index)
    assert reads == 2 * 3 * 4  # 2 cores x 4 tiles x (load, relu, store)
    check_program(program, TARGET)


def test_text_and_stcobj_keep_expectations(relu, tmp_path):
    program, _ = relu
    body = text.format_body(program)
    assert 'expects = "-1"}' in body and 'expects = "host"}' in body  # positional: one read each
    parsed, _, _ = text.parse_body(body)
    assert parsed.cores == program.cores
    path = tmp_path / "relu.stcobj"
    stcobj.save(program, path)
    assert stcobj.load(path).cores == program.cores


def test_expects_text_ranges_and_cores():
    expects = {"lhs": ((0, 3), (0, 4), (0, 5), (2, 7)), "rhs": (HOST,), "bias": ()}
    printed = text.format_expects(expects, core=0, index=9)
    assert printed == "lhs: -6..-4, c2#7; rhs: host; bias: "
    assert text.parse_expects(printed, 0, 9) == expects
    # an entry for every read operand: positional, in the operands' order
    slots = ("lhs", "rhs", "bias")
    printed = text.format_expects(expects, core=0, index=9, slots=slots)
    assert printed == "-6..-4, c2#7; host; "
    assert text.parse_expects(printed, 0, 9, slots) == expects
    assert text.parse_expects(" -1 ;c1#2..3,host; ", 0, 9, slots) == {
        "lhs": ((0, 8),), "rhs": ((1, 2), (1, 3), HOST), "bias": ()}
    # not every read operand: named
    assert text.format_expects({"rhs": (HOST,)}, 0, 9, slots) == "rhs: host"
    with pytest.raises(ValueError, match=r"2 positional entries for 3 read operands \(lhs, rhs, bias\)"):
        text.parse_expects("-1; -2", 0, 9, slots)
    with pytest.raises(ValueError, match="bias: expected a writer .* at 'c1'"):
        text.parse_expects("-1; -2; c1", 0, 9, slots)
    with pytest.raises(ValueError, match="rhs: empty writer range"):
        text.parse_expects("-1; -2..-5; -3", 0, 9, slots)
    assert text.parse_expects("lhs: c1#4..6", 0, 9) == {"lhs": ((1, 4), (1, 5), (1, 6))}
    with pytest.raises(ValueError, match="expected a writer"):
        text.parse_expects("lhs: c1#", 0, 9)
    with pytest.raises(ValueError, match="-12 is not an earlier command of core 3"):
        text.parse_expects("lhs: -12", 3, 9)


def test_old_stcobj_without_expectations_loads_unchecked(relu, tmp_path):
    program, inputs = relu
    path = tmp_path / "old.stcobj"
    stcobj.save(without_expectations(program), path)
    with zipfile.ZipFile(path) as zf:
        assert "expects" not in json.loads(zf.read("manifest.json"))
    old = stcobj.load(path)
    assert all(cmd.expects is None for _, _, cmd in old.commands())
    run(old, inputs)


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["expects"].__setitem__("0", m["expects"]["0"][:-1]), r"expects\['0'\]: expected \d+ entries"),
    (lambda m: m["expects"]["0"][1].__setitem__("input", [[0, 99999]]), r"expects\['0'\]\[1\]\.input\[0\]\[1\]: 99,999 is above"),
    (lambda m: m["expects"]["0"][1].__setitem__("output", [[-1, -1]]), r"npu.unary reads no operand 'output'"),
    (lambda m: m["expects"]["0"][1].__setitem__("input", [["a", 0]]), r'no core "a" in'),
    (lambda m: m["expects"]["0"][1].__setitem__("input", [[0, 2]]), r"command #2 does not come before it"),
])
def test_stcobj_validates_expectations(relu, tmp_path, edit, message):
    program, _ = relu
    bad = edited_stcobj(program, tmp_path / "bad.stcobj", edit)
    with pytest.raises(stcobj.StcobjError, match=message):
        stcobj.load(bad)


def test_checker_refuses_a_writer_of_another_buffer(relu):
    program, _ = relu
    cmd = program.cores[0][1]  # the first relu, whose input the first DMA wrote
    wrong = dataclasses.replace(cmd, expects={"input": ((1, 0),)})  # core 1's first load
    bad = dataclasses.replace(program, cores={**program.cores, 0: [program.cores[0][0], wrong, *program.cores[0][2:]]})
    with pytest.raises(ProgramError, match=r"core 0, command #1 .*expects: input: core 1, command #0 .* does not write @g0_0_c0_0_s0$"):
        check_program(bad, TARGET)


def _load_index(program: Program, core: int, tile: int) -> int:
    """The index of the DMA loading `tile` (0-based) on `core`."""
    loads = [i for i, cmd in enumerate(program.cores[core])
             if cmd.op == "dma" and program.buffers[cmd.tiles["src"].buffer].name.startswith("in_")]
    return loads[tile]


def test_a_lost_dma_is_a_provenance_error(relu):
    """The load of tile 2 reuses tile 0's L1 slot: without it the relu reads tile 0 again,
    properly ordered, which only the provenance check notices."""
    program, inputs = relu
    site = (0, _load_index(program, 0, 2))
    lost = mutate(program, "drop_dma", site, random.Random(0), TARGET).program
    with pytest.raises(HazardError) as caught:
        run(lost, inputs)
    err = caught.value
    assert err.kind == "provenance" and (err.core, err.index) == site
    assert str(err).startswith(f"provenance: core 0, command #{site[1]} (npu.unary relu ")
    assert "reads input @g0_0_c0_0_s0 at l1[0]+" in str(err)
    assert f"last written by core 0, command #{_load_index(program, 0, 0)} (npu.dma @in_x[0] " in str(err)
    assert str(err).endswith("; the command whose result it expected is not in the program")
    assert err.report.hazards[0]["kind"] == "provenance"
    # before the check: no hazard at all, and wrong outputs
    want, _ = run(program, inputs)
    got, report = run(without_expectations(lost), inputs)
    (name,) = want
    assert not report.hazards and not np.array_equal(got[name], want[name])


def test_an_overlapping_allocation_names_both_writers(relu):
    """Slot s1 moved onto slot s0: the relu of tile 0 reads bytes the load of tile 1 wrote."""
    program, inputs = relu
    b = program.buffers
    moved = dataclasses.replace(program, buffers={**b, "g0_0_c0_0_s1": dataclasses.replace(
        b["g0_0_c0_0_s1"], offset=b["g0_0_c0_0_s0"].offset)})
    with pytest.raises(HazardError) as caught:
        run(moved, inputs)
    assert caught.value.kind == "provenance"
    assert str(caught.value).startswith("provenance: core 0, command #1 (npu.unary relu ")
    assert ("last written by core 0, command #3 (npu.dma @in_x[2048] " in str(caught.value)
            and "; expected the result of core 0, command #0 (npu.dma @in_x[0] " in str(caught.value))


def test_outside_the_expected_writers_is_isin():
    """The range test per run of consecutive epochs of one thread finds exactly the codes
    that are none of the expected writers' (against numpy's isin), strided codes included."""
    from stc_mlir.emulator.provenance import _outside

    rng = np.random.default_rng(0)
    for trial in range(500):
        tids = rng.integers(1, 34, size=rng.integers(1, 4))
        pool = [(int(e) << 8) | int(t) for t in tids for e in range(1, 12)] + [256, 0]
        codes = rng.choice(pool, size=rng.integers(1, 200)).astype(np.int32)[:: 1 + trial % 2]
        allowed = [int(x) for x in rng.choice(pool, size=int(rng.integers(0, 20)))]
        allowed += [-1] if trial % 3 == 0 else []  # a writer not started yet
        assert np.array_equal(_outside(codes, allowed), ~np.isin(codes, allowed))
