"""Convolutions and pooling: windows over H and W.

The output is spread over cores along N then H and cut into tiles of rows (whole images
first). A tile of output rows [h0, h1) reads input rows [h0*s - pt, (h1-1)*s - pt + span)
clipped to the image; the rows cut off become the tile's own top/bottom padding, so every
tile is one command with the op's W padding and its own H padding (TreeWalker: each tile's
input derived backwards from its output). Neighbouring tiles overlap by the window's halo.

Conv weights go to the weight buffer: all at once if they fit, else in chunks of output
channels (multiples of the 32 N lanes, or of the group size; a divisor of the group size
when not even one group fits twice: AlexNet's 128-channel groups of 48 x 5 x 5 weights, each
chunk a plain conv over its group's input channels), two chunks in flight (the next loads
while the current computes). When even one 32-channel chunk of all input
channels does not fit twice, the input channels are cut too (multiples of the 16 K
lanes): the partial sums of a tile accumulate in fp32 in L1 (`residual` of the next
step), bias and residual are added by the first step, the activation by the last, and the
result is rounded to fp16 once, as the unchunked conv does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stc_mlir import kernels
from stc_mlir.dialects import graph as g
from stc_mlir.isa.program import DTYPES, Tile

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref, align
from .placement import Frame, IndexMap, LoweringError, Placement, dma, transfer, whole
from .stage import Rule, Work, weight_chunks
from .values import constant, dtype_of, shape_of

SPACE_TO_DEPTH = True
"""A strided conv on few input channels (a stem: 7 x 7 / 2 on 3 channels) is computed as a
stride-1 conv on the space-to-depth form of its input when that takes fewer matrix-unit
passes (`ConvRule.__init__`); False: never."""
K_LANES, N_LANES = 16, 32
"""The matrix unit's K lanes (input channels per pass) and N lanes (output channels) the
space-to-depth choice counts."""
MIN_SAVED = 32 * 1024
"""Space-to-depth only when it saves at least this many matrix-unit cycles over all cores:
each tile then takes s*s strided DMAs (and zero fills past an odd edge) instead of one, so
a small conv (a 3 x 3 / 2 on a 17 x 19 image: 360 cycles saved) gets slower."""


def s2d_axis(size: int, kernel: int, stride: int, pad: int, out: int) -> tuple[int, int, int, int] | None:
    """One axis of the space-to-depth form of a conv (`ConvRule`): (its input extent, its
    kernel, its padding before and after), or None if the conv does not map (a pad at
    least the kernel). Input index i of phase a is original index stride*i + a; kernel
    tap q of phase a is original tap stride*(q - pad') + a + pad."""
    if pad >= kernel:
        return None
    before = -(-pad // stride)
    k = (kernel - 1 - pad) // stride + before + 1
    extent = -(-size // stride)
    after = out - 1 - extent - before + k  # the output extent unchanged
    if after < 0:  # trailing phase rows no output reads
        extent, after = extent + after, 0
    return (extent, k, before, after) if extent >= 1 else None


def space_to_depth(x: Sequence[int], w: Sequence[int], out: Sequence[int], strides: Sequence[int],
                   pads: Sequence[int], dilations: Sequence[int], groups: int
                   ) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]] | None:
    """The rows' and columns' `s2d_axis` of a conv (input `x` NCHW, weight `w` OIHW, output
    `out` HW) when `SPACE_TO_DEPTH` computes it in space-to-depth form: a strided conv
    without groups or dilation whose form takes at least `MIN_SAVED` fewer matrix-unit
    cycles (the 7 x 7 / 2 stem on 3 channels: 49 passes of 3 of the 16 K lanes per output
    pixel become 16 of 12). None: the conv stays as it is. The autoschedule estimator
    counts a conv's passes with the same rule."""
    s = strides[0]
    if (not SPACE_TO_DEPTH or groups != 1 or s <= 1 or tuple(strides) != (s, s)
            or tuple(dilations) != (1, 1)):
        return None
    n, c, h, width = x
    o, _, kh, kw = w
    ho, wo = out
    rows = s2d_axis(h, kh, s, pads[0], ho)
    cols = s2d_axis(width, kw, s, pads[1], wo)
    if rows is None or cols is None:
        return None
    saved = kh * kw * -(-c // K_LANES) - rows[1] * cols[1] * -(-(c * s * s) // K_LANES)
    if saved * n * ho * wo * -(-o // N_LANES) < MIN_SAVED:
        return None
    return rows, cols


def window_rows(o0: int, o1: int, size: int, kernel: int, stride: int, pad: int,
                dilation: int) -> tuple[int, int, int, int]:
    """Input rows [r0, r1) output rows [o0, o1) read, and the padding above and below
    them (rows of the window outside the input)."""
    start = o0 * stride - pad
    end = (o1 - 1) * stride - pad + dilation * (kernel - 1) + 1
    r0, r1 = max(start, 0), min(end, size)
    return r0, r1, r0 - start, end - r1


class ConvRule(Rule):
    split_axes = (0, 2)
    tile_axes = (0, 2)

    def __init__(self, op: g.Conv2DOp, operands, out):
        super().__init__(op, operands, out)
        p = op.props()
        self.strides, self.pads, self.dilations = p["strides"], p["pads"], p["dilations"]
        self.groups, self.act = p["group"], p["activation"]
        self.n, self.c, self.h, self.w = shape_of(operands[0])
        self.o, self.cg, self.kh, self.kw = shape_of(operands[1])
        self.og = self.o // self.groups
        self.has_bias, self.has_residual = op.bias is not None, op.residual is not None
        self.weight_slots = frozenset({1, 2} if self.has_bias else {1})
        self.oc, self.kc = self.o, self.cg
        self.s2d = 0
        if SPACE_TO_DEPTH:
            self._space_to_depth()

    def reuse(self, out: Box) -> float:
        return bx.numel(out) / max(1, out[1][1] - out[1][0])  # output pixels of the box

    def _space_to_depth(self) -> None:
        """Switch to the space-to-depth form when it takes fewer matrix-unit passes
        (`space_to_depth`): the input x (N, C, H, W) is read as x'[n, (a*s + b)*C + c, i, j]
        = x[n, c, s*i + a, s*j + b] (s*s strided DMAs per tile, `load`), the weights are
        rearranged at compile time into a stride-1 (O, C*s*s, k', k') kernel (zero taps
        where the original has none, `operand_value`), the pads become pad' = ceil(pad / s)."""
        if constant(self.operands[1]) is None:
            return
        ho, wo = shape_of(self.out)[2:]
        form = space_to_depth((self.n, self.c, self.h, self.w), (self.o, self.cg, self.kh, self.kw),
                              (ho, wo), self.strides, self.pads, self.dilations, self.groups)
        if form is None:
            return
        rows, cols = form
        s = self.strides[0]
        self.orig = (self.c, self.h, self.w, self.kh, self.kw, self.pads)
        self.s2d = s
        self.c = self.cg = self.kc = self.c * s * s
        self.h, self.kh, top, _ = rows
        self.w, self.kw, left, right = cols
        self.strides, self.pads = (1, 1), (top, left, rows[3], right)
        self.relaid = frozenset({0})

    def slot_box(self, i: int, region: Box) -> Box:
        if i != 0 or not self.s2d:
            return region
        s, (r0, r1) = self.s2d, region[2]
        return (region[0], (0, self.c), (r0 // s, -(-r1 // s)), (0, self.w))

    def load(self, em: Emitter, i: int, value: Placement, frame: Frame, region: Box,
             core: int) -> None:
        if i != 0 or not self.s2d:
            return super().load(em, i, value, frame, region, core)
        s, box = self.s2d, frame.box
        c, h, w = self.orig[:3]
        (i0, i1), (_, j1) = box[2], box[3]
        for a in range(s):
            for b in range(s):
                p = a * s + b
                phase = (box[0], (p * c, (p + 1) * c), (i0, i1), (0, j1))
                rows = (i0, min(i1, -(-(h - a) // s)))  # the phase's rows inside the image
                cols = (0, min(j1, -(-(w - b) // s)))
                sub = None
                if rows[0] < rows[1] and cols[0] < cols[1]:
                    sub = (box[0], phase[1], rows, cols)
                    imap = IndexMap(((0, 1, 0), (1, 1, -p * c), (2, s, a), (3, s, b)), 4)
                    transfer(em, value, frame, sub, core, imap)
                for z in [phase] if sub is None else bx.subtract(phase, sub):
                    # past the image's last row / column: zeros (the original's padding)
                    dma(em, core, Ref(Tile(self._zeros(em, value.dtype), 0, bx.shape(z),
                                           (0,) * len(z), value.dtype)), frame.ref(z))

    @staticmethod
    def _zeros(em: Emitter, dtype: str) -> str:
        key = ("zeros", dtype)
        if key not in em.derived:
            em.derived[key] = em.buffer("zeros", "ddr", 64, init=bytes(64), init_dtype=dtype,
                                        pinned=True)
        return em.derived[key]  # type: ignore[return-value]

    def operand_value(self, em: Emitter, i: int, value: Placement) -> Placement:
        if i != 1 or not self.s2d:
            return value
        op = constant(self.operands[1])
        # (one weight read by two convs with other pads maps to two kernels)
        key = ("s2d", op, self.s2d, tuple(self.orig[5]), tuple(self.pads[:2]), self.kh, self.kw)
        if key not in em.derived:
            dtype = dtype_of(self.operands[1])
            w = np.asarray(op.numpy())  # type: ignore[union-attr]
            s, (c, _, _, kh, kw, pads) = self.s2d, self.orig
            out = np.zeros((self.o, self.c, self.kh, self.kw), w.dtype)
            for a in range(s):
                for b in range(s):
                    p = a * s + b
                    for q in range(self.kh):
                        y = s * (q - self.pads[0]) + a + pads[0]
                        if not 0 <= y < kh:
                            continue
                        for r in range(self.kw):
                            x = s * (r - self.pads[1]) + b + pads[1]
                            if 0 <= x < kw:
                                out[:, p * c:(p + 1) * c, q, r] = w[:, :, y, x]
            buf = em.buffer(f"{self.operands[1].name_hint or 'const'}_s2d", "ddr", out.nbytes,
                            init=out.astype(DTYPES[dtype]).tobytes(), init_dtype=dtype, pinned=True)
            em.derived[key] = whole(buf, out.shape, dtype)
        return em.derived[key]  # type: ignore[return-value]

    def configure(self, wb_budget: int) -> None:
        itemsize = DTYPES[dtype_of(self.operands[1])].itemsize  # f16, or f32 in an f32 build
        bias = align(self.o * DTYPES[dtype_of(self.operands[2])].itemsize) if self.has_bias else 0
        budget = wb_budget - bias
        window = self.kh * self.kw * itemsize
        per_o = self.cg * window
        if self.groups > 1 and self.o * per_o > budget:  # whole groups per chunk
            groups = budget // (2 * per_o * self.og)
            step = self.og * max(1, 32 // self.og) if self.og < 32 else self.og
            oc = groups * self.og
            if oc >= step:
                oc -= oc % step
            if oc == 0:  # not even one group twice: chunks of a group's output channels
                oc = max((d for d in range(1, self.og + 1) if self.og % d == 0
                          and 2 * per_o * d <= budget), key=lambda d: (d % 32 == 0, d), default=0)
            if oc == 0:
                raise LoweringError(f"one output channel of a group needs {2 * per_o:,} bytes of "
                                    f"weight buffer for two chunks, {budget:,} are free")
            self.oc, self.kc = oc, self.cg
            return
        self.oc, self.kc = weight_chunks(self.o, self.cg, window, budget, "input channel")

    def chunks(self, box: Box) -> list[Box]:
        lo, hi = box[1]
        cuts = sorted({lo, hi} | {c for c in range(0, hi, self.oc) if lo < c < hi})
        return [bx.with_dim(box, 1, (a, b)) for a, b in zip(cuts, cuts[1:])]

    def _rows(self, out: Box) -> tuple[int, int, int, int]:
        return window_rows(out[2][0], out[2][1], self.h, self.kh, self.strides[0],
                           self.pads[0], self.dilations[0])

    def _channels(self, o0: int, o1: int) -> tuple[int, int]:
        if self.groups == 1:
            return 0, self.c
        return o0 // self.og * self.cg, -(-o1 // self.og) * self.cg

    def steps(self, out: Box) -> list[list[Box | None]]:
        (o0, o1) = out[1]
        r0, r1, _, _ = self._rows(out)
        x = (out[0], self._channels(o0, o1), (r0, r1), (0, self.w))
        if self.s2d:  # the original rows and columns the space-to-depth rows read
            s, (c, h, w) = self.s2d, self.orig[:3]
            x = (out[0], (0, c), (s * r0, min(h, s * r1)), (0, min(w, s * self.w)))
        whole = self.oc == self.o and self.kc == self.cg
        kernel = ((0, self.kh), (0, self.kw))
        steps = []
        kranges = bx.chunks(0, self.cg, self.kc)
        for j, (k0, k1) in enumerate(kranges):
            w = bx.full((self.o, self.cg, self.kh, self.kw)) if whole else ((o0, o1), (k0, k1)) + kernel
            step: list[Box | None] = [x, w]
            if self.has_bias:
                step.append(((0, self.o),) if j == 0 else None)
            if self.has_residual:
                step.append(out if j == 0 else None)
            steps.append(step)
        return steps

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        out_box = work.out
        (o0, o1) = out_box[1]
        r0, r1, top, bottom = self._rows(out_box)
        k0, k1 = bx.chunks(0, self.cg, self.kc)[step]
        c0, c1 = (k0, k1) if self.groups == 1 else self._channels(o0, o1)
        x = frames[0].ref((out_box[0], (c0, c1), (r0, r1), (0, self.w)))
        w = frames[1].ref(((o0, o1), (k0, k1), (0, self.kh), (0, self.kw)))
        last = step == len(work.steps) - 1
        operands: dict[str, Ref] = {}
        if step == 0:
            if self.has_bias:
                operands["bias"] = frames[2].ref(((o0, o1),))
            if self.has_residual:
                operands["residual"] = frames[-1].ref(out_box)
        else:
            operands["residual"] = acc.ref(out_box)
        em.emit(core, "conv2d", input=x, weight=w, output=out if last else acc.ref(out_box),
                strides=self.strides, pads=(top, self.pads[1], bottom, self.pads[3]),
                dilations=self.dilations,
                groups=max(1, (o1 - o0) // self.og) if self.groups > 1 else 1,
                act=self.act if last else "none", **operands)


class PoolRule(Rule):
    """max_pool / avg_pool; channels are independent, so tiles may also cut C."""

    split_axes = (0, 2, 1)
    tile_axes = (0, 2, 1)

    def __init__(self, op: g.MaxPoolOp | g.AvgPoolOp, operands, out):
        super().__init__(op, operands, out)
        p = op.props()
        self.kind = "max" if isinstance(op, g.MaxPoolOp) else "avg"
        self.kernel, self.strides, self.pads = p["kernel"], p["strides"], p["pads"]
        self.dilations = p.get("dilations", (1, 1))
        self.ceil_mode = p["ceil_mode"]
        self.count_include_pad = p.get("count_include_pad", False)
        self.h, self.w = shape_of(operands[0])[2:]

    def _rows(self, out: Box) -> tuple[int, int, int, int]:
        r0, r1, top, bottom = window_rows(out[2][0], out[2][1], self.h, self.kernel[0],
                                          self.strides[0], self.pads[0], self.dilations[0])
        return r0, r1, top, min(bottom, self.pads[2])  # ceil_mode's extra rows stay implicit

    def steps(self, out: Box) -> list[list[Box | None]]:
        r0, r1, _, _ = self._rows(out)
        return [[(out[0], out[1], (r0, r1), (0, self.w))]]

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        r0, r1, top, bottom = self._rows(work.out)
        rows = kernels.window_output_size(r1 - r0, self.kernel[0], self.strides[0], top, bottom,
                                          self.dilations[0], self.ceil_mode)
        assert rows == work.out[2][1] - work.out[2][0], (rows, work.out)
        params = {"kind": self.kind, "kernel": self.kernel, "strides": self.strides,
                  "pads": (top, self.pads[1], bottom, self.pads[3]), "ceil_mode": self.ceil_mode}
        if self.kind == "max":
            params["dilations"] = self.dilations
        else:
            params["count_include_pad"] = self.count_include_pad
        em.emit(core, "pool", input=frames[0].ref(work.steps[0][0]), output=out, **params)
