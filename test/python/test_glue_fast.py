"""The computed commands' fast paths (branch emu-glue2) against the numpy kernels they stand for:
`functional._erf` (erf and exact gelu in C around numpy's exp) and the per-shape plans of
`halves.matmul`, bit for bit."""

import numpy as np
import pytest

from stc_mlir import kernels
from stc_mlir.emulator import functional, halves, tile_cache

native = pytest.mark.skipif(not tile_cache.NATIVE, reason="_values not built")


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


def _floats() -> np.ndarray:
    """Every fp16 value (as float32, what the emulator's tiles give), random float32 bit
    patterns of every exponent, subnormals, zeros and the largest floats, NaNs and infinities."""
    rng = np.random.default_rng(7)
    halves16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    random = rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = np.float32(rng.standard_normal(1 << 16) * 3)
    special = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 3.4028235e38, -3.4028235e38, 5.0, -5.0, 1e-8],
                       np.float32)
    return np.concatenate([halves16, random, near, special])


@native
@pytest.mark.parametrize("gelu", [False, True])
def test_erf_and_gelu_bits(gelu):
    x = _floats()
    finite = x[np.isfinite(x)]
    for part in (finite, finite[:100], finite[:1], finite.reshape(-1, 2)[:, :1].copy()):
        with np.errstate(all="ignore"):
            want = kernels.gelu(part) if gelu else kernels.erf(part)
        got = functional._erf(part, gelu)
        assert got is not None and got.dtype == np.float32 and got.shape == part.shape
        assert np.array_equal(_bits(got), _bits(want))


@native
@pytest.mark.parametrize("bad", [np.nan, -np.nan, np.inf, -np.inf])
def test_erf_leaves_nan_and_infinity_to_numpy(bad):
    x = np.linspace(-3, 3, 5000, dtype=np.float32)
    x[4321] = bad
    assert functional._erf(x, True) is None and functional._erf(x, False) is None


@native
def test_erf_declines_other_layouts():
    x = np.linspace(-3, 3, 5000, dtype=np.float32)
    assert functional._erf(x[::2], True) is None
    assert functional._erf(x.astype(np.float64), True) is None
