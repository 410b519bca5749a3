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
    # one strided copy per kernel position into zeros (the padding), no padded copy of x
    cols = (np.zeros if any(pads) else np.empty)((n, c, kh, kw, ho, wo), F32)
    for i, j, dst, src in _taps((kh, kw), strides, pads, dilations, (h, wd), (ho, wo)):
        cols[:, :, i, j, dst[0], dst[1]] = x[:, :, src[0], src[1]]
    return cols.reshape(n, groups, cg * kh * kw, ho * wo)


def _taps(kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
          dilations: Sequence[int], size: Sequence[int], out: Sequence[int]):
    """Per kernel position (i, j) that sees any input: the (rows, cols) slices of the
    output it contributes to and of the input it reads there (outside them: padding)."""
    per_axis = []
    for k, d, s, pad, n, m in zip(kernel, dilations, strides, pads[:2], size, out):
        axis = []
        for t in range(k):
            lo = max(0, -(-(pad - t * d) // s))  # first output whose input is inside
            hi = min(m, (n - 1 + pad - t * d) // s + 1)
            if hi > lo:
                first = lo * s + t * d - pad
                axis.append((t, slice(lo, hi), slice(first, first + (hi - lo - 1) * s + 1, s)))
        per_axis.append(axis)
    for i, rows, in_rows in per_axis[0]:
        for j, cols, in_cols in per_axis[1]:
            yield i, j, (rows, cols), (in_rows, in_cols)


def _windowed(w_shape: Sequence[int], groups: int, strides: Sequence[int], pads: Sequence[int]) -> bool:
    """Whether conv2d computes a depthwise conv from windows rather than im2col columns."""
    o, cg, kh, kw = w_shape
    pointwise = kh == kw == 1 and tuple(strides) == (1, 1) and not any(pads)
    return cg == 1 and o == groups and not pointwise


def depthwise_windows(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int] = (1, 1),
    pads: Sequence[int] = (0, 0, 0, 0), dilations: Sequence[int] = (1, 1),
) -> np.ndarray:
    """A depthwise conv2d input's windows: (c, kh, kw, n, ho, wo) float32, zeros where a
    window sees padding."""
    x = _f32(x)
    n, c, h, wd = x.shape
    kh, kw = kernel
    ho = window_output_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    wo = window_output_size(wd, kw, strides[1], pads[1], pads[3], dilations[1])
    xt = x.transpose(1, 0, 2, 3)
    win = (np.zeros if any(pads) else np.empty)((c, kh, kw, n, ho, wo), F32)
    for i, j, dst, src in _taps((kh, kw), strides, pads, dilations, (h, wd), (ho, wo)):
        win[:, i, j, :, dst[0], dst[1]] = xt[:, :, src[0], src[1]]
    return win


def uses_windows(x_shape: Sequence[int], w_shape: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int], dilations: Sequence[int], groups: int) -> bool:
    """Whether conv2d works on `depthwise_windows` of its input (depthwise convs with more
    than one output and kernel position along each axis)."""
    if not _windowed(w_shape, groups, strides, pads):
        return False
    ho = window_output_size(x_shape[2], w_shape[2], strides[0], pads[0], pads[2], dilations[0])
    wo = window_output_size(x_shape[3], w_shape[3], strides[1], pads[1], pads[3], dilations[1])
    return min(*w_shape[2:], ho, wo) > 1


def uses_columns(w_shape: Sequence[int], groups: int, strides: Sequence[int], pads: Sequence[int]) -> bool:
    """Whether conv2d works on `conv2d_columns` of its input (all but depthwise convs)."""
    return not _windowed(w_shape, groups, strides, pads)


def conv2d(
    x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
    strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
    dilations: Sequence[int] = (1, 1), groups: int = 1, columns: np.ndarray | None = None,
    windows: np.ndarray | None = None,
) -> np.ndarray:
    """2-D convolution, NCHW x OIHW -> NCHW, float32 accumulation (im2col + matmul).
    `columns` is `conv2d_columns` of x, `windows` `depthwise_windows` of x (as
    `uses_windows` says) if the caller has it already."""
    w = _f32(w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    pt, pl, pb, pr = pads
    ho = window_output_size(h, kh, sh, pt, pb, dh)
    wo = window_output_size(wd, kw, sw, pl, pr, dw)
    og = o // groups
    if columns is not None and not _windowed(w.shape, groups, strides, pads):  # (the usual case)
        out = np.matmul(w.reshape(groups, og, cg * kh * kw), columns).reshape(n, o, ho, wo)
        return out if bias is None else add_channel_bias(out, bias)
    depthwise = uses_windows(x.shape, w.shape, strides, pads, dilations, groups)
    if _windowed(w.shape, groups, strides, pads) and not depthwise:
        x = _f32(x)  # (einsum shapes its product differently around unit dimensions)
        xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr))) if any(pads) else x
        span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        win = sliding_window_view(xp, (span_h, span_w), axis=(2, 3))
        win = win[:, :, : (ho - 1) * sh + 1 : sh, : (wo - 1) * sw + 1 : sw, ::dh, ::dw]
        out = np.einsum("ncpqij,cij->ncpq", win, w[:, 0], optimize=True)
    elif depthwise:  # no reduction over channels
        # per channel, its kh*kw weights times its (kh*kw, n*ho*wo) windows: the product
        # numpy's einsum("ncpqij,cij->ncpq", optimize=True) makes, without padding x or
        # copying a 6-d view (same bits)
        win = depthwise_windows(x, (kh, kw), strides, pads, dilations) if windows is None else windows
        out = np.matmul(w[:, 0].reshape(c, 1, kh * kw), win.reshape(c, kh * kw, n * ho * wo))
        out = out.reshape(c, n, ho, wo).transpose(1, 0, 2, 3)
    else:
        if columns is None:
            columns = conv2d_columns(x, (kh, kw), strides, pads, dilations, groups)
        out = np.matmul(w.reshape(groups, og, cg * kh * kw), columns)
    return add_channel_bias(out.reshape(n, o, ho, wo), bias)


