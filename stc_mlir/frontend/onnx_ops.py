"""Per-operator ONNX -> graph conversion.

`convert(importer, node)` first checks the operator's version (the schema version the
model's opset selects, refused by name if it is newer than this importer knows), drops
Identity/Dropout, then folds any node whose inputs are all known at import time, and
otherwise calls the converter registered for the node's op type. Converters read
attributes with the node's opset defaults and emit graph ops through `Importer.emit`.

Folding evaluates the node with our own reference kernels where the dialect has the op
(the same numerics as the interpreter), else with onnx's reference evaluator at the
model's opset (shape arithmetic: Shape/Range/ConstantOfShape chains).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator
from xdsl.builder import Builder, InsertPoint
from xdsl.ir import Block

from stc_mlir import kernels, reference
from stc_mlir.dialects import graph as g
from stc_mlir.frontend.onnx_context import FIRST_FULL_OPSET, WIDENED_FLOATS, Importer, is_float
from stc_mlir.frontend.onnx_patterns import DOMAIN
from stc_mlir.frontend.onnx_validate import check_node

Converter = Callable[[Importer, onnx.NodeProto, dict], list]
CONVERTERS: dict[str, Converter] = {}

NEWEST_VERSION = {
    # the newest schema version of each operator whose semantics the converters know; a
    # newer onnx may define later versions, which are refused until they are reviewed
    "Abs": 13, "Acos": 22, "Add": 14, "And": 7, "ArgMax": 13, "ArgMin": 13, "AveragePool": 22,
    "BatchNormalization": 15, "Cast": 28, "CastLike": 25, "Ceil": 13, "Clip": 13, "Concat": 13,
    "Constant": 25, "ConstantOfShape": 25, "Conv": 22, "Cos": 22, "Cosh": 22, "CumSum": 14, "Div": 14,
    "Dropout": 22, "Einsum": 28, "Equal": 19, "Erf": 13, "Exp": 13, "Expand": 13, "Flatten": 25,
    "Floor": 13, "Gather": 13, "GatherElements": 13, "GatherND": 13, "Gelu": 20, "Gemm": 13,
    "GlobalAveragePool": 22, "GlobalMaxPool": 22, "Greater": 13, "GreaterOrEqual": 16,
    "HardSigmoid": 22, "HardSwish": 22, "Identity": 25, "IsNaN": 20, "LRN": 13, "LayerNormalization": 17,
    "LeakyRelu": 16, "Less": 13, "LessOrEqual": 16, "Log": 13, "MatMul": 13, "Max": 13,
    "MaxPool": 22, "MaxRoiPool": 22, "Mean": 13, "Min": 13, "Mish": 22, "Mul": 14, "Neg": 13,
    "NonMaxSuppression": 11, "Not": 1, "OneHot": 28, "Or": 7, "PRelu": 16, "Pow": 15,
    "Reciprocal": 13, "ReduceL1": 18, "ReduceL2": 18, "ReduceLogSum": 28, "ReduceLogSumExp": 28,
    "ReduceMax": 20, "ReduceMean": 18, "ReduceMin": 20, "ReduceProd": 18, "ReduceSum": 13,
    "ReduceSumSquare": 18, "Relu": 14, "Reshape": 25, "Resize": 19, "RoiAlign": 22, "Shape": 25,
    "Sigmoid": 13, "Sign": 13, "Sinh": 22, "Size": 25, "Slice": 13, "Softmax": 13, "Softplus": 22,
    "Split": 18, "Sqrt": 13, "Squeeze": 25, "Sub": 14, "Sum": 13, "Swish": 24, "Tanh": 13,
    "TopK": 24, "Transpose": 25, "Unsqueeze": 25, "Where": 16, "Xor": 7,
}


def converter(*op_types: str):
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn
    return register


def _attrs(node: onnx.NodeProto) -> dict:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, float):
            v = float(str(np.float32(v)))  # ONNX floats are float32: print 1e-05, not 9.99999974e-06
        out[a.name] = v
    return out


def _has(node: onnx.NodeProto, i: int) -> bool:
    return len(node.input) > i and node.input[i] != ""


def schema_version(imp: Importer, node: onnx.NodeProto) -> int | None:
    """The version of the node's operator that the model's opset selects (None: unknown)."""
    try:
        return onnx.defs.get_schema(node.op_type, imp.opset, "").since_version
    except onnx.defs.SchemaError:
        return None


def _check_version(imp: Importer, node: onnx.NodeProto) -> None:
    version = schema_version(imp, node)
    if imp.opset < FIRST_FULL_OPSET and version is not None:
        try:
            at_7 = onnx.defs.get_schema(node.op_type, FIRST_FULL_OPSET, "").since_version
        except onnx.defs.SchemaError:
            at_7 = None
        if at_7 != version:
            raise imp.error(f"{node.op_type}-{version} predates opset {FIRST_FULL_OPSET} and is not supported "
                            f"(export with opset {FIRST_FULL_OPSET} or later)")
    newest = NEWEST_VERSION.get(node.op_type)
    if version is not None and newest is not None and version > newest:
        raise imp.error(f"{node.op_type}-{version} is newer than the versions this importer knows "
                        f"(up to {node.op_type}-{newest})")


def convert(imp: Importer, node: onnx.NodeProto) -> None:
    if node.domain != DOMAIN:
        _check_version(imp, node)
        check_node(imp, node)
    attrs = _attrs(node)
    if node.op_type in ("Identity", "Dropout"):
        _alias(imp, node, attrs)
        return
    if node.op_type == "Shape" and not imp.is_known(node.input[0]):
        shape = np.array(imp.shape(node.input[0]), dtype=np.int64)
        start, end = attrs.get("start", 0), attrs.get("end", None)
        imp.bind(node.output[0], shape[start:end])
        return
    if node.op_type == "Size" and not imp.is_known(node.input[0]):
        imp.bind(node.output[0], np.array(np.prod(imp.shape(node.input[0])), dtype=np.int64))
        return
    inputs = [n for n in node.input if n]
    for name in inputs:
        if name in imp.bounded:
            raise imp.error(f"input '{name}' has a data-dependent size (a static upper bound plus a "
                            "valid count); only model outputs may be such bounds")
    if node.domain != DOMAIN and all(imp.is_known(n) for n in inputs):
        _fold(imp, node, attrs)
        return
    fn = CONVERTERS.get(node.op_type)
    if fn is None:
        raise imp.error(
            f"unsupported operator '{node.op_type}' (supported: {', '.join(sorted(CONVERTERS))})"
        )
    try:
        results = fn(imp, node, attrs)
    except KeyError as e:  # a required attribute the converter reads
        raise imp.error(f"missing attribute {e}") from None
    except (IndexError, ValueError, TypeError) as e:  # malformed attributes or inputs
        raise imp.error(f"cannot convert: {type(e).__name__}: {e}") from None
    for name, value in zip(node.output, results):
        if name:
            imp.bind(name, value if isinstance(value, np.ndarray) else _result(value))
    for name in node.output[len(results):]:
        if name:
            raise imp.error(f"output '{name}' of {node.op_type} is not supported")


def _alias(imp: Importer, node: onnx.NodeProto, a: dict) -> None:
    """Identity, and Dropout at inference: the input itself; Dropout's mask is all ones."""
    if node.op_type == "Dropout":
        training = False
        if imp.opset >= 12 and _has(node, 2):
            training = bool(_scalar(imp.const(node.input[2], "Dropout training_mode")))
        elif imp.opset < 7:
            training = not a.get("is_test", 0)
        ratio = _scalar(imp.const(node.input[1], "Dropout ratio")) if imp.opset >= 12 and _has(node, 1) \
            else float(a.get("ratio", 0.5))
        if training and ratio != 0:
            raise imp.error(f"Dropout in training mode (ratio {ratio}) drops random elements; "
                            "only inference (training_mode false) is supported")
        if training:
            imp.note("training-mode Dropout with ratio 0 is the identity; folded away")
        if len(node.output) > 1 and node.output[1]:
            shape = imp.shape(node.input[0])
            imp.bind(node.output[1], np.ones(shape, dtype=bool))
    source = node.input[0]
    if imp.is_known(source):
        imp.bind(node.output[0], imp.known[source])
    else:
        imp.values[node.output[0]] = imp.value(source)


