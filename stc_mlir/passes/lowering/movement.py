"""Data movement: transpose, slice, split, concat, expand, gather — DMAs only.

Each is an `IndexMap` from output to input coordinates, so a core's share of the result
is copied straight from wherever the operand's pieces are into the result's frame (an L1
piece or the DDR/LLB buffer): a transpose is a DMA reading with permuted strides, a slice
one with stepped strides and an offset, an expand one with zero strides, a concat one DMA
per operand the region meets. A gather is the DMA engine's `npu.gather` of rows from the
table (in DDR, never copied) by indices read where they are. Reshape-like ops (reshape,
flatten, squeeze, unsqueeze, identity) are views: see items.py.
"""

from __future__ import annotations

from stc_mlir.dialects import graph as g

from . import boxes as bx
from .boxes import Box
from stc_mlir.isa.program import DTYPES

from .emitter import Emitter, align
from .placement import Frame, IndexMap, LoweringError, Placement, transfer
from .stage import Rule
from .values import shape_of


class MoveRule(Rule):
    """Movement through index maps; `maps(out)` gives (operand, map, output sub-box)."""

    movement = True

    def __init__(self, op, operands, out):
        super().__init__(op, operands, out)
        self.split_axes = self.tile_axes = tuple(range(len(shape_of(out))))

    def maps(self, out: Box) -> list[tuple[int, IndexMap, Box]]:
        """Per operand piece: (operand index, index map, output sub-box); rules that move
        data otherwise (gather) override `steps` and `run` instead."""
        raise TypeError(f"{type(self).__name__} moves data without index maps")

    def steps(self, out: Box) -> list[list[Box | None]]:
        regions: list[Box | None] = [None] * len(self.operands)
        for i, imap, sub in self.maps(out):
            regions[i] = imap.image(sub)
        return [regions]

    def run(self, em: Emitter, core: int, box: Box, sources: list[Placement], dst: Frame,
            free: int | None = None) -> None:
        """Move `box` of the result into `dst` on `core` (`free`: L1 bytes the core may
        use beside, None if unknown)."""
        for i, imap, sub in self.maps(box):
            transfer(em, sources[i], dst, sub, core, imap)


class TransposeRule(MoveRule):
    def maps(self, out):
        perm = self.op.props()["perm"]
        return [(0, IndexMap(tuple((p, 1, 0) for p in perm), len(perm)), out)]


def _slice_map(rank: int, bounds: dict[int, range]) -> IndexMap:
    dims = []
    for d in range(rank):
        r = bounds.get(d)
        dims.append((d, 1, 0) if r is None else (d, r.step, r.start))
    return IndexMap(tuple(dims), rank)


class SliceRule(MoveRule):
    def __init__(self, op: g.SliceOp, operands, out):
        super().__init__(op, operands, out)
        p = op.props()
        shape = shape_of(operands[0])
        steps = p.get("steps") or (1,) * len(p["axes"])
        self.bounds = {}
        for start, end, axis, step in zip(p["starts"], p["ends"], p["axes"], steps):
            axis %= len(shape)
            r = g.slice_bounds(shape[axis], start, end, step)
            if step < 0:
                raise LoweringError(f"a slice with step {step} along axis {axis} is not supported: "
                                    "the DMA engines take non-negative strides")
            self.bounds[axis] = r

    def maps(self, out):
        return [(0, _slice_map(len(out), self.bounds), out)]


class SplitPartRule(MoveRule):
    """Result `index` of a graph.split: a slice along its axis."""

    def __init__(self, op: g.SplitOp, operands, out, index: int):
        super().__init__(op, operands, out)
        p = op.props()
        axis = p["axis"] % len(shape_of(operands[0]))
        start = sum(p["sizes"][:index])
        self.bounds = {axis: range(start, start + p["sizes"][index])}

    def maps(self, out):
        return [(0, _slice_map(len(out), self.bounds), out)]


