"""An elementwise add, sub, mul or div command in one C pass (`halves.binary`, `_f16.binary`):
the same output bits as numpy's path (`kernels.binary`, then `halves.store`) for fp16 and
fp32 operands and outputs, broadcast operands (a bias along rows, a scalar), infinities,
zeros of both signs, overflow in the fp16 store, division by zero, and an output that is
an operand itself (BERT's in-place residual adds); numpy's path for what it declines: a
NaN met, broadcasting that does not repeat an operand whole, strided views, partial
overlap, integer types."""

import types

import numpy as np
import pytest

from stc_mlir import kernels
from stc_mlir.emulator import functional, halves

pytestmark = [pytest.mark.skipif(not halves.NATIVE, reason="the _f16 module is not built or the CPU has no F16C"),
              pytest.mark.filterwarnings("ignore:(invalid value|overflow|divide by zero) encountered:RuntimeWarning")]
KINDS = ("add", "sub", "mul", "div")
SPECIAL = np.array([np.inf, -np.inf, 6e4, -6e4, 0.0, -0.0, 1e-7, 6e-8], np.float32)
"""Values that test the IEEE corners: infinities, values whose sum or product overflows
fp16, signed zeros (division by them), fp16 subnormals."""


def _values(rng, shape, dtype, special):
    x = rng.standard_normal(shape).astype(np.float32) * 3
    if special:
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 5))
        flat[picks] = rng.choice(SPECIAL, picks.size)
    return x.astype(dtype)


def _numpy(kind, a, b, out_shape, out_dtype):
    out = np.empty(out_shape, out_dtype)
    halves.store(out, kernels.binary(kind, a, b))
    return out


def _bits(x):
    return x.view(np.uint16 if x.dtype == np.float16 else np.uint32)


SHAPES = [  # lhs, rhs
    ((1, 128, 768), (1, 128, 768)),  # a residual add
    ((1, 128, 768), (768,)),  # a bias along rows
    ((2, 3, 5, 7), (5, 7)),
    ((4, 33), (1, 1)),  # a scalar, with leading ones
    ((1,), (3, 1000)),  # a scalar on the left
    ((3, 1001), (3, 1001)),  # not a whole number of C chunks
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("types_", [("e", "e", "e"), ("e", "f", "e"), ("f", "e", "f"), ("f", "f", "f")])
@pytest.mark.parametrize("special", [False, True])
def test_the_c_pass_gives_numpys_bits(kind, shapes, types_, special):
    rng = np.random.default_rng(hash((kind, shapes, types_, special)) % 2**32)
    a = _values(rng, shapes[0], types_[0], special)
    b = _values(rng, shapes[1], types_[1], special)
    if special:  # no inf - inf, 0 * inf, 0 / 0, inf / inf: NaNs are declined (tested below)
        b[~np.isfinite(b) | (b == 0)] = 2
    shape = np.broadcast_shapes(a.shape, b.shape)
    expected = _numpy(kind, a, b, shape, types_[2])
    out = np.full(shape, np.nan, types_[2])
    assert halves.binary(kind, a, b, out)
    np.testing.assert_array_equal(_bits(out), _bits(expected))


def test_division_by_zero_gives_numpys_signed_infinities():
    a = np.array([1, -1, 3, -0.5] * 16, np.float16)
    b = np.array([0.0, 0.0, -0.0, -0.0] * 16, np.float16)
    out = np.empty_like(a)
    assert halves.binary("div", a, b, out)
    np.testing.assert_array_equal(_bits(out), _bits(_numpy("div", a, b, a.shape, np.float16)))
    assert list(out[:4]) == [np.inf, -np.inf, -np.inf, np.inf]


@pytest.mark.parametrize("operand", [0, 1])
def test_an_output_that_is_an_operand_is_written_in_place(operand):
    rng = np.random.default_rng(operand)
    ops = [_values(rng, (1, 64, 96), np.float16, True) for _ in range(2)]
    ops[1][~np.isfinite(ops[1])] = 2  # (no inf - inf)
    expected = _numpy("add", ops[0], ops[1], ops[0].shape, np.float16)
    assert halves.binary("add", ops[0], ops[1], ops[operand])
    np.testing.assert_array_equal(_bits(ops[operand]), _bits(expected))


@pytest.mark.parametrize("operand", [0, 1])
def test_a_nan_met_late_in_place_leaves_the_operands_whole(operand):
    """The C pass declines a NaN (its payload is numpy's business) after it may have written
    earlier chunks: an in-place output must not have been touched, or numpy's redo would
    read half-written operands."""
    rng = np.random.default_rng(7)
    ops = [_values(rng, (1, 128, 768), np.float16, False) for _ in range(2)]
    ops[1 - operand].reshape(-1)[-3] = np.inf
    ops[operand].reshape(-1)[-3] = -np.inf  # inf - inf: a NaN in the last chunk only
    before = [x.copy() for x in ops]
    assert not halves.binary("add", ops[0], ops[1], ops[operand])
    for x, y in zip(ops, before):
        np.testing.assert_array_equal(_bits(x), _bits(y))


@pytest.mark.parametrize("case", ["nan operand", "nan result", "column broadcast", "strided view",
                                  "partial overlap", "integers", "float64 out", "pow"])
def test_what_the_c_pass_declines(case):
    rng = np.random.default_rng(3)
    a = _values(rng, (3, 64), np.float16, False)
    b = _values(rng, (3, 64), np.float16, False)
    out = np.empty((3, 64), np.float16)
    kind = "add"
    match case:
        case "nan operand":
            a[1, 5] = np.nan
        case "nan result":
            a[2, 7], b[2, 7] = np.inf, -np.inf
        case "column broadcast":  # (3, 1) repeats each element along a row: not the operand whole
            b = b[:, :1].copy()
        case "strided view":
            a = np.empty((3, 128), np.float16)[:, ::2]
        case "partial overlap":
            store = np.zeros(3 * 64 + 32, np.float16)
            a, out = store[:3 * 64].reshape(3, 64), store[32:].reshape(3, 64)
        case "integers":
            a, b = a.astype(np.int32), b.astype(np.int32)
        case "float64 out":
            out = out.astype(np.float64)
        case "pow":
            kind = "pow"
    assert not halves.binary(kind, a, b, out)


@pytest.mark.parametrize("nan", [False, True])
def test_a_binary_command_gives_the_same_bits_with_and_without_the_c_pass(monkeypatch, nan):
    """Through `functional.execute`, as BERT's in-place residual add: computed in C, or with
    a NaN declined by it and redone on numpy's path."""
    rng = np.random.default_rng(11)
    x = _values(rng, (1, 128, 768), np.float16, True)
    y = _values(rng, (1, 128, 768), np.float16, False)
    if nan:
        x[0, 100, 5] = np.nan
    answers = []
    c_binary = halves._f16.binary
    monkeypatch.setattr(halves._f16, "binary", lambda *args: answers.append(c_binary(*args)) or answers[-1])
    cmd = types.SimpleNamespace(op="binary", params={"kind": "add"})
    results = []
    for native in (True, False):
        monkeypatch.setattr(halves, "NATIVE", native)
        lhs, rhs = x.copy(), y.copy()
        functional.execute(cmd, {"lhs": lhs, "rhs": rhs}, {"output": lhs})
        results.append(_bits(lhs).copy())
    assert answers == [not nan]
    np.testing.assert_array_equal(results[0], results[1])