def _result(value):
    return value.results[0] if hasattr(value, "results") else value


# ops that fold with our own kernels (the reference evaluator of onnx is wrong for some
# of them under numpy 2, e.g. GatherElements): the converter builds the graph op on
# constants and the interpreter runs it
OWN_FOLD = ("GatherElements", "GatherND", "Gather", "Where", "Einsum", "OneHot", "TopK")


def _fold(imp: Importer, node: onnx.NodeProto, attrs: dict) -> None:
    """Evaluate a node whose inputs are all known."""
    if node.op_type in OWN_FOLD and node.op_type in CONVERTERS:
        _fold_with_kernels(imp, node, attrs)
        return
    feeds = {n: imp.known[n] for n in node.input if n}
    model = helper.make_model(
        helper.make_graph([node], "fold", [helper.make_tensor_value_info(n, 0, None) for n in feeds],
                          [helper.make_tensor_value_info(n, 0, None) for n in node.output if n]),
        opset_imports=[helper.make_opsetid("", imp.opset)],
    )
    try:
        outputs = ReferenceEvaluator(model).run(None, feeds)
    except Exception as e:
        raise imp.error(f"cannot fold constant node: {type(e).__name__}: {e}") from None
    for name, value in zip([n for n in node.output if n], outputs):
        imp.bind(name, np.asarray(value))


def _fold_with_kernels(imp: Importer, node: onnx.NodeProto, attrs: dict) -> None:
    """Fold through the converter and the reference interpreter, in a scratch block."""
    saved = imp.builder, imp.constants
    imp.builder, imp.constants = Builder(InsertPoint.at_end(Block())), {}
    try:
        results = CONVERTERS[node.op_type](imp, node, attrs)
        ops = list(imp.builder.insertion_point.block.ops)
        env: dict = {}
        reference.run_ops(ops, env)
    except (IndexError, ValueError, reference.InterpreterError) as e:  # out-of-range constant indices...
        raise imp.error(f"cannot fold constant node: {type(e).__name__}: {e}") from None
    finally:
        imp.builder, imp.constants = saved
    for name, value in zip(node.output, results):
        if name:
            imp.bind(name, value if isinstance(value, np.ndarray) else np.asarray(env[_result(value)]))


def _scalar(v: np.ndarray) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def _ints(v) -> tuple[int, ...]:
    return tuple(int(i) for i in np.asarray(v).reshape(-1))


# ----------------------------------------------------------------------------- elementwise

_UNARY = {
    "Relu": g.ReluOp, "Sigmoid": g.SigmoidOp, "Tanh": g.TanhOp, "Erf": g.ErfOp, "Exp": g.ExpOp,
    "Log": g.LogOp, "Sqrt": g.SqrtOp, "Abs": g.AbsOp, "Neg": g.NegOp, "Reciprocal": g.ReciprocalOp,
    "Sign": g.SignOp, "Cosh": g.CoshOp, "Sinh": g.SinhOp, "Softplus": g.SoftplusOp, "Mish": g.MishOp,
    "HardSwish": g.HardSwishOp, "Not": g.NotOp,
}
_BINARY = {
    "Add": g.AddOp, "Sub": g.SubOp, "Mul": g.MulOp, "Div": g.DivOp, "Pow": g.PowOp,
    "Max": g.MaximumOp, "Min": g.MinimumOp,
    "Equal": g.EqualOp, "Less": g.LessOp, "LessOrEqual": g.LessEqualOp, "Greater": g.GreaterOp,
    "GreaterOrEqual": g.GreaterEqualOp, "And": g.AndOp, "Or": g.OrOp, "Xor": g.XorOp,
}


@converter(*_UNARY)
def _unary(imp: Importer, node, a):
    return [imp.emit(_UNARY[node.op_type], imp.value(node.input[0]))]


@converter("IsNaN")
def _is_nan(imp: Importer, node, a):
    """not(x == x): NaN is the one value unequal to itself (SDPA's fully-masked-row guard)."""
    x = imp.value(node.input[0])
    return [imp.emit(g.NotOp, _result(imp.emit(g.EqualOp, x, x)))]