def add_channel_bias(out: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """`out` (n, channels, ...) float32 plus one bias value per channel, in place."""
    if bias is not None:
        out += _f32(bias).reshape(1, out.shape[1], *(1,) * (out.ndim - 2))
    return out


ACTIVATIONS = ("none", "relu", "relu6")

try:  # the ufunc np.clip ends in for float arrays with both bounds (same bits, without its checks)
    from numpy._core.umath import clip as _CLIP
except ImportError:  # another numpy layout
    _CLIP = np.clip


def epilogue(acc: np.ndarray, residual: np.ndarray | None = None, activation: str = "none",
             in_place: bool = False) -> np.ndarray:
    """The matrix unit's fused epilogue after bias: + residual, then relu / relu6.
    `in_place`: `acc` (float32) is the caller's to overwrite (no new arrays)."""
    if residual is not None:
        residual = _f32(residual)
        if in_place and (residual.shape == acc.shape
                         or np.broadcast_shapes(acc.shape, residual.shape) == acc.shape):
            np.add(acc, residual, out=acc)
        else:
            acc, in_place = acc + residual, True
    out = acc if in_place else None
    if activation == "relu":
        return np.maximum(acc, F32(0), out=out)
    if activation == "relu6":
        return _CLIP(acc, F32(0), F32(6), out=out)
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
    "prelu": lambda x, slope: np.where(x >= 0, x, x * slope),
}


