"""fp16 <-> fp32 conversion of tiles, with the same bits as numpy's casts.

numpy converts half floats one element at a time (~2 ns per element up, ~4 down on the
machines measured); the emulator converts every fp16 input tile to fp32 and stores every
fp32 result into an fp16 tile. When the optional C module `_f16` is built (`pip install`
builds it with the package; `python setup.py build_ext --inplace` in a source tree) and the
CPU has F16C, large tiles are converted with it instead, ~10x faster, bit for bit the same
(NaN payloads included; checked against numpy for every fp16 value and for samples of
every fp32 class in test/python/test_halves.py). Without it, numpy's casts are used.
`STC_F16_NATIVE=0` in the environment turns the C path off.

`store_epilogue` does a conv's bias, residual, activation and store in one pass in C (four
numpy passes over the accumulator otherwise), the same float operations in the same order;
`depthwise_windows` and `conv2d_columns` build a conv's windows in C (nine strided numpy
copies for a 3x3 kernel otherwise), the same values. `binary` does an elementwise add, sub,
mul or div with its fp16 operands converted as they are read and its store, in one pass
(an upcast of each operand, numpy's loop and a store otherwise), the same bits.

`conv`, `depthwise` and `matmul` do a whole conv or matmul command (its windows for a
depthwise conv, the product, the epilogue and the store into an fp16 tile, or an fp32 one:
a partial sum) in one C call that releases the GIL; inside `handing` they queue it on a
pool of C threads instead (`_f16.Pool`), so that the products of a run with several value
threads (`stc_mlir.emulator.parallel`) are computed while this one runs the event loop. The output and
residual tiles may be views of larger memories (runs of whole rows or planes). The product
calls the BLAS numpy calls, its sgemm or sgemv with numpy's arguments (`_f16.c` mirrors
numpy's matmul), so the bits are np.matmul's; the library is numpy's own OpenBLAS
(scipy-openblas64, ILP64), found with threadpoolctl and checked at import against
np.matmul. Without it (another BLAS, no symbol, a check failing) or with
`STC_PRODUCTS_NATIVE=0`, they return False and the caller takes numpy's path.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
from collections.abc import Callable

import numpy as np

from stc_mlir import kernels

try:
    from . import _f16  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _f16 = None

INTERFACE = 7
"""The `_f16.c` interface this file calls (its `F16_INTERFACE`)."""
NATIVE = bool(_f16 is not None and _f16.available and os.environ.get("STC_F16_NATIVE", "1") != "0"
              and getattr(_f16, "INTERFACE", None) == INTERFACE)
"""Whether the C path is used (tests switch it off to compare; a module built from an older
`_f16.c` is not, whose functions may take other arguments: rebuild it with `python setup.py
build_ext --inplace`)."""

SMALL = 2048
"""Tiles of fewer elements are converted by numpy (a call costs more than it saves)."""


def to_f32(x: np.ndarray) -> np.ndarray:
    """`x` (float16, any strides) as a new C-contiguous float32 array (`np.asarray(x, np.float32)`)."""
    if not NATIVE or x.size < SMALL:
        return np.asarray(x, np.float32)
    out = np.empty(x.shape, np.float32)
    if not _f16.to_f32(x, out):  # (a view of whole rows or planes is read where it is)
        _f16.to_f32(np.ascontiguousarray(x), out)
    return out


def store(out: np.ndarray, value: np.ndarray) -> None:
    """`out[...] = value` with `value` of `out`'s shape (or reshaped to it)."""
    if NATIVE and _f16.store(value, out, SMALL):  # (the usual case, checked in C: fp32 into fp16, both contiguous)
        return
    value = np.asarray(value)
    if value.shape != out.shape:
        value = np.reshape(value, out.shape)
    if not NATIVE or out.dtype != np.float16 or value.dtype != np.float32 or out.size < SMALL:
        out[...] = value
        return
    value = np.ascontiguousarray(value)
    if out.flags.c_contiguous:
        _f16.to_f16(value, out)
        return
    halves = np.empty(out.shape, np.float16)
    _f16.to_f16(value, halves)
    out[...] = halves


ACTIVATIONS = {"none": 0, "relu": 1, "relu6": 2}
"""The activations `store_epilogue` does (their numbers in the C module)."""