@converter("HardSigmoid")
def _hard_sigmoid(imp: Importer, node, a):
    return [imp.emit(g.HardSigmoidOp, imp.value(node.input[0]), alpha=float(a.get("alpha", 0.2)),
                     beta=float(a.get("beta", 0.5)))]


@converter("Swish")
def _swish(imp: Importer, node, a):
    """x * sigmoid(alpha * x) (Swish-24; SiLU when alpha = 1)."""
    x = imp.value(node.input[0])
    alpha = float(a.get("alpha", 1.0))
    scaled = x if alpha == 1.0 else _result(imp.emit(g.MulOp, x, _scalar_constant(imp, alpha, x)))
    return [imp.emit(g.MulOp, x, _result(imp.emit(g.SigmoidOp, scaled)))]


def _scalar_constant(imp: Importer, value: float, like) -> object:
    """A rank-0 constant of `like`'s element type."""
    dtype = g.numpy_dtype(like.type.element_type)
    return _result(imp.builder.insert(g.ConstantOp.from_numpy(np.array(value, dtype=dtype))))


@converter(*_BINARY)
def _binary(imp: Importer, node, a):
    names = [n for n in node.input if n]
    acc = imp.value(names[0])
    if len(names) == 1:
        return [acc]
    for name in names[1:]:  # Max/Min are variadic
        acc = _result(imp.emit(_BINARY[node.op_type], acc, imp.value(name)))
    return [acc]


@converter("Where")
def _where(imp: Importer, node, a):
    return [imp.emit(g.WhereOp, *(imp.value(n) for n in node.input[:3]))]


@converter("Sum")
def _sum(imp: Importer, node, a):
    return [imp.emit(g.SumOp, [imp.value(n) for n in node.input if n])]


@converter("Mean")
def _mean(imp: Importer, node, a):
    names = [n for n in node.input if n]
    total = _result(imp.emit(g.SumOp, [imp.value(n) for n in names]))
    return [imp.emit(g.DivOp, total, _scalar_constant(imp, float(len(names)), total))]


@converter("Clip")
def _clip(imp: Importer, node, a):
    """graph.clip for constant float bounds; maximum/minimum with runtime or integer bounds."""
    x = imp.value(node.input[0])
    if imp.opset < 11:
        lo, hi = a.get("min", -np.inf), a.get("max", np.inf)
        return [imp.emit(g.ClipOp, x, min=float(lo), max=float(hi))]
    bounds = [node.input[i] if _has(node, i) else None for i in (1, 2)]
    floating = is_float(g.numpy_dtype(x.type.element_type))
    if floating and all(b is None or imp.is_known(b) for b in bounds):
        lo = _scalar(imp.known[bounds[0]]) if bounds[0] else -np.inf
        hi = _scalar(imp.known[bounds[1]]) if bounds[1] else np.inf
        if lo <= hi:
            return [imp.emit(g.ClipOp, x, min=float(lo), max=float(hi))]
    out = x
    if bounds[0]:
        out = _result(imp.emit(g.MaximumOp, out, imp.value(bounds[0])))
    if bounds[1]:
        out = _result(imp.emit(g.MinimumOp, out, imp.value(bounds[1])))
    return [out]


@converter("LeakyRelu")
def _leaky_relu(imp: Importer, node, a):
    return [imp.emit(g.LeakyReluOp, imp.value(node.input[0]), alpha=float(a.get("alpha", 0.01)))]


@converter("PRelu")
def _prelu(imp: Importer, node, a):
    return [imp.emit(g.PReluOp, imp.value(node.input[0]), imp.value(node.input[1]))]


@converter("Gelu")
def _gelu(imp: Importer, node, a):
    return [imp.emit(g.GeluOp, imp.value(node.input[0]), approximate=a.get("approximate", "none"))]


# ----------------------------------------------------------------------------- matrix ops


def _same_pads(auto_pad: str, size, kernel, strides, dilations) -> tuple[int, ...]:
    """Explicit (top, left, bottom, right) pads for auto_pad SAME_UPPER / SAME_LOWER / VALID."""
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    begin, end = [], []
    for n, k, s, d in zip(size, kernel, strides, dilations):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return tuple(begin + end)


def _window(imp: Importer, node, a, kernel, spatial_dims: tuple[int, ...] = (2,)) -> dict:
    """strides / pads / dilations of a conv or pool window, auto_pad resolved; `spatial_dims`
    lists the window ranks the caller takes."""
    n = len(kernel)
    if n not in spatial_dims:
        raise imp.error(f"{n}-D windows are not supported (kernel {list(kernel)}; "
                        f"supported: {' and '.join(f'{d}-D' for d in spatial_dims)})")
    strides = tuple(a.get("strides", (1,) * n))
    dilations = tuple(a.get("dilations", (1,) * n))
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("", "NOTSET"):
        pads = tuple(a.get("pads", (0,) * 2 * n))
    else:
        pads = _same_pads(auto_pad, imp.shape(node.input[0])[2:], kernel, strides, dilations)
    return {"strides": strides, "pads": pads, "dilations": dilations}


@converter("Conv")
def _conv(imp: Importer, node, a):
    kernel = tuple(a.get("kernel_shape") or imp.shape(node.input[1])[2:])
    window = _window(imp, node, a, kernel, (2, 3))
    bias = imp.value(node.input[2]) if _has(node, 2) else None
    group = int(a.get("group", 1))
    if len(kernel) == 3:
        return [_conv3d(imp, node, kernel, window, bias, group)]
    return [imp.emit(g.Conv2DOp, imp.value(node.input[0]), imp.value(node.input[1]), bias,
                     group=group, **window)]


