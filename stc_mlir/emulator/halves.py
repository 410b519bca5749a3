"""fp16 <-> fp32 conversion of tiles, with the same bits as numpy's casts.

numpy converts half floats one element at a time (~2 ns per element up, ~4 down on the
machines measured); the emulator converts every fp16 input tile to fp32 and stores every
fp32 result into an fp16 tile. When the optional C module `_f16` is built (`pip install`
builds it with the package; `python setup.py build_ext --inplace` in a source tree) and the
CPU has F16C, large tiles are converted with it instead, ~10x faster, bit for bit the same
(NaN payloads included; checked against numpy for every fp16 value and for samples of
every fp32 class in test/python/test_halves.py). Without it, numpy's casts are used.
`STC_F16_NATIVE=0` in the environment turns the C path off.

`store_epilogue` does a conv's bias, residual, activation and store in one pass in C (four
numpy passes over the accumulator otherwise), the same float operations in the same order;
`depthwise_windows` and `conv2d_columns` build a conv's windows in C (nine strided numpy
copies for a 3x3 kernel otherwise), the same values.
"""

from __future__ import annotations

import os

import numpy as np

from stc_mlir import kernels

try:
    from . import _f16  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _f16 = None

INTERFACE = 3
"""The `_f16.c` interface this file calls (its `F16_INTERFACE`)."""
NATIVE = bool(_f16 is not None and _f16.available and os.environ.get("STC_F16_NATIVE", "1") != "0"
              and getattr(_f16, "INTERFACE", None) == INTERFACE)
"""Whether the C path is used (tests switch it off to compare; a module built from an older
`_f16.c` is not, whose functions may take other arguments: rebuild it with `python setup.py
build_ext --inplace`)."""

SMALL = 2048
"""Tiles of fewer elements are converted by numpy (a call costs more than it saves)."""


def to_f32(x: np.ndarray) -> np.ndarray:
    """`x` (float16, any strides) as a new C-contiguous float32 array (`np.asarray(x, np.float32)`)."""
    if not NATIVE or x.size < SMALL:
        return np.asarray(x, np.float32)
    out = np.empty(x.shape, np.float32)
    _f16.to_f32(np.ascontiguousarray(x), out)
    return out


def store(out: np.ndarray, value: np.ndarray) -> None:
    """`out[...] = value` with `value` of `out`'s shape (or reshaped to it)."""
    if NATIVE and _f16.store(value, out, SMALL):  # (the usual case, checked in C: fp32 into fp16, both contiguous)
        return
    value = np.asarray(value)
    if value.shape != out.shape:
        value = np.reshape(value, out.shape)
    if not NATIVE or out.dtype != np.float16 or value.dtype != np.float32 or out.size < SMALL:
        out[...] = value
        return
    value = np.ascontiguousarray(value)
    if out.flags.c_contiguous:
        _f16.to_f16(value, out)
        return
    halves = np.empty(out.shape, np.float16)
    _f16.to_f16(value, halves)
    out[...] = halves


ACTIVATIONS = {"none": 0, "relu": 1, "relu6": 2}
"""The activations `store_epilogue` does (their numbers in the C module)."""


def store_epilogue(out: np.ndarray, acc: np.ndarray, bias: np.ndarray | None,
                   residual: np.ndarray | None, activation: str) -> bool:
    """`store(out, act((acc + bias) + residual))` in one pass, `acc` (n, channels, ...) and
    `bias` one value per channel (`kernels.add_channel_bias`, then `kernels.epilogue`), the
    same bits. `acc` is C-contiguous, or without a residual the channels-first transpose of
    a C-contiguous array (a depthwise conv's product). False when it is left to the caller
    (numpy): no C path, a small or non-fp16 `out`, another `acc` layout or type, a bias
    that is not fp32, a residual neither fp32 nor fp16, either needing broadcasting, an activation it does not know, or a
    NaN met (its payloads are numpy's business); `acc` is never changed, `out` may be
    partly written. An fp16 `residual` is converted inside the pass (as `to_f32` does)."""
    if (not NATIVE or out.dtype != np.float16 or acc.dtype != np.float32 or acc.ndim < 2
            or acc.size < SMALL or out.size != acc.size or activation not in ACTIVATIONS):
        return False
    shape, channels, batch = acc.shape, acc.shape[1], 0
    if not acc.flags.c_contiguous:  # channels first: (channels, n, ...) in memory
        acc = acc.swapaxes(0, 1)
        if residual is not None or not acc.flags.c_contiguous:
            return False
        batch = shape[0]
        inner = acc.size // (batch * channels)
    else:
        inner = acc.size // (acc.shape[0] * channels)
    if bias is not None:
        if bias.dtype != np.float32 or bias.size != channels:
            return False
        bias = np.ascontiguousarray(bias)
    if residual is not None:
        if residual.dtype not in (np.float32, np.float16) or residual.shape != shape:
            return False
        residual = np.ascontiguousarray(residual)
    target = out if out.flags.c_contiguous else np.empty(shape, np.float16)
    if not _f16.epilogue(acc, bias, residual, ACTIVATIONS[activation], inner, target, channels, batch,
                         residual is not None and residual.dtype == np.float16):
        return False
    if target is not out:
        out[...] = target if shape == out.shape else target.reshape(out.shape)
    return True



def _windows(x: np.ndarray, kernel, strides, pads, dilations, columns: bool) -> np.ndarray:
    n, c, h, w = x.shape
    ho = kernels.window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0])
    wo = kernels.window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1])
    out = np.empty((n, c, *kernel, ho, wo) if columns else (c, *kernel, n, ho, wo), np.float32)
    layout = 2 if x.dtype == np.float16 else int(columns)  # 2: columns of fp16 x
    _f16.windows(np.ascontiguousarray(x), out, layout, n, c, h, w, *kernel, *strides, pads[0],
                 pads[1], *dilations, ho, wo)
    return out


def depthwise_windows(x: np.ndarray, kernel, strides, pads, dilations) -> np.ndarray:
    """`kernels.depthwise_windows(x, ...)`, the same array, built in C when it can be."""
    if not NATIVE or x.dtype != np.float32 or x.ndim != 4 or x.size < SMALL:
        return kernels.depthwise_windows(x, kernel, strides, pads, dilations)
    return _windows(x, kernel, strides, pads, dilations, columns=False)


def columns_of_halves(kernel, strides, pads) -> bool:
    """Whether `conv2d_columns` of an fp16 input is built straight from its halves (the
    caller need not convert the input to fp32 first): all but the 1x1 convs without strides
    or pads, whose columns are a view of the fp32 input."""
    return NATIVE and not (tuple(kernel) == (1, 1) and tuple(strides) == (1, 1) and not any(pads))


def conv2d_columns(x: np.ndarray, kernel, strides, pads, dilations, groups: int) -> np.ndarray:
    """`kernels.conv2d_columns(x, ...)`, the same values, built in C when it can be (not the
    view a 1x1 conv without strides or pads takes); `x` fp32 or fp16 (then converted inside
    the gather, each element as `to_f32` converts it)."""
    pointwise = tuple(kernel) == (1, 1) and tuple(strides) == (1, 1) and not any(pads)
    if (pointwise or not NATIVE or x.dtype not in (np.float32, np.float16) or x.ndim != 4
            or x.size < SMALL):
        return kernels.conv2d_columns(x, kernel, strides, pads, dilations, groups)
    cols = _windows(x, kernel, strides, pads, dilations, columns=True)
    n, c = x.shape[:2]
    return cols.reshape(n, groups, c // groups * kernel[0] * kernel[1], -1)