def store_epilogue(out: np.ndarray, acc: np.ndarray, bias: np.ndarray | None,
                   residual: np.ndarray | None, activation: str) -> bool:
    """`store(out, act((acc + bias) + residual))` in one pass, `acc` (n, channels, ...) and
    `bias` one value per channel (`kernels.add_channel_bias`, then `kernels.epilogue`), the
    same bits. `acc` is C-contiguous, or without a residual the channels-first transpose of
    a C-contiguous array (a depthwise conv's product). False when it is left to the caller
    (numpy): no C path, a small or non-fp16 `out`, another `acc` layout or type, a bias
    that is not fp32, a residual neither fp32 nor fp16, either needing broadcasting, an activation it does not know, or a
    NaN met (its payloads are numpy's business); `acc` is never changed, `out` may be
    partly written. An fp16 `residual` is converted inside the pass (as `to_f32` does)."""
    if (not NATIVE or out.dtype != np.float16 or acc.dtype != np.float32 or acc.ndim < 2
            or acc.size < SMALL or out.size != acc.size or activation not in ACTIVATIONS):
        return False
    shape, channels, batch = acc.shape, acc.shape[1], 0
    if not acc.flags.c_contiguous:  # channels first: (channels, n, ...) in memory
        acc = acc.swapaxes(0, 1)
        if residual is not None or not acc.flags.c_contiguous:
            return False
        batch = shape[0]
        inner = acc.size // (batch * channels)
    else:
        inner = acc.size // (acc.shape[0] * channels)
    if bias is not None:
        if bias.dtype != np.float32 or bias.size != channels:
            return False
        bias = np.ascontiguousarray(bias)
    if residual is not None:
        if residual.dtype not in (np.float32, np.float16) or residual.shape != shape:
            return False
        residual = np.ascontiguousarray(residual)
    target = out if out.flags.c_contiguous else np.empty(shape, np.float16)
    if not _f16.epilogue(acc, bias, residual, ACTIVATIONS[activation], inner, target, channels, batch,
                         residual is not None and residual.dtype == np.float16):
        return False
    if target is not out:
        out[...] = target if shape == out.shape else target.reshape(out.shape)
    return True



def _windows(x: np.ndarray, kernel, strides, pads, dilations, columns: bool) -> np.ndarray:
    n, c, h, w = x.shape
    ho = kernels.window_output_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0])
    wo = kernels.window_output_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1])
    out = np.empty((n, c, *kernel, ho, wo) if columns else (c, *kernel, n, ho, wo), np.float32)
    layout = 2 if x.dtype == np.float16 else int(columns)  # 2: columns of fp16 x
    _f16.windows(np.ascontiguousarray(x), out, layout, n, c, h, w, *kernel, *strides, pads[0],
                 pads[1], *dilations, ho, wo)
    return out


def depthwise_windows(x: np.ndarray, kernel, strides, pads, dilations) -> np.ndarray:
    """`kernels.depthwise_windows(x, ...)`, the same array, built in C when it can be."""
    if not NATIVE or x.dtype != np.float32 or x.ndim != 4 or x.size < SMALL:
        return kernels.depthwise_windows(x, kernel, strides, pads, dilations)
    return _windows(x, kernel, strides, pads, dilations, columns=False)


def columns_of_halves(kernel, strides, pads) -> bool:
    """Whether `conv2d_columns` of an fp16 input is built straight from its halves (the
    caller need not convert the input to fp32 first): all but the 1x1 convs without strides
    or pads, whose columns are a view of the fp32 input."""
    return NATIVE and not (tuple(kernel) == (1, 1) and tuple(strides) == (1, 1) and not any(pads))