def _conv3d(imp: Importer, node, kernel, window, bias, group):
    """A 3-D convolution as one 2-D convolution: the kd depth taps of every output depth
    are gathered into the channels, (N, C, D, H, W) -> (N * Do, C * kd, H, W), and the
    weight (O, C/g, kd, kh, kw) read as (O, C/g * kd, kh, kw); depth padding gathers a
    zero slice appended to the input. Intermediate tensors stay 4-D (the npu's tiles)."""
    x = imp.value(node.input[0])
    n, c, depth, h, w = imp.shape(node.input[0])
    weight = imp.const(node.input[1], "Conv3d weight")
    kd = kernel[0]
    (sd, *s_hw), (dd, *d_hw), p = window["strides"], window["dilations"], window["pads"]
    d_out = kernels.window_output_size(depth, kd, sd, p[0], p[3], dd)
    taps = np.arange(d_out)[:, None] * sd - p[0] + np.arange(kd)[None, :] * dd  # (Do, kd) input depths
    taps = np.where((taps < 0) | (taps >= depth), depth, taps).astype(np.int64)  # `depth`: the zero slice
    dtype = g.numpy_dtype(x.type.element_type)

    def op(cls, *operands, **props):
        return _result(imp.emit(cls, *operands, **props))

    def constant(array):
        return imp.builder.insert(g.ConstantOp.from_numpy(array)).output

    flat = op(g.ReshapeOp, x, shape=(n, c, depth, h * w))
    padded = op(g.ConcatOp, [flat, constant(np.zeros((n, c, 1, h * w), dtype=dtype))], axis=2)
    windows = op(g.GatherOp, padded, constant(taps.reshape(-1)), axis=2)  # (N, C, Do * kd, HW)
    windows = op(g.ReshapeOp, windows, shape=(n, c, d_out, kd * h * w))
    folded = op(g.TransposeOp, windows, perm=(0, 2, 1, 3))
    folded = op(g.ReshapeOp, folded, shape=(n * d_out, c * kd, h, w))
    o = weight.shape[0]
    w2 = constant(weight.reshape(o, weight.shape[1] * kd, *weight.shape[3:]).astype(dtype))
    out = op(g.Conv2DOp, folded, w2, bias, group=group, strides=tuple(s_hw),
             pads=(p[1], p[2], p[4], p[5]), dilations=tuple(d_hw))
    ho, wo = g.shape_of(out.type)[2:]
    out = op(g.ReshapeOp, out, shape=(n, d_out, o, ho * wo))
    out = op(g.TransposeOp, out, perm=(0, 2, 1, 3))
    return op(g.ReshapeOp, out, shape=(n, o, d_out, ho, wo))


@converter("MatMul")
def _matmul(imp: Importer, node, a):
    return [imp.emit(g.MatmulOp, imp.value(node.input[0]), imp.value(node.input[1]))]


@converter("CumSum")
def _cumsum(imp: Importer, node, a):
    """A running sum along `axis` is a product with a constant triangular matrix of ones
    (which positions add into which: `exclusive` leaves out the diagonal, `reverse` sums
    from the end), computed in float32 and cast back: exact for integers while every
    partial sum stays within 2^24 (RoBERTa's position ids: a cumsum of the padding mask).
    The axis moves last for the product and back after."""
    x = imp.value(node.input[0])
    shape = imp.shape(node.input[0])
    if not shape:
        raise imp.error("CumSum of a rank-0 tensor: the input needs at least one axis")
    axis = _ints(imp.const(node.input[1], "the axis"))[0]
    if not -len(shape) <= axis < len(shape):
        raise imp.error(f"axis {axis} is out of range for the {len(shape)}-D input {list(shape)}")
    axis %= len(shape)
    n = shape[axis]
    i, j = np.indices((n, n))
    before = (i > j) if a.get("reverse", 0) else (i < j)  # row i adds into column j
    ones = (before | (i == j) if not a.get("exclusive", 0) else before).astype(np.float32)
    last = len(shape) - 1
    perm = tuple(k for k in range(len(shape)) if k != axis) + (axis,)
    if axis != last:
        x = _result(imp.emit(g.TransposeOp, x, perm=perm))
    dtype = imp.tensor_type(node.input[0]).element_type
    f32 = g.element_type_of(np.float32)
    if dtype != f32:
        x = _result(imp.emit(g.CastOp, x, dtype=f32))
    matrix = _result(imp.builder.insert(g.ConstantOp.from_numpy(ones)))
    y = _result(imp.emit(g.MatmulOp, x, matrix))
    if dtype != f32:
        y = _result(imp.emit(g.CastOp, y, dtype=dtype))
    if axis != last:
        y = _result(imp.emit(g.TransposeOp, y, perm=tuple(np.argsort(perm))))
    return [y]


@converter("Gemm")
def _gemm(imp: Importer, node, a):
    c = imp.value(node.input[2]) if _has(node, 2) else None
    return [imp.emit(g.GemmOp, imp.value(node.input[0]), imp.value(node.input[1]), c,
                     alpha=float(a.get("alpha", 1.0)), beta=float(a.get("beta", 1.0)),
                     trans_a=bool(a.get("transA", 0)), trans_b=bool(a.get("transB", 0)))]


# ----------------------------------------------------------------------------- normalisation


@converter("Softmax")
def _softmax(imp: Importer, node, a):
    x = imp.value(node.input[0])
    shape = imp.shape(node.input[0])
    axis = a.get("axis", -1 if imp.opset >= 13 else 1) % max(len(shape), 1)
    if imp.opset >= 13 or axis == len(shape) - 1:
        return [imp.emit(g.SoftmaxOp, x, axis=axis)]
    # opset < 13: softmax over the flattened trailing axes [axis, rank)
    flat = imp.emit(g.ReshapeOp, x, shape=(int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))))
    soft = imp.emit(g.SoftmaxOp, _result(flat), axis=1)
    return [imp.emit(g.ReshapeOp, _result(soft), shape=shape)]


@converter("LayerNormalization", "LayerNorm")
def _layer_norm(imp: Importer, node, a):
    scale = imp.value(node.input[1]) if _has(node, 1) else None
    bias = imp.value(node.input[2]) if _has(node, 2) else None
    x = imp.value(node.input[0])
    axis, eps = int(a.get("axis", -1)), float(a.get("epsilon", 1e-5))
    out = [imp.emit(g.LayerNormOp, x, scale, bias, axis=axis, epsilon=eps)]
    if any(node.output[1:]):
        # the training outputs Mean and InvStdDev, from reductions over the normalised axes
        rank = len(imp.shape(node.input[0]))
        axes = tuple(range(axis % rank, rank))
        mean = _result(imp.emit(g.ReduceMeanOp, x, axes=axes, keepdims=True))
        centred = _result(imp.emit(g.SubOp, x, mean))
        var = _result(imp.emit(g.ReduceMeanOp, _result(imp.emit(g.MulOp, centred, centred)), axes=axes))
        std = _result(imp.emit(g.SqrtOp, _result(imp.emit(g.AddOp, var, _scalar_constant(imp, eps, var)))))
        out += [mean, imp.emit(g.ReciprocalOp, std)]
    return out


