"""Per-tensor comparison: every graph value, reference interpreter against the emulator.

TPU-MLIR's `model_runner.py --dump_all_tensors` + `npz_tool.py compare`, in one step:

    scheduled, program = compile_and_keep(module)              # or Model.compare_all(...)
    comparison = compare_program(scheduled, program, inputs)
    print(comparison.table())                                  # a row per value, graph order
    comparison.first_divergence                                # the first Row below tolerance, or None
    comparison.save_npz("dump")                                # dump/reference.npz, dump/npu.npz

`scheduled` is the schedule-level module the program was lowered from (the pipeline's
module right before convert-schedule-to-npu: `keep_scheduled` captures it), `program`
that program with its probes (`Program.probes`, recorded by the lowering). The reference
interpreter runs `scheduled` and shows every graph op's result; the emulator runs the
program with an observer (`stc_mlir.emulator.probes.Snapshots`) that reads each value
back from the memories as soon as the phase computing it ends, before its bytes can be
reused. Both sides key values by their graph-order position
(`stc_mlir.reference.graph_values`), so a value inside a fused group (in L1, spread over
cores) is compared like a value in DDR. See docs/compare.md.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from stc_mlir.compare import MIN_COSINE, cosine
from stc_mlir.errors import StcError

EQUAL, SIMILAR, DIVERGES, MISSING = "equal", "similar", "DIVERGES", "not read"
"""A value's status: bit-identical, within tolerance, beyond it, not read (TPU-MLIR's
EQUAL / SIMILAR / NOT_SIMILAR)."""

MIN_EUCLIDEAN = 0.99
"""Euclidean similarity `1 - |a - b| / |(a + b) / 2|` (TPU-MLIR's) a float value must reach
besides the cosine: the cosine alone misses a value off by a scale factor. fp16 values
of the built-in models reach 0.996 or more."""


class CompareError(StcError):
    """The program and the module do not belong together, or the program has no probes."""


@dataclass
class Row:
    """One graph value: where it comes from and how the two sides agree."""

    index: int
    key: str
    """unique name: graph-order index and the value's name (the npz key)"""
    op: str
    item: str
    shape: tuple[int, ...]
    status: str
    cosine: float | None = None
    euclidean: float | None = None
    max_abs: float | None = None
    tolerance: str = ""
    note: str = ""
    cycle: float | None = None
    """when the emulator read the value"""


@dataclass
class Comparison:
    rows: list[Row]
    reference: dict[str, np.ndarray] = field(repr=False)
    npu: dict[str, np.ndarray] = field(repr=False)
    report: object = None
    """the emulator's Report of the run (up to the hazard that stopped it, if one did)"""
    outputs: dict[str, np.ndarray] | None = field(default=None, repr=False)
    """the program's outputs by name (None if the run stopped)"""
    error: str = ""
    """the hazard that stopped the run early (values after it are not read)"""

    @property
    def first_divergence(self) -> Row | None:
        return next((r for r in self.rows if r.status == DIVERGES), None)

    @property
    def ok(self) -> bool:
        return not self.error and all(r.status in (EQUAL, SIMILAR) for r in self.rows)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def table(self) -> str:
        """The rows in graph order, then a line naming the first divergent op."""
        head = ("#", "item", "op", "shape", "cosine", "euclid", "max abs err", "tolerance", "status")
        lines = [head]
        for r in self.rows:
            lines.append((str(r.index), r.item or "-", r.op, "x".join(map(str, r.shape)),
                          "-" if r.cosine is None else f"{r.cosine:.6f}",
                          "-" if r.euclidean is None else f"{r.euclidean:.4f}",
                          "-" if r.max_abs is None else f"{r.max_abs:.3g}", r.tolerance or "-",
                          r.status + (f": {r.note}" if r.note else "")))
        widths = [max(len(line[i]) for line in lines) for i in range(len(head) - 1)]
        text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " + line[-1]
                for line in lines]
        return "\n".join(text + ["", self.summary()])

    def summary(self) -> str:
        counts = ", ".join(f"{n} {status}" for status, n in self.counts().items())
        first = self.first_divergence
        if first is not None:
            numbers = (f" (cosine {first.cosine:.6f}, euclidean similarity {first.euclidean:.4f}, max abs "
                       f"error {first.max_abs:.3g})" if first.cosine is not None else f" ({first.note})")
            verdict = f"first divergent op: #{first.index} {first.op} in item {first.item}{numbers}"
        elif self.ok:
            verdict = "every value within tolerance"
        else:
            verdict = "no value below tolerance among those read"
        stop = f"; the run stopped: {self.error}" if self.error else ""
        return f"compare-all: {len(self.rows)} values ({counts}); {verdict}{stop}"

    def save_npz(self, directory: str | os.PathLike[str]) -> tuple[str, str]:
        """`directory/reference.npz` and `directory/npu.npz`, one array per value under the
        same key (the rows' `key`), for `np.load` or TPU-MLIR's npz_tool."""
        os.makedirs(directory, exist_ok=True)
        paths = (os.path.join(directory, "reference.npz"), os.path.join(directory, "npu.npz"))
        for path, arrays in zip(paths, (self.reference, self.npu)):
            np.savez(path, **arrays)
        return paths


