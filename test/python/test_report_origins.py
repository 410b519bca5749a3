"""Command origins: the lowering tags every command with the schedule item, sub-group and
graph op it lowers (`Command.origin` into `Program.origins`); the npu text and `.stcobj`
keep them, old files without them still load, and bad ones are refused with the field."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from stc_mlir import stcobj
from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import Group, GroupOps, ListItems, NPUMemScope, Schedule, ScheduleInfo, SplitGroups
from stc_mlir.isa import text
from stc_mlir.isa.program import Origin
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate
from stc_mlir.stcobj import StcobjError

from lowering_helpers import f16, function
from stcobj_edit import edited_stcobj

L1, LLB, DDR = NPUMemScope.L1, NPUMemScope.LLB, NPUMemScope.DDR


def split_module():
    """relu then conv over a batch of 4, split into two sub-groups on cores 0-3 and 4-7."""
    def body(b, x):
        w, bias = f16(8, 8, 3, 3, scale=0.1), f16(8, scale=0.1)
        return b(g.Conv2DOp.make(b(g.ReluOp.make(x)), b.const(w), b.const(bias), pads=(1, 1, 1, 1)))

    module = function({"x": ((4, 8, 16, 16), np.float16)}, body)
    f = module.body.block.first_op
    grp = Group([f.args[0]], f.body.block.last_op.operands[0])
    GroupOps([grp])(module)
    SplitGroups({grp: 2})(module)
    items = ListItems(f)
    Schedule([ScheduleInfo(items[0], DDR, [0, 1]),
              ScheduleInfo(grp[0], LLB, [[0, 1], [2, 3]]),
              ScheduleInfo(grp[1], L1, [[4, 5], [6, 7]]),
              ScheduleInfo(items[-1], DDR, [0, 1, 2, 3])])(module)
    return module


@pytest.fixture(scope="module")
def program():
    lowered = lower(split_module())
    return allocate(lowered.program, lowered.live, lowered.phase_items)


def test_every_command_names_its_item_sub_group_and_op(program):
    origins = program.origins
    assert len(set(origins)) == len(origins)
    assert all(0 <= c.origin < len(origins) for _, _, c in program.commands())
    used = {c.origin for _, _, c in program.commands()}
    assert used == set(range(len(origins)))  # only origins with commands are entered
    groups = {(o.subgroup, o.op.split(" ")[0]) for o in origins if o.item.startswith("group")}
    assert groups == {(sub, op) for sub in "01" for op in ("graph.relu", "graph.conv2d")}
    assert any(o.item.startswith("concat") and o.subgroup == o.op == "" for o in origins)
    for core, _, cmd in program.commands():  # sub-group 1 runs on cores 4-7 only
        o = program.origins[cmd.origin]
        if o.subgroup == "1" and cmd.op != "fence":
            assert core >= 4, (core, cmd.describe())
    # a barrier carries the origin of the phase it ends: the relu's, then the conv's
    first_fence = next(c for c in program.cores[0] if c.op == "fence")
    assert program.origins[first_fence.origin].op.startswith("graph.relu")
    # phases: the split, each op of each sub-group, the concat, in the order they run
    phases = [o.phase for o in origins]
    assert phases == sorted(phases) and phases[0] >= 0
    assert len(set(phases)) == len(phases)  # here every (item, op) is one phase


def test_origin_phases_are_the_phases_of_their_items():
    lowered = lower(split_module())
    for o in lowered.program.origins:
        label = o.item + (f" sub-group {o.subgroup}" if o.subgroup else "")
        assert lowered.phase_items[o.phase] == label


def test_messages_name_the_origin(program):
    index = next(i for i, c in enumerate(program.cores[4]) if c.op == "conv2d")
    assert program.where(4, index).endswith(" of group 'group_0' sub-group 1: graph.conv2d")


def test_text_round_trip_keeps_origins(program):
    body = text.format_body(program)
    lines = body.splitlines()
    assert lines[len([line for line in lines if line.startswith("  #")]) + 1].startswith('  npu.origin 0 item "')
    # a command's origin is written where it changes along its core
    changes = sum(1 for stream in program.cores.values() for i, c in enumerate(stream)
                  if c.origin != (stream[i - 1].origin if i else -1))
    assert 0 < changes < sum(len(s) for s in program.cores.values())
    assert body.count(", origin = ") + body.count("{origin = ") == changes
    parsed, _, _ = text.parse_body(body, program.name, program.target, 0, program.phases)
    assert parsed == program
    assert text.format_body(parsed) == body  # printing is stable: same aliases, same numbers


def test_dense_text_reads_the_same_by_the_general_parser(program):
    """The printer's form is read one regular expression per command; any other spacing
    takes the general path, which must give the same program: layout aliases, origins
    carried from the command before and positional `expects` included (sync aliases:
    test/dialects/npu/aliases.mlir)."""
    body = text.format_body(program)
    assert "\n  #l0 = " in body and ', expects = "' in body and "origin = " in body
    spaced = body.replace(" : ", " :  ").replace(", ", " ,  ")  # no command in the printer's form
    parsed, _, _ = text.parse_body(spaced, program.name, program.target, 0, program.phases)
    assert parsed == program


def test_stcobj_keeps_origins_and_loads_files_without_them(program, tmp_path):
    path = tmp_path / "split.stcobj"
    stcobj.save(program, path)
    assert stcobj.load(path) == program
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    first = program.origins[0]
    assert manifest["origins"][0] == [first.item, first.subgroup, first.op, first.phase]

    def without_origins(m):
        del m["origins"], m["command_origins"]

    loaded = stcobj.load(edited_stcobj(program, tmp_path / "old.stcobj", without_origins))
    assert loaded.origins == [] and {c.origin for _, _, c in loaded.commands()} == {-1}
    assert loaded.cores.keys() == program.cores.keys()

    def beyond_the_table(m):
        m["command_origins"]["0"][2] = len(program.origins)

    with pytest.raises(StcobjError, match=rf"command_origins\['0'\]\[2\]: {len(program.origins)} is above the maximum"):
        stcobj.load(edited_stcobj(program, tmp_path / "bad1.stcobj", beyond_the_table))
    with pytest.raises(StcobjError, match=r"command_origins\['0'\]: \d+ origins for the \d+ commands of core 0"):
        stcobj.load(edited_stcobj(program, tmp_path / "bad2.stcobj", lambda m: m["command_origins"]["0"].pop()))
    with pytest.raises(StcobjError, match=r"origins\[0\]\[1\] \(sub-group\): expected a string, got 3"):
        stcobj.load(edited_stcobj(program, tmp_path / "bad3.stcobj",
                                  lambda m: m["origins"].__setitem__(0, ["group 'a'", 3, "", 0])))


def test_origin_describe():
    assert Origin("group 'a'", "1", "graph.relu 'r'").describe() == "group 'a' sub-group 1: graph.relu 'r'"
    assert Origin("split 'x'").describe() == "split 'x'"