@converter("BatchNormalization")
def _batch_norm(imp: Importer, node, a):
    eps = float(a.get("epsilon", 1e-5))
    training = bool(a.get("training_mode", 0)) if imp.opset >= 14 else len([o for o in node.output if o]) > 1
    if imp.opset < 9 and not a.get("spatial", 1):
        raise imp.error("BatchNormalization with spatial = 0 (per-element statistics) is not supported")
    if not training:
        if any(node.output[1:]):
            raise imp.error("BatchNormalization at inference has only one output")
        return [imp.emit(g.BatchNormOp, *(imp.value(n) for n in node.input[:5]), epsilon=eps)]
    # training mode: normalise with the batch statistics; running statistics updated with momentum
    x, scale, bias, running_mean, running_var = (imp.value(n) for n in node.input[:5])
    rank = len(imp.shape(node.input[0]))
    axes = (0,) + tuple(range(2, rank))
    mean = _result(imp.emit(g.ReduceMeanOp, x, axes=axes, keepdims=False))
    mean_b = _result(imp.emit(g.ReduceMeanOp, x, axes=axes, keepdims=True))
    centred = _result(imp.emit(g.SubOp, x, mean_b))
    var = _result(imp.emit(g.ReduceMeanOp, _result(imp.emit(g.MulOp, centred, centred)), axes=axes, keepdims=False))
    y = imp.emit(g.BatchNormOp, x, scale, bias, mean, var, epsilon=eps)
    momentum = float(a.get("momentum", 0.9))
    m = _scalar_constant(imp, momentum, mean)
    one_m = _scalar_constant(imp, 1.0 - momentum, mean)

    def update(running, batch):
        return imp.emit(g.AddOp, _result(imp.emit(g.MulOp, running, m)), _result(imp.emit(g.MulOp, batch, one_m)))
    return [y, update(running_mean, mean), update(running_var, var)]


# ----------------------------------------------------------------------------- pooling


@converter("MaxPool", "AveragePool")
def _pool(imp: Importer, node, a):
    """2-D pools directly; 1-D and 3-D ones as 2-D pools on reshaped views (pooling is
    separable per axis, averages included: the count of a box is the product of its
    per-axis counts)."""
    kernel = tuple(a["kernel_shape"])
    window = _window(imp, node, a, kernel, (1, 2, 3))
    if node.op_type == "MaxPool":
        if a.get("storage_order", 0):
            raise imp.error("MaxPool storage_order 1 is not supported")
        if len(node.output) > 1 and node.output[1]:
            raise imp.error("the MaxPool Indices output is not supported")
    params = dict(ceil_mode=bool(a.get("ceil_mode", 0)), count_include_pad=bool(a.get("count_include_pad", 0)))
    x = imp.value(node.input[0])
    shape = imp.shape(node.input[0])
    s, p, d = window["strides"], window["pads"], window["dilations"]
    if len(kernel) == 2:
        return [_pool2d(imp, node.op_type, x, kernel, s, p, d, **params)]
    reshape = lambda v, dims: _result(imp.emit(g.ReshapeOp, v, shape=tuple(dims)))  # noqa: E731
    if len(kernel) == 1:
        y = _pool2d(imp, node.op_type, reshape(x, (*shape[:2], 1, shape[2])), (1, kernel[0]), (1, s[0]),
                    (0, p[0], 0, p[1]), (1, d[0]), **params)
        return [reshape(y, g.shape_of(y.type)[:2] + g.shape_of(y.type)[3:])]
    n, c, depth, h, w = shape
    hw = _pool2d(imp, node.op_type, reshape(x, (n, c * depth, h, w)), kernel[1:], s[1:],
                 (p[1], p[2], p[4], p[5]), d[1:], **params)
    ho, wo = g.shape_of(hw.type)[2:]
    y = _pool2d(imp, node.op_type, reshape(hw, (n, c, depth, ho * wo)), (kernel[0], 1), (s[0], 1),
                (p[0], 0, p[3], 0), (d[0], 1), **params)
    return [reshape(y, (n, c, g.shape_of(y.type)[2], ho, wo))]


def _pool2d(imp: Importer, op_type: str, x, kernel, strides, pads, dilations, ceil_mode, count_include_pad):
    if op_type == "MaxPool":
        return _result(imp.emit(g.MaxPoolOp, x, kernel=tuple(kernel), strides=tuple(strides), pads=tuple(pads),
                                dilations=tuple(dilations), ceil_mode=ceil_mode))
    if tuple(dilations) != (1, 1):
        return _dilated_avg_pool(imp, x, kernel, strides, pads, dilations, ceil_mode, count_include_pad)
    return _result(imp.emit(g.AvgPoolOp, x, kernel=tuple(kernel), strides=tuple(strides), pads=tuple(pads),
                            ceil_mode=ceil_mode, count_include_pad=count_include_pad))


