"""Hand-written multi-core npu programs (used by tests and bench/).

`conv_by_rows`: a 'same' convolution split over cores by output rows. Each core loads its
rows from DDR into L1, pushes its first/last rows to its neighbours' halo rows over the NoC,
streams the weights through two weight-buffer slots in chunks of output channels
(double-buffered), and stores each chunk of results to DDR while the next one computes.

`matmul_by_rows`: C = A @ B with A's rows split over cores and B in every weight buffer.
"""

from __future__ import annotations

import numpy as np

from stc_mlir.target import load as load_target

from .builder import ProgramBuilder
from stc_mlir.isa.program import Program, tile


def conv_by_rows(
    x_shape: tuple[int, int, int, int], weight: np.ndarray, bias: np.ndarray | None = None,
    cores: int = 8, out_chunks: int | None = None, act: str = "none", name: str = "conv_by_rows",
    target: str = "stcp920",
) -> Program:
    """Input "x" (NCHW, f16) -> output "y": conv2d(x, weight, bias), stride 1, pads kh // 2.
    `out_chunks` (number of weight chunks) defaults to the fewest that fit the weight buffer."""
    n, c, h, w = x_shape
    o, cin, kh, kw = weight.shape
    if out_chunks is None:
        wb = load_target(target).memory["wb"].size - (o * 2 if bias is not None else 0)
        out_chunks = next(k for k in range(1, o + 1) if o % k == 0
                          and min(2, k) * (o // k) * cin * kh * kw * 2 <= wb)
    assert cin == c and kh % 2 == 1 and kw % 2 == 1 and o % out_chunks == 0
    assert h % cores == 0 and h // cores >= kh // 2
    p, pw = kh // 2, kw // 2
    rows, oc = h // cores, o // out_chunks
    b = ProgramBuilder(name, target)
    x = b.input("x", x_shape)
    y = b.output("y", (n, o, h, w))
    wt = b.constant("w", weight.astype(np.float16))
    bt = b.constant("b", bias.astype(np.float16)) if bias is not None else None
    row_stride = (c * h * w, h * w, w, 1)
    chunk_bytes = oc * c * kh * kw * 2
    for core in range(cores):
        top, bottom = core > 0, core < cores - 1
        xin = b.buffer(f"xin{core}", "l1", n * c * (rows + 2 * p) * w * 2, core)
        out = b.buffer(f"out{core}", "l1", n * o * rows * w * 2, core)
        nslots = min(2, out_chunks)
        slots = [b.buffer(f"w{core}_{k}", "wb", chunk_bytes, core) for k in range(nslots)]
        ready = b.semaphore(f"ready{core}", core)
        halo = b.semaphore(f"halo{core}", core)
        full = [b.semaphore(f"full{core}_{k}", core) for k in range(nslots)]
        free = [b.semaphore(f"free{core}_{k}", core) for k in range(nslots)]
        done = b.semaphore(f"done{core}", core)
        # own rows into L1 (rows p .. p+rows of the halo'd tile), one signal per consumer
        own = tile(xin, (n, c, rows, w), p * w * 2, (c * (rows + 2 * p) * w, (rows + 2 * p) * w, w, 1))
        src = tile(x.buffer, (n, c, rows, w), core * rows * w * 2, row_stride)
        b.add(core, "dma", src=src, dst=own, signals=[ready] * (1 + top + bottom))
        if bt is not None:
            bias_wb = b.buffer(f"bias{core}", "wb", o * 2, core)
            b.add(core, "dma", src=bt, dst=tile(bias_wb, (o,)), signals=[full[0]])
        # halo rows to the neighbours' L1 over the NoC
        for nb, (first, dst_row) in ((core - 1, (0, rows + p)), (core + 1, (rows - p, 0))):
            if not 0 <= nb < cores:
                continue
            view = (n, c, p, w)
            strides = (c * (rows + 2 * p) * w, (rows + 2 * p) * w, w, 1)
            b.add(core, "dma", waits=[ready], signals=[f"halo{nb}"],
                  src=tile(xin, view, (p + first) * w * 2, strides),
                  dst=tile(f"xin{nb}", view, dst_row * w * 2, strides))
        # weights double-buffered, convs, result stores
        in_rows = rows + p * (top + bottom)
        x_tile = tile(xin, (n, c, in_rows, w), (0 if top else p) * w * 2,
                      (c * (rows + 2 * p) * w, (rows + 2 * p) * w, w, 1))
        pads = (0 if top else p, pw, 0 if bottom else p, pw)
        for j in range(out_chunks):
            k = j % 2
            b.add(core, "dma", waits=[free[k]] if j >= 2 else [], signals=[full[k]],
                  src=tile(wt.buffer, (oc, c, kh, kw), j * chunk_bytes),
                  dst=tile(slots[k], (oc, c, kh, kw)))
        for j in range(out_chunks):
            k = j % 2
            waits = [full[k]] + ([ready] + [halo] * (top + bottom) if j == 0 else [])
            if j == 0 and bt is not None:
                waits.append(full[0])
            result = tile(out, (n, oc, rows, w), j * oc * rows * w * 2, (o * rows * w, rows * w, w, 1))
            b.add(core, "conv2d", waits=waits, signals=[free[k], done],
                  input=x_tile, weight=tile(slots[k], (oc, c, kh, kw)),
                  bias=tile(f"bias{core}", (oc,), j * oc * 2) if bt is not None else None,
                  output=result, pads=pads, act=act)
            b.add(core, "dma", waits=[done], src=result,
                  dst=tile(y.buffer, (n, oc, rows, w), (j * oc * h * w + core * rows * w) * 2,
                           (o * h * w, h * w, w, 1)))
    return b.build()


def matmul_by_rows(a_shape: tuple[int, int], weight: np.ndarray, cores: int = 8,
                   name: str = "matmul_by_rows") -> Program:
    """Input "a" (M x K, f16) -> output "c" = a @ weight (K x N), M split over cores."""
    m, k = a_shape
    _, nn = weight.shape
    assert m % cores == 0
    rows = m // cores
    b = ProgramBuilder(name)
    a = b.input("a", a_shape)
    c = b.output("c", (m, nn))
    wt = b.constant("w", weight.astype(np.float16))
    for core in range(cores):
        at = b.buffer(f"a{core}", "l1", rows * k * 2, core)
        ct = b.buffer(f"c{core}", "l1", rows * nn * 2, core)
        wb = b.buffer(f"w{core}", "wb", weight.size * 2, core)
        loaded = b.semaphore(f"loaded{core}", core)
        done = b.semaphore(f"done{core}", core)
        b.add(core, "dma", signals=[loaded], src=tile(a.buffer, (rows, k), core * rows * k * 2),
              dst=tile(at, (rows, k)))
        b.add(core, "dma", signals=[loaded], src=wt, dst=tile(wb, weight.shape))
        b.add(core, "matmul", waits=[loaded, loaded], signals=[done], lhs=tile(at, (rows, k)),
              rhs=tile(wb, weight.shape), output=tile(ct, (rows, nn)))
        b.add(core, "dma", waits=[done], src=tile(ct, (rows, nn)),
              dst=tile(c.buffer, (rows, nn), core * rows * nn * 2))
    return b.build()
