"""Boxes: rectangular regions of a tensor, one half-open range (lo, hi) per dimension.

The lowering describes everything it moves or computes as boxes of tensors: the part of a
value a core owns, the region a tile of an op reads (derived backwards from the region it
writes), what a buffer stores. Boxes are plain tuples so they hash and compare cheaply.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

Box = tuple[tuple[int, int], ...]


def full(shape: Sequence[int]) -> Box:
    return tuple([(0, int(d)) for d in shape])


def shape(box: Box) -> tuple[int, ...]:
    return tuple([hi - lo for lo, hi in box])  # (lists, not generators: hot, and faster)


def numel(box: Box) -> int:
    return math.prod([hi - lo for lo, hi in box])


def intersect(a: Box, b: Box) -> Box | None:
    out = []
    for (x0, x1), (y0, y1) in zip(a, b):  # (loops: this and `contains` are the hot spots)
        lo = x0 if x0 > y0 else y0
        hi = x1 if x1 < y1 else y1
        if hi <= lo:
            return None
        out.append((lo, hi))
    return tuple(out)


def contains(outer: Box, inner: Box) -> bool:
    for (o0, o1), (i0, i1) in zip(outer, inner):
        if i0 < o0 or o1 < i1:
            return False
    return True


def hull(boxes: Iterable[Box]) -> Box:
    boxes = list(boxes)
    return tuple((min(b[d][0] for b in boxes), max(b[d][1] for b in boxes))
                 for d in range(len(boxes[0])))


def with_dim(box: Box, dim: int, rng: tuple[int, int]) -> Box:
    return box[:dim] + (rng,) + box[dim + 1:]


def subtract(box: Box, cut: Box) -> list[Box]:
    """`box` minus `cut` as disjoint boxes (at most two per dimension)."""
    if intersect(box, cut) is None:
        return [box]
    out = []
    rest = box
    for d, ((lo, hi), (c0, c1)) in enumerate(zip(box, cut)):
        if lo < c0:
            out.append(with_dim(rest, d, (lo, c0)))
        if c1 < hi:
            out.append(with_dim(rest, d, (c1, hi)))
        rest = with_dim(rest, d, (max(lo, c0), min(hi, c1)))
    return out


def missing(box: Box, have: Iterable[Box]) -> list[Box]:
    """The parts of `box` not covered by any of `have`."""
    parts = [box]
    for h in have:
        parts = [p for q in parts for p in subtract(q, h)]
        if not parts:
            break
    return parts


def ranges(extent: int, parts: int, lo: int = 0) -> list[tuple[int, int]]:
    """`extent` cut into `parts` near-equal consecutive ranges (the first ones larger)."""
    base, extra = divmod(extent, parts)
    out, start = [], lo
    for i in range(parts):
        size = base + (1 if i < extra else 0)
        out.append((start, start + size))
        start += size
    return [r for r in out if r[1] > r[0]]


def chunks(lo: int, hi: int, size: int) -> list[tuple[int, int]]:
    """[lo, hi) in consecutive chunks of at most `size`."""
    return [(a, min(a + size, hi)) for a in range(lo, hi, max(size, 1))]


# ----------------------------------------------------------------------------- reshapes


def flat_range(box: Box, dims: Sequence[int]) -> tuple[int, int] | None:
    """The row-major flat element range of `box` in a tensor of shape `dims`, if the box
    is one contiguous run (dims after some axis full, dims before it of extent 1)."""
    n = len(dims)
    j = n
    while j > 0 and box[j - 1] == (0, dims[j - 1]):
        j -= 1
    if any(hi - lo != 1 for lo, hi in box[: max(j - 1, 0)]):
        return None
    start = 0
    stride = math.prod(dims)
    for (lo, _), d in zip(box, dims):
        stride //= d
        start += lo * stride
    return start, start + numel(box)


def range_box(start: int, stop: int, dims: Sequence[int]) -> Box | None:
    """The box of a tensor of shape `dims` covering exactly the flat range [start, stop)."""
    if stop <= start:
        return None
    strides = [math.prod(dims[i + 1:]) for i in range(len(dims))]
    for j, (stride, d) in enumerate(zip(strides, dims)):
        if start % stride or stop % stride or start // (stride * d) != (stop - 1) // (stride * d):
            continue
        box, rest = [], start
        for i in range(j):  # the fixed outer indices
            idx = rest // strides[i]
            rest -= idx * strides[i]
            box.append((idx, idx + 1))
        lo = rest // stride
        box.append((lo, lo + (stop - start) // stride))
        return tuple(box + [(0, e) for e in dims[j + 1:]])
    return None


def reshape_box(box: Box, old: Sequence[int], new: Sequence[int]) -> Box | None:
    """`box` of a tensor of shape `old` seen in the reshaped tensor of shape `new`, if it
    is a contiguous run that is also a box there."""
    if math.prod(old) == 0:
        return None
    run = flat_range(box, old)
    return None if run is None else range_box(run[0], run[1], new)
