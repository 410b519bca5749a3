"""A depthwise conv computed straight from its input in `_f16.c` (no windows array, no BLAS
call per channel): its product mirrors OpenBLAS's sgemv_n kernels (Haswell and SkylakeX)
lane by lane, so the bits are numpy's np.matmul's. Checked here: the mirrors against
np.matmul at every kind of size (k 2..49, row counts hitting every kernel part) with
normal, fp16, signed-zero, huge, subnormal, infinite and NaN values; that the other
kernel's mirror differs (the check at import tells them apart); whole depthwise commands
against numpy's path over geometries (strides, dilations, pads, 3x3 to 7x7 kernels, odd
channel counts, several images, outputs in larger buffers, fp16 and fp32 outputs and
residuals, relu and relu6, NaN inputs); and `to_f32` of strided views."""

import types
import zlib

import numpy as np
import pytest

from stc_mlir import blas, kernels
from stc_mlir.emulator import functional, halves

pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")
mirrored = pytest.mark.skipif(not halves.DEPTHWISE_GEMV, reason="no sgemv mirror here (no _f16, no numpy "
                              "OpenBLAS, no AVX2/FMA, or another kernel)")
KERNELS = {"Haswell": 1, "Zen": 1, "SkylakeX": 2, "Cooperlake": 2, "SapphireRapids": 2}
"""OpenBLAS's kernel sets (threadpoolctl's architecture) whose sgemv_n the mirrors follow."""


def test_the_mirror_of_this_blas_is_on():
    """On a CPU and BLAS the mirrors are for, the check at import picked the right one."""
    if not (halves.PRODUCTS and blas.kernels() in KERNELS):
        pytest.skip("no C products, or numpy's BLAS runs kernels not mirrored")
    assert halves.DEPTHWISE_GEMV == KERNELS[blas.kernels()]


def _values(rng, shape, special):
    v = rng.standard_normal(shape).astype(np.float32)
    if special == "fp16":
        v = v.astype(np.float16).astype(np.float32)
    elif special:
        flat = v.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 5))
        flat[picks] = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-41], np.float32),
                                 picks.size)
    return v


ROWS = (*range(4, 40), 45, 61, 100, 130, 227, 4096, 4101, 8195, 16384, 16387)
"""Row counts: tails of 0-3 rows, heads of 4, 8 and 12 rows, bodies, blocks of 4096 rows,
the SkylakeX kernel's bound (16384)."""


@mirrored
@pytest.mark.parametrize("k", range(2, 50))
def test_mirror_gives_np_matmuls_bits(k):
    rng = np.random.default_rng(k)
    for i, p in enumerate(p for p in ROWS if k * p < 115200):
        special = (None, "fp16", True)[i % 3]
        a, x = _values(rng, (k, p), special), _values(rng, k, special if i % 2 else "fp16")
        want, got = np.matmul(x, a), np.empty(p, np.float32)
        halves._f16.gemv(halves.DEPTHWISE_GEMV, a, x, got)
        assert halves.same_bits(got, want), (k, p, special)  # (NaN: numpy's path takes it)


@mirrored
def test_the_other_kernels_mirror_differs():
    """Haswell's and SkylakeX's sgemv_n round differently (two accumulators in a block's
    head rows, a chain elsewhere): the check at import tells which one runs."""
    rng = np.random.default_rng(0)
    a, x = rng.standard_normal((9, 45), np.float32), rng.standard_normal(9, np.float32)
    got = np.empty(45, np.float32)
    halves._f16.gemv(3 - halves.DEPTHWISE_GEMV, a, x, got)
    assert not np.array_equal(got.view(np.uint32), np.matmul(x, a).view(np.uint32))


@mirrored
def test_gemv_refuses_what_it_does_not_mirror():
    y = np.empty(3, np.float32)
    with pytest.raises(ValueError, match="not a product the mirror takes"):  # (p < 4: other tails)
        halves._f16.gemv(1, np.ones((9, 3), np.float32), np.ones(9, np.float32), y)
    with pytest.raises(ValueError, match="kind 0"):
        halves._f16.gemv(0, np.ones((9, 4), np.float32), np.ones(9, np.float32), np.empty(4, np.float32))


