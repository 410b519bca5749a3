"""fp16 <-> fp32 conversion of tiles (`stc_mlir.emulator.halves`): the F16C path gives
numpy's bits for every fp16 value and for every class of fp32 value (rounding ties,
subnormals, overflow, NaN payloads), on contiguous and strided tiles, and an emulated
program's outputs are the same bytes with and without it."""

import numpy as np
import pytest

from stc_mlir import models
from stc_mlir.emulator import halves, program_from_module, run
from stc_mlir.frontend import import_onnx
from stc_mlir.pipeline import Pipeline

native = pytest.mark.skipif(not halves.NATIVE, reason="the _f16 module is not built or the CPU has no F16C")
RNG = np.random.default_rng(11)


def _bits32(x):
    return np.ascontiguousarray(x).view(np.uint32)


def _bits16(x):
    return np.ascontiguousarray(x).view(np.uint16)


def _numpy_f16(x):
    with np.errstate(all="ignore"):
        return x.astype(np.float16)


@pytest.fixture
def every_size(monkeypatch):
    monkeypatch.setattr(halves, "SMALL", 0)  # the C path even for a handful of elements


@native
def test_every_half_converts_as_numpy(every_size):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    assert np.array_equal(_bits32(halves.to_f32(h)), _bits32(h.astype(np.float32)))


def _fp32_cases():
    """Bit patterns of every class: random, near each fp16 rounding tie, the subnormal and
    overflow boundaries, infinities, zeros, NaNs (quiet, signalling, payload in the low
    13 bits only, which fp16 cannot hold)."""
    rand = RNG.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)
    ties = (RNG.integers(0, 1 << 19, 1 << 16, dtype=np.uint64).astype(np.uint32) << 13) | 0x1000
    ties = np.concatenate([ties - np.uint32(1), ties, ties + np.uint32(1)])
    edges = np.array([0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000,  # 65504..65536
                      0x33000000, 0x33000001, 0x337fffff, 0x33800000, 0x33c00000,  # 2^-25, 2^-24
                      0x387fc000, 0x387fe000, 0x38800000, 0x00000001, 0x007fffff,  # 2^-14, fp32 subnormals
                      0x7f800000, 0x7f800001, 0x7f801fff, 0x7f802000, 0x7fc00000,  # inf, NaNs
                      0x7fffffff, 0x7fbfffff, 0x00000000], dtype=np.uint32)
    bits = np.concatenate([rand, ties, edges])
    return np.concatenate([bits, bits | 0x80000000]).view(np.float32)


@native
def test_floats_round_to_halves_as_numpy(every_size):
    x = _fp32_cases()
    out = np.empty(x.shape, np.float16)
    halves.store(out, x)
    assert np.array_equal(_bits16(out), _bits16(_numpy_f16(x)))


@native
@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 17, 2049])
def test_lengths_not_a_multiple_of_the_vector(every_size, n):
    x = _fp32_cases()[-n:].copy()
    out = np.full(n + 3, 7, np.float16)  # the elements past the tile stay untouched
    halves.store(out[:n], x)
    assert np.array_equal(_bits16(out[:n]), _bits16(_numpy_f16(x)))
    assert (out[n:] == 7).all()
    assert np.array_equal(_bits32(halves.to_f32(out[:n])), _bits32(out[:n].astype(np.float32)))


@native
def test_strided_tiles(every_size):
    memory = np.zeros((6, 40, 24), np.float16)
    view = memory[1:5, 3:35:2, 4:20]  # a strided tile in a larger buffer
    value = (RNG.standard_normal((4, 16, 16)) * 300).astype(np.float32)
    halves.store(view, value.reshape(64, 16))  # reshaped to the tile
    expect = np.zeros_like(memory)
    expect[1:5, 3:35:2, 4:20] = value
    assert np.array_equal(_bits16(memory), _bits16(expect))
    assert np.array_equal(_bits32(halves.to_f32(view)), _bits32(view.astype(np.float32)))


@native
def test_the_c_store_takes_only_contiguous_fp32_into_fp16():
    """`_f16.store` (`store`'s first step) converts only what `to_f16` would; anything else
    it leaves untouched for numpy, without an error."""
    value = (RNG.standard_normal((64, 48)) * 100).astype(np.float32)
    out = np.zeros((64, 48), np.float16)
    assert halves._f16.store(value, out.reshape(48, 64), 2048)  # (the same bytes, another shape)
    assert np.array_equal(_bits16(out), _bits16(_numpy_f16(value)))
    for v, o, small in [(value.T, np.zeros((48, 64), np.float16), 0),  # not contiguous
                        (value.astype(np.float64), np.zeros((64, 48), np.float16), 0),
                        (value, np.zeros((64, 48), np.float32), 0),
                        (value, np.zeros((64, 47), np.float16), 0),  # another size
                        (value, np.zeros((64, 96), np.float16)[:, ::2], 0),
                        (value, np.zeros((64, 48), np.float16), 4096)]:  # too small
        assert not halves._f16.store(v, o, small)
        assert not o.any()