class ConcatRule(MoveRule):
    def __init__(self, op: g.ConcatOp, operands, out):
        super().__init__(op, operands, out)
        rank = len(shape_of(out))
        self.axis = op.props()["axis"] % rank
        if rank == 4 and self.axis != 2:  # NCHW: spread as its convs and elementwise ops are
            self.split_axes = self.tile_axes = (0, 2, 1, 3)
        self.offsets = []
        start = 0
        for v in operands:
            self.offsets.append((start, start + shape_of(v)[self.axis]))
            start += shape_of(v)[self.axis]

    def maps(self, out):
        res = []
        rank = len(out)
        for i, (lo, hi) in enumerate(self.offsets):
            part = bx.intersect(out, bx.with_dim(out, self.axis, (lo, hi)))
            if part is None:
                continue
            dims = tuple((d, 1, -lo if d == self.axis else 0) for d in range(rank))
            res.append((i, IndexMap(dims, rank), part))
        return res


class ExpandRule(MoveRule):
    def maps(self, out):
        src = shape_of(self.operands[0])
        lead = len(out) - len(src)
        dims = []
        for d in range(len(out)):
            k = d - lead
            if k < 0:
                dims.append(None)
            elif src[k] == 1:
                dims.append((k, 0, 0))
            else:
                dims.append((k, 1, 0))
        return [(0, IndexMap(tuple(dims), len(src)), out)]


GATHER_ROWS = True
"""A gather is spread over cores along its index axes only: a core picks whole rows. (Cut
along the rows' own axes too, two rows of 4 over 8 cores were 8 gathers paying the DDR
latency each, and every core took part in every lookup.)"""


class GatherRule(MoveRule):
    """ONNX Gather: rows of the data along `axis` picked by the indices."""

    def __init__(self, op: g.GatherOp, operands, out):
        super().__init__(op, operands, out)
        self.data, self.idx = shape_of(operands[0]), shape_of(operands[1])
        if not g.shape_of(operands[1].type):
            raise LoweringError("a gather with a scalar index is not supported")
        self.axis = op.props()["axis"] % len(self.data)
        if GATHER_ROWS:
            self.split_axes = self.tile_axes = tuple(range(self.axis + len(self.idx)))

    def regions(self, out: Box) -> tuple[Box, Box]:
        a, n = self.axis, len(self.idx)
        data = out[:a] + ((0, self.data[a]),) + out[a + n:]
        return data, out[a:a + n]

    def steps(self, out):
        return [list(self.regions(out))]

    def run(self, em: Emitter, core: int, box: Box, sources: list[Placement], dst: Frame,
            free: int | None = None) -> None:
        data_box, idx_box = self.regions(box)
        data = self.local_table(em, core, box, sources[0], free) or _covering(sources[0], data_box, core)
        idx = _covering(sources[1], idx_box, core)
        if data is None or idx is None:
            raise LoweringError("gather needs its data and indices each in one buffer (DDR, "
                                "LLB or one core's L1)")
        em.emit(core, "gather", data=data.ref(data_box), indices=idx.ref(idx_box),
                output=dst.ref(box), axis=self.axis)


    def local_table(self, em: Emitter, core: int, box: Box, table: Placement,
                    free: int | None) -> Frame | None:
        """A copy in `core`'s L1 of the table region its rows come from, when the table is
        in DDR/LLB and small against the rows the core picks (`LOCAL_TABLE_RATIO`) and
        fits the `free` L1 bytes: the gather then reads L1 instead of picking every row
        from DDR (DeepFM's 259 x 8 embedding table, 4 KB, gathered into 200 KB per core)."""
        if free is None or table.whole is None:
            return None
        if em.program.buffers[table.whole.buffer].space not in ("ddr", "llb"):
            return None
        region = self.regions(box)[0]
        itemsize = DTYPES[table.dtype].itemsize
        nbytes = align(bx.numel(region) * itemsize)
        if nbytes * LOCAL_TABLE_RATIO > bx.numel(box) * itemsize or nbytes > free:
            return None
        frame = Frame(em.buffer(f"table_c{core}", "l1", nbytes, core), 0, region, table.dtype)
        transfer(em, table, frame, region, core)
        return frame


LOCAL_TABLE_RATIO = 4
"""A gather copies its table into the gathering core's L1 first when the table region is
at most 1/4 of the bytes of the rows the core picks from it."""


def _covering(value: Placement, region: Box, core: int) -> Frame | None:
    """A frame holding all of `region` (this core's own first)."""
    best = None
    for p in value.pieces:
        if bx.contains(p.owned, region) and bx.contains(p.frame.box, region):
            if p.core == core:
                return p.frame
            best = best or p.frame
    return best
