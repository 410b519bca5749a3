"""Compile time of the built-in models, ONNX -> .stcobj, stage by stage (CPU seconds).

    python bench/compile.py [--models resnet50,bert-base] [--schedule manual|default]
                            [--prefetch on|off] [--repeat N] [--stages]

Per model at its manual schedule's batch (ResNet-50 224 b16, BERT-base S128 b8, DeepFM
b2560): `import_onnx` of the built model, the pipeline (graph passes, schedule, lowering,
allocation) and `stcobj.save`; `total` is the compile, import + pipeline + save (building
the ONNX model with its random weights, `build`, is shown beside it but is not part of it).
`--prefetch off` lowers without the weight prefetch (`convert-schedule-to-npu{prefetch=false}`);
`--stages` adds a line per compile with the CPU seconds of every pipeline stage.
CPU seconds (`time.process_time`), so the figures mean something on a busy machine; wall
seconds of the compile beside them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from xdsl.context import Context  # noqa: E402

from stc_mlir import models, stcobj  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.gc_pause import gc_paused  # noqa: E402
from stc_mlir.passes.convert_schedule_to_npu import ConvertScheduleToNpu  # noqa: E402
from stc_mlir.passes.npu_allocate import NpuAllocate  # noqa: E402
from stc_mlir.pipeline import Pipeline, schedule_batch  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402


class _Stages:
    """A pipeline progress callback keeping the CPU seconds of every stage."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self._start = 0.0

    def __call__(self, stage: str, seconds: float | None) -> None:
        if seconds is None:
            self._start = time.process_time()
        else:
            self.cpu[stage] = self.cpu.get(stage, 0.0) + time.process_time() - self._start


def compile_times(name: str, manual: bool, prefetch: bool = True) -> dict:
    schedule = SCHEDULES[name]
    stages = _Stages()
    batch = schedule_batch(schedule)
    start = time.process_time()
    proto = models.build(name, batch=batch)
    wall, cpu = time.perf_counter(), time.process_time()
    module = import_onnx(proto)
    imported = time.process_time()
    if prefetch:
        Pipeline(schedule if manual else None, batch=batch, progress=stages).run(module)
    else:  # the same stages, the lowering without prefetch
        Pipeline(schedule if manual else None, batch=batch, stop_after="schedule-verify",
                 progress=stages).run(module)
        for p in (ConvertScheduleToNpu(prefetch=False), NpuAllocate()):
            stages(p.name, None)
            with gc_paused(long_lived=True):
                p.apply(Context(), module)
            stages(p.name, 0.0)
    compiled = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        stcobj.save(module, os.path.join(tmp, f"{name}.stcobj"))
    saved = time.process_time()
    return {"batch": batch, "build": cpu - start, "import": imported - cpu, "pipeline": compiled - imported,
            "save": saved - compiled, "total": saved - cpu, "wall": time.perf_counter() - wall,
            "stages": stages.cpu}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(SCHEDULES), help="comma-separated built-in models")
    parser.add_argument("--schedule", choices=("manual", "default"), default="manual")
    parser.add_argument("--prefetch", choices=("on", "off"), default="on")
    parser.add_argument("--repeat", type=int, default=1, help="compile each model N times (one row each)")
    parser.add_argument("--stages", action="store_true", help="also the CPU seconds of every pipeline stage")
    args = parser.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in SCHEDULES]
    if unknown:
        print(f"compile.py: unknown model(s) {', '.join(unknown)}; known: {', '.join(SCHEDULES)}",
              file=sys.stderr)
        return 2
    if args.repeat < 1:
        print(f"compile.py: --repeat must be at least 1, got {args.repeat}", file=sys.stderr)
        return 2
    print(f"{'model':<12}{'batch':>6}{'build':>8}{'import':>9}{'pipeline':>10}{'save':>7}{'total':>8}"
          f"{'wall':>8}  (CPU s; total = import + pipeline + save)")
    for name in names:
        for _ in range(args.repeat):
            t = compile_times(name, args.schedule == "manual", args.prefetch == "on")
            print(f"{name:<12}{t['batch']:>6}{t['build']:>8.2f}{t['import']:>9.2f}{t['pipeline']:>10.2f}"
                  f"{t['save']:>7.2f}{t['total']:>8.2f}{t['wall']:>8.2f}", flush=True)
            if args.stages:
                print("    " + ", ".join(f"{k} {v:.2f}" for k, v in t["stages"].items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
