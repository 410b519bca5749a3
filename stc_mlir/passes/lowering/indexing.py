"""Index, interpolation and detection ops on the vector unit (and einsum on the matrix unit).

- TopK: each row of its axis sorted on the vector unit (`npu.topk`); the values and the
  indices results are separate commands (one per result, as every rule makes one value),
  so a model using both sorts twice. Cut along every axis but the sorted one.
- Resize: `npu.resize`, a separable interpolation; cut along the axes it does not resize.
- OneHot, GatherElements, GatherND: the vector unit's compare/select and in-L1 gathers
  (`npu.one_hot`, `npu.gather_elements`, `npu.gather_nd`), cut only along the axes where an
  output region reads the same region of the indices (the index pattern is data-dependent,
  so the indexed axes of the data are read whole): every axis but the depth / gathered
  one; for GatherND the indices' leading axes (the data too along the batch dims) and
  the gathered slices' axes. A batch cut over core parts gives each part its own samples.
- RoiAlign, MaxRoiPool: `npu.roi_align`, `npu.max_roi_pool`, one tile: the boxes decide
  which part of the feature map each result row reads.
- NonMaxSuppression: `npu.nms` writes the static upper bound of selected rows (batches x
  classes x min(boxes, max per class), padded with -1) or, as a second command, the count
  of valid rows: data-dependent sizes as a bound plus a count (docs/conformance.md).
- Einsum: `npu.einsum` on the matrix unit, one or two operands, cut along the output's
  indices (an explicit `->` without `...`; else one tile).

Ops whose whole result is one tile (RoiAlign, MaxRoiPool, NonMaxSuppression) must fit one core's L1 with their operands; the stage
driver says so with the numbers when they do not.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.isa.program import EXACT_OPS, FLOAT_DTYPES, INDEX_SLOTS, OPS

from . import boxes as bx
from .boxes import Box
from .emitter import Emitter, Ref
from .placement import LoweringError
from .stage import Rule, Work
from .values import dtype_of, shape_of


class WholeRule(Rule):
    """An op computed as one tile: every operand read whole (subclasses may cut along
    `free` axes, where an output region reads the same region of its first operand)."""

    command = ""
    exact = True  # checks its own element types: index slots take i32/i64 (items.py would refuse them)
    free: tuple[int, ...] = ()

    def __init__(self, op: Operation, operands: Sequence[SSAValue], out: SSAValue):
        super().__init__(op, operands, out)
        self.split_axes = self.tile_axes = self.free
        if self.command not in EXACT_OPS:
            for slot, v in [*zip(self.slots, operands), ("output", out)]:
                if slot not in INDEX_SLOTS and dtype_of(v) not in FLOAT_DTYPES:
                    raise LoweringError(f"computes on {dtype_of(v)} tensors ({slot}): npu.{self.command} "
                                        "takes f16/f32 (cast first)")

    def steps(self, out: Box) -> list[list[Box | None]]:
        regions: list[Box | None] = [bx.full(shape_of(v)) for v in self.operands]
        if self.free:
            first = list(regions[0])  # type: ignore[arg-type]
            for a in self.free:
                first[a] = out[a]
            regions[0] = tuple(first)
        return [regions]

    def params(self) -> dict[str, object]:
        return {}

    def emit(self, em: Emitter, core: int, work: Work, step: int, frames, out: Ref, acc) -> None:
        tiles = {slot: f.ref(r) for slot, f, r in zip(self.slots, frames, work.steps[0])}
        em.emit(core, self.command, output=out, **tiles, **self.params())

    @property
    def slots(self) -> tuple[str, ...]:
        return OPS[self.command].reads


class TopKRule(WholeRule):
    command = "topk"

    def __init__(self, op: g.TopKOp, operands, out, index: int):
        p = op.props()
        rank = len(shape_of(operands[0]))
        self.axis, self.k, self.largest = p["axis"] % rank, p["k"], p["largest"]  # type: ignore[operator]
        self.kind = ("values", "indices")[index]
        self.free = tuple(a for a in range(rank) if a != self.axis)
        super().__init__(op, operands, out)

    def params(self):
        return {"kind": self.kind, "k": self.k, "axis": self.axis, "largest": self.largest}


class ResizeRule(WholeRule):
    command = "resize"

    def __init__(self, op: g.ResizeOp, operands, out):
        p = op.props()
        x, y = shape_of(operands[0]), shape_of(out)
        crop = p["coordinate_transformation_mode"] == "tf_crop_and_resize"
        self.free = () if crop else tuple(a for a in range(len(x)) if x[a] == y[a] and p["scales"][a] == 1)  # type: ignore[index]
        self.p = {k: p[k] for k in ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                                    "exclude_outside", "antialias", "extrapolation_value")}
        self.p["scales"] = tuple(p["scales"])  # type: ignore[arg-type]
        self.p["roi"] = tuple(p.get("roi") or ())  # type: ignore[arg-type]
        super().__init__(op, operands, out)

    def params(self):
        return self.p


class OneHotRule(WholeRule):
    """Cut along every axis but the depth one: an output region reads the same region of
    the indices (the depth axis left out) and the (off, on) pair whole."""

    command = "one_hot"

    def __init__(self, op: g.OneHotOp, operands, out):
        p = op.props()
        self.depth, self.axis = p["depth"], p["axis"] % len(shape_of(out))  # type: ignore[operator]
        self.free = tuple(a for a in range(len(shape_of(out))) if a != self.axis)
        super().__init__(op, operands, out)

    def steps(self, out: Box) -> list[list[Box | None]]:
        return [[out[:self.axis] + out[self.axis + 1:], bx.full(shape_of(self.operands[1]))]]

    def params(self):
        return {"depth": self.depth, "axis": self.axis}


class GatherElementsRule(WholeRule):
    """Cut along every axis but the gathered one: an output region reads the same region of
    the indices and, along the other axes, of the data (a batch cut over core parts gives
    each part its own samples)."""

    command = "gather_elements"

    def __init__(self, op: g.GatherElementsOp, operands, out):
        self.axis = op.props()["axis"] % len(shape_of(operands[0]))  # type: ignore[operator]
        self.free = tuple(a for a in range(len(shape_of(operands[0]))) if a != self.axis)
        super().__init__(op, operands, out)

    def steps(self, out: Box) -> list[list[Box | None]]:
        data = list(out)
        data[self.axis] = bx.full(shape_of(self.operands[0]))[self.axis]
        return [[tuple(data), out]]

    def params(self):
        return {"axis": self.axis}


class GatherNDRule(WholeRule):
    """Cut along every output axis: the indices' leading axes (an output region reads the
    same region of the indices, their last axis whole, and along the batch dims the same
    region of the data) and the axes of the gathered slices (the same region of the
    data's trailing axes); the indexed axes of the data are read whole."""

    command = "gather_nd"

    def __init__(self, op: g.GatherNDOp, operands, out):
        if not g.shape_of(out.type):
            raise LoweringError("a gather_nd with a scalar result is not supported")
        self.batch_dims = op.props()["batch_dims"]
        self.free = tuple(range(len(shape_of(out))))
        super().__init__(op, operands, out)

    def steps(self, out: Box) -> list[list[Box | None]]:
        data, idx = shape_of(self.operands[0]), shape_of(self.operands[1])
        b, q = self.batch_dims, len(idx)  # type: ignore[operator]
        k = idx[-1]
        lead = out[:q - 1]
        data_box = lead[:b] + bx.full(data)[b:b + k] + out[q - 1:]
        return [[data_box, lead + ((0, k),)]]

    def params(self):
        return {"batch_dims": self.batch_dims}


class RoiAlignRule(WholeRule):
    command = "roi_align"

    def params(self):
        p = self.op.props()  # type: ignore[attr-defined]
        return {"kind": p["mode"], "output_height": p["output_height"], "output_width": p["output_width"],
                "sampling_ratio": p["sampling_ratio"], "spatial_scale": p["spatial_scale"],
                "half_pixel": p["half_pixel"]}


class MaxRoiPoolRule(WholeRule):
    command = "max_roi_pool"

    def params(self):
        p = self.op.props()  # type: ignore[attr-defined]
        return {"pooled_shape": tuple(p["pooled_shape"]), "spatial_scale": p["spatial_scale"]}


class NmsRule(WholeRule):
    command = "nms"

    def __init__(self, op: g.NonMaxSuppressionOp, operands, out, index: int):
        self.kind = ("indices", "count")[index]
        super().__init__(op, operands, out)

    def params(self):
        p = self.op.props()  # type: ignore[attr-defined]
        return {"kind": self.kind, "max_output_boxes_per_class": p["max_output_boxes_per_class"],
                "iou_threshold": p["iou_threshold"], "score_threshold": p["score_threshold"],
                "center_point_box": p["center_point_box"]}


class EinsumRule(WholeRule):
    """Cut along every index of the output (an explicit `->`, no ellipsis): an output region
    reads, of each operand, the same range along the axes of the indices it shares with
    the output (all of an extent-1 axis it broadcasts) and all of the contracted ones."""

    command = "einsum"

    def __init__(self, op: g.EinsumOp, operands, out):
        if len(operands) > 2:
            raise LoweringError(f"an einsum of {len(operands)} operands is not supported "
                                "(the matrix unit contracts one or two)")
        if any(not g.shape_of(v.type) for v in operands):
            raise LoweringError(f"einsum '{op.props()['equation']}' has a rank-0 operand (npu tiles "
                                "have 1 to 4 dims, and its subscripts name none): reshape it to [1]")
        eq = str(op.props()["equation"]).replace(" ", "")
        self.letters: list[str] = []
        self.result = ""
        if "->" in eq and "..." not in eq:
            ins, self.result = eq.split("->")
            self.letters = ins.split(",")
        if (self.result and len(set(self.result)) == len(self.result) == len(g.shape_of(out.type))
                and all(len(t) == len(shape_of(v)) for t, v in zip(self.letters, operands))):
            self.free = tuple(range(len(self.result)))
        super().__init__(op, operands, out)

    def steps(self, out: Box) -> list[list[Box | None]]:
        if not self.free:
            return super().steps(out)
        size = shape_of(self.out)
        regions: list[Box | None] = []
        for letters, v in zip(self.letters, self.operands):
            region = []
            for letter, d in zip(letters, shape_of(v)):
                a = self.result.find(letter)
                region.append((0, d) if a < 0 or (d == 1 and size[a] != 1) else out[a])
            regions.append(tuple(region))
        return [regions]

    @property
    def slots(self) -> tuple[str, ...]:
        return ("lhs", "rhs")[: len(self.operands)]

    def params(self):
        return {"equation": self.op.props()["equation"]}  # type: ignore[attr-defined]


RULES: dict[type[Operation], type[Rule]] = {
    g.ResizeOp: ResizeRule, g.OneHotOp: OneHotRule, g.GatherElementsOp: GatherElementsRule,
    g.GatherNDOp: GatherNDRule, g.RoiAlignOp: RoiAlignRule, g.MaxRoiPoolOp: MaxRoiPoolRule,
    g.EinsumOp: EinsumRule,
}
RESULT_RULES = {g.TopKOp: TopKRule, g.NonMaxSuppressionOp: NmsRule}
"""Multi-result ops: one rule (and command) per result, given the result's index."""
