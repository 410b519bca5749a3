"""Where tensors live, and moving regions of them.

A *frame* is a row-major array in a buffer holding one box of a tensor; a *placement* says
where every element of a value is: a list of *pieces*, each a box the piece owns and the
frame holding it (a frame may hold more than the piece owns: margins for halos).

- a value in DDR or LLB is one piece owning the whole tensor (`core` None), possibly a
  view into a bigger buffer (a batch slice of a split or of a concat's result);
- a value in L1 is spread over cores: one piece per core, owning the box of the tensor
  that core computes (its batch part and its rows, see `split_box`). Values that do not
  carry an item's batch are replicated: every part has a piece owning all of it.

`transfer` moves a region of a value, wherever its pieces are, into a frame: one DMA per
source piece the region meets (L1 to L1 over the NoC for another core's piece), taking the
nearest copy of replicated data. With an `IndexMap` the same DMAs transpose, slice,
broadcast or offset the data on the way (movement ops never touch a compute unit).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from stc_mlir.isa.program import DTYPES, LOCAL_SPACES, MAX_RANK, Tile, contiguous_strides
from xdsl.utils.exceptions import PassFailedException

from stc_mlir.errors import StcError

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref


class LoweringError(StcError, PassFailedException):
    """Something the lowering does not support (or cannot fit): names the item, the op and
    why."""


class Frame:
    """A row-major array holding box `box` of a tensor, at byte `offset` of `buffer`.
    (A plain class with slots: the lowering makes tens of thousands.)"""

    __slots__ = ("buffer", "offset", "box", "dtype", "strides", "itemsize", "key", "refs")

    def __init__(self, buffer: str, offset: int, box: Box, dtype: str):
        self.buffer, self.offset, self.box, self.dtype = buffer, offset, box, dtype
        self.strides = _strides(tuple([hi - lo for lo, hi in box]))  # elements
        self.itemsize = ITEMSIZE[dtype]
        self.key = (buffer, offset, box)  # identifies it for `Sync`
        self.refs: dict[Box, Ref] = {}  # region -> its tile (`ref`): regions recur
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frame) and self.key == other.key and self.dtype == other.dtype

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Frame({self.buffer!r}, {self.offset}, {self.box}, {self.dtype!r})"

    @property
    def nbytes(self) -> int:
        return bx.numel(self.box) * self.itemsize

    def element_offset(self, point: Sequence[int]) -> int:
        return sum([(p - lo) * s for p, (lo, _), s in zip(point, self.box, self.strides)])

    def ref(self, region: Box) -> Ref:
        """The tile of `region` (inside the frame) with the region's shape."""
        hit = self.refs.get(region)
        if hit is not None:
            return hit
        off = 0
        shape = []
        for (r0, r1), (f0, f1), s in zip(region, self.box, self.strides):
            if r0 < f0 or f1 < r1:
                raise AssertionError(f"region {region} outside frame {self.box}")
            off += (r0 - f0) * s
            shape.append(r1 - r0)
        if len(region) > MAX_RANK:
            raise LoweringError(f"a {len(region)}-D tile does not fit the 4-D tiles of the npu")
        ref = self.refs[region] = Ref(Tile(self.buffer, self.offset + off * self.itemsize,
                                           tuple(shape), self.strides, self.dtype), self.key, region)
        return ref


ITEMSIZE = {name: dt.itemsize for name, dt in DTYPES.items()}


@functools.lru_cache(maxsize=4096)
def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return contiguous_strides(shape)


@functools.lru_cache(maxsize=1 << 14)
def _collapsed(shape: tuple, src: tuple, dst: tuple) -> tuple[tuple, tuple, tuple]:
    """`_collapse` of a DMA's two tiles of `shape` with strides `src` and `dst`: (shape,
    src strides, dst strides). (A few hundred distinct DMA geometries recur thousands of
    times.)"""
    shapes, strides = _collapse([shape, shape], [src, dst])
    return shapes[0], strides[0], strides[1]


