"""Lowering options side by side: weight prefetch and narrowed barriers, each on and off.

    python bench/lowering_options.py [--size small|full] [--models resnet50,bert-base,deepfm]
        [--schedules manual,3] [--variants off,both,all] [--batch N] [--json out.json]

For each built-in model (the configurations of bench/end_to_end.py) and schedule (the
seeds' manual one, or a `graph_schedule_level`), the schedule is made once and lowered
with each combination of the lowering's options, then emulated: cycles, the roofline
ratio, hazards, the cosine against onnxruntime, the command count and the CPU seconds of
lowering (with allocation) and of emulation, in one run so the ratios compare. Variants:
`off`, `prefetch`, `narrow`, `both` (weight prefetch and narrowed barriers, without the
later options), `fuse` (both + streamed elementwise chains in one stage), `stage` (both +
big weights staged in LLB), `all` (the default lowering). `--batch N` runs every model at
batch N (then any built-in model, at its full or small options of bench/end_to_end.py if
it has them, else its defaults); `--timing-only` skips the values (and the cosine).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from stc_mlir import compare, models  # noqa: E402
from stc_mlir.emulator import run  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.passes.lowering import lower  # noqa: E402
from stc_mlir.passes.npu_allocate import allocate  # noqa: E402
from stc_mlir.pipeline import Pipeline, schedule_batch  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402
from stc_mlir.target import load  # noqa: E402

from end_to_end import CONFIGS  # noqa: E402  (bench/ is on the path when run as a script)

_LATER = {"fuse_elementwise": False, "stage_weights": False}  # options added after these four
VARIANTS = {
    "off": {"prefetch": False, "narrow_barriers": False, **_LATER},
    "prefetch": {"prefetch": True, "narrow_barriers": False, **_LATER},
    "narrow": {"prefetch": False, "narrow_barriers": True, **_LATER},
    "both": {"prefetch": True, "narrow_barriers": True, **_LATER},
    "fuse": {"prefetch": True, "narrow_barriers": True, "fuse_elementwise": True, "stage_weights": False},
    "stage": {"prefetch": True, "narrow_barriers": True, "fuse_elementwise": False, "stage_weights": True},
    "all": {"prefetch": True, "narrow_barriers": True, "fuse_elementwise": True, "stage_weights": True},
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=("small", "full"), default="small")
    p.add_argument("--models", default="resnet50,bert-base,deepfm")
    p.add_argument("--schedules", default="manual,3", help="manual and/or levels, comma-separated")
    p.add_argument("--variants", default=",".join(VARIANTS), help="of: " + ", ".join(VARIANTS))
    p.add_argument("--batch", type=int, help="every model at this batch (any built-in model)")
    p.add_argument("--timing-only", action="store_true",
                   help="emulate without computing values (cycles and hazards only, no cosine)")
    p.add_argument("--json", help="also write the rows as JSON")
    args = p.parse_args()
    target = load("stcp920")
    print(f"{'model':10} {'schedule':8} {'lowering':10} {'cycles':>13} {'ratio':>6} {'vs off':>7} "
          f"{'hazards':>7} {'cosine':>9} {'commands':>9} {'lower s':>8} {'emul. s':>8}", flush=True)
    rows = []
    for name in args.models.split(","):
        if name not in CONFIGS and (args.batch is None or name not in models.names()):
            sys.exit(f"unknown model '{name}'; models: {', '.join(CONFIGS)} (any built-in with --batch)")
        batch, small, full = CONFIGS.get(name, (args.batch, {}, {}))
        batch = args.batch or batch
        proto = models.build(name, batch=batch, **(small if args.size == "small" else full))
        inputs = models.example_inputs(name, proto)
        golden = None if args.timing_only else compare.onnxruntime_outputs(proto, inputs)
        names = [o.name for o in proto.graph.output]
        for sched in args.schedules.split(","):
            if sched == "manual":
                manual = SCHEDULES.get(name)
                if manual is None or schedule_batch(manual) != batch:
                    continue
                pipeline = Pipeline(manual, stop_after="schedule-verify")
            else:
                pipeline = Pipeline(level=int(sched), stop_after="schedule-verify")
            module = pipeline.run(import_onnx(proto))
            base = None
            for variant in args.variants.split(","):
                start = time.process_time()
                try:
                    lowered = lower(module, target, **VARIANTS[variant])
                    program = allocate(lowered.program, lowered.live, lowered.phase_items, target)
                    lowered_at = time.process_time()
                    outputs, report = run(program, inputs, numerics=not args.timing_only)
                except Exception as e:  # say why, go on
                    print(f"{name:10} {sched:8} {variant:10} FAILED {type(e).__name__}: {str(e)[:300]}",
                          flush=True)
                    rows.append({"model": name, "schedule": sched, "lowering": variant,
                                 "error": f"{type(e).__name__}: {e}"})
                    continue
                d = report.as_dict()
                cosine = float("nan")
                if golden is not None:
                    by_name = dict(zip(names, golden))
                    cosine = min(compare.cosine(by_name[k], v) for k, v in outputs.items())
                base = d["cycles"] if base is None else base
                row = {"model": name, "schedule": sched, "lowering": variant, "cycles": d["cycles"],
                       "roofline_cycles": d["roofline_cycles"], "ratio": d["roofline_ratio"],
                       "hazards": len(d["hazards"]), "cosine": cosine,
                       "commands": sum(1 for _ in program.commands()),
                       "lower_cpu_s": lowered_at - start,
                       "emulate_cpu_s": time.process_time() - lowered_at}
                rows.append(row)
                print(f"{name:10} {sched:8} {variant:10} {row['cycles']:13,} {row['ratio']:6.3f} "
                      f"{row['cycles'] / base:7.3f} {row['hazards']:7} {cosine:9.6f} {row['commands']:9,} "
                      f"{row['lower_cpu_s']:8.2f} {row['emulate_cpu_s']:8.2f}",
                      flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
