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
