"""graph_schedule_level 0-3 side by side on the built-in models, with the manual schedules.

    python bench/auto_schedule.py [--size small|full] [--models resnet50,bert-base] [--json out.json]
    python bench/auto_schedule.py --models resnet50 --batch 1 --option image_size=512   # row stripes

For each built-in model (the seeds' configurations at `--size full`: ResNet-50 224 x 224 at
batch 16, BERT-base seq 128 at batch 8, DeepFM at batch 2560, MobileNetV2 224 at batch 16;
other registered models at their defaults) and each level 0-3, then the seeds' manual
schedule where there is one: emulated cycles, the roofline ratio, the estimator's error on
the schedule made (estimated / emulated - 1), the search time (levels 1-3; for level 3 also
a second, cached search), hazards and the cosine against onnxruntime. Levels are compiled
and emulated one after the other in one run, so their ratios compare. BLAS runs
single-threaded. `--batch` and `--option KEY=VALUE` override every model's configuration
(a 512 x 512 ResNet-50 does not fit L1 even as one sample: every level cuts its early
layers into row stripes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from stc_mlir import compare, models  # noqa: E402
from stc_mlir.autoschedule.cost import Estimator  # noqa: E402
from stc_mlir.emulator import run  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.passes.lowering import lower  # noqa: E402
from stc_mlir.passes.npu_allocate import allocate  # noqa: E402
from stc_mlir.passes.schedule_verify import scheduled_functions  # noqa: E402
from stc_mlir.pipeline import Pipeline, schedule_batch  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402
from stc_mlir.target import load  # noqa: E402

from end_to_end import CONFIGS  # noqa: E402  (bench/ is on the path when run as a script)


def measure(proto, inputs, golden, *, level: int = 0, schedule=None) -> dict:
    target = load("stcp920")
    pipeline = Pipeline(schedule, level=level, stop_after="schedule-verify")
    module = pipeline.run(import_onnx(proto))
    row: dict = {}
    if pipeline.decided:
        row["search_s"] = sum(d.search_seconds for d in pipeline.decided)
        if level == 3:  # the same compile again: the decision comes from the cache
            again = Pipeline(level=level, stop_after="schedule-verify")
            again.run(import_onnx(proto))
            row["cached_search_s"] = sum(d.search_seconds for d in again.decided)
            row["cache_hit"] = all(d.cache_hit for d in again.decided)
    (f,) = scheduled_functions(module)
    estimate = Estimator(target).function(f).cycles
    lowered = lower(module, target)
    program = allocate(lowered.program, lowered.live, lowered.phase_items, target)
    outputs, report = run(program, inputs)
    d = report.as_dict()
    names = [o.name for o in proto.graph.output]
    by_name = dict(zip(names, golden))
    return {**row, "cycles": d["cycles"], "roofline_cycles": d["roofline_cycles"],
            "roofline_ratio": d["roofline_ratio"], "estimate": estimate,
            "estimate_error": estimate / d["cycles"] - 1, "hazards": len(d["hazards"]),
            "peak_l1_bytes": d["peak_l1_bytes"], "peak_llb_bytes": d["peak_llb_bytes"],
            "ddr_bytes": d["ddr_bytes"],
            "cosine": min(compare.cosine(by_name[k], v) for k, v in outputs.items())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=("small", "full"), default="small")
    p.add_argument("--models", default=",".join(models.names()))
    p.add_argument("--levels", default="0,1,2,3")
    p.add_argument("--json", help="also write the rows as JSON")
    p.add_argument("--batch", type=int, help="every model at this batch")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a model option for every model (an int where it parses as one)")
    args = p.parse_args()
    overrides = {}
    for item in args.option:
        key, _, value = item.partition("=")
        overrides[key] = int(value) if value.lstrip("-").isdigit() else value
    os.environ.setdefault("STC_MLIR_CACHE_DIR", tempfile.mkdtemp(prefix="stc-autoschedule-"))
    print(f"{'model':12} {'schedule':10} {'batch':>5} {'cycles':>13} {'roofline':>12} {'ratio':>6} "
          f"{'est err':>8} {'search s':>9} {'cached s':>9} {'peak L1':>9} {'peak LLB':>10} {'hazards':>7} "
          f"{'cosine':>9}", flush=True)
    rows = []
    for name in args.models.split(","):
        if name not in models.names():
            sys.exit(f"unknown model '{name}'; models: {', '.join(models.names())}")
        batch, small, full = CONFIGS.get(name, (1, {}, {}))
        options = {**(small if args.size == "small" else full), **overrides}
        batch = args.batch or batch
        proto = models.build(name, batch=batch, **options)
        inputs = models.example_inputs(name, proto)
        golden = compare.onnxruntime_outputs(proto, inputs)
        runs = [(f"level {n}", {"level": int(n)}) for n in args.levels.split(",")]
        manual = SCHEDULES.get(name)
        if manual is not None and schedule_batch(manual) == batch:
            runs.append(("manual", {"schedule": manual}))
        for label, how in runs:
            start = time.perf_counter()
            try:
                row = measure(proto, inputs, golden, **how)
            except Exception as e:  # a model a level cannot take: say why, go on
                rows.append({"model": name, "schedule": label, "batch": batch, "error": f"{type(e).__name__}: {e}"})
                print(f"{name:12} {label:10} {batch:5} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            row.update(model=name, schedule=label, batch=batch, options=options,
                       wall_s=time.perf_counter() - start)
            rows.append(row)
            search = f"{row['search_s']:9.2f}" if "search_s" in row else f"{'-':>9}"
            cached = f"{row['cached_search_s']:9.3f}" if "cached_search_s" in row else f"{'-':>9}"
            print(f"{name:12} {label:10} {batch:5} {row['cycles']:13,} {row['roofline_cycles']:12,} "
                  f"{row['roofline_ratio']:6.2f} {100 * row['estimate_error']:+7.1f}% {search} {cached} "
                  f"{row['peak_l1_bytes']:9,} {row['peak_llb_bytes']:10,} {row['hazards']:7} {row['cosine']:9.6f}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
