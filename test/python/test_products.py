"""A conv's or matmul's whole command in one C call (`halves.conv`, `halves.depthwise`,
`halves.matmul`, `_f16.c`): the same output bits as numpy's path (np.matmul, the numpy
epilogue and store) on random shapes, degenerate ones included (one row, one column, k of
1, groups, strides, pads, dilations, fp16 and fp32 residuals, every activation, NaN and
infinity inputs), and numpy's path when no usable BLAS is found."""

import types
import zlib

import numpy as np
import pytest

from stc_mlir import kernels
from stc_mlir.emulator import functional, halves

# numpy's path warns about the infinities and NaNs the special inputs make: expected here
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")
products = pytest.mark.skipif(not halves.PRODUCTS, reason="no C products (no _f16 module or numpy's BLAS not found)")
ACTIVATIONS = ("none", "relu", "relu6")
EPILOGUES = ("bias", "fp16 residual", "fp32 residual", "both", "none", "fp32 out")
"""What a command does after its product (bias and/or residual, fp16 or fp32), into an
fp16 output, or both into an fp32 one (a partial sum)."""


@pytest.fixture
def calls(monkeypatch):
    """The C commands' answers, by function (True: computed in C)."""
    seen: dict[str, list[bool]] = {"conv": [], "depthwise": [], "matmul": []}
    for name in seen:
        def wrapped(*args, f=getattr(halves._f16, name), name=name):
            done = f(*args)
            seen[name].append(done)
            return done
        monkeypatch.setattr(halves._f16, name, wrapped)
    return seen


def _outputs(monkeypatch, cmd, ins, shape, dtype=np.float16):
    """The output bits of `cmd` with the C products and with numpy's path."""
    bits = []
    for on in (True, False):
        monkeypatch.setattr(halves, "PRODUCTS", on)
        out = np.full(shape, np.nan, dtype)
        functional.execute(cmd, dict(ins), {"output": out})
        bits.append(out.view(np.uint16 if dtype == np.float16 else np.uint32).copy())
    return bits


