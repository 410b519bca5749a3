"""Per-operator ONNX -> graph conversion.

`convert(importer, node)` first drops Identity/Dropout, then folds any node whose inputs
are all known at import time (with onnx's reference implementation, so every operator's
exact semantics are available for shape arithmetic), and otherwise calls the converter
registered for the node's op type. Converters read attributes with the node's opset
defaults and emit graph ops through `Importer.emit`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from stc_mlir.dialects import graph as g
from stc_mlir.frontend.onnx_importer import Importer
from stc_mlir.frontend.onnx_patterns import DOMAIN

Converter = Callable[[Importer, onnx.NodeProto, dict], list]
CONVERTERS: dict[str, Converter] = {}
ALIASES = ("Identity", "Dropout")


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


def convert(imp: Importer, node: onnx.NodeProto) -> None:
    if node.op_type in ALIASES:
        if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1]:
            raise imp.error("the Dropout mask output is not supported")
        source = node.input[0]
        if imp.is_known(source):
            imp.bind(node.output[0], imp.known[source])
        else:
            imp.values[node.output[0]] = imp.value(source)
        return
    attrs = _attrs(node)
    if node.op_type == "Shape" and not imp.is_known(node.input[0]):
        shape = np.array(imp.shape(node.input[0]), dtype=np.int64)
        start, end = attrs.get("start", 0), attrs.get("end", None)
        imp.bind(node.output[0], shape[start:end])
        return
    if node.op_type == "Size" and not imp.is_known(node.input[0]):
        imp.bind(node.output[0], np.array(np.prod(imp.shape(node.input[0])), dtype=np.int64))
        return
    inputs = [n for n in node.input if n]
    if node.domain != DOMAIN and all(imp.is_known(n) for n in inputs):
        _fold(imp, node)
        return
    fn = CONVERTERS.get(node.op_type)
    if fn is None:
        raise imp.error(
            f"unsupported operator '{node.op_type}' (supported: {', '.join(sorted(CONVERTERS))})"
        )
    results = fn(imp, node, attrs)
    for name, value in zip(node.output, results):
        if name:
            imp.bind(name, value if isinstance(value, np.ndarray) else _result(value))
    for name in node.output[len(results):]:
        if name:
            raise imp.error(f"output '{name}' of {node.op_type} is not supported")


def _result(value):
    return value.results[0] if hasattr(value, "results") else value


def _fold(imp: Importer, node: onnx.NodeProto) -> None:
    """Evaluate a node whose inputs are all known, with onnx's reference semantics."""
    feeds = {n: imp.known[n] for n in node.input if n}
    try:
        outputs = ReferenceEvaluator(node, opsets={"": imp.opset}).run(None, feeds)
    except Exception as e:
        raise imp.error(f"cannot fold constant node: {type(e).__name__}: {e}") from None
    for name, value in zip(node.output, outputs):
        if name:
            imp.bind(name, np.asarray(value))


def _scalar(v: np.ndarray) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def _ints(v) -> tuple[int, ...]:
    return tuple(int(i) for i in np.asarray(v).reshape(-1))


# ----------------------------------------------------------------------------- elementwise

_UNARY = {
    "Relu": g.ReluOp, "Sigmoid": g.SigmoidOp, "Tanh": g.TanhOp, "Erf": g.ErfOp, "Exp": g.ExpOp,
    "Log": g.LogOp, "Sqrt": g.SqrtOp, "Abs": g.AbsOp, "Neg": g.NegOp, "Reciprocal": g.ReciprocalOp,
}
_BINARY = {
    "Add": g.AddOp, "Sub": g.SubOp, "Mul": g.MulOp, "Div": g.DivOp, "Pow": g.PowOp,
    "Max": g.MaximumOp, "Min": g.MinimumOp,
}


@converter(*_UNARY)
def _unary(imp: Importer, node, a):
    return [imp.emit(_UNARY[node.op_type], imp.value(node.input[0]))]


@converter(*_BINARY)
def _binary(imp: Importer, node, a):
    names = [n for n in node.input if n]
    acc = imp.value(names[0])
    if len(names) == 1:
        return [acc]
    for name in names[1:]:  # Max/Min are variadic
        acc = _result(imp.emit(_BINARY[node.op_type], acc, imp.value(name)))
    return [acc]


@converter("Sum")
def _sum(imp: Importer, node, a):
    return [imp.emit(g.SumOp, [imp.value(n) for n in node.input if n])]