def _collapse(shapes: list, strides: list) -> tuple[list, list]:
    """Jointly drop extent-1 dims and merge adjacent dims contiguous in every tile."""
    dims = list(shapes[0])
    sts = [list(s) for s in strides]
    keep = [i for i, d in enumerate(dims) if d != 1] or [len(dims) - 1]
    dims = [dims[i] for i in keep]
    sts = [[s[i] for i in keep] for s in sts]
    i = len(dims) - 2
    while i >= 0:
        if all(s[i] == s[i + 1] * dims[i + 1] for s in sts):
            dims[i] *= dims[i + 1]
            del dims[i + 1]
            for s in sts:
                s[i] = s[i + 1]
                del s[i + 1]
        i -= 1
    return [tuple(dims)] * len(shapes), [tuple(s) for s in sts]


@dataclass(frozen=True)
class Piece:
    core: int | None  # None: DDR/LLB, readable by every core
    owned: Box
    frame: Frame


@dataclass
class Placement:
    shape: tuple[int, ...]
    dtype: str
    pieces: list[Piece]

    def on(self, core: int) -> Piece | None:
        for p in self.pieces:
            if p.core == core:
                return p
        return None

    @property
    def whole(self) -> Frame | None:
        """The frame holding all of the value in DDR/LLB, if it has one."""
        if len(self.pieces) == 1 and self.pieces[0].core is None:
            return self.pieces[0].frame
        return None


def whole(buffer: str, shape: Sequence[int], dtype: str, offset: int = 0) -> Placement:
    box = bx.full(shape)
    return Placement(tuple(shape), dtype, [Piece(None, box, Frame(buffer, offset, box, dtype))])


# ----------------------------------------------------------------------------- index maps