def _dilated_avg_pool(imp: Importer, x, kernel, strides, pads, dilations, ceil_mode, count_include_pad):
    """A dilated average pool (AveragePool-19) as a depthwise conv with a kernel of ones
    divided by the per-position count of the window elements it averages (a constant)."""
    n, c, h, w = g.shape_of(x.type)
    ext = []
    for size, k, s, d, begin, end in zip((h, w), kernel, strides, dilations, pads[:2], pads[2:]):
        out = kernels.window_output_size(size, k, s, begin, end, d, ceil_mode)
        ext.append(max(0, (out - 1) * s + d * (k - 1) + 1 - (size + begin + end)))  # ceil_mode's extra end
    conv_pads = (pads[0], pads[1], pads[2] + ext[0], pads[3] + ext[1])
    dtype = g.numpy_dtype(x.type.element_type)
    ones = imp.builder.insert(g.ConstantOp.from_numpy(np.ones((c, 1, *kernel), dtype=dtype)))
    total = _result(imp.emit(g.Conv2DOp, x, ones.output, strides=tuple(strides), pads=conv_pads,
                             dilations=tuple(dilations), group=c))
    mask = np.zeros((1, 1, h + conv_pads[0] + conv_pads[2], w + conv_pads[1] + conv_pads[3]), dtype=np.float32)
    if count_include_pad:
        mask[..., : h + pads[0] + pads[2], : w + pads[1] + pads[3]] = 1
    else:
        mask[..., pads[0] : pads[0] + h, pads[1] : pads[1] + w] = 1
    count = kernels.conv2d(mask, np.ones((1, 1, *kernel), dtype=np.float32), None, strides, (0, 0, 0, 0), dilations)
    divisor = imp.builder.insert(g.ConstantOp.from_numpy(np.maximum(count, 1).astype(dtype)))
    return _result(imp.emit(g.DivOp, total, divisor.output))


@converter("GlobalAveragePool")
def _global_avg_pool(imp: Importer, node, a):
    return [imp.emit(g.GlobalAvgPoolOp, imp.value(node.input[0]))]


@converter("GlobalMaxPool")
def _global_max_pool(imp: Importer, node, a):
    rank = len(imp.shape(node.input[0]))
    return [imp.emit(g.ReduceMaxOp, imp.value(node.input[0]), axes=tuple(range(2, rank)), keepdims=True)]


# ----------------------------------------------------------------------------- reductions

_REDUCE = {
    "ReduceSum": g.ReduceSumOp, "ReduceMean": g.ReduceMeanOp, "ReduceMax": g.ReduceMaxOp,
    "ReduceMin": g.ReduceMinOp, "ReduceProd": g.ReduceProdOp, "ReduceL1": g.ReduceL1Op,
    "ReduceL2": g.ReduceL2Op, "ReduceSumSquare": g.ReduceSumSquareOp,
    "ReduceLogSum": g.ReduceLogSumOp, "ReduceLogSumExp": g.ReduceLogSumExpOp,
}


@converter(*_REDUCE)
def _reduce(imp: Importer, node, a):
    axes_as_input = imp.opset >= (13 if node.op_type == "ReduceSum" else 18)
    if axes_as_input:
        axes = _ints(imp.const(node.input[1], "axes")) if _has(node, 1) else ()
    else:
        axes = tuple(a.get("axes", ()))
    rank = len(imp.shape(node.input[0]))
    if not axes and a.get("noop_with_empty_axes", 0):
        return [imp.value(node.input[0])]
    axes = tuple(sorted(ax % rank for ax in axes)) or tuple(range(rank))
    return [imp.emit(_REDUCE[node.op_type], imp.value(node.input[0]), axes=axes,
                     keepdims=bool(a.get("keepdims", 1)))]


@converter("ArgMax", "ArgMin")
def _arg_reduce(imp: Importer, node, a):
    op = g.ArgMaxOp if node.op_type == "ArgMax" else g.ArgMinOp
    return [imp.emit(op, imp.value(node.input[0]), axis=int(a.get("axis", 0)),
                     keepdims=bool(a.get("keepdims", 1)), select_last_index=bool(a.get("select_last_index", 0)))]


@converter("TopK")
def _topk(imp: Importer, node, a):
    """A known k gives exact shapes; a k computed at run time sorts the whole axis (the
    static upper bound) and the outputs carry k as their valid count."""
    axis = int(a.get("axis", -1))
    largest = bool(a.get("largest", 1))
    x = imp.value(node.input[0])
    if imp.opset < 10 or imp.is_known(node.input[1]):
        k = int(a["k"]) if imp.opset < 10 else _ints(imp.known[node.input[1]])[0]
        return list(imp.emit(g.TopKOp, x, k=k, axis=axis, largest=largest).results)
    shape = imp.shape(node.input[0])
    op = imp.emit(g.TopKOp, x, k=shape[axis], axis=axis, largest=largest)
    count = node.output[0] + ".count"
    imp.bind(count, _result(imp.emit(g.ReshapeOp, imp.value(node.input[1]), shape=())))
    for name in node.output:
        if name:
            imp.bounded[name] = (count, axis % len(shape))
    return list(op.results)


# ----------------------------------------------------------------------------- data movement


@converter("Reshape")
def _reshape(imp: Importer, node, a):
    src = imp.shape(node.input[0])
    target = list(_ints(imp.const(node.input[1], "Reshape shape")))
    if not a.get("allowzero", 0):
        target = [src[i] if d == 0 else d for i, d in enumerate(target)]
    if target.count(-1) > 1:
        raise imp.error(f"shape {target} has more than one -1")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(src)) // max(known, 1)
    return [imp.emit(g.ReshapeOp, imp.value(node.input[0]), shape=tuple(target))]


@converter("Flatten")
def _flatten(imp: Importer, node, a):
    return [imp.emit(g.FlattenOp, imp.value(node.input[0]), axis=int(a.get("axis", 1)))]


def _axes(imp: Importer, node, a, since: int) -> tuple[int, ...] | None:
    if imp.opset >= since:
        return _ints(imp.const(node.input[1], "axes")) if _has(node, 1) else None
    return tuple(a["axes"]) if "axes" in a else None


@converter("Squeeze")
def _squeeze(imp: Importer, node, a):
    axes = _axes(imp, node, a, 13)
    shape = imp.shape(node.input[0])
    if axes is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    return [imp.emit(g.SqueezeOp, imp.value(node.input[0]), axes=tuple(ax % len(shape) for ax in axes))]


@converter("Unsqueeze")
def _unsqueeze(imp: Importer, node, a):
    axes = _axes(imp, node, a, 13)
    if axes is None:
        raise imp.error("Unsqueeze needs axes")
    rank = len(imp.shape(node.input[0])) + len(axes)
    return [imp.emit(g.UnsqueezeOp, imp.value(node.input[0]), axes=tuple(sorted(ax % rank for ax in axes)))]