def conv2d_columns(x: np.ndarray, kernel, strides, pads, dilations, groups: int) -> np.ndarray:
    """`kernels.conv2d_columns(x, ...)`, the same values, built in C when it can be (not the
    view a 1x1 conv without strides or pads takes); `x` fp32 or fp16 (then converted inside
    the gather, each element as `to_f32` converts it)."""
    pointwise = tuple(kernel) == (1, 1) and tuple(strides) == (1, 1) and not any(pads)
    if (pointwise or not NATIVE or x.dtype not in (np.float32, np.float16) or x.ndim != 4
            or x.size < SMALL):
        return kernels.conv2d_columns(x, kernel, strides, pads, dilations, groups)
    cols = _windows(x, kernel, strides, pads, dilations, columns=True)
    n, c = x.shape[:2]
    return cols.reshape(n, groups, c // groups * kernel[0] * kernel[1], -1)


def _numpy_blas() -> tuple[int, int] | None:
    """The addresses of cblas_sgemm and cblas_sgemv in the BLAS numpy calls, when it is the
    ILP64 scipy-openblas numpy wheels bundle (its symbols scipy_cblas_s*64_), else None."""
    blas = np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {})
    if blas.get("name") != "scipy-openblas" or "USE64BITINT" not in blas.get("openblas configuration", ""):
        return None
    from threadpoolctl import threadpool_info

    found = []
    for lib in threadpool_info():
        if lib.get("internal_api") != "openblas" or lib.get("version") != blas.get("version"):
            continue
        try:
            dll = ctypes.CDLL(lib["filepath"])
            found.append((ctypes.cast(dll.scipy_cblas_sgemm64_, ctypes.c_void_p).value,
                          ctypes.cast(dll.scipy_cblas_sgemv64_, ctypes.c_void_p).value))
        except (OSError, AttributeError):  # not loadable here, or another build's symbols
            continue
    return found[0] if len(found) == 1 else None  # (two of them: which one numpy calls is unknown)


def _products_agree() -> bool:
    """Whether `matmul` gives np.matmul's bits for one product of each kind (gemm, both
    gemv, the loop of k == 1): the check that the BLAS found is numpy's."""
    rng = np.random.default_rng(0)
    for m, k, p in ((37, 29, 23), (1, 29, 23), (37, 29, 1), (5, 1, 7)):
        a, b = rng.standard_normal((2, m, k), np.float32), rng.standard_normal((k, p), np.float32)
        out = np.empty((2, m, p), np.float16)
        if not (_f16.matmul(a, b, out, None, None, 0, 2, 2, 1, m, k, p)
                and np.array_equal(out.view(np.uint16), np.matmul(a, b).astype(np.float16).view(np.uint16))):
            return False
    return True


def _products() -> bool:
    if not NATIVE or os.environ.get("STC_PRODUCTS_NATIVE", "1") == "0":
        return False
    addresses = _numpy_blas()
    if addresses is None:
        return False
    _f16.set_blas(*addresses)
    if _products_agree():
        return True
    _f16.set_blas(0, 0)
    return False