@converter("Clip")
def _clip(imp: Importer, node, a):
    lo, hi = a.get("min", -np.inf), a.get("max", np.inf)
    if imp.opset >= 11:
        lo = _scalar(imp.const(node.input[1], "Clip min")) if _has(node, 1) else -np.inf
        hi = _scalar(imp.const(node.input[2], "Clip max")) if _has(node, 2) else np.inf
    return [imp.emit(g.ClipOp, imp.value(node.input[0]), min=float(lo), max=float(hi))]


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


def _window(imp: Importer, node, a, kernel) -> dict:
    """strides / pads / dilations of a 2-D conv or pool, auto_pad resolved."""
    if len(kernel) != 2:
        raise imp.error(f"only 2-D windows are supported, got kernel {list(kernel)}")
    strides = tuple(a.get("strides", (1, 1)))
    dilations = tuple(a.get("dilations", (1, 1)))
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("", "NOTSET"):
        pads = tuple(a.get("pads", (0, 0, 0, 0)))
    else:
        pads = _same_pads(auto_pad, imp.shape(node.input[0])[2:], kernel, strides, dilations)
    return {"strides": strides, "pads": pads, "dilations": dilations}


@converter("Conv")
def _conv(imp: Importer, node, a):
    kernel = a.get("kernel_shape") or imp.shape(node.input[1])[2:]
    window = _window(imp, node, a, kernel)
    bias = imp.value(node.input[2]) if _has(node, 2) else None
    return [imp.emit(g.Conv2DOp, imp.value(node.input[0]), imp.value(node.input[1]), bias,
                     group=int(a.get("group", 1)), **window)]


@converter("MatMul")
def _matmul(imp: Importer, node, a):
    return [imp.emit(g.MatmulOp, imp.value(node.input[0]), imp.value(node.input[1]))]


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
    return [imp.emit(g.LayerNormOp, imp.value(node.input[0]), scale, bias,
                     axis=int(a.get("axis", -1)), epsilon=float(a.get("epsilon", 1e-5)))]


@converter("BatchNormalization")
def _batch_norm(imp: Importer, node, a):
    if a.get("training_mode", 0):
        raise imp.error("training_mode BatchNormalization is not supported")
    return [imp.emit(g.BatchNormOp, *(imp.value(n) for n in node.input[:5]),
                     epsilon=float(a.get("epsilon", 1e-5)))]


# ----------------------------------------------------------------------------- pooling


@converter("MaxPool", "AveragePool")
def _pool(imp: Importer, node, a):
    kernel = tuple(a["kernel_shape"])
    window = _window(imp, node, a, kernel)
    x = imp.value(node.input[0])
    ceil = bool(a.get("ceil_mode", 0))
    if node.op_type == "MaxPool":
        if a.get("storage_order", 0):
            raise imp.error("MaxPool storage_order 1 is not supported")
        return [imp.emit(g.MaxPoolOp, x, kernel=kernel, ceil_mode=ceil, **window)]
    if window["dilations"] != (1, 1):
        raise imp.error(f"AveragePool dilations {window['dilations']} are not supported")
    del window["dilations"]
    return [imp.emit(g.AvgPoolOp, x, kernel=kernel, ceil_mode=ceil,
                     count_include_pad=bool(a.get("count_include_pad", 0)), **window)]


@converter("GlobalAveragePool")
def _global_avg_pool(imp: Importer, node, a):
    return [imp.emit(g.GlobalAvgPoolOp, imp.value(node.input[0]))]


@converter("GlobalMaxPool")
def _global_max_pool(imp: Importer, node, a):
    rank = len(imp.shape(node.input[0]))
    return [imp.emit(g.ReduceMaxOp, imp.value(node.input[0]), axes=tuple(range(2, rank)), keepdims=True)]


# ----------------------------------------------------------------------------- reductions

_REDUCE = {"ReduceSum": g.ReduceSumOp, "ReduceMean": g.ReduceMeanOp, "ReduceMax": g.ReduceMaxOp}


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


@converter("Cast")
def _cast(imp: Importer, node, a):
    np_dtype = helper.tensor_dtype_to_np_dtype(int(a["to"]))
    x = imp.value(node.input[0])
    dtype = imp.element_type(np_dtype)
    if dtype == imp.tensor_type(node.input[0]).element_type:
        return [x]
    return [imp.emit(g.CastOp, x, dtype=dtype)]