@converter("Transpose")
def _transpose(imp: Importer, node, a):
    rank = len(imp.shape(node.input[0]))
    perm = tuple(a.get("perm", range(rank - 1, -1, -1)))
    return [imp.emit(g.TransposeOp, imp.value(node.input[0]), perm=perm)]


@converter("Concat")
def _concat(imp: Importer, node, a):
    names = [n for n in node.input if n and np.prod(imp.shape(n)) > 0]
    rank = len(imp.shape(names[0]))
    return [imp.emit(g.ConcatOp, [imp.value(n) for n in names], axis=int(a["axis"]) % rank)]


@converter("Split")
def _split(imp: Importer, node, a):
    shape = imp.shape(node.input[0])
    axis = int(a.get("axis", 0)) % len(shape)
    outputs = [o for o in node.output]
    if imp.opset >= 13 and _has(node, 1):
        sizes = _ints(imp.const(node.input[1], "split"))
    elif "split" in a:
        sizes = tuple(a["split"])
    else:
        parts = int(a.get("num_outputs", len(outputs)))
        step = -(-shape[axis] // parts)
        sizes = tuple(min(step, shape[axis] - i * step) for i in range(parts))
    op = imp.emit(g.SplitOp, imp.value(node.input[0]), axis=axis, sizes=sizes)
    return list(op.results)


@converter("Slice")
def _slice(imp: Importer, node, a):
    shape = imp.shape(node.input[0])
    if imp.opset < 10:
        starts, ends = tuple(a["starts"]), tuple(a["ends"])
        axes = tuple(a.get("axes", range(len(starts))))
        steps = (1,) * len(starts)
    else:
        starts = _ints(imp.const(node.input[1], "starts"))
        ends = _ints(imp.const(node.input[2], "ends"))
        axes = _ints(imp.const(node.input[3], "axes")) if _has(node, 3) else tuple(range(len(starts)))
        steps = _ints(imp.const(node.input[4], "steps")) if _has(node, 4) else (1,) * len(starts)
    axes = tuple(ax % len(shape) for ax in axes)
    # clamp the int64 sentinels exporters use to [-dim-1, dim]: same selection, readable IR
    starts = tuple(max(-shape[ax] - 1, min(s, shape[ax])) for s, ax in zip(starts, axes))
    ends = tuple(max(-shape[ax] - 1, min(e, shape[ax])) for e, ax in zip(ends, axes))
    steps_prop = steps if any(s != 1 for s in steps) else None
    return [imp.emit(g.SliceOp, imp.value(node.input[0]), starts=starts, ends=ends, axes=axes, steps=steps_prop)]


@converter("Gather")
def _gather(imp: Importer, node, a):
    data_shape = imp.shape(node.input[0])
    axis = int(a.get("axis", 0)) % len(data_shape)
    if imp.is_known(node.input[1]):
        idx = imp.known[node.input[1]].astype(np.int64)
        imp.known[node.input[1]] = np.where(idx < 0, idx + data_shape[axis], idx)
    return [imp.emit(g.GatherOp, imp.value(node.input[0]), imp.value(node.input[1]), axis=axis)]


@converter("Expand")
def _expand(imp: Importer, node, a):
    shape = _ints(imp.const(node.input[1], "Expand shape"))
    try:
        target = g.broadcast_shapes(imp.shape(node.input[0]), shape)
    except g.ShapeError as e:
        raise imp.error(str(e)) from None
    return [imp.emit(g.ExpandOp, imp.value(node.input[0]), shape=target)]


@converter("Cast", "CastLike")
def _cast(imp: Importer, node, a):
    if node.op_type == "CastLike":
        dtype = imp.tensor_type(node.input[1]).element_type
    else:
        to = int(a["to"])
        try:
            np_dtype = helper.tensor_dtype_to_np_dtype(to)
        except (KeyError, ValueError):
            np_dtype = np.dtype(object)
        if np.dtype(np_dtype) == object or np.dtype(np_dtype).name in WIDENED_FLOATS:
            raise imp.error(f"Cast to {onnx.TensorProto.DataType.Name(to)} is not supported")
        dtype = imp.element_type(np_dtype, f"Cast to {onnx.TensorProto.DataType.Name(to)}")
    x = imp.value(node.input[0])
    if dtype == imp.tensor_type(node.input[0]).element_type:
        return [x]
    return [imp.emit(g.CastOp, x, dtype=dtype, saturate=bool(a.get("saturate", 1)))]


# ----------------------------------------------------------------------------- indexing


@converter("GatherElements")
def _gather_elements(imp: Importer, node, a):
    return [imp.emit(g.GatherElementsOp, imp.value(node.input[0]), imp.value(node.input[1]),
                     axis=int(a.get("axis", 0)))]


@converter("GatherND")
def _gather_nd(imp: Importer, node, a):
    batch_dims = int(a.get("batch_dims", 0))
    if (batch_dims == 0 and imp.is_known(node.input[1]) and not imp.is_known(node.input[0])
            and imp.known[node.input[1]].ndim > 4):
        return [_gather_nd_as_gather(imp, node)]
    return [imp.emit(g.GatherNDOp, imp.value(node.input[0]), imp.value(node.input[1]),
                     batch_dims=int(a.get("batch_dims", 0)))]


def _gather_nd_as_gather(imp: Importer, node):
    """GatherND of constant indices of rank > 4 (batch_dims 0) as one Gather of a flat index
    on the data with its k indexed dims merged: what torch.onnx.export writes for
    transformers' mask indexing and for adaptive pooling with uneven bins (5-D index grids,
    which the npu's 4-D tiles do not take as they are)."""
    data_shape = imp.shape(node.input[0])
    idx = imp.known[node.input[1]].astype(np.int64)
    k = idx.shape[-1]
    lead = data_shape[:k]
    idx = np.where(idx < 0, idx + np.array(lead, dtype=np.int64), idx)
    if ((idx < 0) | (idx >= np.array(lead, dtype=np.int64))).any():
        raise imp.error(f"GatherND index out of range for the indexed dims {list(lead)}")
    flat_index = np.ravel_multi_index(tuple(np.moveaxis(idx, -1, 0)), lead).reshape(-1).astype(np.int64)
    index = imp.builder.insert(g.ConstantOp.from_numpy(flat_index)).output
    data = _result(imp.emit(g.ReshapeOp, imp.value(node.input[0]), shape=(math.prod(lead), *data_shape[k:])))
    gathered = _result(imp.emit(g.GatherOp, data, index, axis=0))
    return imp.emit(g.ReshapeOp, gathered, shape=(*idx.shape[:-1], *data_shape[k:]))


@converter("OneHot")
def _one_hot(imp: Importer, node, a):
    depth = int(_scalar(imp.const(node.input[1], "OneHot depth")))
    return [imp.emit(g.OneHotOp, imp.value(node.input[0]), imp.value(node.input[2]), depth=depth,
                     axis=int(a.get("axis", -1)))]


@converter("Einsum")
def _einsum(imp: Importer, node, a):
    return [imp.emit(g.EinsumOp, [imp.value(n) for n in node.input if n], equation=str(a["equation"]))]


# ----------------------------------------------------------------------------- resampling


def _resize_target(imp: Importer, node, a, shape) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Output shape and per-axis scales of a Resize from its scales or sizes (and axes,
    keep_aspect_ratio_policy), as ONNX computes them."""
    rank = len(shape)
    axes = [ax % rank for ax in a.get("axes", range(rank))]
    if imp.opset < 11:
        scales_name, sizes_name = node.input[1], None
    else:
        scales_name = node.input[2] if _has(node, 2) else None
        sizes_name = node.input[3] if _has(node, 3) else None
    scales_in = imp.const(scales_name, "Resize scales") if scales_name else None
    if scales_in is not None and scales_in.size == 0:
        scales_in = None
    if scales_in is not None:
        scales = [1.0] * rank
        for ax, v in zip(axes, np.asarray(scales_in, dtype=np.float64).reshape(-1)):
            scales[ax] = float(np.float32(v))
        out = tuple(int(np.floor(d * s)) for d, s in zip(shape, scales))
        return out, tuple(scales)
    if sizes_name is None:
        raise imp.error("Resize needs scales or sizes")
    sizes = list(shape)
    for ax, v in zip(axes, _ints(imp.const(sizes_name, "Resize sizes"))):
        sizes[ax] = v
    scales = [sizes[i] / shape[i] for i in range(rank)]
    policy = a.get("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        pick = min if policy == "not_larger" else max
        scale = pick(scales[ax] for ax in axes)
        for ax in axes:
            scales[ax] = scale
            sizes[ax] = int(np.round(scale * shape[ax]))
    return tuple(sizes), tuple(float(s) for s in scales)


@converter("Resize", "Upsample")
def _resize(imp: Importer, node, a):
    shape = imp.shape(node.input[0])
    out, scales = _resize_target(imp, node, a, shape)
    mode = a.get("mode", "nearest")
    coords = a.get("coordinate_transformation_mode", "half_pixel" if imp.opset >= 11 else "asymmetric")
    nearest = a.get("nearest_mode", "round_prefer_floor" if imp.opset >= 11 else "floor")
    roi = ()
    if coords == "tf_crop_and_resize":
        roi_values = np.asarray(imp.const(node.input[1], "Resize roi"), dtype=np.float64).reshape(-1)
        rank = len(shape)
        axes = [ax % rank for ax in a.get("axes", range(rank))]
        full = [0.0] * rank + [1.0] * rank
        for i, ax in enumerate(axes):
            full[ax], full[ax + rank] = roi_values[i], roi_values[i + len(axes)]
        roi = tuple(float(v) for v in full)
    return [imp.emit(g.ResizeOp, imp.value(node.input[0]), shape=out, scales=scales, mode=mode,
                     coordinate_transformation_mode=coords, nearest_mode=nearest,
                     cubic_coeff_a=float(a.get("cubic_coeff_a", -0.75)),
                     exclude_outside=bool(a.get("exclude_outside", 0)),
                     extrapolation_value=float(a.get("extrapolation_value", 0.0)),
                     antialias=bool(a.get("antialias", 0)), roi=roi or None)]


@converter("LRN")
def _lrn(imp: Importer, node, a):
    return [imp.emit(g.LRNOp, imp.value(node.input[0]), size=int(a["size"]), alpha=float(a.get("alpha", 1e-4)),
                     beta=float(a.get("beta", 0.75)), bias=float(a.get("bias", 1.0)))]


# ----------------------------------------------------------------------------- detection


@converter("RoiAlign")
def _roi_align(imp: Importer, node, a):
    coords = a.get("coordinate_transformation_mode", "half_pixel" if imp.opset >= 16 else "output_half_pixel")
    return [imp.emit(g.RoiAlignOp, *(imp.value(n) for n in node.input[:3]),
                     output_height=int(a.get("output_height", 1)), output_width=int(a.get("output_width", 1)),
                     sampling_ratio=int(a.get("sampling_ratio", 0)),
                     spatial_scale=float(a.get("spatial_scale", 1.0)), mode=a.get("mode", "avg"),
                     half_pixel=coords == "half_pixel")]


@converter("MaxRoiPool")
def _max_roi_pool(imp: Importer, node, a):
    return [imp.emit(g.MaxRoiPoolOp, imp.value(node.input[0]), imp.value(node.input[1]),
                     pooled_shape=tuple(a["pooled_shape"]), spatial_scale=float(a.get("spatial_scale", 1.0)))]


@converter("NonMaxSuppression")
def _nms(imp: Importer, node, a):
    """A static upper bound of rows plus the valid count (see graph.non_max_suppression)."""
    def scalar(i: int, what: str, default: float) -> float:
        return _scalar(imp.const(node.input[i], what)) if _has(node, i) else default
    op = imp.emit(g.NonMaxSuppressionOp, imp.value(node.input[0]), imp.value(node.input[1]),
                  max_output_boxes_per_class=int(scalar(2, "max_output_boxes_per_class", 0)),
                  iou_threshold=scalar(3, "iou_threshold", 0.0),
                  score_threshold=scalar(4, "score_threshold", float("-inf")),
                  center_point_box=bool(a.get("center_point_box", 0)))
    count_name = node.output[0] + ".count"
    imp.bind(count_name, op.count)
    imp.bounded[node.output[0]] = (count_name, 0)
    return [op.selected]