def binary(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise binary op with numpy broadcasting."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return BINARY[kind](_f32(a), _f32(b))


def erf(x: np.ndarray) -> np.ndarray:
    """Error function (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7), computed in float64:
    sign(x) (1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-x^2)), t = 1 / (1 + p |x|),
    on four float64 arrays (each step in place, its operands in the formula's order: the
    same bits, a NaN's sign included)."""
    a = np.abs(x, dtype=np.float64)
    sign = np.sign(x, dtype=np.float64)
    t = np.multiply(0.3275911, a)
    np.add(1.0, t, out=t)
    np.divide(1.0, t, out=t)
    poly = np.multiply(t, 1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        np.add(c, poly, out=poly)
        np.multiply(t, poly, out=poly)
    np.multiply(a, a, out=a)  # (-a a: a NaN's a is positive, -NaN either way)
    np.negative(a, out=a)
    np.exp(a, out=a)
    np.multiply(poly, a, out=poly)
    np.subtract(1.0, poly, out=poly)
    np.multiply(sign, poly, out=poly)
    return poly.astype(F32)


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
    half = x / math.sqrt(2.0)  # (0.5 x (1 + erf(x / sqrt 2)), in place)
    out = erf(half)
    np.add(1.0, out, out=out)
    np.multiply(0.5, x, out=half)
    return np.multiply(half, out, out=out)


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
            case "sign" | "cosh" | "sinh" | "softplus" | "mish" | "hard_sigmoid" | "hard_swish" | "not":
                return unary_extra(kind, x, **params)  # type: ignore[arg-type]
    raise KeyError(f"unknown unary kernel '{kind}'")


UNARY_KINDS = (
    "relu", "clip", "leaky_relu", "sigmoid", "tanh", "gelu", "erf", "exp", "sqrt",
    "rsqrt", "reciprocal", "abs", "neg", "log",
    "sign", "cosh", "sinh", "softplus", "mish", "hard_sigmoid", "hard_swish", "not",
)


def prelu(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    x = _f32(x)
    return np.where(x >= 0, x, x * _f32(slope))


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = _f32(x)
    e = np.subtract(x, np.max(x, axis=axis, keepdims=True))
    np.exp(e, out=e)
    return np.divide(e, np.sum(e, axis=axis, keepdims=True), out=e)


def _mean(x: np.ndarray, axes: tuple[int, ...], count: int) -> np.ndarray:
    """`np.mean(x, axis=axes, keepdims=True)` of float32 `x` over `count` elements, numpy's
    own two steps (`numpy._core._methods._mean`: the float32 sum, then a division by the
    count as an intp, in float64, cast back) without its dispatch; np.mean for none."""
    if not count:
        return np.mean(x, axis=axes, keepdims=True)  # (its warning, its NaN)
    total = np.add.reduce(x, axis=axes, keepdims=True)
    return np.true_divide(total, np.intp(count), out=total, casting="unsafe")


def layer_norm(
    x: np.ndarray, scale: np.ndarray | None, bias: np.ndarray | None,
    axis: int = -1, epsilon: float = 1e-5,
) -> np.ndarray:
    """Normalise over the axes from `axis` to the end, then scale and shift."""
    x = _f32(x)
    axis = axis % x.ndim
    axes = tuple(range(axis, x.ndim))
    count = math.prod(x.shape[axis:])
    mean = _mean(x, axes, count)
    out = np.subtract(x, mean)  # (centred, then normalised, scaled and shifted in place)
    var = _mean(np.multiply(out, out), axes, count)
    var += F32(epsilon)
    np.divide(out, np.sqrt(var, out=var), out=out)
    for operand, op in ((scale, np.multiply), (bias, np.add)):
        if operand is not None:
            operand = _f32(operand)
            out = op(out, operand, out=out if np.broadcast_shapes(out.shape, operand.shape) == out.shape else None)
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
    # one np.maximum per kernel position: ~10x faster than reducing the 6-d window view
    out = win[..., 0, 0].copy()
    for i in range(win.shape[-2]):
        for j in range(win.shape[-1]):
            if i or j:
                np.maximum(out, win[..., i, j], out=out)
    return out


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


REDUCE = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min}


def reduce(kind: str, x: np.ndarray, axes: Sequence[int], keepdims: bool) -> np.ndarray:
    return REDUCE[kind](_f32(x), axis=tuple(axes), keepdims=keepdims)


def gather(data: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """ONNX Gather: negative indices count from the end of `axis`."""
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return np.take(data, idx, axis=axis)


# ----------------------------------------------------------------------------- index, mask and detection kernels
# The operators below, for the reference interpreter and for the vector unit's exact and
# index commands (docs/npu.md). Integer and bool tensors are computed exactly in their own
# dtype; floats in float32.


def is_exact(*arrays: np.ndarray) -> bool:
    """Whether all operands are integer or bool (computed exactly, not through float32)."""
    return all(np.asarray(a).dtype.kind in "biu" for a in arrays)


def cast(x: np.ndarray, dtype: np.dtype, saturate: bool = True) -> np.ndarray:
    """Element type conversion; to a float8 type clamped to its finite range if `saturate`
    (ONNX Cast-19). Floats to integers truncate toward zero."""
    x = np.asarray(x)
    if saturate and dtype.name.startswith("float8"):
        import ml_dtypes

        info = ml_dtypes.finfo(dtype)
        x = np.clip(x.astype(np.float32), np.float32(info.min), np.float32(info.max))
    return x.astype(dtype)


def unary_extra(kind: str, x: np.ndarray, **params: float) -> np.ndarray:
    """Elementwise ops added to the vector unit's first set (sign, cosh, sinh, softplus,
    mish, hard sigmoid/swish, not); sign, abs and neg exactly on integers."""
    if kind == "not":
        return np.logical_not(x)
    if kind in ("sign", "abs", "neg") and is_exact(x):
        return {"sign": np.sign, "abs": np.abs, "neg": np.negative}[kind](x)
    x = _f32(x)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        match kind:
            case "sign":
                return np.sign(x)
            case "abs" | "neg":
                return unary(kind, x)
            case "cosh":
                return np.cosh(x)
            case "sinh":
                return np.sinh(x)
            case "softplus":
                return np.logaddexp(F32(0), x)
            case "mish":
                return x * np.tanh(np.logaddexp(F32(0), x))
            case "hard_sigmoid":
                return np.clip(F32(params["alpha"]) * x + F32(params["beta"]), F32(0), F32(1))
            case "hard_swish":
                return x * np.clip(x / F32(6) + F32(0.5), F32(0), F32(1))
    raise KeyError(f"unknown unary kernel '{kind}'")


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C, ONNX), exact for int64."""
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def binary_exact(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer arithmetic in the operands' own dtype (no float32 rounding of large ids)."""
    a, b = np.asarray(a), np.asarray(b)
    if kind == "div":
        with np.errstate(divide="ignore", invalid="ignore"):
            return _trunc_div(a, b)
    if kind == "pow":
        return np.power(a.astype(np.float64), b.astype(np.float64))
    return BINARY[kind](a, b)


COMPARE = {"equal": np.equal, "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
           "greater_equal": np.greater_equal, "and": np.logical_and, "or": np.logical_or,
           "xor": np.logical_xor}


def compare(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Comparisons and logic: a bool result, operands compared in their own dtype."""
    return COMPARE[kind](np.asarray(a), np.asarray(b))


def _reduce_init(kind: str, dtype: np.dtype):
    if kind in ("reduce_max", "reduce_min"):
        big = np.iinfo(dtype).max if np.issubdtype(dtype, np.integer) else np.inf
        small = np.iinfo(dtype).min if np.issubdtype(dtype, np.integer) else -np.inf
        if dtype == np.bool_:
            big, small = True, False
        return small if kind == "reduce_max" else big
    return None


def reduce_any(kind: str, x: np.ndarray, axes: Sequence[int], keepdims: bool) -> np.ndarray:
    """Every ONNX reduction; integers and bools exactly; an empty reduction gives the
    operation's identity (0, 1, -inf/+inf, or log(0) = -inf)."""
    axes = tuple(axes)
    x = np.asarray(x)
    if not is_exact(x):
        x = _f32(x)
    init = _reduce_init(kind, x.dtype)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        match kind:
            case "reduce_max":
                return np.max(x, axis=axes, keepdims=keepdims, initial=init)
            case "reduce_min":
                return np.min(x, axis=axes, keepdims=keepdims, initial=init)
            case "reduce_sum":
                return np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype if is_exact(x) else F32)
            case "reduce_mean":
                return np.mean(x, axis=axes, keepdims=keepdims)
            case "reduce_prod":
                return np.prod(x, axis=axes, keepdims=keepdims)
            case "reduce_l1":
                return np.sum(np.abs(x), axis=axes, keepdims=keepdims)
            case "reduce_l2":
                return np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axes, keepdims=keepdims))
            case "reduce_sum_square":
                return np.sum(x * x, axis=axes, keepdims=keepdims)
            case "reduce_log_sum":
                return np.log(np.sum(x, axis=axes, keepdims=keepdims))
            case "reduce_log_sum_exp":
                x64 = x.astype(np.float64)
                if x64.size == 0:
                    return np.log(np.sum(np.exp(x64), axis=axes, keepdims=keepdims))
                m = np.max(x64, axis=axes, keepdims=True)
                m = np.where(np.isfinite(m), m, 0)
                out = np.log(np.sum(np.exp(x64 - m), axis=axes, keepdims=True)) + m
                return out if keepdims else np.squeeze(out, axis=axes)
    raise KeyError(f"unknown reduction '{kind}'")