@dataclass(frozen=True)
class IndexMap:
    """Output index -> input index, per output dim: `(input dim, step, start)` (input index
    `start + step * o`; step 0 broadcasts) or None for a new dim of extent 1. Input dims no
    output dim names stay at `fixed[k]`."""

    dims: tuple[tuple[int, int, int] | None, ...]
    in_rank: int
    fixed: tuple[int, ...] = ()

    def _fixed(self, k: int) -> int:
        return self.fixed[k] if self.fixed else 0

    def image(self, out: Box) -> Box:
        """The input box an output box reads (its hull for steps > 1)."""
        res = [(self._fixed(k), self._fixed(k) + 1) for k in range(self.in_rank)]
        for (lo, hi), m in zip(out, self.dims):
            if m is None:
                continue
            k, step, start = m
            res[k] = (start + step * lo, start + step * (hi - 1) + 1) if step else (start, start + 1)
        return tuple(res)

    def preimage(self, out: Box, owned: Box) -> Box | None:
        """The part of `out` whose inputs lie in `owned`."""
        named = {m[0] for m in self.dims if m is not None}
        for k in range(self.in_rank):
            if k not in named and not owned[k][0] <= self._fixed(k) < owned[k][1]:
                return None
        res = []
        for (lo, hi), m in zip(out, self.dims):
            if m is None:
                res.append((lo, hi))
                continue
            k, step, start = m
            o0, o1 = owned[k]
            if step == 0:
                if not o0 <= start < o1:
                    return None
                res.append((lo, hi))
                continue
            a = max(lo, -(-(o0 - start) // step))
            b = min(hi, -(-(o1 - start) // step))
            if a >= b:
                return None
            res.append((a, b))
        return tuple(res)

    def src_tile(self, frame: Frame, out: Box) -> Ref:
        """The source tile (in output order) reading `out`'s inputs from `frame`."""
        inb = self.image(out)
        base = frame.offset + frame.element_offset([lo for lo, _ in inb]) * frame.itemsize
        strides = []
        for m in self.dims:
            strides.append(0 if m is None or m[1] == 0 else frame.strides[m[0]] * m[1])
        return Ref(Tile(frame.buffer, base, bx.shape(out), tuple(strides), frame.dtype),
                   frame.key, inb)


# ----------------------------------------------------------------------------- transfers


def dma(em: Emitter, core: int, src: Ref, dst: Ref) -> None:
    """One DMA (several if the tiles cannot be collapsed to 4 dims)."""
    s, d = src.tile, dst.tile
    shape, s_strides, d_strides = _collapsed(s.shape, s.strides, d.strides)
    if len(shape) <= MAX_RANK:
        em.emit(core, "dma",
                src=src if shape == s.shape and s_strides == s.strides else
                Ref(Tile(s.buffer, s.offset, shape, s_strides, s.dtype), src.frame, src.box),
                dst=dst if shape == d.shape and d_strides == d.strides else
                Ref(Tile(d.buffer, d.offset, shape, d_strides, d.dtype), dst.frame, dst.box))
        return
    strides = (s_strides, d_strides)
    size = DTYPES[s.dtype].itemsize
    for i in range(shape[0]):  # peel the outermost dim
        dma(em, core,
            Ref(Tile(s.buffer, s.offset + i * strides[0][0] * size, shape[1:], strides[0][1:],
                     s.dtype), src.frame, src.box),
            Ref(Tile(d.buffer, d.offset + i * strides[1][0] * size, shape[1:], strides[1][1:],
                     d.dtype), dst.frame, dst.box))


def transfer(em: Emitter, src: Placement, dst: Frame, region: Box, default_core: int,
             imap: IndexMap | None = None, near: int | None = None) -> None:
    """Copy the output-coordinate box `region` (of the value `imap` makes of `src`) into
    `dst` at the same coordinates. DMAs run on the destination core for a local frame,
    else on the source piece's core, else on `default_core`."""
    b = em.program.buffers[dst.buffer]
    dst_core = b.core
    local = b.space in LOCAL_SPACES  # (then the DMAs run on its core)
    near = near if near is not None else (dst_core if dst_core is not None else default_core)
    pieces = src.pieces
    if len(pieces) > 1:
        t = em.target

        def rank(p: Piece) -> tuple[int, int]:
            if p.core is None:
                return (2, 0)
            return (0 if p.core == near else 1, t.hops(p.core, near))

        pieces = sorted(pieces, key=rank)
    remaining = [region]
    for piece in pieces:
        left = []
        for r in remaining:
            # (without an index map, the source tile is the same box of the piece's frame)
            sub = bx.intersect(r, piece.owned) if imap is None else imap.preimage(r, piece.owned)
            if sub is None:
                left.append(r)
                continue
            if imap is not None:
                src_ref = imap.src_tile(piece.frame, sub)
            else:  # (the piece's frame holds the box it owns: `ref` caches the tile)
                src_ref = piece.frame.ref(sub) if len(sub) <= MAX_RANK else _wide_ref(piece.frame, sub)
            issuer = dst_core if local else (piece.core if piece.core is not None else default_core)
            dma(em, issuer, src_ref, dst.ref(sub) if len(sub) <= MAX_RANK else _wide_ref(dst, sub))
            if sub != r:  # (a piece holding all of `r` leaves nothing)
                left += bx.subtract(r, sub)
        remaining = left
        if not remaining:
            return
    raise AssertionError(f"region {region} is not covered by the placement's pieces")


def _wide_ref(frame: Frame, region: Box) -> Ref:
    """The tile of `region` in `frame`, unchecked: it may have more than 4 dims (only for
    DMAs, which collapse them)."""
    off = frame.offset + frame.element_offset([lo for lo, _ in region]) * frame.itemsize
    return Ref(Tile(frame.buffer, off, bx.shape(region), frame.strides, frame.dtype),
               frame.key, region)


# ----------------------------------------------------------------------------- core splits


def split_box(box: Box, cores: Sequence[int], axes: Sequence[int]) -> list[tuple[int, Box]]:
    """`box` spread over `cores` along `axes` in priority order: the first axis is cut into
    the largest divisor of the core count it can take, the rest go to the next axes."""
    parts: list[Box] = [box]
    left = len(cores)
    for axis in axes:
        if left <= 1:
            break
        extent = box[axis][1] - box[axis][0]
        k = max((d for d in range(1, left + 1) if left % d == 0 and d <= extent), default=1)
        if axis == axes[-1]:
            k = min(left, extent)
        if k <= 1:
            continue
        parts = [bx.with_dim(p, axis, r) for p in parts
                 for r in bx.ranges(p[axis][1] - p[axis][0], k, p[axis][0])]
        left //= k
    return list(zip(cores, parts))
