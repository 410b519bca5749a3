"""The manual graph-schedule API on small graphs: grouping, splitting, scheduling, the
errors of wrong use, and the interpreter giving the graph-level results at every step."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stc_mlir import ir, reference
from stc_mlir.dialects import schedule as s
from stc_mlir.graph_schedule import (
    FuseTargetOps,
    GetNPUSubFunctions,
    Group,
    GroupOps,
    IRModule,
    ListItems,
    ListOps,
    NPUMemScope,
    Schedule,
    ScheduleError,
    ScheduleInfo,
    ScheduleVerifyError,
    SetSpanName,
    SplitGroups,
)

DDR, LLB, L1 = NPUMemScope.DDR, NPUMemScope.LLB, NPUMemScope.L1

# x -> [matmul, bias add, relu] -> [matmul, residual add, tanh] -> [matmul, sigmoid, softmax]
NET = """
func.func @main(%x: tensor<{b}x{h}x{w}xf16>) -> tensor<{b}x{h}x{w}xf16> {{
  %wt = graph.constant dense<0.125> : tensor<{w}x{w}xf16>
  %bias = graph.constant dense<0.25> : tensor<{w}xf16>
  %mm0 = graph.matmul %x, %wt : (tensor<{b}x{h}x{w}xf16>, tensor<{w}x{w}xf16>) -> tensor<{b}x{h}x{w}xf16>
  %add0 = graph.add %mm0, %bias : (tensor<{b}x{h}x{w}xf16>, tensor<{w}xf16>) -> tensor<{b}x{h}x{w}xf16>
  %relu = graph.relu %add0 : tensor<{b}x{h}x{w}xf16>
  %mm1 = graph.matmul %relu, %wt : (tensor<{b}x{h}x{w}xf16>, tensor<{w}x{w}xf16>) -> tensor<{b}x{h}x{w}xf16>
  %res = graph.add %mm1, %relu : tensor<{b}x{h}x{w}xf16>
  %tanh = graph.tanh %res : tensor<{b}x{h}x{w}xf16>
  %mm2 = graph.matmul %tanh, %wt : (tensor<{b}x{h}x{w}xf16>, tensor<{w}x{w}xf16>) -> tensor<{b}x{h}x{w}xf16>
  %sig = graph.sigmoid %mm2 : tensor<{b}x{h}x{w}xf16>
  %out = graph.softmax %sig {{axis = 2 : i64}} : tensor<{b}x{h}x{w}xf16>
  func.return %out : tensor<{b}x{h}x{w}xf16>
}}
"""


def net(batch: int = 8, rows: int = 4, width: int = 16) -> IRModule:
    return IRModule(ir.parse_text(NET.format(b=batch, h=rows, w=width)))


def inputs(batch: int = 8, width: int = 16) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((batch, 4, width)).astype(np.float32)}


def three_groups(mod: IRModule) -> list[Group]:
    func = GetNPUSubFunctions(mod["main"])[0]
    ops = ListOps(func)
    groups = [
        Group([func.params[0]], ops["relu"][0], name="A"),
        Group(ops["tanh"][0], [ops["relu"][0]], name="B"),  # the seeds use both argument orders
        Group([ops["tanh"][0]], ops["nn.softmax"][0], name="C"),
    ]
    GroupOps(groups)(mod)
    return groups


def default_schedule(mod: IRModule, cores=((0,),)) -> IRModule:
    items = ListItems(mod["main"])
    return Schedule([ScheduleInfo(op, DDR, [list(c) for c in cores]) for op in items])(mod)


def run(mod: IRModule, batch: int = 8) -> np.ndarray:
    return reference.run(mod.module, inputs(batch))[0]


def roundtrip(mod: IRModule) -> IRModule:
    out = io.StringIO()
    ir.print_module(mod.module, out)
    module = ir.parse_text(out.getvalue())
    module.verify()
    return IRModule(module)


# ----------------------------------------------------------------------------- handles and ListOps


def test_module_and_function_handles():
    mod = net()
    func = mod["main"]
    assert func.name == "main" and [p.name_hint for p in func.params] == ["x"]
    assert GetNPUSubFunctions(func) == [func]
    assert [r.owner.name for r in func.results] == ["graph.softmax"]
    with pytest.raises(ScheduleError, match=r"no function '@nope' \(functions: @main\)"):
        mod["nope"]


def test_list_ops_post_order_and_relay_names():
    ops = ListOps(net()["main"])
    assert {k: len(v) for k, v in ops.items()} == {
        "matmul": 3, "add": 2, "relu": 1, "tanh": 1, "sigmoid": 1, "softmax": 1}
    assert ops["nn.softmax"] == ops["softmax"] and ops["nn.batch_matmul"] == ops["matmul"]
    assert ops["matmul"][1].operands[0].owner is ops["relu"][0]
    assert ops["concatenate"] == [] and ops["conv2d"] == []
    with pytest.raises(IndexError, match="no 'matmul' op 3: the function has 3 'matmul' ops"):
        ops["matmul"][3]
    with pytest.raises(ScheduleError, match="unknown op kind 'convolution'"):
        ops["convolution"]


# ----------------------------------------------------------------------------- grouping


def test_group_ops_makes_region_groups_and_keeps_results():
    mod = net()
    want = run(mod)
    groups = three_groups(mod)
    func = mod["main"]
    items = ListItems(func)
    assert items == [g[0] for g in groups]
    assert [op.group_name.data for op in items] == ["A", "B", "C"]
    assert [len(op.body_ops()) for op in items] == [3, 3, 3]
    assert items[1].inputs[0] is items[0].output  # B reads A's output
    np.testing.assert_array_equal(run(mod), want)
    np.testing.assert_array_equal(run(roundtrip(mod)), want)


def test_group_names_default_to_group_i_and_inputs_can_be_implicit():
    # the walk from an output stops at parameters and at other groups' outputs: they
    # become inputs without being listed
    mod = net()
    want = run(mod)
    ops = ListOps(mod["main"])
    first, second = Group([], ops["relu"][0]), Group([], ops["softmax"][0])
    GroupOps([first, second])(mod)
    assert (first.name, second.name) == ("group_0", "group_1")
    assert list(first[0].inputs) == mod["main"].params
    assert list(second[0].inputs) == [first[0].output]
    np.testing.assert_array_equal(run(mod), want)


def test_group_with_two_outputs_is_rejected():
    mod = net()
    ops = ListOps(mod["main"])
    with pytest.raises(ScheduleError, match=r"Group 0 has two outputs: ops\['relu'\]\[0\] \(%relu\) is used by "
                                            r"ops\['add'\]\[1\] \(%res\) outside the group"):
        GroupOps([Group([mod["main"].params[0]], ops["matmul"][1])])(mod)


def test_group_input_not_used_and_groups_sharing_ops_are_rejected():
    mod = net()
    ops = ListOps(mod["main"])
    with pytest.raises(ScheduleError, match=r"Group 0: input 0 \(ops\['tanh'\]\[0\] \(%tanh\)\) is not used"):
        GroupOps([Group([ops["tanh"][0]], ops["relu"][0])])(mod)
    with pytest.raises(ScheduleError, match=r"ops\['matmul'\]\[0\] \(%mm0\) is in both Group 0 and Group 1"):
        GroupOps([Group([], ops["relu"][0]), Group([], ops["relu"][0])])(mod)


def test_fused_groups_nest_in_groups():
    mod = net()
    want = run(mod)
    ops = ListOps(mod["main"])
    fused = Group([ops["matmul"][2]], ops["softmax"][0])
    FuseTargetOps([fused])(mod)
    assert fused.name == "fused_0" and fused[0].fused is not None
    outer = Group([ops["tanh"][0]], fused)
    GroupOps([outer])(mod)
    (inner,) = [op for op in outer[0].body_ops() if isinstance(op, s.GroupOp)]
    assert inner is fused[0]
    np.testing.assert_array_equal(run(mod), want)
    SplitGroups({outer: 4})(mod)  # the fused group is split with the group holding it
    assert [op.body_ops()[1].fused is not None for op in outer] == [True] * 4
    default_schedule(mod, cores=[[0], [1]])
    np.testing.assert_array_equal(run(mod), want)


# ----------------------------------------------------------------------------- splitting


def test_split_groups_reslices_between_split_groups():
    mod = net()
    want = run(mod)
    groups = three_groups(mod)
    SplitGroups({groups[0]: 8, groups[1]: 4, groups[2]: 1})(mod)
    assert [len(g) for g in groups] == [8, 4, 1]
    assert [(op.index.data, op.split.data) for op in groups[1]] == [(i, 4) for i in range(4)]
    assert groups[0][3].batch == 1 and groups[1][0].batch == 2 and groups[2][0].batch == 8
    ops = ListOps(mod["main"])
    # one split of the input, a concat of each pair of A's slices for B, one join for C;
    # post-order puts each concat right after the sub-groups it joins
    assert len(ops["split"]) == 1 and len(ops["concatenate"]) == 5
    assert list(ops["concatenate"][0].operands) == [groups[0][0].output, groups[0][1].output]
    assert list(groups[1][0].inputs) == [ops["concatenate"][0].output]
    assert list(ops["concatenate"][4].operands) == [g.output for g in groups[1]]
    np.testing.assert_array_equal(run(mod), want)
    with pytest.raises(IndexError, match=r"Group 'B': has 4 sub-group\(s\) \(0..3\); sub-group 4 does not exist"):
        groups[1][4]


def test_split_factor_must_divide_the_batch():
    mod = net()
    groups = three_groups(mod)
    with pytest.raises(ScheduleError, match=r"SplitGroups item 1 \(Group 'B'\): split factor 3 does not divide "
                                            r"the batch 8 of group 'B'"):
        SplitGroups({groups[0]: 2, groups[1]: 3})(mod)
    assert len(groups[0]) == 1  # nothing changed


def test_split_rejects_groups_mixing_the_batch():
    mod = IRModule(ir.parse_text("""
    func.func @main(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
      %0 = graph.softmax %x {axis = 0 : i64} : tensor<4x8xf16>
      func.return %0 : tensor<4x8xf16>
    }"""))
    group = Group([mod["main"].params[0]], ListOps(mod["main"])["softmax"][0])
    GroupOps([group])(mod)
    with pytest.raises(ScheduleError, match=r"group 'group_0' cannot be split along the batch: graph.softmax "
                                            r"\(tensor<4x8xf16>\) combines elements across the batch axis"):
        SplitGroups({group: 2})(mod)


@settings(max_examples=25, deadline=None)
@given(st.tuples(*[st.sampled_from([1, 2, 4, 8])] * 3))
def test_any_split_factors_keep_the_results(factors):
    mod = net()
    want = run(mod)
    groups = three_groups(mod)
    SplitGroups(dict(zip(groups, factors)))(mod)
    assert [len(g) for g in groups] == list(factors)
    default_schedule(mod)
    np.testing.assert_array_equal(run(mod), want)


# ----------------------------------------------------------------------------- scheduling


def test_schedule_orders_items_and_wraps_single_ops():
    mod = net()
    want = run(mod)
    func = GetNPUSubFunctions(mod["main"])[0]
    ops = ListOps(func)
    groups = [Group([func.params[0]], ops["relu"][0]), Group([ops["relu"][0]], ops["tanh"][0])]
    GroupOps(groups)(mod)
    SplitGroups({groups[0]: 2})(mod)
    SetSpanName()(mod)
    ops = ListOps(func)
    Schedule([
        ScheduleInfo(ops["split"][0], DDR, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(groups[0][1], LLB, [[0, 1, 2, 3], [4, 5, 6, 7]]),  # the seeds run sub-groups in any order
        ScheduleInfo(groups[0][0], L1, [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ScheduleInfo(ops["concatenate"][0], L1, list(range(8))),
        ScheduleInfo(groups[1], L1, list(range(8))),
        ScheduleInfo(ops["matmul"][3], L1, np.arange(8)),  # ops outside groups: one-op groups
        ScheduleInfo(ops["sigmoid"][0], "L1", [0, 1, 2, 3]),
        ScheduleInfo(ops["softmax"][0], DDR, [[0, 1, 2, 3, 4, 5, 6, 7]]),
    ])(mod)
    items = ListItems(func)
    assert [s.op_kind(op) for op in items] == ["split", "group", "group", "concat", "group", "group", "group", "group"]
    assert [op.group_name.data for op in items[4:]] == ["group_1", "matmul_3", "sigmoid_0", "softmax_0"]
    assert items[1] is groups[0][1]
    assert [op.mem_scope.data for op in items] == [DDR, LLB, L1, L1, L1, L1, L1, DDR]
    assert items[6].core_bind.data == ((0,), (1,), (2,), (3,))
    np.testing.assert_array_equal(run(mod), want)
    again = roundtrip(mod)
    np.testing.assert_array_equal(run(again), want)
    assert ListItems(again["main"])[1].core_bind.text == "[[0, 1, 2, 3], [4, 5, 6, 7]]"


def test_every_item_needs_a_schedule_info_once():
    mod = net()
    groups = three_groups(mod)
    with pytest.raises(ScheduleError, match=r"ScheduleInfo 1: ops\['group'\]\[0\] \(group 'A'\) is already "
                                            r"scheduled by ScheduleInfo 0"):
        Schedule([ScheduleInfo(groups[0], L1, [0]), ScheduleInfo(groups[0][0], L1, [0])])(mod)
    with pytest.raises(ScheduleError, match=r"Schedule: 1 item\(s\) of @main have no ScheduleInfo: "
                                            r"ops\['group'\]\[2\] \(group 'C'\)"):
        Schedule([ScheduleInfo(groups[0], L1, [0]), ScheduleInfo(groups[1], L1, [0])])(mod)
    inner = groups[0][0].body_ops()[0]
    with pytest.raises(ScheduleError, match=r"ScheduleInfo 0: ops\['matmul'\]\[0\] \(%mm0\) is inside group 'A'; "
                                            r"schedule the group"):
        Schedule([ScheduleInfo(inner, L1, [0])])(mod)


def test_use_before_producer_is_rejected():
    mod = net()
    groups = three_groups(mod)
    with pytest.raises(ScheduleError, match=r"ScheduleInfo 1: ops\['group'\]\[2\] \(group 'C'\) uses the result of "
                                            r"ops\['group'\]\[1\] \(group 'B'\), which ScheduleInfo 2 puts later"):
        Schedule([ScheduleInfo(groups[0], L1, [0]), ScheduleInfo(groups[2], DDR, [0]),
                  ScheduleInfo(groups[1], L1, [0])])(mod)


def test_bad_core_ids_are_rejected():
    mod = net()
    groups = three_groups(mod)
    infos = [ScheduleInfo(groups[0], L1, [0]), ScheduleInfo(groups[1], L1, [[6, 7], [8, 9]]),
             ScheduleInfo(groups[2], DDR, [0])]
    with pytest.raises(ScheduleVerifyError, match=r"@main: group 'B': core_bind \[\[6, 7\], \[8, 9\]\] uses core 8, "
                                                  r"outside the cluster's cores 0-7"):
        Schedule(infos)(mod)
    with pytest.raises(ScheduleError, match=r"ScheduleInfo 0 \(ops\['group'\]\[0\] \(group 'A'\)\): core_bind "
                                            r"\[\[0, 1\], \[1, 2\]\]: core 1 appears twice"):
        Schedule([ScheduleInfo(groups[0], L1, [[0, 1], [1, 2]])])(mod)
    with pytest.raises(ScheduleError, match="mem_scope must be NPUMemScope.DDR, LLB or L1, got 'SRAM'"):
        Schedule([ScheduleInfo(groups[0], "SRAM", [0])])(mod)


def test_l1_overflow_names_group_bytes_and_capacity():
    # sub-group 0 holds its 4 x 256 x 512 x 2 = 1,048,576-byte input slice and the matmul
    # result (the bias add and the relu write over it) on one core
    mod = net(batch=8, rows=256, width=512)
    groups = three_groups(mod)
    SplitGroups({groups[0]: 2})(mod)
    ops = ListOps(mod["main"])
    infos = [ScheduleInfo(ops["split"][0], DDR, [0]), ScheduleInfo(groups[0][0], LLB, [0]),
             ScheduleInfo(groups[0][1], LLB, [[2, 3]]), ScheduleInfo(ops["concat"][0], DDR, [0]),
             ScheduleInfo(groups[1], DDR, list(range(8))), ScheduleInfo(groups[2], DDR, list(range(8)))]
    with pytest.raises(ScheduleVerifyError) as error:
        Schedule(infos)(mod)
    assert str(error.value) == ("@main: group 'A' sub-group 0: L1 footprint 2,097,152 bytes per core exceeds "
                                "the 1,048,576-byte L1 data buffer (core 0)")


def test_npu_sub_functions_are_the_callees():
    mod = IRModule(ir.parse_text("""
    func.func @kernel(%a: tensor<2x8xf16>) -> tensor<2x8xf16> {
      %0 = graph.relu %a : tensor<2x8xf16>
      func.return %0 : tensor<2x8xf16>
    }
    func.func @main(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
      %0 = func.call @kernel(%x) : (tensor<2x8xf16>) -> tensor<2x8xf16>
      %1 = func.call @kernel(%0) : (tensor<2x8xf16>) -> tensor<2x8xf16>
      func.return %1 : tensor<2x8xf16>
    }"""))
    assert GetNPUSubFunctions(mod["main"]) == [mod["kernel"]]
    assert GetNPUSubFunctions(mod["kernel"]) == [mod["kernel"]]


def test_set_span_name_gives_unique_names():
    mod = net()
    groups = three_groups(mod)
    SplitGroups({groups[0]: 2})(mod)  # the sub-groups' ops are copies of one another
    SetSpanName()(mod)
    spans = [op.attributes["schedule.span"].data for op in ListOps(mod["main"])["matmul"]]
    assert spans == ["matmul_0", "matmul_1", "matmul_2", "matmul_3"]
    SplitGroups({groups[1]: 2})(mod)
    SetSpanName()(mod)  # existing names are kept, copies get a suffix
    spans = [op.attributes["schedule.span"].data for op in ListOps(mod["main"])["matmul"]]
    # post-order now reaches A's and B's first sub-groups before their second ones
    assert spans == ["matmul_0", "matmul_2", "matmul_1", "matmul_2.1", "matmul_3"]