def arg_reduce(kind: str, x: np.ndarray, axis: int, keepdims: bool, select_last_index: bool) -> np.ndarray:
    """Index of the max (argmax) or min (argmin) along `axis`; first or last on ties."""
    x = np.asarray(x)
    fn = np.argmax if kind == "argmax" else np.argmin
    if select_last_index:
        flipped = np.flip(x, axis=axis)
        out = x.shape[axis] - 1 - fn(flipped, axis=axis)
    else:
        out = fn(x, axis=axis)
    out = out.astype(np.int64)
    return np.expand_dims(out, axis) if keepdims else out


def topk(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k largest/smallest along `axis`, sorted, equal values in index order."""
    x = np.asarray(x)
    key = -x if largest and not np.issubdtype(x.dtype, np.unsignedinteger) else x
    if largest and np.issubdtype(x.dtype, np.unsignedinteger):
        key = np.iinfo(x.dtype).max - x
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis).astype(np.int64)
    return np.take_along_axis(x, idx, axis=axis), idx


def gather_elements(data: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    idx = np.asarray(indices).astype(np.int64)
    size = data.shape[axis]
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise IndexError(f"gather_elements index {int(idx[(idx < -size) | (idx >= size)].flat[0])} "
                         f"is out of range for axis size {size}")
    idx = np.where(idx < 0, idx + size, idx)
    return np.take_along_axis(np.asarray(data), idx, axis=axis)


def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    data, idx = np.asarray(data), np.asarray(indices).astype(np.int64)
    b = batch_dims
    depth = idx.shape[-1]
    batch_shape = data.shape[:b]
    nb = int(np.prod(batch_shape)) if b else 1
    d = data.reshape((nb,) + data.shape[b:])
    j = idx.reshape((nb, -1, depth))
    dims = np.array(data.shape[b : b + depth])
    if j.size and ((j < -dims).any() or (j >= dims).any()):
        raise IndexError(f"gather_nd index out of range for data dims {list(dims)}")
    j = np.where(j < 0, j + dims, j)
    out = np.stack([d[n][tuple(j[n].T)] for n in range(nb)])
    return out.reshape(idx.shape[:-1] + data.shape[b + depth :])


def one_hot(indices: np.ndarray, values: np.ndarray, depth: int, axis: int) -> np.ndarray:
    idx = np.asarray(indices)
    idx = np.where(idx < 0, idx + depth, idx).astype(np.int64)
    rank = idx.ndim + 1
    axis %= rank
    shape = [1] * rank
    shape[axis] = depth
    hot = np.expand_dims(idx, axis) == np.arange(depth).reshape(shape)
    return np.where(hot, values[1], values[0])


def einsum(equation: str, *operands: np.ndarray) -> np.ndarray:
    if is_exact(*operands):
        return np.einsum(equation, *operands)
    return np.einsum(equation, *(_f32(o) for o in operands), optimize=True)


def lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """Across-channel LRN: x / (bias + alpha / size * sum of x^2 over `size` channels)^beta."""
    x = _f32(x)
    sq = x * x
    c = x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = np.pad(sq, [(0, 0), (lo, hi)] + [(0, 0)] * (x.ndim - 2))
    acc = sum(padded[:, i : i + c] for i in range(size))
    return x / (F32(bias) + F32(alpha) / F32(size) * acc) ** F32(beta)


def _resize_source(mode: str, y: np.ndarray, scale: float, n_in: int, n_out: int,
                   roi: tuple[float, float] | None) -> np.ndarray:
    """Input coordinate of each output index along one axis (ONNX coordinate_transformation_mode)."""
    length = scale * n_in
    match mode:
        case "align_corners":
            return np.zeros_like(y) if length == 1 else y * (n_in - 1) / (length - 1)
        case "asymmetric":
            return y / scale
        case "pytorch_half_pixel":
            return np.full_like(y, -0.5) if length == 1 else (y + 0.5) / scale - 0.5
        case "half_pixel":
            return (y + 0.5) / scale - 0.5
        case "half_pixel_symmetric":
            offset = n_in / 2 * (1 - n_out / length)
            return offset + (y + 0.5) / scale - 0.5
        case "tf_crop_and_resize":
            assert roi is not None
            if length == 1:
                x = np.full_like(y, (roi[1] - roi[0]) * (n_in - 1) / 2)
            else:
                x = y * (roi[1] - roi[0]) * (n_in - 1) / (length - 1)
            return x + roi[0] * (n_in - 1)
    raise KeyError(f"unknown coordinate transformation '{mode}'")


def _resize_weights(x: np.ndarray, n_in: int, scale: float, p: dict) -> np.ndarray:
    """(n_out, n_in) interpolation matrix for one axis: edge-clamped taps around each source
    coordinate with nearest / linear / cubic weights (optionally antialiased)."""
    mode = p["mode"]
    base = np.floor(x)
    frac = x - base
    if mode == "nearest":
        nm = p["nearest_mode"]
        if nm == "round_prefer_floor":
            src = np.where(frac <= 0.5, base, base + 1)
        elif nm == "round_prefer_ceil":
            src = np.where(frac < 0.5, base, base + 1)
        elif nm == "floor":
            src = base
        else:
            src = np.ceil(x)
        taps = src[:, None].astype(np.int64)
        w = np.ones_like(taps, dtype=np.float64)
    else:
        aa = p["antialias"] and scale < 1
        s = min(scale, 1.0) if aa else 1.0
        reach = 1 if mode == "linear" else 2  # the kernel's support radius
        start = int(np.floor(-reach / s) + 1)
        offsets = np.arange(start, 2 - start)
        a = p["cubic_coeff_a"]

        def kernel(d):
            d = np.abs(d)
            if mode == "linear":
                return np.clip(1 - d, 0, 1)
            return np.where(d <= 1, (a + 2) * d**3 - (a + 3) * d**2 + 1,
                            np.where(d < 2, a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a, 0.0))
        taps = base[:, None].astype(np.int64) + offsets[None, :]
        w = kernel((taps - x[:, None]) * s)
        if aa:
            w = w / w.sum(axis=1, keepdims=True)
    if p["exclude_outside"]:
        w = np.where((taps < 0) | (taps >= n_in), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = w / np.where(total == 0, 1.0, total)
    m = np.zeros((len(x), n_in))
    np.add.at(m, (np.repeat(np.arange(len(x)), taps.shape[1]), np.clip(taps, 0, n_in - 1).ravel()), w.ravel())
    return m


def resize(x: np.ndarray, shape: Sequence[int], scales: Sequence[float], p: dict) -> np.ndarray:
    """ONNX Resize as one interpolation matrix per axis (the operator is separable)."""
    out = np.asarray(x, dtype=np.float64)
    roi = p.get("roi") or ()
    rank = out.ndim
    mask = np.zeros(tuple(shape), dtype=bool)
    for axis in range(rank):
        n_in, n_out, scale = out.shape[axis], shape[axis], scales[axis]
        if n_in == n_out and scale == 1 and p["coordinate_transformation_mode"] != "tf_crop_and_resize":
            continue
        r = (roi[axis], roi[axis + rank]) if roi else None
        src = _resize_source(p["coordinate_transformation_mode"], np.arange(n_out, dtype=np.float64),
                             scale, n_in, n_out, r)
        m = _resize_weights(src, n_in, scale, p)
        out = np.moveaxis(np.tensordot(m, out, axes=([1], [axis])), 0, axis)
        if r is not None:
            outside = (src < 0) | (src > n_in - 1)
            sel = [None] * rank
            sel[axis] = slice(None)
            mask |= outside[tuple(sel)]
    if mask.any():
        out = np.where(mask, p["extrapolation_value"], out)
    return out


def _bilinear(img: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Bilinear samples of img (C, H, W) at points (y, x) arrays; 0 outside [-1, size]."""
    _, h, w = img.shape
    valid = (y >= -1) & (y <= h) & (x >= -1) & (x <= w)
    y, x = np.clip(y, 0, None), np.clip(x, 0, None)
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    y0, x0 = np.minimum(y0, h - 1), np.minimum(x0, w - 1)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    y = np.where(y0 >= h - 1, y0, y)
    x = np.where(x0 >= w - 1, x0, x)
    ly, lx = y - y0, x - x0
    hy, hx = 1 - ly, 1 - lx
    return valid, (hy * hx, hy * lx, ly * hx, ly * lx), (img[:, y0, x0], img[:, y0, x1], img[:, y1, x0], img[:, y1, x1])


def roi_align(x: np.ndarray, rois: np.ndarray, batch_indices: np.ndarray, output_height: int,
              output_width: int, sampling_ratio: int, spatial_scale: float, mode: str,
              half_pixel: bool) -> np.ndarray:
    """ONNX RoiAlign (float64 inside, as the ONNX reference; max mode takes the max of the
    weighted corner samples, as onnxruntime does)."""
    x = np.asarray(x, dtype=np.float64)
    rois = np.asarray(rois, dtype=np.float64)
    out = np.zeros((len(rois), x.shape[1], output_height, output_width))
    offset = 0.5 if half_pixel else 0.0
    for r, (box, b) in enumerate(zip(rois, np.asarray(batch_indices).astype(np.int64))):
        x1, y1, x2, y2 = box * spatial_scale - offset
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / output_height, rw / output_width
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / output_height))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / output_width))
        gh, gw = max(gh, 1), max(gw, 1)
        iy = (np.arange(gh) + 0.5) / gh
        ix = (np.arange(gw) + 0.5) / gw
        for ph in range(output_height):
            ys = y1 + (ph + iy) * bh
            for pw in range(output_width):
                xs = x1 + (pw + ix) * bw
                yy, xx = np.meshgrid(ys, xs, indexing="ij")
                valid, weights, corners = _bilinear(x[b], yy.ravel(), xx.ravel())
                if mode == "avg":
                    v = sum(wt * c for wt, c in zip(weights, corners))
                    out[r, :, ph, pw] = np.where(valid, v, 0).sum(axis=1) / (gh * gw)
                else:
                    v = np.max(np.stack([wt * c for wt, c in zip(weights, corners)]), axis=0)
                    out[r, :, ph, pw] = np.where(valid, v, 0).max(axis=1)
    return out


