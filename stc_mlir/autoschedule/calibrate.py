"""Fit the estimator's figures (`cost.Calibration`) against the emulator.

    python -m stc_mlir.autoschedule.calibrate                       # small built-in models, all levels
    python -m stc_mlir.autoschedule.calibrate --size both --levels 0,3   # and the benchmarks' sizes
    python -m stc_mlir.autoschedule.calibrate --regime small --levels 1,3   # the small programs' figures

Each schedule is lowered and emulated (timing only). Its estimate is a sum of phases and
group items, and each phase is linear in the fitted figures, so the whole estimate is
`sum max(compute, memory) + hidden * sum min + streamed * sum of the weights' part of min +
chain * sum chain start-ups + phase_cycles * phases + first_load * loading phases +
item_cycles * group items` (each item counted in the
share `item_scale` makes it pay, tried over `ITEM_SCALES`): the fit is over those
sums, one row per schedule, each weighed by 1 / its emulated cycles (every schedule's
relative error counts alike: that is what the search ranks and what the benchmark reports).
`--fit` names the figures to fit, the others held at the current calibration's (a new
term fitted on schedules that show it, without moving the figures the rest were fitted on).
Whole schedules, not single phases: with the weight prefetch and narrowed barriers a phase's
loads overlap the previous phase, so phases are no longer separable, and the level-3 groups
that matter most are the ones whose phases could not be matched one to one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from itertools import combinations

from stc_mlir import blas

blas.single_threaded()

import numpy as np  # noqa: E402

from stc_mlir import target as targets  # noqa: E402

from .cost import CALIBRATION, SMALL_CALIBRATION, Calibration, Estimator  # noqa: E402

FITTED = ("hidden", "streamed", "chain", "phase_cycles", "first_load", "item_cycles")


ITEM_SCALES = (0.0, 5_000.0, 20_000.0, 50_000.0, 100_000.0)
"""`Calibration.item_scale` values tried (0: every group item pays all of `item_cycles`)."""


@dataclass(frozen=True)
class _Recording(Calibration):
    """The calibration in use, noting the features of every phase it prices and the phases'
    cycles of every group item."""

    log: list = None  # type: ignore[assignment]
    items: list = None  # type: ignore[assignment]

    def phase(self, work: float, memory: float, chain: float, loads: float, streamed: float = 0.0) -> float:
        self.log.append((work, memory, chain, loads, streamed))
        return super().phase(work, memory, chain, loads, streamed)

    def item(self, cycles: float) -> float:
        self.items.append(cycles)
        return super().item(cycles)


def terms(f, target: targets.Target, item_scale: float | None = None) -> np.ndarray:
    """The estimate of scheduled function `f` as sums over its phases and items: (sum of max,
    then the multipliers of `FITTED`; group items counted in the share of `item_cycles` they
    pay with `item_scale`, the calibration's own by default)."""
    regime = Estimator(target).regime(f.body.block.ops)  # the figures the graph's size picks
    rec = _Recording(**{k: getattr(regime, k) for k in (*FITTED, "bound", "item_scale", "chain_beyond_work")},
                     log=[], items=[])
    spans: list[tuple[int, int, int, int]] = []  # per item: its phases and group items in the logs

    class _Spans(Estimator):
        def item(self, op, where):
            start = (len(rec.log), len(rec.items))
            cycles = super().item(op, where)
            spans.append((*start, len(rec.log), len(rec.items)))
            return cycles

    est = _Spans(target, rec)
    estimate_ = est.function(f)
    # only the items on the longest path count (items on other cores beside them are hidden)
    phases, items = [], []
    waits = sum(estimate_.waits[k] for k in estimate_.critical())  # for DDR busy with others' weights
    for k in estimate_.critical():
        a, b, c, d = spans[k]
        phases += rec.log[a:c]
        items += rec.items[b:d]
    scale = regime.item_scale if item_scale is None else item_scale
    groups = sum(min(1.0, t / scale) if scale else 1.0 for t in items)
    p = np.array(phases) if phases else np.zeros((0, 5))
    big, small = np.maximum(p[:, 0], p[:, 1]), np.minimum(p[:, 0], p[:, 1])
    chain = sum(regime.start_up(work, start) for work, _, start, _, _ in phases)
    return np.array([big.sum() + waits, small.sum() - p[:, 4].sum(), p[:, 4].sum(), chain, len(p), p[:, 3].sum(),
                     groups])


def regime_of(f, target: targets.Target) -> str:
    """"small" or "big": which figures (`SMALL_CALIBRATION`, `CALIBRATION`) the graph's size picks."""
    return "small" if Estimator(target).regime(f.body.block.ops) is SMALL_CALIBRATION else "big"


def estimate(row: np.ndarray, c: Calibration) -> float:
    return float(c.bound * row[0] + row[1:] @ np.array([getattr(c, k) for k in FITTED]))


def sample(module, inputs, target: targets.Target) -> tuple[dict[float, np.ndarray], int, str]:
    """(estimate terms per `ITEM_SCALES` value, emulated cycles, regime) of a scheduled module."""
    from stc_mlir.emulator import run
    from stc_mlir.passes.lowering import lower
    from stc_mlir.passes.npu_allocate import allocate
    from stc_mlir.passes.schedule_verify import scheduled_functions

    (f,) = scheduled_functions(module)
    row = {scale: terms(f, target, scale) for scale in {*ITEM_SCALES, CALIBRATION.item_scale,
                                                         SMALL_CALIBRATION.item_scale}}
    lowered = lower(module, target)
    program = allocate(lowered.program, lowered.live, lowered.phase_items, target)
    _, report = run(program, inputs, numerics=False)  # the cycles only
    return row, report.cycles, regime_of(f, target)


def fit_scaled(rows: list[dict[float, np.ndarray]], emulated: list[int],
               free: tuple[str, ...] = FITTED, held: Calibration = CALIBRATION) -> tuple[Calibration, float]:
    """`fit` under each of `ITEM_SCALES` (only `held`'s own when `item_cycles` is held): the
    calibration with the smallest sum of squared relative errors, and that sum."""
    best = None
    for scale in ITEM_SCALES if "item_cycles" in free else (held.item_scale,):
        c = replace(fit([r[scale] for r in rows], emulated, free, held), item_scale=scale)
        err = sum((estimate(r[scale], c) / e - 1) ** 2 for r, e in zip(rows, emulated))
        if best is None or err < best[1]:
            best = (c, err)
    return best  # type: ignore[return-value]


def fit(rows: list[np.ndarray], emulated: list[int], free: tuple[str, ...] = FITTED,
        held: Calibration = CALIBRATION) -> Calibration:
    """Non-negative least squares of the relative errors, `bound` kept at 1 (the larger of
    compute and memory is always paid in full) and the figures not in `free` at `held`'s.
    Each figure is a cost, so none may come out negative (a negative `first_load` would
    reward loading); every subset of the free figures is solved and the best non-negative
    one kept."""
    fixed = [i for i, k in enumerate(FITTED) if k not in free]
    cols_free = [i for i, k in enumerate(FITTED) if k in free]
    kept = np.array([getattr(held, k) for k in FITTED])
    a = np.array([r[1:] / e for r, e in zip(rows, emulated)])
    b = np.array([(e - r[0] - r[1:][fixed] @ kept[fixed]) / e for r, e in zip(rows, emulated)])
    best, best_x = float(b @ b), np.where(np.isin(range(len(FITTED)), fixed), kept, 0.0)
    for size in range(1, len(cols_free) + 1):
        for cols in combinations(cols_free, size):
            x, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
            if (x < 0).any():
                continue
            r = b - a[:, cols] @ x
            if float(r @ r) < best:
                best = float(r @ r)
                best_x = np.where(np.isin(range(len(FITTED)), fixed), kept, 0.0)
                best_x[list(cols)] = x
    return replace(held, bound=1.0, **{k: round(float(v), 3) for k, v in zip(FITTED, best_x)})


SMALL = {"resnet50": (16, {"image_size": 32}), "bert-base": (8, {"seq_len": 32, "num_layers": 2}),
         "deepfm": (2560, {}), "mobilenetv2": (16, {"image_size": 32}),
         # the recommenders at a serving batch: many small ops, each group item short
         "dlrm": (2, {}), "mmoe": (2, {}), "wide-deep": (2, {}), "deepfm b2": (2, {}), "mobilenetv2 b2": (2, {})}
FULL = {"resnet50": (16, {}), "bert-base": (8, {}), "deepfm": (2560, {}), "mobilenetv2": (16, {}),
        # few rows per core (2 x 128 over 8 cores): weights streamed under short matmuls
        "xlnet b2": (2, {})}


def main(argv: list[str] | None = None) -> None:
    import argparse

    from stc_mlir import models
    from stc_mlir.frontend import import_onnx
    from stc_mlir.passes.schedule_verify import scheduled_functions
    from stc_mlir.pipeline import Pipeline
    from stc_mlir.schedules import SCHEDULES

    p = argparse.ArgumentParser(description="Fit the estimator's figures against the emulator.")
    p.add_argument("--size", choices=("small", "full", "both"), default="small",
                   help="the built-in models' sizes (full: the benchmarks' ResNet-50 224 b16 ...; minutes)")
    p.add_argument("--levels", default="0,1,2,3", help="graph_schedule_levels sampled (and the manual schedules)")
    p.add_argument("--regime", choices=("big", "small"), default="big",
                   help="fit the figures of big programs (`CALIBRATION`) or of small ones (`SMALL_CALIBRATION`, "
                        "`cost.SMALL_PROGRAM`): the schedules of the other regime are skipped")
    p.add_argument("--models", help="only these configurations (comma-separated keys of `SMALL` / `FULL`)")
    p.add_argument("--fit", default=",".join(FITTED),
                   help="the figures to fit (comma-separated); the others keep the current calibration's")
    args = p.parse_args(argv)
    free = tuple(args.fit.split(","))
    unknown = [k for k in free if k not in FITTED]
    if unknown:
        p.error(f"--fit {','.join(unknown)}: no such figure; figures: {', '.join(FITTED)}")
    current = SMALL_CALIBRATION if args.regime == "small" else CALIBRATION
    configs = [(size, name, batch, options) for size, table in (("small", SMALL), ("full", FULL))
               if args.size in (size, "both") for name, (batch, options) in table.items()
               if not args.models or name in args.models.split(",")]
    if not configs:
        p.error(f"--models {args.models}: no configuration at --size {args.size}; "
                f"keys: {', '.join(sorted({*SMALL, *FULL}))}")
    target = targets.load("stcp920")
    rows, emulated, labels = [], [], []
    for size, key, batch, options in configs:
        name = key.split()[0]  # "deepfm b2": DeepFM at another batch than its benchmark's
        proto = models.build(name, batch=batch, **options)
        inputs = models.example_inputs(name, proto)
        runs = [(f"level {level}", None, int(level)) for level in args.levels.split(",")]
        if name in SCHEDULES and key == name:
            runs.append(("manual", SCHEDULES[name], 0))
        for label, schedule, level in runs:
            module = Pipeline(schedule, level=level, stop_after="schedule-verify").run(import_onnx(proto))
            if regime_of(scheduled_functions(module)[0], target) != args.regime:
                break  # the graph's size picks the other figures (whatever its schedule)
            row, cycles, _ = sample(module, inputs, target)
            rows.append(row)
            emulated.append(cycles)
            labels.append(f"{key} ({size}) {label}")
            print(f"{labels[-1]:32} emulated {cycles:>11,} estimated "
                  f"{estimate(row[current.item_scale], current):>13,.0f}", file=sys.stderr, flush=True)
    fitted, _ = fit_scaled(rows, emulated, free, current)
    fitted = replace(fitted, chain_beyond_work=current.chain_beyond_work)
    for label, row, cycles in zip(labels, rows, emulated):
        before, after = estimate(row[current.item_scale], current), estimate(row[fitted.item_scale], fitted)
        print(f"{label:32} emulated {cycles:>11,}  estimated {before:>13,.0f} ({100 * (before / cycles - 1):+5.1f}%)"
              f" -> {after:>13,.0f} ({100 * (after / cycles - 1):+5.1f}%)", file=sys.stderr)
    print(fitted)


if __name__ == "__main__":
    main()