def _in_larger(x, axis):
    """`x` as a view of a larger buffer (a tile of a larger memory) along `axis` (None: `x`)."""
    if axis is None:
        return x
    pad = [(0, 0)] * x.ndim
    pad[axis] = (1, 2)
    big = np.pad(x, pad, constant_values=np.float16(1234))
    return big[tuple(slice(1, 1 + x.shape[axis]) if i == axis else slice(None) for i in range(x.ndim))]


def _outputs(monkeypatch, cmd, ins, shape, dtype, view_axis):
    """The output bits of `cmd`: the C command (mirror on), the C command with the windows
    and numpy's sgemv (mirror off), numpy's path; the output a view of a larger buffer
    along `view_axis` (None: a whole array)."""
    bits = []
    for on, kind in ((True, halves.DEPTHWISE_GEMV), (True, 0), (False, 0)):
        monkeypatch.setattr(halves, "PRODUCTS", on)
        halves._f16.set_gemv(kind)
        try:
            big = list(shape)
            if view_axis is not None:
                big[view_axis] += 3
            out = np.full(big, np.nan, dtype)
            if view_axis is not None:
                out = out[tuple(slice(1, 1 + shape[view_axis]) if i == view_axis else slice(None)
                                for i in range(4))]
            functional.execute(cmd, dict(ins), {"output": out})
        finally:
            halves._f16.set_gemv(halves.DEPTHWISE_GEMV)
        bits.append(out.view(np.uint16 if dtype == np.float16 else np.uint32).copy())
    return bits


DEPTHWISE = [  # n, c, h, w, kernel, strides, pads, dilations
    (1, 8, 9, 112, (3, 3), (2, 2), (0, 1, 1, 1), (1, 1)),  # MobileNetV2's stride 2 (a tile of rows)
    (1, 7, 6, 14, (3, 3), (1, 1), (0, 1, 1, 1), (1, 1)),  # stride 1, c odd
    (3, 5, 10, 9, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # several images
    (2, 3, 13, 12, (5, 5), (2, 1), (2, 2, 2, 2), (1, 1)),  # 5x5
    (1, 4, 17, 15, (7, 7), (1, 1), (3, 3, 3, 3), (1, 1)),  # 7x7 (k 49)
    (2, 3, 12, 16, (3, 3), (1, 2), (0, 2, 1, 0), (2, 3)),  # dilations, uneven pads
    (1, 3, 11, 10, (2, 5), (3, 2), (1, 0, 0, 2), (1, 1)),  # 2x5, stride 3
    (1, 5, 8, 30, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1)),  # 1x3: numpy's einsum (not windows)
    (1, 2, 66, 66, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),  # p 4356: a block of 4096 rows and a head
]


@mirrored
@pytest.mark.parametrize("case", DEPTHWISE)
@pytest.mark.parametrize("act", ("none", "relu", "relu6"))
@pytest.mark.parametrize("epilogue", ("bias", "fp16 residual", "fp32 residual", "fp32 out", "nan input"))
def test_depthwise_commands_give_numpys_bits(monkeypatch, case, act, epilogue):
    n, c, h, w, kernel, strides, pads, dilations = case
    rng = np.random.default_rng(zlib.crc32(repr((case, act, epilogue)).encode()))
    ho = kernels.window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0])
    wo = kernels.window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1])
    shape = (n, c, ho, wo)
    x = (rng.standard_normal((n, c, h, w)) * 4).astype(np.float16)
    x.reshape(-1)[::17] = 0.0
    x.reshape(-1)[3::19] = -0.0
    if epilogue == "nan input":
        x.reshape(-1)[::23] = np.nan
    ins = {"input": _in_larger(x, (None, 2, 1, 0)[len(epilogue) % 4]),  # (fp16, read where it lies)
           "weight": rng.standard_normal((c, 1, *kernel)).astype(np.float16),
           "bias": rng.standard_normal(c).astype(np.float16)}
    if "residual" in epilogue or epilogue == "fp32 out":
        residual = rng.standard_normal(shape).astype(np.float16)
        ins["residual"] = residual.astype(np.float32) if epilogue != "fp16 residual" else residual
    cmd = types.SimpleNamespace(op="conv2d", params={"strides": strides, "pads": pads, "dilations": dilations,
                                                     "groups": c, "act": act})
    dtype = np.float32 if epilogue == "fp32 out" else np.float16
    mirror, windows, numpy_path = _outputs(monkeypatch, cmd, ins, shape, dtype, (None, 1, 2)[c % 3])
    assert np.array_equal(mirror, numpy_path)
    assert np.array_equal(windows, numpy_path)