def max_roi_pool(x: np.ndarray, rois: np.ndarray, pooled_shape: Sequence[int], spatial_scale: float) -> np.ndarray:
    """ONNX MaxRoiPool (Caffe's ROIPooling): box corners rounded half away from zero,
    floor/ceil bin edges."""
    x = _f32(x)
    ph_n, pw_n = pooled_shape
    _, c, h, w = x.shape
    out = np.zeros((len(rois), c, ph_n, pw_n), dtype=F32)
    for r, roi in enumerate(np.asarray(rois, dtype=np.float64)):
        b = int(roi[0])
        x1, y1, x2, y2 = (int(np.floor(v * spatial_scale + 0.5)) for v in roi[1:])  # C's round
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        for ph in range(ph_n):
            hs = min(max(int(np.floor(ph * rh / ph_n)) + y1, 0), h)
            he = min(max(int(np.ceil((ph + 1) * rh / ph_n)) + y1, 0), h)
            for pw in range(pw_n):
                ws = min(max(int(np.floor(pw * rw / pw_n)) + x1, 0), w)
                we = min(max(int(np.ceil((pw + 1) * rw / pw_n)) + x1, 0), w)
                if he > hs and we > ws:
                    out[r, :, ph, pw] = x[b, :, hs:he, ws:we].max(axis=(1, 2))
    return out


