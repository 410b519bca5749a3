"""The im2col columns of `kernels.conv2d_columns` (built without a padded copy of the
input) against their definition on the zero-padded input, over random geometries:
asymmetric pads, pads wider than the kernel, strides wider than it, dilations, groups."""

import numpy as np
import pytest

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