@pytest.mark.skipif(not halves.PRODUCTS, reason="no C products")
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_inputs_in_runs_of_rows_or_not(dtype):
    """An input in runs of whole rows (a tile of channels, of rows, of columns) is read where
    it lies, fp16 or fp32, with the mirror and with the windows; one of every other column
    is numpy's business (False)."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal((2, 5, 14, 20)).astype(dtype)
    w = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    views = ((big[:, 1:4], True), (big[:, :3, 2:11], True), (big[:, :3, :, 2:17], True), (big[:, :3, :, ::2], False))
    for x, computed in views:
        want = kernels.conv2d(x.astype(np.float32), w[:3], None, (1, 1), (1, 1, 1, 1), (1, 1), 3)
        for kind in (halves.DEPTHWISE_GEMV, 0):
            out = np.empty(want.shape, np.float32)
            halves._f16.set_gemv(kind)
            try:
                done = halves.depthwise(out, x, w[:3], None, None, "none", (1, 1), (1, 1, 1, 1), (1, 1), out.shape)
            finally:
                halves._f16.set_gemv(halves.DEPTHWISE_GEMV)
            assert done is computed
            if done:
                assert np.array_equal(out.view(np.uint32), want.view(np.uint32))


@pytest.mark.skipif(not halves.PRODUCTS, reason="no C products")
def test_an_output_over_its_input_is_numpys():
    """An output tile in the same memory as the input, overlapping it (channels 2-4 over
    channels 0-2, each a run of rows): the C command declines (numpy's path works on copies)."""
    big = np.random.default_rng(5).standard_normal((1, 6, 12, 10)).astype(np.float32)
    x, out = big[:, :3, 1:11], big[:, 2:5, 1:11]
    w = np.ones((3, 1, 3, 3), np.float32)
    assert not halves.depthwise(out, x, w, None, None, "none", (1, 1), (1, 1, 1, 1), (1, 1), out.shape)
    assert halves.depthwise(big[:, 3:6, 1:11], x, w, None, None, "none", (1, 1), (1, 1, 1, 1), (1, 1), out.shape)


@mirrored
def test_the_mirror_is_what_runs(monkeypatch):
    """With the other kernel's mirror set, a depthwise command's bits change: the command
    computes with the mirror (not the windows and numpy's sgemv)."""
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 6, 9, 40), np.float32), rng.standard_normal((6, 1, 3, 3), np.float32)
    outs = []
    for kind in (halves.DEPTHWISE_GEMV, 3 - halves.DEPTHWISE_GEMV):
        out = np.empty((1, 6, 7, 38), np.float32)
        halves._f16.set_gemv(kind)
        try:
            assert halves.depthwise(out, x, w, None, None, "none", (1, 1), (0, 0, 0, 0), (1, 1), out.shape)
        finally:
            halves._f16.set_gemv(halves.DEPTHWISE_GEMV)
        outs.append(out.view(np.uint32))
    assert not np.array_equal(*outs)


@pytest.mark.skipif(not halves.NATIVE, reason="no _f16 module")
def test_to_f32_of_strided_views():
    """Views of whole rows or planes are converted where they are, others after a copy:
    numpy's bits either way (NaN payloads included)."""
    rng = np.random.default_rng(4)
    big = rng.standard_normal((2, 6, 40, 64)).astype(np.float16)
    specials = [0x7c01, 0xfe00, 0x7c00, 0xfc00, 0x8000, 0x0001]
    big.view(np.uint16)[:, 1, 5, :6] = specials  # (in whole blocks of 8)
    big.view(np.uint16)[:, 2, 7, 9:15] = specials  # (NaNs in the last 3 elements of runs of 11)
    views = [big, big[:, 1:4], big[:, :, 3:30], big[1:, 1:, 5:9], big[:, :, :, 2:50], big[..., 1:12], big[:, ::2],
             big[..., ::2]]
    for view in views:
        assert np.array_equal(halves.to_f32(view).view(np.uint32), view.astype(np.float32).view(np.uint32))
    out = np.empty(big[..., ::2].shape, np.float32)
    assert not halves._f16.to_f32(big[..., ::2], out)  # (not in runs: the caller copies it first)
    assert halves._f16.to_f32(big[:, 1:4], np.empty((2, 3, 40, 64), np.float32))
    assert halves._f16.to_f32(big[..., 1:12], np.empty((2, 6, 40, 11), np.float32))
