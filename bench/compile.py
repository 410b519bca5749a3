"""Compile time of the built-in models, ONNX -> .stcobj, stage by stage (CPU seconds).

    python bench/compile.py [--models resnet50,bert-base] [--schedule manual|default]

Per model at its manual schedule's batch (ResNet-50 224 b16, BERT-base S128 b8, DeepFM
b2560): build + import_onnx, the pipeline (graph passes, schedule, lowering, allocation)
and `stcobj.save`. CPU seconds (`time.process_time`), so the figures mean something on a
busy machine; wall seconds beside them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from stc_mlir import models, stcobj  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.pipeline import Pipeline, schedule_batch  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402


def compile_times(name: str, manual: bool) -> dict[str, float]:
    schedule = SCHEDULES[name]
    batch = schedule_batch(schedule)
    wall, cpu = time.perf_counter(), time.process_time()
    module = import_onnx(models.build(name, batch=batch))
    imported = time.process_time()
    Pipeline(schedule if manual else None, batch=batch).run(module)
    compiled = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        stcobj.save(module, os.path.join(tmp, f"{name}.stcobj"))
    saved = time.process_time()
    return {"batch": batch, "import": imported - cpu, "pipeline": compiled - imported, "save": saved - compiled,
            "total": saved - cpu, "wall": time.perf_counter() - wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(SCHEDULES), help="comma-separated built-in models")
    parser.add_argument("--schedule", choices=("manual", "default"), default="manual")
    args = parser.parse_args()
    print(f"{'model':<12}{'batch':>6}{'import':>9}{'pipeline':>10}{'save':>7}{'total':>8}{'wall':>8}  (CPU s)")
    for name in args.models.split(","):
        t = compile_times(name, args.schedule == "manual")
        print(f"{name:<12}{t['batch']:>6}{t['import']:>9.2f}{t['pipeline']:>10.2f}{t['save']:>7.2f}"
              f"{t['total']:>8.2f}{t['wall']:>8.2f}")


if __name__ == "__main__":
    main()