def _key(index: int, value) -> str:
    name = value.name_hint or value.owner.name
    return f"{index:04d}_{name}"


def describe_region(region, shape) -> str:
    """What part of a value a probe holds ("rows 0-170 of 512"; "" for the whole value)."""
    names = {len(shape) - 2: "rows", len(shape) - 1: "columns"} if len(shape) >= 3 else {}
    return ", ".join(f"{names.get(d, f'axis {d}')} {lo}-{hi - 1} of {n}"
                     for d, ((lo, hi), n) in enumerate(zip(region, shape)) if (lo, hi) != (0, n))


def compare_values(golden: np.ndarray, actual: np.ndarray, min_cosine: float = MIN_COSINE,
                   min_euclidean: float = MIN_EUCLIDEAN) -> tuple[str, float, float, float, str]:
    """(status, cosine, euclidean similarity, max abs error, tolerance) of one value:
    floats by both similarities, integers (indices) exactly."""
    g = np.asarray(golden).reshape(-1)
    a = np.asarray(actual).reshape(-1)
    floating = np.issubdtype(g.dtype, np.floating)
    tolerance = f"cos>={min_cosine:g},eu>={min_euclidean:g}" if floating else "exact"
    if g.size == 0 or np.array_equal(g, a, equal_nan=floating):
        return EQUAL, 1.0, 1.0, 0.0, tolerance
    g64, a64 = g.astype(np.float64), a.astype(np.float64)
    finite = np.isfinite(g64) & np.isfinite(a64)
    diff = np.abs(g64 - a64)
    max_abs = float(diff.max()) if finite.all() else math.inf
    mean = np.linalg.norm((g64[finite] + a64[finite]) / 2)
    euclid = 1 - float(np.linalg.norm(g64[finite] - a64[finite]) / mean) if mean else 0.0
    cos = cosine(g64[finite], a64[finite])
    if not floating:
        return DIVERGES, cos, euclid, max_abs, tolerance
    if not np.array_equal(np.isfinite(g64), np.isfinite(a64)) or (g64[~finite] != a64[~finite]).any():
        return DIVERGES, cos, euclid, max_abs, tolerance  # an inf or nan on one side only
    within = cos >= min_cosine and euclid >= min_euclidean
    return (SIMILAR if within else DIVERGES), cos, euclid, max_abs, tolerance


