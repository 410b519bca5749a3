"""Numpy compute kernels shared by the reference interpreter and the NPU emulator.

One definition of every numeric operation, so the graph-level golden results and the
emulated tiles are computed the same way: inputs are upcast to float32 (fp16 storage,
fp32 accumulation) and results are returned in float32; callers round to the storage
type. Layouts follow ONNX: activations NCHW, conv weights OIHW, pads as
(top, left, bottom, right). This module depends on numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

F32 = np.float32


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=F32)


def window_output_size(
    size: int, kernel: int, stride: int, pad_begin: int, pad_end: int,
    dilation: int = 1, ceil_mode: bool = False,
) -> int:
    """Output length of a sliding window (conv or pooling) along one axis."""
    span = dilation * (kernel - 1) + 1
    num = size + pad_begin + pad_end - span
    out = (-(-num // stride) if ceil_mode else num // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_begin:
        out -= 1  # the last window must start inside the input or the begin padding
    return out


# ----------------------------------------------------------------------------- matrix unit


def conv2d_columns(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0), dilations: Sequence[int] = (1, 1), groups: int = 1,
) -> np.ndarray:
    """The im2col matrix of a (non-depthwise) conv2d input: (n, groups, cg*kh*kw, ho*wo),
    float32 (a view of `x` for a 1x1 conv without strides or pads)."""
    x = _f32(x)
    n, c, h, wd = x.shape
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    cg = c // groups
    if kh == kw == 1 and sh == sw == 1 and not any(pads):
        return x.reshape(n, groups, cg, h * wd)
    ho = window_output_size(h, kh, sh, pt, pb, dh)
    wo = window_output_size(wd, kw, sw, pl, pr, dw)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))) if any(pads) else x
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    win = sliding_window_view(xp, (span_h, span_w), axis=(2, 3))
    win = win[:, :, : (ho - 1) * sh + 1 : sh, : (wo - 1) * sw + 1 : sw, ::dh, ::dw]
    cols = win.reshape(n, groups, cg, ho, wo, kh, kw)  # win: (n, c, ho, wo, kh, kw)
    return cols.transpose(0, 1, 2, 5, 6, 3, 4).reshape(n, groups, cg * kh * kw, ho * wo)


def _windowed(w_shape: Sequence[int], groups: int, strides: Sequence[int], pads: Sequence[int]) -> bool:
    """Whether conv2d computes a depthwise conv from windows rather than im2col columns."""
    o, cg, kh, kw = w_shape
    pointwise = kh == kw == 1 and tuple(strides) == (1, 1) and not any(pads)
    return cg == 1 and o == groups and not pointwise


def uses_columns(w_shape: Sequence[int], groups: int, strides: Sequence[int], pads: Sequence[int]) -> bool:
    """Whether conv2d works on `conv2d_columns` of its input (all but depthwise convs)."""
    return not _windowed(w_shape, groups, strides, pads)


def conv2d(
    x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
    strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1), groups: int = 1, columns: np.ndarray | None = None,
) -> np.ndarray:
    """2-D convolution, NCHW x OIHW -> NCHW, float32 accumulation (im2col + matmul).
    `columns` is `conv2d_columns` of x if the caller has it already."""
    w = _f32(w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    ho = window_output_size(h, kh, sh, pt, pb, dh)
    wo = window_output_size(wd, kw, sw, pl, pr, dw)
    og = o // groups
    if _windowed(w.shape, groups, strides, pads):  # depthwise: no reduction over channels
        x = _f32(x)
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))) if any(pads) else x
        span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        win = sliding_window_view(xp, (span_h, span_w), axis=(2, 3))
        win = win[:, :, : (ho - 1) * sh + 1 : sh, : (wo - 1) * sw + 1 : sw, ::dh, ::dw]
        out = np.einsum("ncpqij,cij->ncpq", win, w[:, 0], optimize=True)
    else:
        if columns is None:
            columns = conv2d_columns(x, (kh, kw), strides, pads, dilations, groups)
        out = np.matmul(w.reshape(groups, og, cg * kh * kw), columns)
    out = out.reshape(n, o, ho, wo)
    if bias is not None:
        out += _f32(bias).reshape(1, o, 1, 1)
    return out


ACTIVATIONS = ("none", "relu", "relu6")


def epilogue(acc: np.ndarray, residual: np.ndarray | None = None, activation: str = "none") -> np.ndarray:
    """The matrix unit's fused epilogue after bias: + residual, then relu / relu6."""
    if residual is not None:
        acc = acc + _f32(residual)
    if activation == "relu":
        return np.maximum(acc, F32(0))
    if activation == "relu6":
        return np.clip(acc, F32(0), F32(6))
    if activation != "none":
        raise KeyError(f"unknown activation '{activation}' (expected one of {ACTIVATIONS})")
    return acc


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched, broadcasting matrix product with float32 accumulation."""
    return np.matmul(_f32(a), _f32(b))


# ----------------------------------------------------------------------------- vector unit

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def binary(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise binary op with numpy broadcasting."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return BINARY[kind](_f32(a), _f32(b))


def erf(x: np.ndarray) -> np.ndarray:
    """Error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7), computed in float64."""
    x64 = np.asarray(x, dtype=np.float64)
    sign = np.sign(x64)
    a = np.abs(x64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(F32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    x = _f32(x)
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(F32)


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """GELU: exact (erf) or the tanh approximation."""
    x = _f32(x)
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
        return (0.5 * x * (1.0 + np.tanh(inner))).astype(F32)
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(F32)


def unary(kind: str, x: np.ndarray, **params: float | str) -> np.ndarray:
    """Elementwise unary op; `params` carries clip bounds, leaky_relu alpha, gelu mode."""
    x = _f32(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        match kind:
            case "relu":
                return np.maximum(x, F32(0))
            case "clip":
                return np.clip(x, F32(params["min"]), F32(params["max"]))
            case "leaky_relu":
                return np.where(x >= 0, x, x * F32(params["alpha"]))
            case "sigmoid":
                return sigmoid(x)
            case "tanh":
                return np.tanh(x)
            case "gelu":
                return gelu(x, str(params.get("approximate", "none")))
            case "erf":
                return erf(x)
            case "exp":
                return np.exp(x)
            case "sqrt":
                return np.sqrt(x)
            case "rsqrt":
                return 1.0 / np.sqrt(x)
            case "reciprocal":
                return 1.0 / x
            case "abs":
                return np.abs(x)
            case "neg":
                return -x
            case "log":
                return np.log(x)
    raise KeyError(f"unknown unary kernel '{kind}'")


UNARY_KINDS = (
    "relu", "clip", "leaky_relu", "sigmoid", "tanh", "gelu", "erf", "exp", "sqrt",
    "rsqrt", "reciprocal", "abs", "neg", "log",
)


def prelu(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    x = _f32(x)
    return np.where(x >= 0, x, x * _f32(slope))


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = _f32(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def layer_norm(
    x: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None,
    axis: int = -1, epsilon: float = 1e-5,
) -> np.ndarray:
    """Normalise over the axes from `axis` to the end, then scale and shift."""
    x = _f32(x)
    axis = axis % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    out = centred / np.sqrt(var + F32(epsilon))
    if scale is not None:
        out = out * _f32(scale)
    if bias is not None:
        out = out + _f32(bias)
    return out


def batch_norm(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray,
    var: np.ndarray, epsilon: float = 1e-5,
) -> np.ndarray:
    """Inference batch normalisation over axis 1."""
    x = _f32(x)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = _f32(scale) / np.sqrt(_f32(var) + F32(epsilon))
    return (x - _f32(mean).reshape(shape)) * inv.reshape(shape) + _f32(bias).reshape(shape)


def _pool_windows(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
    dilations: Sequence[int], ceil_mode: bool, fill: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Windows (n, c, ho, wo, kh, kw) over x padded with `fill`, and a validity mask."""
    _, _, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    ho = window_output_size(h, kh, sh, pt, pb, dh, ceil_mode)
    wo = window_output_size(w, kw, sw, pl, pr, dw, ceil_mode)
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    # extra end padding so ceil_mode windows are complete
    eb = max(0, (ho - 1) * sh + span_h - (h + pt + pb))
    er = max(0, (wo - 1) * sw + span_w - (w + pl + pr))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb + eb), (pl, pr + er)), constant_values=fill)
    mask = np.zeros((h + pt + pb + eb, w + pl + pr + er), dtype=F32)
    mask[pt : pt + h, pl : pl + w] = 1.0
    pad_mask = np.zeros_like(mask)
    pad_mask[: h + pt + pb, : w + pl + pr] = 1.0  # explicit padding counts for count_include_pad

    def windows(a: np.ndarray) -> np.ndarray:
        v = sliding_window_view(a, (span_h, span_w), axis=(a.ndim - 2, a.ndim - 1))
        return v[..., : (ho - 1) * sh + 1 : sh, : (wo - 1) * sw + 1 : sw, ::dh, ::dw]

    return windows(xp), np.stack([windows(mask), windows(pad_mask)])


def max_pool(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
    pads: Sequence[int] = (0, 0, 0, 0), dilations: Sequence[int] = (1, 1),
    ceil_mode: bool = False,
) -> np.ndarray:
    win, _ = _pool_windows(_f32(x), kernel, strides, pads, dilations, ceil_mode, -np.inf)
    return win.max(axis=(-2, -1))


def avg_pool(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
    pads: Sequence[int] = (0, 0, 0, 0), ceil_mode: bool = False,
    count_include_pad: bool = False,
) -> np.ndarray:
    win, masks = _pool_windows(_f32(x), kernel, strides, pads, (1, 1), ceil_mode, 0.0)
    count = masks[1 if count_include_pad else 0].sum(axis=(-2, -1))
    return win.sum(axis=(-2, -1)) / count


def global_avg_pool(x: np.ndarray) -> np.ndarray:
    x = _f32(x)
    return np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True)


REDUCE = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max}


def reduce(kind: str, x: np.ndarray, axes: Sequence[int], keepdims: bool) -> np.ndarray:
    return REDUCE[kind](_f32(x), axis=tuple(axes), keepdims=keepdims)


def gather(data: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """ONNX Gather: negative indices count from the end of `axis`."""
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return np.take(data, idx, axis=axis)
