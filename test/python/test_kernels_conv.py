"""The conv kernels built without a padded copy of the input, over random geometries
(asymmetric pads, pads wider than the kernel, strides wider than it, dilations, groups):
the im2col columns of `kernels.conv2d_columns` against their definition on the
zero-padded input, and depthwise `kernels.conv2d` against numpy's einsum of the windows
(the same product, so the same bits) and a float64 reference."""

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from stc_mlir import kernels

RNG = np.random.default_rng(5)


def _definition(x, kernel, strides, pads, dilations, groups):
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = kernel, strides, dilations, pads
    ho = kernels.window_output_size(h, kh, sh, pt, pb, dh)
    wo = kernels.window_output_size(w, kw, sw, pl, pr, dw)
    xp = np.pad(x.astype(np.float32), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    rows = []
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                rows.append(xp[:, ci, i * dh:i * dh + (ho - 1) * sh + 1:sh,
                               j * dw:j * dw + (wo - 1) * sw + 1:sw].reshape(n, ho * wo))
    cg = c // groups
    return np.stack(rows, axis=1).reshape(n, groups, cg * kh * kw, ho * wo)


def _geometries(count):
    for _ in range(count):
        kh, kw = RNG.integers(1, 6, 2)
        sh, sw = RNG.integers(1, 4, 2)
        dh, dw = RNG.integers(1, 3, 2)
        pads = tuple(int(p) for p in RNG.integers(0, 5, 4))
        groups = int(RNG.choice([1, 2, 3]))
        c = groups * int(RNG.integers(1, 4))
        h = int(dh * (kh - 1) + 1 + RNG.integers(0, 8))
        w = int(dw * (kw - 1) + 1 + RNG.integers(0, 8))
        yield (int(RNG.integers(1, 3)), c, h, w), (int(kh), int(kw)), (int(sh), int(sw)), pads, \
            (int(dh), int(dw)), groups


@pytest.mark.parametrize("shape, kernel, strides, pads, dilations, groups", list(_geometries(60)))
def test_columns_are_the_padded_windows(shape, kernel, strides, pads, dilations, groups):
    x = RNG.standard_normal(shape).astype(np.float16)
    got = kernels.conv2d_columns(x, kernel, strides, pads, dilations, groups)
    want = _definition(x, kernel, strides, pads, dilations, groups)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(got, want)


def _padded_windows(x, kernel, strides, pads, dilations):
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = kernel, strides, dilations, pads
    ho = kernels.window_output_size(x.shape[2], kh, sh, pt, pb, dh)
    wo = kernels.window_output_size(x.shape[3], kw, sw, pl, pr, dw)
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    win = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    return win[:, :, :(ho - 1) * sh + 1:sh, :(wo - 1) * sw + 1:sw, ::dh, ::dw]


@pytest.mark.parametrize("shape, kernel, strides, pads, dilations, groups", list(_geometries(60)))
def test_depthwise_is_the_einsum_of_the_windows(shape, kernel, strides, pads, dilations, groups):
    n, c, h, w = shape
    x = RNG.standard_normal(shape).astype(np.float16)
    weight = RNG.standard_normal((c, 1) + kernel).astype(np.float16)
    if kernels.uses_columns(weight.shape, c, strides, pads):
        pytest.skip("a 1x1 conv without strides or pads is computed from columns")
    got = kernels.conv2d(x, weight, None, strides, pads, dilations, groups=c)
    win = _padded_windows(x.astype(np.float32), kernel, strides, pads, dilations)
    w32 = weight[:, 0].astype(np.float32)
    assert np.array_equal(got, np.einsum("ncpqij,cij->ncpq", win, w32, optimize=True))
    exact = np.einsum("ncpqij,cij->ncpq", win.astype(np.float64), w32.astype(np.float64))
    np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)