def _values(rng, shape, special=False):
    x = rng.standard_normal(shape).astype(np.float32) * 4
    if special:  # infinities, huge values (the fp16 store overflows), zeros of both signs
        flat = x.reshape(-1)
        picks = rng.integers(0, flat.size, max(1, flat.size // 7))
        flat[picks] = rng.choice(np.array([np.inf, -np.inf, 6e4, -6e4, 0.0, -0.0], np.float32), picks.size)
    return x.astype(np.float16)


def _conv_case(rng, n, c, o, h, w, kernel, strides, pads, dilations, groups, act, bias, residual,
               special=False):
    ho = kernels.window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0])
    wo = kernels.window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1])
    ins = {"input": _values(rng, (n, c, h, w), special),
           "weight": _values(rng, (o, c // groups, *kernel), special)}
    if bias:
        ins["bias"] = _values(rng, (o,))
    if residual is not None:
        ins["residual"] = _values(rng, (n, o, ho, wo)).astype(residual)
    cmd = types.SimpleNamespace(op="conv2d", params={"strides": strides, "pads": pads, "dilations": dilations,
                                                     "groups": groups, "act": act})
    return cmd, ins, (n, o, ho, wo)


CONVS = [  # n, c, o, h, w, kernel, strides, pads, dilations, groups
    (2, 8, 16, 9, 9, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # gemm
    (1, 8, 1, 9, 9, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # one output channel: gemv
    (2, 8, 6, 3, 3, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # one output pixel: gemv
    (1, 8, 1, 3, 3, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # one by one: numpy's dot
    (2, 6, 4, 5, 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # pointwise: columns a view of x
    (1, 1, 5, 6, 4, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # k == 1: numpy's loop
    (2, 4, 4, 6, 6, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 4),  # k == 1, one row per group
    (2, 8, 12, 11, 10, (3, 3), (2, 2), (1, 0, 1, 1), (1, 1), 4),  # groups, strides, pads
    (1, 6, 6, 12, 12, (3, 2), (1, 2), (2, 1, 0, 2), (2, 2), 2),  # dilations
    (1, 3, 7, 1, 9, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 1),  # one row
    (1, 3, 7, 9, 1, (3, 1), (1, 1), (1, 0, 1, 0), (1, 1), 1),  # one column
    (2, 8, 8, 10, 9, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 8),  # depthwise
    (2, 5, 5, 11, 12, (3, 3), (2, 2), (0, 1, 1, 0), (2, 1), 5),  # depthwise, strides, dilations
    (1, 4, 4, 1, 6, (1, 3), (1, 1), (0, 0, 0, 0), (1, 1), 4),  # depthwise of one row (numpy's einsum)
]


@products
@pytest.mark.parametrize("case", CONVS)
@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("epilogue", EPILOGUES)
def test_conv_commands_give_numpys_bits(monkeypatch, calls, case, act, epilogue):
    rng = np.random.default_rng(zlib.crc32(repr((case, act, epilogue)).encode()))
    residual = {"fp16 residual": np.float16, "fp32 residual": np.float32, "both": np.float16,
                "fp32 out": np.float32}.get(epilogue)
    cmd, ins, shape = _conv_case(rng, *case, act, epilogue in ("bias", "both", "fp32 out"), residual)
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, shape, np.float32 if epilogue == "fp32 out" else np.float16)
    assert np.array_equal(c_path, numpy_path)
    n, c, o, h, w, kernel, _, _, _, groups = case
    depthwise = groups == c == o and kernel != (1, 1)
    one_by_one = o // groups == 1 and shape[2] * shape[3] == 1
    if depthwise and min(shape[2:]) > 1:
        assert calls["depthwise"][0] and not calls["conv"]
    elif not depthwise:  # (numpy's dot, m == p == 1, is numpy's)
        assert calls["conv"][0] is not one_by_one


@products
@pytest.mark.parametrize("seed", range(40))
def test_random_convs(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    groups = int(rng.choice([1, 2, 3]))
    c, o = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
    kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
    strides = tuple(int(s) for s in rng.integers(1, 3, 2))
    pads = tuple(int(p) for p in rng.integers(0, 2, 4))
    dilations = (1, 1) if seed % 3 else (2, 1)
    h, w = (int(rng.integers(2 * k, 14)) for k in kernel)
    act = ACTIVATIONS[seed % 3]
    residual = (None, np.float16, np.float32)[seed % 3]
    cmd, ins, shape = _conv_case(rng, int(rng.integers(1, 3)), c, o, h, w, kernel, strides, pads,
                                 dilations, groups, act, bool(seed % 2), residual, special=seed % 4 == 0)
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, shape)
    assert np.array_equal(c_path, numpy_path)


MATMULS = [  # lhs shape, rhs shape
    ((17, 24), (24, 9)), ((1, 24), (24, 9)), ((17, 24), (24, 1)), ((1, 24), (24, 1)),
    ((17, 1), (1, 9)), ((1, 1), (1, 9)), ((17, 1), (1, 1)),
    ((3, 17, 24), (24, 9)), ((17, 24), (3, 24, 9)), ((2, 3, 8, 16), (2, 3, 16, 8)),
    ((1, 1, 8, 16), (2, 3, 16, 8)), ((2, 3, 8, 16), (1, 16, 8)),
    ((2, 1, 8, 16), (1, 3, 16, 8)),  # broadcast along two axes: numpy's path
]


@products
@pytest.mark.parametrize("shapes", MATMULS)
@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("epilogue", EPILOGUES)
def test_matmul_commands_give_numpys_bits(monkeypatch, calls, shapes, act, epilogue):
    rng = np.random.default_rng(zlib.crc32(repr((shapes, act, epilogue)).encode()))
    (a, b), out = shapes, np.broadcast_shapes(shapes[0][:-2], shapes[1][:-2]) + (shapes[0][-2], shapes[1][-1])
    ins = {"lhs": _values(rng, a), "rhs": _values(rng, b)}
    if epilogue in ("bias", "both"):
        ins["bias"] = _values(rng, (b[-1],))
    if "residual" in epilogue or epilogue in ("both", "fp32 out"):
        ins["residual"] = _values(rng, out).astype(np.float16 if epilogue in ("fp16 residual", "both") else np.float32)
    cmd = types.SimpleNamespace(op="matmul", params={"act": act})
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, out, np.float32 if epilogue == "fp32 out" else np.float16)
    assert np.array_equal(c_path, numpy_path)
    mirrored = not (a[-2] == b[-1] == 1) and shapes != ((2, 1, 8, 16), (1, 3, 16, 8))
    assert calls["matmul"] == ([True] if mirrored else [])  # (numpy's dot and two broadcast axes: not tried)


@products
@pytest.mark.parametrize("op", ["conv2d", "depthwise", "matmul"])
def test_nan_and_infinity_inputs(monkeypatch, calls, op):
    """A NaN stops the C epilogue and numpy's path redoes the command; infinities without
    NaNs go through C."""
    rng = np.random.default_rng(5)
    if op == "matmul":
        cmd = types.SimpleNamespace(op="matmul", params={"act": "relu"})
        ins, shape = {"lhs": _values(rng, (2, 16, 32)), "rhs": _values(rng, (32, 24))}, (2, 16, 24)
        first, second = "lhs", "rhs"
    else:
        cmd, ins, shape = _conv_case(rng, *CONVS[0 if op == "conv2d" else 11], "relu", True, np.float16)
        first, second = "input", "weight"
    name = "conv" if op == "conv2d" else op
    ins[first].reshape(-1)[::11] = np.inf
    ins[first].reshape(-1)[5::13] = -np.inf  # (inf - inf: NaNs in the products)
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, shape)
    assert np.array_equal(c_path, numpy_path)
    # (a matmul or conv is tried with its fp16 operands as they lie, then with fp32 copies)
    assert np.isnan(c_path.view(np.float16)).any() and calls[name] == [False] * (1 if op == "depthwise" else 2)
    calls[name].clear()
    ins[first], ins[second] = np.abs(ins[first]), np.abs(ins[second])  # only +inf, positive weights
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, shape)
    assert np.array_equal(c_path, numpy_path)
    assert np.isinf(c_path.view(np.float16)).any() and calls[name] == [True]


@products
def test_without_blas_the_c_commands_decline(monkeypatch):
    """With no BLAS handed over, the C commands take nothing (the caller's numpy path);
    handing numpy's back, they compute again."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((8, 8), np.float32), rng.standard_normal((8, 8), np.float32)
    out = np.empty((8, 8), np.float16)
    try:
        halves._f16.set_blas(0, 0)
        assert not halves.matmul(out, a, b, None, None, "none")
    finally:
        halves._f16.set_blas(*halves._numpy_blas())
    assert halves.matmul(out, a, b, None, None, "none")
    assert np.array_equal(out.view(np.uint16), np.matmul(a, b).astype(np.float16).view(np.uint16))


def test_no_usable_blas_means_numpys_path(monkeypatch):
    """Another BLAS than numpy's bundled ILP64 OpenBLAS, or the switch: no C products,
    and a command gives numpy's bits."""
    config = {**np.__config__.CONFIG, "Build Dependencies": {"blas": {"name": "openblas"}}}
    monkeypatch.setattr(np.__config__, "CONFIG", config)
    assert halves._numpy_blas() is None
    assert not halves._products()
    monkeypatch.undo()
    monkeypatch.setenv("STC_PRODUCTS_NATIVE", "0")
    assert not halves._products()
    monkeypatch.setattr(halves, "PRODUCTS", False)
    rng = np.random.default_rng(3)
    cmd, ins, shape = _conv_case(rng, *CONVS[0], "relu", True, np.float16)
    out = np.empty(shape, np.float16)
    functional.execute(cmd, ins, {"output": out})
    x, w = ins["input"].astype(np.float32), ins["weight"].astype(np.float32)
    p = cmd.params
    acc = kernels.conv2d(x, w, ins["bias"].astype(np.float32), p["strides"], p["pads"], p["dilations"], p["groups"])
    expected = kernels.epilogue(acc, ins["residual"], "relu").astype(np.float16)
    assert np.array_equal(out.view(np.uint16), expected.view(np.uint16))


@products
def test_products_found_are_numpys():
    """The BLAS found is numpy's (the import-time check passed) and matches np.matmul."""
    assert halves._numpy_blas() is not None
    assert halves._products_agree()


def _in_larger(x, axis, before=2, after=3):
    """`x` as a view of a larger buffer (padded along `axis`, a tile of a larger memory)."""
    pad = [(0, 0)] * x.ndim
    pad[axis] = (before, after)
    big = np.pad(x, pad, constant_values=np.float16(1234))
    return big[tuple(slice(before, before + x.shape[axis]) if i == axis else slice(None) for i in range(x.ndim))]


@products
@pytest.mark.parametrize("op", ["conv2d", "depthwise", "matmul"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("in_place", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_strided_outputs_and_residuals(monkeypatch, calls, op, axis, in_place, dtype):
    """Output and residual tiles in larger buffers (whole planes or rows of them), and a
    residual that is the output tile itself (an fp32 partial sum, say), as numpy's path
    gives them."""
    rng = np.random.default_rng(axis)
    if op == "matmul":
        cmd = types.SimpleNamespace(op="matmul", params={"act": "relu6"})
        ins, shape = {"lhs": _values(rng, (3, 4, 16, 32)), "rhs": _values(rng, (32, 24))}, (3, 4, 16, 24)
        ins["bias"], ins["residual"] = _values(rng, (24,)), _values(rng, shape)
    else:
        cmd, ins, shape = _conv_case(rng, *CONVS[7 if op == "conv2d" else 12], "relu6", True, np.float16)
    bits = []
    for on in (True, False):
        monkeypatch.setattr(halves, "PRODUCTS", on)
        out = _in_larger(np.full(shape, np.nan, dtype), axis)
        given = dict(ins)
        if in_place:
            out[...] = ins["residual"].astype(dtype)
            given["residual"] = out
        else:
            given["residual"] = _in_larger(ins["residual"], 1 - axis if axis < 2 else 0)
        functional.execute(cmd, given, {"output": out})
        bits.append(out.base.view(np.uint8).copy())
    assert np.array_equal(*bits)
    assert calls["conv" if op == "conv2d" else op] == [True]


@products
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("bias", ["fp16", "fp32"])
def test_a_matmul_takes_its_fp16_operands_where_they_lie(monkeypatch, calls, axis, bias):
    """A matmul's fp16 lhs and rhs tiles in larger buffers (whole planes or rows of them)
    and an fp16 or fp32 bias are converted inside the C command: numpy's bits. A command
    asks the caller for its lhs's fp32 copy only (an lhs meets many chunks of weights)."""
    rng = np.random.default_rng(10 + axis)
    cmd = types.SimpleNamespace(op="matmul", params={"act": "relu"})
    lhs, rhs = _in_larger(_values(rng, (3, 4, 16, 32)), axis), _in_larger(_values(rng, (32, 24)), min(axis, 1))
    ins = {"lhs": lhs, "rhs": rhs, "bias": _values(rng, (24,)).astype(np.float16 if bias == "fp16" else np.float32)}
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, (3, 4, 16, 24))
    assert np.array_equal(c_path, numpy_path)
    assert calls["matmul"] == [True]
    monkeypatch.setattr(halves, "PRODUCTS", True)
    out = np.full((3, 4, 16, 24), np.nan, np.float16)
    assert halves.matmul(out, lhs, rhs, ins["bias"], None, "relu")
    assert np.array_equal(out.view(np.uint16), c_path)
    derived = []
    out = np.empty((3, 4, 16, 24), np.float16)
    functional.execute(cmd, ins, {"output": out}, lambda slot, what, make: derived.append(slot) or make())
    assert derived == ["lhs"] and np.array_equal(out.view(np.uint16), c_path)


@products
def test_a_conv_takes_its_fp16_weights_and_bias_where_they_lie(monkeypatch, calls):
    """A conv's fp16 weights and bias are converted inside the C command: numpy's bits, and
    the derived values asked for are the input's columns only."""
    rng = np.random.default_rng(12)
    cmd, ins, shape = _conv_case(rng, *CONVS[7], "relu", True, np.float16)
    c_path, numpy_path = _outputs(monkeypatch, cmd, ins, shape)
    assert np.array_equal(c_path, numpy_path) and calls["conv"] == [True]
    monkeypatch.setattr(halves, "PRODUCTS", True)
    asked = []
    out = np.empty(shape, np.float16)
    functional.execute(cmd, dict(ins), {"output": out}, lambda slot, what, make: asked.append((slot, what[0])) or make())
    assert asked == [("input", "columns")] and np.array_equal(out.view(np.uint16), c_path)
