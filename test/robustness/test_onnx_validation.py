"""Malformed ONNX models, made with onnx.helper: the importer refuses each with one line
naming the file, the node (name, op type, opset) and the values, and stc-import exits
non-zero without a traceback. Before these checks, several were accepted (Softmax axis 99
became 1; a 3x3 weight with kernel_shape [5,5] compiled and ran)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir.frontend import import_onnx
from stc_mlir.frontend.onnx_context import OnnxImportError
from stc_mlir.tools import stc_import, stc_run

OPSET = 17


def _model(nodes, inputs, output, inits=(), opset=OPSET):
    graph = helper.make_graph(
        nodes, "bad",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v, np.float32), n) for n, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _conv(**attrs):
    return helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", **attrs)


W3 = ("w", np.ones((4, 3, 3, 3)))
X = [("x", [1, 3, 8, 8])]

CASES = {
    "softmax-axis": (
        _model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=99)], [("x", [2, 5])], "y"),
        ["node 'sm' (Softmax, opset 17)", "axis 99 is out of range", "rank 2 (2x5)", "valid: -2 to 1"]),
    "concat-axis": (
        _model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=-4)], [("x", [2, 5, 3])], "y"),
        ["node 'cat' (Concat, opset 17)", "axis -4", "rank 3", "valid: -3 to 2"]),
    "flatten-axis": (
        _model([helper.make_node("Flatten", ["x"], ["y"], name="fl", axis=3)], [("x", [2, 5])], "y"),
        ["node 'fl' (Flatten, opset 17)", "axis 3", "valid: -2 to 2"]),
    "conv-kernel-shape": (
        _model([_conv(kernel_shape=[5, 5])], X, "y", [W3]),
        ["node 'conv1' (Conv, opset 17)", "kernel_shape [5, 5] does not match weight 'w'", "4x3x3x3", "[3, 3]"]),
    "conv-strides-length": (
        _model([_conv(strides=[1, 1, 1])], X, "y", [W3]),
        ["node 'conv1' (Conv, opset 17)", "strides [1, 1, 1] has 3 values", "2 spatial dims", "needs 2"]),
    "conv-pads-length": (
        _model([_conv(pads=[1, 1])], X, "y", [W3]),
        ["node 'conv1' (Conv, opset 17)", "pads [1, 1] has 2 values", "needs 4"]),
    "conv-zero-stride": (
        _model([_conv(strides=[0, 1])], X, "y", [W3]),
        ["node 'conv1' (Conv, opset 17)", "strides [0, 1] must be positive"]),
    "conv-weight-rank": (
        _model([_conv()], X, "y", [("w", np.ones((4, 27)))]),
        ["node 'conv1' (Conv, opset 17)", "weight 'w' has rank 2 (4x27)", "rank 4"]),
    "pool-kernel-length": (
        _model([helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2, 2])], X, "y"),
        ["node 'mp' (MaxPool, opset 17)", "kernel_shape [2, 2, 2] has 3 values", "needs 2"]),
    "relu-two-inputs": (
        _model([helper.make_node("Relu", ["x", "x"], ["y"], name="r")], X, "y"),
        ["node 'r' (Relu, opset 17)", "has 2 input(s); Relu-14 takes 1"]),
    "conv-no-weight": (
        _model([helper.make_node("Conv", ["x"], ["y"], name="c0")], X, "y"),
        ["node 'c0' (Conv, opset 17)", "has 1 input(s); Conv-11 takes 2 to 3"]),
    "conv-empty-weight": (
        _model([helper.make_node("Conv", ["x", ""], ["y"], name="c0")], X, "y"),
        ["node 'c0' (Conv, opset 17)", "required input 1 ('W') is empty"]),
    "add-three-inputs": (
        _model([helper.make_node("Add", ["x", "x", "x"], ["y"], name="a")], X, "y"),
        ["node 'a' (Add, opset 17)", "has 3 input(s); Add-14 takes 2"]),
    "relu-two-outputs": (
        _model([helper.make_node("Relu", ["x"], ["y", "z"], name="r")], X, "y"),
        ["node 'r' (Relu, opset 17)", "has 2 output(s); Relu-14 produces 1"]),
    "float-strides": (
        _model([_conv(strides=[1.5, 1.0])], X, "y", [W3]),
        ["node 'conv1' (Conv, opset 17)", "attribute 'strides' is FLOATS [1.5, 1.0]", "Conv-11 expects INTS"]),
    "float-group": (
        _model([_conv(group=1.0)], X, "y", [W3]),
        ["node 'conv1' (Conv, opset 17)", "attribute 'group' is FLOAT 1.0", "expects INT"]),
    "string-axis": (
        _model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis="last")], [("x", [2, 5])], "y"),
        ["node 'sm' (Softmax, opset 17)", "attribute 'axis' is STRING 'last'", "expects INT"]),
    "unknown-attribute (onnx.checker)": (
        _model([helper.make_node("Relu", ["x"], ["y"], name="r", foo=3)], X, "y"),
        ["rejected by onnx.checker: Unrecognized attribute: foo for operator Relu", "Name: r OpType: Relu"]),
    "declared-output-shape (onnx.checker)": (
        helper.make_model(helper.make_graph(
            [helper.make_node("Relu", ["x"], ["y"], name="r")], "bad",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])]),
            opset_imports=[helper.make_opsetid("", OPSET)]),
        ["rejected by onnx.checker", "node name: r", "(2) vs (3)"]),
    "duplicate-input": (
        _model([helper.make_node("Add", ["x", "x"], ["y"], name="a")], [("x", [2]), ("x", [3])], "y"),
        ["graph input 'x' is declared twice"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_with_node_and_values(case):
    model, expected = CASES[case]
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("bad: ")  # the source: graph name for an in-memory model
    for part in expected:
        assert part in message, (part, message)


@pytest.mark.parametrize("case", ["softmax-axis", "conv-kernel-shape", "relu-two-inputs", "float-strides",
                                  "duplicate-input", "conv-no-weight"])
def test_stc_import_exits_without_traceback(case, tmp_path, capsys):
    path = tmp_path / f"{case}.onnx"
    onnx.save(CASES[case][0], path)
    assert stc_import.main([str(path), "-q", "-o", str(tmp_path / "out.mlir")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"stc-import: error: {path}: ")
    assert CASES[case][1][-1] in err[0]
    assert "Traceback" not in err[0]


@pytest.mark.parametrize("dims", [[-2, 3, 8, 8], [0, 3, 8, 8]])
def test_nonpositive_shape_override_refused(dims, tmp_path, capsys):
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], [("x", ["n", 3, 8, 8])], "y")
    with pytest.raises(OnnxImportError, match=r"shape .* given for input 'x' has a dimension < 1"):
        import_onnx(model, shape={"x": dims})
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    text = "x".join(map(str, dims))
    assert stc_import.main([str(path), "-q", "--shape", f"x={text}", "-o", str(tmp_path / "o.mlir")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"stc-import: error: {path}: shape {text} given for input 'x' has a dimension < 1; "
                   "every dimension must be positive"]
    assert not (tmp_path / "o.mlir").exists()
    assert stc_run.main([str(path), "--shape", f"x={text}"]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("stc-run: error: ")]
    assert len(errors) == 1 and "'x'" in errors[0] and str(dims) in errors[0], err


def test_valid_counterparts_still_import():
    """The same graphs made valid import: the checks do not refuse what ONNX allows."""
    ok = [
        _model([helper.make_node("Softmax", ["x"], ["y"], axis=-2)], [("x", [2, 5])], "y"),
        _model([helper.make_node("Flatten", ["x"], ["y"], axis=2)], [("x", [2, 5])], "y"),
        _model([_conv(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], X, "y", [W3]),
        _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])], X, "y"),
        _model([helper.make_node("Relu", ["x"], ["y"])], [("x", ["n", 3, 8, 8])], "y"),
    ]
    for model in ok:
        import_onnx(model, shape={"x": [1, 3, 8, 8]} if model.graph.input[0].type.tensor_type.shape.dim[0].dim_param
                    else None)