def non_max_suppression(boxes: np.ndarray, scores: np.ndarray, max_per_class: int, iou_threshold: float,
                        score_threshold: float, center_point_box: bool, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """ONNX NonMaxSuppression into a fixed buffer: (bound x 3 rows, -1 padded; row count)."""
    boxes = np.asarray(boxes, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    if center_point_box:
        cx, cy, bw, bh = np.moveaxis(boxes, -1, 0)
        corners = np.stack([cy - bh / 2, cx - bw / 2, cy + bh / 2, cx + bw / 2], axis=-1)
    else:
        y1, x1, y2, x2 = np.moveaxis(boxes, -1, 0)
        corners = np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=-1)
    selected = []
    for b in range(scores.shape[0]):
        box = corners[b]
        area = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in np.argsort(-s, kind="stable") if s[i] > score_threshold]
            kept: list[int] = []
            for i in order:
                if len(kept) >= max_per_class:
                    break
                ok = True
                for j in kept:
                    ih = max(0.0, min(box[i, 2], box[j, 2]) - max(box[i, 0], box[j, 0]))
                    iw = max(0.0, min(box[i, 3], box[j, 3]) - max(box[i, 1], box[j, 1]))
                    inter = ih * iw
                    union = area[i] + area[j] - inter
                    if union > 0 and inter / union > iou_threshold:
                        ok = False
                        break
                if ok:
                    kept.append(i)
            selected.extend((b, c, i) for i in kept)
    out = np.full((bound, 3), -1, dtype=np.int64)
    if selected:
        out[: len(selected)] = selected
    return out, np.array(len(selected), dtype=np.int64)
