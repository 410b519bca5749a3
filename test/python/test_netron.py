"""--export-netron: the scheduled graph as ONNX, every node carrying its schedule item."""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir import ir
from stc_mlir.tools import stc_opt, stc_run
from stc_mlir.viz import netron

SCHEDULED = """
func.func @main(%in: tensor<2x8x16xf16> {graph.name = "tokens"}) -> tensor<2x8x4xf16> {
  %w = graph.constant dense<0.5> : tensor<16x4xf16>
  %s:2 = schedule.split %in into 2 {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[0]>} : tensor<2x8x16xf16> -> tensor<1x8x16xf16>
  %a0 = schedule.group "a" [0 of 2] (%x = %s#0 : tensor<1x8x16xf16>) -> tensor<1x8x4xf16> attributes {mem_scope = #schedule.mem_scope<LLB>, core_bind = #schedule.core_bind<[[0, 1]]>} {
    %r = graph.relu %x : tensor<1x8x16xf16>
    %m = graph.matmul %r, %w : (tensor<1x8x16xf16>, tensor<16x4xf16>) -> tensor<1x8x4xf16>
    schedule.yield %m : tensor<1x8x4xf16>
  }
  %a1 = schedule.group "a" [1 of 2] (%x = %s#1 : tensor<1x8x16xf16>) -> tensor<1x8x4xf16> attributes {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[2, 3]]>} {
    %r = graph.relu %x : tensor<1x8x16xf16>
    %m = graph.matmul %r, %w : (tensor<1x8x16xf16>, tensor<16x4xf16>) -> tensor<1x8x4xf16>
    schedule.yield %m : tensor<1x8x4xf16>
  }
  %c = schedule.concat %a0, %a1 {mem_scope = #schedule.mem_scope<L1>, core_bind = #schedule.core_bind<[[0, 1, 2, 3]]>} : tensor<1x8x4xf16>, tensor<1x8x4xf16> -> tensor<2x8x4xf16>
  %b = schedule.group "b" (%x = %c : tensor<2x8x4xf16>) -> tensor<2x8x4xf16> attributes {mem_scope = #schedule.mem_scope<DDR>, core_bind = #schedule.core_bind<[[0, 1], [2, 3]]>} {
    %r = graph.softmax %x {axis = 2 : i64} : tensor<2x8x4xf16>
    schedule.yield %r : tensor<2x8x4xf16>
  }
  func.return %b : tensor<2x8x4xf16>
}
"""


def _meta(node: onnx.NodeProto) -> dict[str, str]:
    return {p.key: p.value for p in node.metadata_props}


def test_every_node_carries_its_item_in_execution_order(tmp_path):
    path = tmp_path / "s.onnx"
    netron.export(ir.parse_text(SCHEDULED), path)
    model = onnx.load(path)
    onnx.checker.check_model(model)  # a well-formed graph: every input produced before use
    rows = [(n.domain, n.op_type, _meta(n).get("item"), _meta(n).get("item_name"), _meta(n).get("sub_group"),
             _meta(n).get("mem_scope"), _meta(n).get("core_bind")) for n in model.graph.node]
    assert rows == [
        ("stc.schedule", "split", "0", "split 'split_0'", None, "LLB", "[0]"),
        ("stc.graph", "relu", "1", "group 'a' sub-group 0", "0 of 2", "LLB", "[[0, 1]]"),
        ("stc.graph", "matmul", "1", "group 'a' sub-group 0", "0 of 2", "LLB", "[[0, 1]]"),
        ("stc.graph", "relu", "2", "group 'a' sub-group 1", "1 of 2", "L1", "[[2, 3]]"),
        ("stc.graph", "matmul", "2", "group 'a' sub-group 1", "1 of 2", "L1", "[[2, 3]]"),
        ("stc.schedule", "concat", "3", "concat 'concat_0'", None, "L1", "[[0, 1, 2, 3]]"),
        ("stc.graph", "softmax", "4", "group 'b'", None, "DDR", "[[0, 1], [2, 3]]"),
    ]
    assert all(_meta(n)["group"] == "a" for n in model.graph.node[1:5])
    assert model.graph.node[6].doc_string == ("item_name group 'b', group b, mem_scope DDR, "
                                              "core_bind [[0, 1], [2, 3]]")
    assert [a.name for a in model.graph.node[6].attribute] == ["axis"]
    # the edges are the program's: model input -> split -> sub-groups -> concat -> b -> output
    split, relu0, mm0, relu1, mm1, concat, softmax = model.graph.node
    assert split.input == ["tokens"] and relu0.input == [split.output[0]] and relu1.input == [split.output[1]]
    assert list(concat.input) == [mm0.output[0], mm1.output[0]] and softmax.input == [concat.output[0]]
    assert [o.name for o in model.graph.output] == [softmax.output[0]]
    (w,) = model.graph.initializer
    assert mm0.input[1] == mm1.input[1] == w.name
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(w), np.full((16, 4), 0.5, np.float16))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
    assert shapes[relu0.output[0]] == [1, 8, 16] and shapes[concat.output[0]] == [2, 8, 4]


def test_without_weights_the_constants_are_typed_values_only(tmp_path):
    model = netron.export(ir.parse_text(SCHEDULED), tmp_path / "s.onnx", weights=False)
    assert not model.graph.initializer
    assert any(v.name == model.graph.node[2].input[1] for v in model.graph.value_info)


def test_item_metadata_adds_figures_per_item():
    model = netron.to_onnx(ir.parse_text(SCHEDULED), item_metadata={"group 'b'": {"cycles": 1234}})
    assert _meta(model.graph.node[6])["cycles"] == "1234"
    assert "cycles" not in _meta(model.graph.node[0])


def test_stc_opt_exports_after_its_passes(tmp_path, capsys):
    src = tmp_path / "s.mlir"
    src.write_text(SCHEDULED)
    assert stc_opt.main([str(src), "-p", "schedule-verify", "--export-netron", str(tmp_path / "s.onnx"),
                         "-o", str(tmp_path / "out.mlir")]) == 0
    assert len(onnx.load(tmp_path / "s.onnx").graph.node) == 7
    assert "wrote" in capsys.readouterr().err
    code = stc_opt.main([str(src), "-p", "convert-schedule-to-npu", "--export-netron", str(tmp_path / "n.onnx"),
                         "-o", str(tmp_path / "out.mlir")])
    assert code == 1
    assert "--export-netron draws graph- or schedule-level IR, not an npu program" in capsys.readouterr().err


def test_stc_run_exports_the_scheduled_model(tmp_path, capsys, small_model):
    path = tmp_path / "r50.onnx"
    assert stc_run.main(["resnet50", "--batch", "2", "--option", "image_size=32", "--level", "0",
                         "--export-netron", str(path)]) == 0
    model = onnx.load(path)
    onnx.checker.check_model(model)
    items = [_meta(n) for n in model.graph.node]
    assert all({"item", "item_name", "mem_scope", "core_bind"} <= m.keys() for m in items)
    # level 0, the default schedule: one item per fused op, all 8 cores, results in DDR
    assert {m["mem_scope"] for m in items} == {"DDR"}
    assert sum(n.op_type == "conv2d" for n in model.graph.node) == 53
    assert int(items[-1]["item"]) == len({m["item"] for m in items}) - 1


def test_stc_run_refuses_a_compiled_program(tmp_path, capsys):
    program = tmp_path / "p.stcobj"
    program.write_bytes(b"")  # refused before it is read
    assert stc_run.main([str(program), "--export-netron", str(tmp_path / "x.onnx")]) == 1
    assert "--export-netron does not apply to" in capsys.readouterr().err
