"""The computed commands' fast paths (branch emu-glue2) against the numpy kernels they stand for:
`functional._erf` (erf and exact gelu in C around numpy's exp) and the per-shape plans of
`halves.matmul`, bit for bit."""

from contextlib import nullcontext

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


products = pytest.mark.skipif(not halves.PRODUCTS, reason="no C products (numpy's BLAS not found)")


def _matmul_operands(rng, out_dtype=np.float16, residual_shape=None):
    a = rng.standard_normal((2, 24, 40), np.float32)
    b = rng.standard_normal((40, 16), np.float32)
    bias = rng.standard_normal(16, np.float32)
    residual = None if residual_shape is None else rng.standard_normal(residual_shape, np.float32)
    return np.zeros((2, 24, 16), out_dtype), a, b, bias, residual


@products
def test_a_matmul_plan_is_per_geometry_and_activation():
    """One geometry planned once: the same shapes with another activation, output type or
    residual shape are still declined (the plan holds shapes, C checks types)."""
    rng = np.random.default_rng(3)
    halves._matmul_plan.cache_clear()
    out, a, b, bias, _ = _matmul_operands(rng)
    assert halves.matmul(out, a, b, bias, None, "relu")
    want = np.maximum(np.matmul(a, b) + bias, 0).astype(np.float16)
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))
    assert not halves.matmul(out, a, b, bias, None, "gelu")  # (not an epilogue activation)
    wide, *_ = _matmul_operands(rng, np.float64)
    assert not halves.matmul(wide, a, b, bias, None, "relu")
    _, a2, b2, bias2, residual = _matmul_operands(rng, residual_shape=(2, 24, 16))
    assert halves.matmul(out, a2, b2, bias2, residual, "none")
    _, _, _, _, flat = _matmul_operands(rng, residual_shape=(48, 16))
    assert not halves.matmul(out, a2, b2, bias2, flat, "none")
    assert not halves.matmul(out, a, b[:, :8], None, None, "none")  # (out not of the product's size)
    assert not halves.matmul(out[:, :, :0], a, b[:, :0], None, None, "none")


@products
def test_a_conv_takes_its_weights_in_any_shape():
    """`halves.conv` with the weights as the conv has them (og, c, kh, kw) and as (groups,
    og, k): the same output bits."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 8, 9, 9), np.float32)
    w = rng.standard_normal((12, 4, 3, 3), np.float32)
    columns = kernels.conv2d_columns(x, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2)
    shape = (2, 12, 9, 9)
    outs = [np.zeros(shape, np.float16) for _ in range(2)]
    assert halves.conv(outs[0], w, columns, None, None, "relu", shape)
    assert halves.conv(outs[1], w.reshape(2, 6, -1), columns, None, None, "relu", shape)
    assert np.array_equal(outs[0].view(np.uint16), outs[1].view(np.uint16))
    want = kernels.epilogue(kernels.conv2d(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 2), None, "relu")
    assert np.array_equal(outs[0].view(np.uint16), want.astype(np.float16).view(np.uint16))


@native
def test_upcast_leaves_the_cache_lock_free():
    """`Derived.upcast` takes the cache's lock once for all its look-ups: it is free after
    hits, misses, fp32 and kept views, and after a conversion that raises."""
    from stc_mlir.emulator.tile_cache import TileCache

    cache = TileCache(native=True)
    data = np.arange(256, dtype=np.uint8)
    places = {s: ("m", lo, lo + 64, (lo, (32,), (2,), np.dtype(np.float16)))
              for s, lo in (("lhs", 0), ("rhs", 64), ("bias", 128), ("residual", 192))}
    views = {s: data[p[1]:p[2]].view(np.float16) for s, p in places.items()}
    views["bias"] = data[128:192].view(np.float32)
    seen = []

    def execute(cmd, ins, outs, derived):
        if cmd == "raise":
            derived.upcast(ins, ())
        for _ in range(2):  # (misses, then hits)
            got = derived.upcast(ins, ("residual",))
            assert not cache.lock.locked()
            seen.append({s: (v.dtype.name, v.tobytes()) for s, v in got.items()})

    def fail(task, error):
        raise AssertionError(error)

    class Task:
        strided = None

        def __init__(self, cmd):
            self.cmd, self.views = cmd, (views, {}, places, ())

    compute = tile_cache._values.computer(cache, execute, fail, halves.to_f32, np.dtype(np.float16))
    compute(Task("ok"))
    want = {s: ("float32" if s in ("lhs", "rhs") else v.dtype.name,
                (v.astype(np.float32) if s in ("lhs", "rhs") else v).tobytes()) for s, v in views.items()}
    assert seen == [want, want]

    def broken(view):
        raise ValueError("no conversion")

    cache = TileCache(native=True)
    compute = tile_cache._values.computer(cache, execute, fail, broken, np.dtype(np.float16))
    with pytest.raises(ValueError, match="no conversion"):
        compute(Task("raise"))
    assert not cache.lock.locked()


@pytest.mark.parametrize("shape,axes", [((5, 768), (1,)), ((2, 3, 7), (1, 2)), ((4, 1000), (1,)), ((3, 0), (1,))])
def test_layer_norms_mean_is_np_mean(shape, axes):
    """`kernels._mean` (numpy's sum and division without np.mean's dispatch) gives np.mean's bits."""
    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32) * 1e3
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning) if not x.size else nullcontext():
        got = kernels._mean(x, axes, int(np.prod([shape[a] for a in axes])))
        want = np.mean(x, axis=axes, keepdims=True)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
