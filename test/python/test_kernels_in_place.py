"""The vector kernels computed in place (`kernels.erf`, `gelu`, `softmax`, `layer_norm`)
give the bits of their formulas written as plain numpy expressions (a NaN stays a NaN;
its sign, in the expressions, depends on numpy's elision of temporaries)."""

import math

import numpy as np
import pytest

from stc_mlir import kernels

F32 = np.float32
RNG = np.random.default_rng(17)
SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 3.4e38, -3.4e38, 1e-8, 5.0, -5.0, 30.0], F32)


def erf(x):
    x64 = np.asarray(x, dtype=np.float64)
    sign = np.sign(x64)
    a = np.abs(x64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(F32)


def gelu(x):
    x = np.asarray(x, F32)
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(F32)


def softmax(x, axis):
    x = np.asarray(x, F32)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def layer_norm(x, scale, bias, axis, epsilon):
    x = np.asarray(x, F32)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=axes, keepdims=True)
    out = centred / np.sqrt(var + F32(epsilon))
    if scale is not None:
        out = out * np.asarray(scale, F32)
    if bias is not None:
        out = out + np.asarray(bias, F32)
    return out


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    got, want = np.where(nan, 0, got), np.where(nan, 0, want)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


# (sizes on both sides of numpy's 256 KiB threshold of temporaries reused in place)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 3072), (2, 128, 768), (2, 4, 64, 64)])
@pytest.mark.parametrize("kind", ["float32", "float16", "strided"])
def test_the_kernels_in_place_give_their_formulas_bits(shape, kind):
    x = (RNG.standard_normal(shape) * RNG.choice([0.1, 1.0, 4.0])).astype(F32)
    x.flat[:min(x.size, SPECIAL.size)] = SPECIAL[:min(x.size, SPECIAL.size)]
    with np.errstate(all="ignore"):
        x = {"float32": x, "float16": x.astype(np.float16), "strided": x[..., ::2]}[kind]
        _same(kernels.erf(x), erf(x))
        _same(kernels.gelu(x), gelu(x))
        for axis in range(-1, -x.ndim - 1, -1):
            _same(kernels.softmax(x, axis), softmax(x, axis))
            scale = RNG.standard_normal(x.shape[axis:]).astype(F32)
            bias = RNG.standard_normal(x.shape[axis:]).astype(np.float16)
            for s, b in ((None, None), (scale, None), (None, bias), (scale, bias), (scale[None], bias[None, None])):
                _same(kernels.layer_norm(x, s, b, axis, 1e-5), layer_norm(x, s, b, axis, 1e-5))


def test_the_kernels_leave_their_input_alone():
    x = RNG.standard_normal((4, 64)).astype(F32)
    kept = x.copy()
    for result in (kernels.erf(x), kernels.gelu(x), kernels.softmax(x), kernels.layer_norm(x, None, None)):
        assert not np.shares_memory(result, x)
    np.testing.assert_array_equal(x, kept)
