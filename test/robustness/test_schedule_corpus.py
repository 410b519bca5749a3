"""Invalid schedules through the Python API (the seeds' graph-schedule calls): every one is
refused with a one-line `StcError` (a `ScheduleError`, `ScheduleVerifyError` or
`TargetError`) that names the argument or item, never an error from inside, and a refused
call leaves the module valid."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from stc_mlir import ir
from stc_mlir.errors import StcError
from stc_mlir.graph_schedule import (
    GetNPUSubFunctions, Group, GroupOps, IRModule, ListItems, ListOps, NPUMemScope, Schedule, ScheduleInfo,
    SplitGroups,
)

DDR, LLB, L1 = NPUMemScope.DDR, NPUMemScope.LLB, NPUMemScope.L1
ALL = [list(range(8))]

NET = """
func.func @main(%x: tensor<8x4x16xf16>) -> tensor<8x4x16xf16> {
  %wt = graph.constant dense<0.125> : tensor<16x16xf16>
  %mm0 = graph.matmul %x, %wt : (tensor<8x4x16xf16>, tensor<16x16xf16>) -> tensor<8x4x16xf16>
  %relu = graph.relu %mm0 : tensor<8x4x16xf16>
  %mm1 = graph.matmul %relu, %wt : (tensor<8x4x16xf16>, tensor<16x16xf16>) -> tensor<8x4x16xf16>
  %tanh = graph.tanh %mm1 : tensor<8x4x16xf16>
  %out = graph.softmax %tanh {axis = 1 : i64} : tensor<8x4x16xf16>
  func.return %out : tensor<8x4x16xf16>
}
"""

BIG = """
func.func @main(%x: tensor<8x256x256xf16>) -> tensor<8x256x256xf16> {
  %r = graph.relu %x : tensor<8x256x256xf16>
  func.return %r : tensor<8x256x256xf16>
}
"""


def net(text: str = NET) -> IRModule:
    return IRModule(ir.parse_ir(text))


def ops_of(mod: IRModule):
    return ListOps(mod["main"])


def grouped(mod: IRModule) -> list[Group]:
    ops = ops_of(mod)
    groups = [Group([mod["main"].params[0]], ops["relu"][0], name="A"),
              Group([ops["relu"][0]], ops["softmax"][0], name="B")]
    GroupOps(groups)(mod)
    return groups


BAD_VALUES = [None, 42, 2.5, "text", b"bytes", {}, [], object()]

# (name, call on a fresh module, regex the message must match)
Case = tuple[str, Callable[[IRModule], object], str]


def _cases() -> list[Case]:
    cases: list[Case] = []
    for v in BAD_VALUES:
        r = f"{type(v).__name__}"
        cases.append((f"IRModule({r})", lambda m, v=v: IRModule(v), r"IRModule\(module\): expected a builtin.module"))
        if not isinstance(v, (list, tuple)):
            cases.append((f"GroupOps({r})", lambda m, v=v: GroupOps(v)(m), r"GroupOps\(groups\): expected a list of Group"))
            cases.append((f"Schedule({r})", lambda m, v=v: Schedule(v)(m), r"Schedule\(infos\): expected a list of ScheduleInfo"))
        if not isinstance(v, dict):
            cases.append((f"SplitGroups({r})", lambda m, v=v: SplitGroups(v)(m), r"SplitGroups\(factors\): expected a dict"))
        if not isinstance(v, str) and v is not None:
            cases.append((f"Group(name={r})", lambda m, v=v: Group([], None, name=v), r"Group\(name=...\): expected a string"))
        if not isinstance(v, str):
            cases.append((f"Schedule(target={r})", lambda m, v=v: Schedule([], target=v), r"Schedule\(target=...\): expected a target"))
            cases.append((f"mod[{r}]", lambda m, v=v: m[v], r"IRModule\[name\]: a function name is a string"))
            cases.append((f"ListOps(f)[{r}]", lambda m, v=v: ops_of(m)[v], r"ListOps\(...\)\[kind\]: an op kind is a string"))
        if not isinstance(v, int):
            cases.append((f"ListOps(f)['relu'][{r}]", lambda m, v=v: ops_of(m)["relu"][v],
                          r"ListOps\(...\)\['relu'\]\[index\]: index must be an integer"))
        cases.append((f"ListOps({r})", lambda m, v=v: ListOps(v), r"expected a function \(mod\['main'\]\)"))
        cases.append((f"ListItems({r})", lambda m, v=v: ListItems(v), r"expected a function \(mod\['main'\]\)"))
        cases.append((f"GetNPUSubFunctions({r})", lambda m, v=v: GetNPUSubFunctions(v), r"expected a function"))
        cases.append((f"ScheduleInfo(op={r})", lambda m, v=v: Schedule([ScheduleInfo(v, DDR, ALL)])(m),
                      r"ScheduleInfo 0: expected a group, sub-group, split, concat or graph op"))
        cases.append((f"GroupOps([{r}])", lambda m, v=v: GroupOps([v])(m), r"GroupOps: item 0 is a \w+, not a Group"))
        cases.append((f"Group output {r}", lambda m, v=v: GroupOps([Group([m["main"].params[0]], v)])(m),
                      r"Group 0 output: expected an op, a function parameter or a group"))
    for scope in ("DRAM", 7, None, "l2", -1, 2.5):
        cases.append((f"mem_scope={scope!r}", lambda m, s=scope: Schedule(
            [ScheduleInfo(op, s, ALL) for op in ListItems(m["main"])])(m),
            r"ScheduleInfo 0: mem_scope must be NPUMemScope.DDR, LLB or L1"))
    for bind in ([], 5, None, [[]], [8], [-1], [0, 0], "0,1", [[0, 1], [1, 2]], [[0, 9]], [0.5], [[0], 1]):
        cases.append((f"core_bind={bind!r}", lambda m, b=bind: Schedule(
            [ScheduleInfo(op, DDR, b) for op in ListItems(m["main"])])(m), r"ScheduleInfo 0 \(|core"))
    for factor in (0, -1, 3, 2.5, "2", None, 16, True):
        cases.append((f"split factor {factor!r}", lambda m, f=factor: SplitGroups({grouped(m)[0]: f})(m),
                      r"SplitGroups item 0 \(Group 'A'\): .*(split factor|divide)"))
    cases += [
        ("no function", lambda m: m["nope"], r"the module has no function '@nope' \(functions: @main\)"),
        ("unknown kind", lambda m: ops_of(m)["convolution"], r"ListOps: unknown op kind 'convolution'"),
        ("index past end", lambda m: ops_of(m)["relu"][5], r"no 'relu' op 5: the function has 1 'relu' ops"),
        ("group twice", lambda m: GroupOps([Group([m["main"].params[0]], ops_of(m)["relu"][0])] * 2)(m),
         r"is in both Group 0 and Group 1|already"),
        ("overlapping groups", lambda m: GroupOps([Group([m["main"].params[0]], ops_of(m)["relu"][0]),
                                                   Group([m["main"].params[0]], ops_of(m)["matmul"][1])])(m),
         r"Group 1: input 0 \(parameter 0 \(%x\)\) is not used by the ops between the inputs and the output"),
        ("group created twice", lambda m: GroupOps(grouped(m))(m), r"already created"),
        ("duplicate group name", lambda m: GroupOps([Group([m["main"].params[0]], ops_of(m)["relu"][0], name="A"),
                                                     Group([ops_of(m)["relu"][0]], ops_of(m)["tanh"][0], name="A")])(m),
         r"the name 'A' is already used"),
        ("unused group input", lambda m: GroupOps([Group([ops_of(m)["tanh"][0]], ops_of(m)["relu"][0])])(m),
         r"Group 0: input 0 .* is not used"),
        ("sub-group before GroupOps", lambda m: Group([m["main"].params[0]], ops_of(m)["relu"][0])[0],
         r"not created yet; apply GroupOps first"),
        ("sub-group index", lambda m: grouped(m)[0][3], r"Group 'A': has 1 sub-group\(s\) \(0..0\); sub-group 3"),
        ("split twice", lambda m: SplitGroups({(g := grouped(m)[0]): 2})(m) and SplitGroups({g: 2})(m),
         r"SplitGroups item 0 \(Group 'A'\): already split into 2 sub-groups"),
        ("split a sub-group", lambda m: SplitGroups({(g := grouped(m)[0]): 2})(m) and SplitGroups({g[1]: 2})(m),
         r"group 'A' sub-group 1 is already a sub-group of a group split 2 ways"),
        ("split group given twice", lambda m: SplitGroups({(g := grouped(m)[0]): 2, g[0]: 2})(m), r"is given twice"),
        ("split mixes batch", lambda m: _split_softmax_batch(m), r"cannot be split along the batch"),
        ("missing item", lambda m: Schedule([ScheduleInfo(ListItems(m["main"])[0], DDR, ALL)])(m),
         r"Schedule: \d+ item\(s\) of @main have no ScheduleInfo"),
        ("duplicate item", lambda m: Schedule([ScheduleInfo(op, DDR, ALL) for op in ListItems(m["main"]) * 2])(m),
         r"is already scheduled by ScheduleInfo 0"),
        ("wrong order", lambda m: Schedule([ScheduleInfo(op, DDR, ALL) for op in reversed(ListItems(m["main"]))])(m),
         r"uses the result of .* which ScheduleInfo \d+ puts later"),
        ("op inside a group", lambda m: (grouped(m), Schedule([ScheduleInfo(ops_of(m)["relu"][0], DDR, ALL)])(m)),
         r"is inside group 'A'; schedule the group"),
        ("weight as item", lambda m: Schedule([ScheduleInfo(m["main"].block.first_op, DDR, ALL)])(m),
         r"expected a group, sub-group, split, concat or graph op"),
        ("not a ScheduleInfo", lambda m: Schedule([(ListItems(m["main"])[0], DDR, ALL)])(m),
         r"ScheduleInfo 0: expected a ScheduleInfo, got tuple"),
        ("group from another module", lambda m: GroupOps([Group([(o := net())["main"].params[0]], ops_of(o)["relu"][0])])(m),
         r"is not a function of the module this transform is applied to"),
        ("unknown target", lambda m: Schedule([], target="bogus"), r"Schedule\(target=...\): bogus: no such target file"),
        ("L1 overflow", lambda m: _big_in_l1(), r"L1 footprint [\d,]+ bytes per core exceeds the 1,048,576-byte L1"),
        ("split split into", lambda m: _split_then_schedule_whole(m), r"is split into 2 sub-groups; schedule each as group\[i\]"),
    ]
    return cases


def _split_softmax_batch(m: IRModule):
    ops = ops_of(m)
    text = NET.replace("{axis = 1 : i64}", "{axis = 0 : i64}")
    m2 = net(text)
    group = Group([ListOps(m2["main"])["tanh"][0]], ListOps(m2["main"])["softmax"][0], name="S")
    GroupOps([group])(m2)
    del ops
    return SplitGroups({group: 2})(m2)


def _big_in_l1():
    m = net(BIG)
    return Schedule([ScheduleInfo(op, L1, [[0]]) for op in ListItems(m["main"])])(m)


def _split_then_schedule_whole(m: IRModule):
    groups = grouped(m)
    SplitGroups({groups[0]: 2})(m)
    return Schedule([ScheduleInfo(groups[0], DDR, ALL)])(m)


CASES = _cases()


def test_corpus_size():
    assert len(CASES) >= 100, len(CASES)


@pytest.mark.parametrize("name, call, message", CASES, ids=[c[0] for c in CASES])
def test_invalid_schedule_is_refused(name, call, message):
    mod = net()
    with pytest.raises(StcError) as err:
        call(mod)
    text = str(err.value)
    assert "\n" not in text, text
    assert re.search(message, text), text
    mod.module.verify()  # what was refused did not leave the module broken