def compare_program(scheduled, program, inputs: Mapping[str, np.ndarray], *,
                    min_cosine: float = MIN_COSINE, min_euclidean: float = MIN_EUCLIDEAN,
                    threads: int | None = None,
                    trace: str | None = None) -> Comparison:
    """Run the reference interpreter on `scheduled` (the schedule-level module `program`
    was lowered from) and the emulator on `program`, and compare every graph value."""
    from stc_mlir import reference
    from stc_mlir.emulator import HazardError, run
    from stc_mlir.emulator.probes import Snapshots

    f = reference.find_function(scheduled, program.name)
    values = reference.graph_values(f)
    if values and not program.probes:
        raise CompareError(f"program '{program.name}' has no probes: compile it again with this "
                           "stc-mlir (probes are not kept in the npu text)")
    if len(program.probes) != len(values):
        raise CompareError(f"program '{program.name}' was not lowered from this module: it probes "
                           f"{len(program.probes)} values, the module has {len(values)} graph op results")
    for i, (p, v) in enumerate(zip(program.probes, values)):
        shape = tuple(v.type.get_shape()) or (1,)  # type: ignore[attr-defined]
        if p.index != i or tuple(p.shape) != shape:
            raise CompareError(f"program '{program.name}' was not lowered from this module: its value #{i} "
                               f"({p.op}, {'x'.join(map(str, p.shape))}) is {_key(i, v)} "
                               f"({'x'.join(map(str, shape))}) in the module")
    position = {v: i for i, v in enumerate(values)}
    keys = [_key(i, v) for i, v in enumerate(values)]
    golden: dict[int, np.ndarray] = {}
    reference.run(scheduled, inputs, program.name,
                  observe=lambda v, a: golden.__setitem__(position[v], a) if v in position else None)
    snapshots = Snapshots(program)
    error, report, outputs = "", None, None
    try:
        outputs, report = run(program, dict(inputs), threads=threads, observer=snapshots, trace=trace)
    except HazardError as err:  # the values read so far are still compared
        if getattr(err, "report", None) is None:
            raise
        error, report = str(err), err.report
    for probe in program.probes:  # in the probe's shape; a row stripe's value: its rows
        if probe.index in golden:
            full = np.asarray(golden[probe.index]).reshape(probe.shape)
            golden[probe.index] = full[tuple(slice(lo, hi) for lo, hi in probe.region)]
    rows = []
    for probe in program.probes:
        i = probe.index
        row = Row(i, keys[i], probe.op, probe.item, probe.shape, MISSING, cycle=snapshots.when.get(i))
        part = describe_region(probe.region, probe.shape)
        if not probe.pieces:
            row.note = probe.note or "not materialised"
        elif i in snapshots.problems:
            row.status, row.note = DIVERGES, snapshots.problems[i]
        elif i not in snapshots.values:
            row.note = "the run stopped before it" if error else "not read"
        elif i not in golden:
            row.note = "the reference did not compute it"
        else:
            row.status, row.cosine, row.euclidean, row.max_abs, row.tolerance = compare_values(
                golden[i], snapshots.values[i], min_cosine, min_euclidean)
        if part and probe.pieces:
            row.note = part + (f"; {row.note}" if row.note else "")
        rows.append(row)
    npu = {keys[i]: a for i, a in snapshots.values.items()}
    ref = {keys[i]: a for i, a in golden.items()}
    return Comparison(rows, ref, npu, report, outputs, error)


def compile_and_keep(module, schedule=None, **options):
    """Compile a graph-level `module` in place (`stc_mlir.pipeline.Pipeline` options:
    batch, level, ...) and keep a copy of its schedule-level form: (scheduled module,
    program), what `compare_program` takes."""
    from stc_mlir.emulator import program_from_module
    from stc_mlir.pipeline import Pipeline

    pipeline = Pipeline(schedule, **options)
    kept = keep_scheduled().into(pipeline)
    program = program_from_module(pipeline.run(module))
    return kept.module, program


class keep_scheduled:
    """A pipeline stage keeping a copy of the schedule-level module (add it with `into`)."""

    name = "keep-scheduled"

    def __init__(self) -> None:
        self.module = None

    def apply(self, ctx, module) -> None:
        self.module = module.clone()

    def into(self, pipeline) -> keep_scheduled:
        """Insert this stage right before the lowering of `pipeline` (a `Pipeline`)."""
        from stc_mlir.pipeline import LOWERING

        at = next(i for i, (name, _) in enumerate(pipeline.stages) if name == LOWERING[0])
        pipeline.stages.insert(at, (self.name, self))
        return self