def test_other_types_are_stored_by_numpy(every_size):
    out = np.zeros(4096, np.float16)
    halves.store(out, np.linspace(-3, 3, 4096))  # float64: numpy's own cast
    assert np.array_equal(out, np.linspace(-3, 3, 4096).astype(np.float16))
    ints = np.zeros(4096, np.int32)
    halves.store(ints, np.arange(4096, dtype=np.int64))
    assert np.array_equal(ints, np.arange(4096))


@native
def test_emulated_outputs_identical_without_the_c_path(monkeypatch):
    proto = models.build("mobilenetv2", batch=2, image_size=32)
    program = program_from_module(Pipeline().run(import_onnx(proto)))
    inputs = models.example_inputs("mobilenetv2", proto)
    fast, fast_report = run(program, inputs)
    monkeypatch.setattr(halves, "NATIVE", False)
    slow, slow_report = run(program, inputs)
    assert fast_report.cycles == slow_report.cycles
    for name in slow:
        assert np.array_equal(np.ascontiguousarray(fast[name]).view(np.uint8),
                              np.ascontiguousarray(slow[name]).view(np.uint8))


def _numpy_epilogue(acc, bias, residual, activation):
    """The numpy path the fused store stands for: bias, residual, activation, store."""
    from stc_mlir import kernels
    value = kernels.epilogue(kernels.add_channel_bias(acc.copy(), bias), residual, activation,
                             in_place=True)
    with np.errstate(all="ignore"):
        return value.astype(np.float16)