PRODUCTS = _products()
"""Whether `conv`, `depthwise` and `matmul` compute in C (numpy's BLAS found and agreeing)."""


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Whether float32 `got` has `want`'s bits, or NaN where it has NaN (NaN payloads are not
    promised)."""
    nan = np.isnan(want)
    return np.array_equal(nan, np.isnan(got)) and np.array_equal(got.view(np.uint32)[~nan],
                                                                 want.view(np.uint32)[~nan])


def _depthwise_gemv() -> int:
    """Which mirror of OpenBLAS's sgemv_n kernels in `_f16.c` (1 Haswell, 2 SkylakeX) gives
    np.matmul's bits (NaN where it has NaN) for x (k) @ a (k, p), the product `depthwise`
    makes per channel, at every size it takes (k 2..49 and p of every kind of row: heads,
    bodies, tails, blocks of 4096, the SkylakeX bound), of normal, fp16, signed-zero,
    subnormal, huge, infinite and NaN values; that one is set in `_f16` and `depthwise`
    computes from x without windows. 0 (none: the windows and numpy's sgemv) otherwise."""
    if not PRODUCTS:
        return 0
    rng = np.random.default_rng(0)
    pool = rng.standard_normal(1 << 17, np.float32)
    a, x = pool[:9 * 45].reshape(9, 45), pool[-9:]  # (which kernel: normal values tell)
    y, want = np.empty(45, np.float32), np.matmul(x, a).view(np.uint32)
    kinds = [kind for kind in (1, 2) if _f16.gemv(kind, a, x, y) is None and np.array_equal(y.view(np.uint32), want)]
    pool[::3] = pool[::3].astype(np.float16)
    for step, value in ((11, -0.0), (13, 0.0), (89, 3e38), (97, np.inf), (101, -np.inf), (103, np.nan), (107, 1e-41)):
        pool[5::step] = value
    sizes = [(k, p) for k in range(2, 50) for p in (*range(4, 36), 61, 130, 4103, 8201, 16387) if k * p < 115200]
    with np.errstate(all="ignore"):
        for i, (k, p) in enumerate(sizes):
            if not kinds:
                break
            a, x = pool[i * 61 % 4096:][:k * p].reshape(k, p), pool[-k - i % 3 * 400:][:k]
            want, y = np.matmul(x, a), np.empty(p, np.float32)
            _f16.gemv(kinds[0], a, x, y)
            if not same_bits(y, want):
                kinds = []
    return kinds[0] if kinds and _f16.set_gemv(kinds[0]) else 0


DEPTHWISE_GEMV = _depthwise_gemv()
"""The sgemv_n mirror `depthwise` runs (`_depthwise_gemv`), 0 for none."""


_HANDING = threading.local()
"""Per thread, while `handing` runs: the pool its products go to and the jobs queued there."""


def pool(threads: int):
    """An `_f16.Pool` of `threads` threads to hand products to (`handing`), or None without
    the C products."""
    return _f16.Pool(threads) if PRODUCTS else None


def handing(pool, work: Callable[[], None]) -> list:
    """Calls `work()` with the products `conv`, `depthwise` and `matmul` take (and `binary`'s
    pass) handed to `pool` (each queued there as a job, `_f16.Job`) instead of computed here,
    and returns the jobs.
    Each job must be waited for (`Job.wait`) before its outputs are read or its operands
    changed; a wait that answers False (a NaN met) leaves the product to numpy's path."""
    jobs: list = []
    _HANDING.to = (pool, jobs)
    try:
        work()
    finally:
        _HANDING.to = None
    return jobs


def _product(f, *args) -> bool:
    """`f(*args)` (a C command), or with `handing` on this thread its job queued."""
    to = getattr(_HANDING, "to", None)
    if to is None:
        return f(*args)
    job = f(*args, to[0])
    if job is False:
        return False
    to[1].append(job)
    return True


def _epilogue_operands(out: np.ndarray, residual: np.ndarray | None, activation: str, shape: tuple) -> bool:
    """Whether `out` and `residual` (of `shape`) are what the C commands take (the rest, the
    operands' types and layouts, is checked in C)."""
    return out.size > 0 and activation in ACTIVATIONS and (residual is None or residual.shape == shape)


def conv(out: np.ndarray, w: np.ndarray, columns: np.ndarray, bias: np.ndarray | None,
         residual: np.ndarray | None, activation: str, shape: tuple) -> bool:
    """`out` = act(np.matmul(w, columns) + bias + residual) (rounded to fp16 for an fp16
    `out`, fp32 stored as it is), `w` fp32 (groups, og, k),
    (or any shape of those elements, the convs' weights as they are), `columns` fp32
    (n, groups, k, p) (`kernels.conv2d_columns`), `bias` one fp32 per output
    channel, `residual` of the product's `shape` (n, groups * og, ho, wo): the bits of
    `kernels.conv2d` then `store_epilogue`. False when left to the caller (no C products,
    other types or layouts, a NaN met: `out` may be partly written)."""
    if not PRODUCTS or not _epilogue_operands(out, residual, activation, shape):
        return False
    n, groups, k, p = columns.shape
    return _product(_f16.conv, w, columns, out, bias, residual, ACTIVATIONS[activation], n, groups,
                    w.size // (groups * k), k, p)


def depthwise(out: np.ndarray, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
              residual: np.ndarray | None, activation: str, strides, pads, dilations, shape: tuple) -> bool:
    """`conv` of a depthwise conv working on `depthwise_windows` (`kernels.uses_windows`),
    of `x` (n, c, h, w; fp32, or fp16 converted as `to_f32` does, a view of whole rows read
    where it lies) and `w` (c, 1, kh, kw), the windows built inside (none with the sgemv
    mirror, `DEPTHWISE_GEMV`); `shape` is its output's (n, c, ho, wo)."""
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    ho, wo = shape[2:]
    if not PRODUCTS or not _epilogue_operands(out, residual, activation, shape):
        return False
    return _product(_f16.depthwise, x, w, out, bias, residual, ACTIVATIONS[activation], n, c, h, wd, kh, kw,
                    *strides, *dilations, ho, wo, pads[0], pads[1])


_BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}


@functools.lru_cache(maxsize=4096)
def _repeats(a_shape: tuple, b_shape: tuple, out_size: int) -> bool:
    """Whether numpy's broadcasting of `a_shape` with `b_shape` (of `out_size` elements) repeats
    each operand whole along the result: its shape, after leading ones, a suffix of the
    result's (a bias along rows, a scalar), as `_f16.binary` reads them."""
    try:
        shape = np.broadcast_shapes(a_shape, b_shape)
    except ValueError:
        return False  # (numpy's error, on its path)
    if math.prod(shape) != out_size:
        return False
    for s in (a_shape, b_shape):
        s = s[next((i for i, d in enumerate(s) if d != 1), len(s)):]
        if s and tuple(shape[-len(s):]) != s:
            return False
    return True


def binary(kind: str, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """`store(out, kernels.binary(kind, a, b))` of an add, sub, mul or div of fp16 or fp32 `a`
    and `b` in one C pass (`_f16.binary`): the same bits. False when left to numpy's path:
    no C module, another kind, type or layout, a broadcasting that does not repeat both
    operands whole (`_repeats`), a NaN. Inside `handing`, a job as the products'."""
    op = _BINARY_OPS.get(kind)
    return (NATIVE and op is not None and _repeats(a.shape, b.shape, out.size)
            and _product(_f16.binary, op, a, b, out))


@functools.lru_cache(maxsize=4096)
def _matmul_plan(key: tuple) -> tuple | None:
    """Per matmul geometry `key` (the shapes of `a`, `b`, bias, residual and `out`, the
    activation): `_f16.matmul`'s arguments after the operands, or None (numpy's path), the
    same for every command of that geometry (cached)."""
    a_shape, b_shape, bias_shape, residual_shape, out_shape, activation = key
    if len(a_shape) < 2 or len(b_shape) < 2 or (bias_shape is not None and bias_shape[-1:] != b_shape[-1:]):
        return None
    batch_shape, b_batch = a_shape[:-2], b_shape[:-2]
    a_count = b_count = math.prod(batch_shape)
    if batch_shape != b_batch:
        b_count = math.prod(b_batch)
        if a_count == 1 and len(batch_shape) <= len(b_batch):
            batch_shape = b_batch
        elif b_count != 1 or len(b_batch) > len(batch_shape):
            return None  # (a broadcasting of several axes: numpy's)
    m, k = a_shape[-2:]
    p = b_shape[-1]
    if (b_shape[-2] != k or not k or not math.prod(out_shape) or activation not in ACTIVATIONS
            or residual_shape not in (None, (*batch_shape, m, p)) or m == p == 1
            or math.prod(out_shape) != max(a_count, b_count) * m * p):
        return None  # (m == p == 1: numpy's dot, not mirrored; an output of another size: numpy's error)
    return ACTIVATIONS[activation], max(a_count, b_count), a_count, b_count, m, k, p


def matmul(out: np.ndarray, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
           residual: np.ndarray | None, activation: str) -> bool:
    """`out` = act(np.matmul(a, b) + bias + residual) (fp16 or fp32 as `conv`), `a` and `b`
    fp32 or fp16 (..., m, k) and (..., k, p) (fp16 converted as `to_f32` does, in C), their
    batches equal or either of one matrix, `bias` p fp32 or fp16 values: the bits
    of `kernels.matmul`, `+= bias`, `kernels.epilogue` and `store`. False as `conv` (the
    checks of shapes once per geometry, `_matmul_plan`; types and layouts in C)."""
    if not PRODUCTS:
        return False
    plan = _matmul_plan((a.shape, b.shape, None if bias is None else bias.shape,
                         None if residual is None else residual.shape, out.shape, activation))
    return plan is not None and _product(_f16.matmul, a, b, out, bias, residual, *plan)
