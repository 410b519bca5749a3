"""Fit the estimator's figures (`cost.Calibration`) against the emulator.

    python -m stc_mlir.autoschedule.calibrate            # small built-in models, all levels

Each program is lowered and emulated; the cluster barriers cut the emulated time into
phases, and `Lowered.phase_items` names the item of each phase. A group whose phases are
one per op (the lowering's resident and streamed modes) gives one sample per op: the
estimator's (compute, memory, chain, loads) features next to the emulated phase. A least-squares fit
of `bound`, `hidden`, `chain`, `phase_cycles` and `first_load` over all samples is printed, with the
error of the total before and after.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from stc_mlir import target as targets  # noqa: E402
from stc_mlir.dialects import schedule as s  # noqa: E402

from .cost import Calibration, Estimator  # noqa: E402


def phase_cycles(report) -> list[float]:
    """Emulated cycles of each phase: from one cluster barrier's end to the next."""
    fences: dict[int, list[float]] = defaultdict(list)
    for sl in report.timeline:
        if sl.unit == "sync" and not sl.wait:
            fences[sl.core].append(sl.end)
    if not fences:
        return [float(report.cycles)]
    for ends in fences.values():
        ends.sort()
    barriers = min(len(e) for e in fences.values()) // 2
    ends = [max(e[2 * i + 1] for e in fences.values()) for i in range(barriers)] + [float(report.cycles)]
    return [ends[0]] + [b - a for a, b in zip(ends, ends[1:])]


def samples(module, inputs, target: targets.Target):
    """(features, emulated cycles) per op phase, and (estimated, emulated) totals."""
    from stc_mlir.emulator import run
    from stc_mlir.passes.lowering import lower
    from stc_mlir.passes.npu_allocate import allocate
    from stc_mlir.passes.schedule_verify import analyse, scheduled_functions

    (f,) = scheduled_functions(module)
    est = Estimator(target)
    labels = [item.label for item in analyse(f)]
    lowered = lower(module, target)
    program = allocate(lowered.program, lowered.live, lowered.phase_items, target)
    _, report = run(program, inputs)
    per_item: dict[str, list[float]] = defaultdict(list)
    for label, cycles in zip(lowered.phase_items, phase_cycles(report)):
        per_item[label].append(cycles)
    out = []
    where = {a: (s.NPUMemScope.DDR, ()) for a in f.body.block.args}
    for op, label in zip([o for o in f.body.block.ops if isinstance(o, s.ScheduledItem)], labels):
        if isinstance(op, s.GroupOp):
            feats = est.group_phases(op.body_ops(), dict(zip(op.body.block.args, op.inputs)), op.output,
                                     op.mem_scope.data, op.core_bind, where)  # type: ignore[union-attr]
            if len(feats) == len(per_item[label]):
                out += list(zip(feats, per_item[label]))
        for r in op.results:
            where[r] = (op.mem_scope.data, op.core_bind.cores)  # type: ignore[union-attr]
    return out, est.function(f).cycles, report.cycles


def fit(data) -> Calibration:
    """Least squares on the cycles (big phases weigh most: the totals are what is ranked),
    `bound` kept at 1: the larger of compute and memory is always paid in full."""
    a = np.array([[min(w, m), chain, 1.0, loads] for (w, m, chain, loads), _ in data])
    b = np.array([e - max(w, m) for (w, m, _, _), e in data])
    x, *_ = np.linalg.lstsq(a, b, rcond=None)
    return Calibration(1.0, *(round(float(v), 3) for v in x))


def main(argv: list[str] | None = None) -> None:
    from stc_mlir import models
    from stc_mlir.frontend import import_onnx
    from stc_mlir.pipeline import Pipeline
    from stc_mlir.schedules import SCHEDULES

    configs = {"resnet50": (16, {"image_size": 32}), "bert-base": (8, {"seq_len": 32, "num_layers": 2}),
               "deepfm": (2560, {}), "mobilenetv2": (16, {"image_size": 32})}
    target = targets.load("stcp920")
    data, totals = [], []
    for name, (batch, options) in configs.items():
        proto = models.build(name, batch=batch, **options)
        inputs = models.example_inputs(name, proto)
        runs = [(f"level {level}", None, level) for level in (0, 1, 2, 3)]
        if name in SCHEDULES:
            runs.append(("manual", SCHEDULES[name], 0))
        for label, schedule, level in runs:
            module = Pipeline(schedule, level=level, stop_after="schedule-verify").run(import_onnx(proto))
            got, estimated, emulated = samples(module, inputs, target)
            data += got
            totals.append((name, label, estimated, emulated))
            print(f"{name:12} {label:8} estimated {estimated:>11,} emulated {emulated:>11,} "
                  f"({100 * (estimated / emulated - 1):+.1f}%)", file=sys.stderr, flush=True)
    print(fit(data))


if __name__ == "__main__":
    main()