def _special(shape, infinities=False):
    """Random values with zeros of both signs, values past fp16's range and fp16 rounding
    ties mixed in (and infinities: only in one operand, inf - inf would be a NaN)."""
    x = (RNG.standard_normal(shape) * 8).astype(np.float32)
    flat = x.reshape(-1)
    picks = RNG.integers(0, flat.size, flat.size // 4)
    special = [0.0, -0.0, 7e4, -7e4, 6.0, -6.0, np.float32(np.float16(1.5)) + np.float32(2 ** -12)]
    flat[picks] = RNG.choice(np.array(special + [np.inf, -np.inf] * infinities, np.float32), picks.size)
    return x


@native
@pytest.mark.parametrize("activation", ["none", "relu", "relu6"])
@pytest.mark.parametrize("with_bias, with_residual", [(True, True), (True, False), (False, True),
                                                      (False, False)])
def test_fused_epilogue_gives_numpy_bits(every_size, activation, with_bias, with_residual):
    acc = _special((3, 5, 7, 11), infinities=True)
    bias = _special((5,)) if with_bias else None
    residual = _special(acc.shape) if with_residual else None
    out = np.full(acc.shape, 9, np.float16)
    assert halves.store_epilogue(out, acc, bias, residual, activation)
    assert np.array_equal(_bits16(out), _bits16(_numpy_epilogue(acc, bias, residual, activation)))
    if with_residual:  # an fp16 residual (signed zeros, ties), converted in the pass, strided
        halves16 = np.clip(_special(acc.shape), -6e4, 6e4).astype(np.float16)  # finite: acc has infinities
        out[...] = 9
        assert halves.store_epilogue(out, acc, bias, halves16[:, :, :, ::-1], activation)
        assert np.array_equal(_bits16(out), _bits16(_numpy_epilogue(acc, bias, halves16[:, :, :, ::-1],
                                                                    activation)))
    zeros = np.zeros(acc.shape, np.float32)  # -0. + -0. stays -0.: the activations' zero signs
    out[...] = 9
    assert halves.store_epilogue(out, -zeros, -zeros[0, :, 0, 0], -zeros, activation)
    assert np.array_equal(_bits16(out), _bits16(_numpy_epilogue(-zeros, -zeros[0, :, 0, 0], -zeros,
                                                                activation)))


@native
def test_fused_epilogue_strided_output_and_what_it_leaves(every_size):
    acc, bias = _special((2, 4, 6, 8)), _special((4,))
    memory = np.zeros((2, 6, 6, 12), np.float16)
    view = memory[:, 1:5, :, 2:10]
    assert halves.store_epilogue(view, acc, bias, None, "relu")
    assert np.array_equal(_bits16(view), _bits16(_numpy_epilogue(acc, bias, None, "relu")))
    assert not memory[:, :, :, :2].any() and not memory[:, 0].any()
    acc_before = acc.copy()
    nan = acc.copy()
    nan[1, 2, 3, 4] = np.nan  # NaN payloads are numpy's: left to the caller
    assert not halves.store_epilogue(np.empty(acc.shape, np.float16), nan, bias, None, "relu")
    channels_first = _special((4, 2, 6, 8)).transpose(1, 0, 2, 3)  # a depthwise conv's product
    assert halves.store_epilogue(view, channels_first, bias, None, "relu6")
    assert np.array_equal(_bits16(view), _bits16(_numpy_epilogue(channels_first, bias, None, "relu6")))
    flat = np.empty((2, 4 * 6 * 8), np.float16)  # an output tile of another shape, same size
    assert halves.store_epilogue(flat, channels_first, bias, None, "relu")
    assert np.array_equal(_bits16(flat), _bits16(_numpy_epilogue(channels_first, bias, None,
                                                                 "relu")).reshape(2, -1))
    big = _special((40, 3, 5, 7)).transpose(1, 0, 2, 3)  # many planes, no bias
    out = np.empty(big.shape, np.float16)
    assert halves.store_epilogue(out, big, None, None, "none")
    assert np.array_equal(_bits16(out), _bits16(_numpy_epilogue(big, None, None, "none")))
    assert not halves.store_epilogue(view, channels_first, bias, acc, "relu")  # residual: numpy's
    assert not halves.store_epilogue(view, acc.transpose(0, 2, 1, 3), None, None, "relu")
    assert not halves.store_epilogue(view, acc, bias[:2], None, "relu")  # a bias to broadcast
    assert not halves.store_epilogue(view, acc, None, acc[:, :1], "relu")  # a residual to broadcast
    assert not halves.store_epilogue(view, acc, None, None, "gelu")
    assert not halves.store_epilogue(np.empty(acc.shape, np.float32), acc, None, None, "relu")
    assert np.array_equal(_bits32(acc), _bits32(acc_before))


@native
@pytest.mark.parametrize("kernel, strides, pads, dilations", [
    ((3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((3, 3), (2, 2), (0, 1, 1, 0), (1, 1)),  # asymmetric pads
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
    ((5, 5), (1, 2), (2, 3, 2, 1), (1, 1)),
    ((3, 2), (1, 1), (2, 0, 2, 1), (2, 3)),  # dilated
    ((3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),
    ((3, 3), (3, 1), (4, 4, 4, 4), (1, 1)),  # windows wholly in the padding
])
def test_windows_and_columns_as_numpy(every_size, kernel, strides, pads, dilations):
    from stc_mlir import kernels
    x = _special((2, 3, 9, 10))
    fast = halves.depthwise_windows(x, kernel, strides, pads, dilations)
    slow = kernels.depthwise_windows(x, kernel, strides, pads, dilations)
    assert fast.shape == slow.shape and fast.dtype == slow.dtype
    assert np.array_equal(_bits32(fast), _bits32(slow))
    for groups in (1, 3):  # the im2col columns
        cols = halves.conv2d_columns(x, kernel, strides, pads, dilations, groups)
        expect = kernels.conv2d_columns(x, kernel, strides, pads, dilations, groups)
        assert cols.shape == expect.shape and np.array_equal(_bits32(cols), _bits32(expect))
    for groups in (1, 3):  # the columns of an fp16 input, converted inside the gather
        halves16 = RNG.integers(0, 1 << 16, x.size, dtype=np.uint16).reshape(x.shape)  # NaNs too
        strided = np.empty((2, 6, 9, 10), np.uint16)[:, ::2]  # a strided tile as well
        strided[...] = halves16
        for tile in (halves16.view(np.float16), strided.view(np.float16)):
            cols = halves.conv2d_columns(tile, kernel, strides, pads, dilations, groups)
            expect = kernels.conv2d_columns(tile, kernel, strides, pads, dilations, groups)
            assert cols.dtype == np.float32 and cols.shape == expect.shape
            assert np.array_equal(_bits32(cols), _bits32(expect))
    w = _special((3, 1, *kernel))  # and the conv made from them
    assert np.array_equal(_bits32(kernels.conv2d(x, w, None, strides, pads, dilations, 3, windows=fast)),
                          _bits32(kernels.conv2d(x, w, None, strides, pads, dilations, 3)))


def test_tile_cache_follows_a_region_copied_in_pieces():
    """A tile whose bytes came in two copies of consecutive source bytes (weights moved in
    pieces) is looked up at the source, so it is converted once; not when the pieces come
    from elsewhere or a piece is written again."""
    from stc_mlir.emulator.tile_cache import TileCache
    cache = TileCache()
    cache.copied("l1", 0, 8, "ddr", 100)
    cache.copied("l1", 8, 16, "ddr", 108)
    cache.copied("l1", 16, 24, "ddr", 200)  # not where the second piece ended
    assert cache.origin("l1", 4, 12) == ("ddr", 104)
    assert cache.origin("l1", 0, 16) == ("ddr", 100)
    assert cache.origin("l1", 4, 20) == ("l1", 4)
    made = []
    def make():
        made.append(1)
        return np.zeros(4, np.float32)
    first = cache.get("l1", 0, 16, (0, "what"), make)
    cache.copied("l2", 32, 48, "ddr", 100)  # the same bytes once more, in one copy
    assert cache.get("l2", 32, 48, (32, "what"), make) is first and len(made) == 1
    cache.written("l1", 9, 10)  # the second piece is gone
    assert cache.origin("l1", 0, 16) == ("l1", 0)
    assert cache.get("l1", 0, 16, (0, "what"), make) is not first and len(made) == 2


@pytest.mark.skipif(halves._f16 is None, reason="the C module is not built here")
def test_the_built_module_is_the_interface_halves_calls():
    # a build from an older _f16.c would read an fp16 tile's columns as fp32: not used
    assert halves._f16.INTERFACE == halves.INTERFACE
