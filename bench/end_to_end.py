"""End to end on the built-in models: compile, emulate, compare with onnxruntime.

    python bench/end_to_end.py [--size small|full] [--models resnet50,deepfm] [--json out.json]

For each model, with the default schedule and (at its batch) the built-in manual schedule:
compile wall time (import + pipeline), emulation wall time (functional + cycles, hazard
checks on) and timing-only emulation time (`run(numerics=False)`: the same report, no
values) next to onnxruntime's on the same batch in the same run (so the ratios mean
something on a noisy machine), emulated cycles against the roofline, DDR bytes against the
minimum, peak L1 / LLB, MAC utilisation, and the cosine similarity with onnxruntime (worst
output). The emulator computes values on `--threads` threads, each with single-threaded BLAS
(default $STC_EMULATOR_THREADS, else 2 if a core is idle, else 1); the rest of the run is
single-threaded BLAS (export OPENBLAS_NUM_THREADS to change it), whose kernels the first
line names (a machine that pins OPENBLAS_CORETYPE runs older ones: unset it, and
OPENBLAS_L2_SIZE, in the command to measure against a current numpy);
onnxruntime uses its own thread pool. Then the same two runs on a prepared program
(`emulator.prepare` timed apart as "prep s": an Executor's second call, as onnxruntime's run
of a session made beforehand): "run s", "trun s" and their ratios. docs/performance.md has
the figures and profiles.

`--size small` (default) shrinks images, sequences and layers so the whole run takes
minutes; `--size full` is the seeds' configurations (ResNet-50 224 x 224 at batch 16,
BERT-base seq 128 at batch 8, DeepFM at batch 2560).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from stc_mlir import blas  # noqa: E402

blas.single_threaded()  # as in stc-run (export the variables to override)

import numpy as np  # noqa: E402

from stc_mlir import compare, models  # noqa: E402
from stc_mlir.emulator import prepare, program_from_module, run  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.pipeline import Pipeline, schedule_batch  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402
from stc_mlir.target import load  # noqa: E402

CONFIGS = {
    # name: (batch, small options, full options); the batch is the manual schedule's
    "resnet50": (16, {"image_size": 32}, {}),
    "bert-base": (8, {"seq_len": 32, "num_layers": 2}, {}),
    "deepfm": (2560, {}, {}),
    "mobilenetv2": (16, {"image_size": 32}, {}),
}


def onnxruntime_seconds(proto, inputs, repeat: int = 3) -> float:
    """Median wall time of one onnxruntime run (session made and warmed up first)."""
    import onnxruntime as ort

    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(inputs[i.name]) for i in session.get_inputs()}
    session.run(None, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(name: str, proto, inputs, golden, schedule, threads: int | None) -> dict:
    start = time.perf_counter()
    module = Pipeline(schedule).run(import_onnx(proto))
    program = program_from_module(module)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    outputs, report = run(program, inputs, threads=threads)
    emulate_s = time.perf_counter() - start
    start = time.perf_counter()
    _, timing = run(program, inputs, numerics=False, threads=threads)
    timing_s = time.perf_counter() - start
    d = report.as_dict()
    if timing.as_dict() != d:
        raise AssertionError("the timing-only run's report differs from the full run's")
    # the same runs again on a prepared program (as an Executor's second call; onnxruntime's
    # time is also a run of a session made beforehand)
    target = load(program.target)
    start = time.perf_counter()
    once = prepare(program, target)
    prepare_s = time.perf_counter() - start
    start = time.perf_counter()
    again, rerun = run(program, inputs, threads=threads, prepared=once)
    run_s = time.perf_counter() - start
    once = prepare(program, target, numerics=False)
    start = time.perf_counter()
    _, retimed = run(program, inputs, numerics=False, threads=threads, prepared=once)
    timing_run_s = time.perf_counter() - start
    if rerun.as_dict() != d or retimed.as_dict() != d or any((again[k] != v).any() for k, v in outputs.items()):
        raise AssertionError("a run of the prepared program differs from the first run")
    by_name = dict(zip((o.name for o in proto.graph.output), golden))
    return {
        "model": name, "schedule": "default" if schedule is None else schedule.__name__,
        "compile_s": compile_s, "emulate_s": emulate_s, "timing_s": timing_s, "prepare_s": prepare_s,
        "run_s": run_s, "timing_run_s": timing_run_s,
        "cosine": min(compare.cosine(by_name[k], v) for k, v in outputs.items()),
        **{k: d[k] for k in ("cycles", "roofline_cycles", "roofline_ratio", "ddr_bytes", "min_ddr_bytes",
                             "peak_l1_bytes", "peak_llb_bytes", "mac_utilization")},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=("small", "full"), default="small")
    p.add_argument("--models", default=",".join(CONFIGS))
    p.add_argument("--json", help="also write the rows as JSON")
    p.add_argument("--threads", type=int, help="threads computing the emulator's values (default $STC_EMULATOR_THREADS, "
                   "else 2 if a core is idle, else 1)")
    args = p.parse_args()
    rows = []
    header = (f"{'model':12} {'schedule':18} {'batch':>5} {'compile s':>9} {'emulate s':>9} {'timing s':>8} "
              f"{'ort s':>7} {'emu/ort':>7} {'tim/ort':>7} {'prep s':>6} {'run s':>6} {'trun s':>6} {'run/ort':>7} "
              f"{'trun/ort':>8} {'cycles':>13} {'roofline':>12} {'ratio':>6} {'DDR B':>13} {'min DDR B':>12} "
              f"{'peak L1':>10} {'peak LLB':>10} {'MAC %':>6} {'cosine':>9}")
    print(f"BLAS kernels: {blas.kernels()} (OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}); "
          f"load {os.getloadavg()[0]:.2f}")
    print(header)
    for name in args.models.split(","):
        if name not in CONFIGS:
            sys.exit(f"unknown model '{name}'; models: {', '.join(CONFIGS)}")
        batch, small, full = CONFIGS[name]
        options = small if args.size == "small" else full
        proto = models.build(name, batch=batch, **options)
        inputs = models.example_inputs(name, proto)
        golden = compare.onnxruntime_outputs(proto, inputs)
        ort_s = onnxruntime_seconds(proto, inputs)
        manual = SCHEDULES.get(name)
        schedules = [None] + ([manual] if manual is not None and schedule_batch(manual) == batch else [])
        for schedule in schedules:
            label = "default" if schedule is None else schedule.__name__
            try:
                row = {**measure(name, proto, inputs, golden, schedule, args.threads), "batch": batch, "ort_s": ort_s,
                       "options": options}
            except Exception as e:  # a model the compiler cannot take yet: say why, go on
                rows.append({"model": name, "schedule": label, "batch": batch, "error": f"{type(e).__name__}: {e}"})
                print(f"{name:12} {label:18} {batch:5} FAILED {type(e).__name__}: {str(e)[:160]}", flush=True)
                continue
            rows.append(row)
            print(f"{name:12} {row['schedule']:18} {batch:5} {row['compile_s']:9.2f} {row['emulate_s']:9.2f} "
                  f"{row['timing_s']:8.2f} {ort_s:7.3f} {row['emulate_s'] / ort_s:7.1f} {row['timing_s'] / ort_s:7.1f} "
                  f"{row['prepare_s']:6.2f} {row['run_s']:6.2f} {row['timing_run_s']:6.2f} {row['run_s'] / ort_s:7.1f} "
                  f"{row['timing_run_s'] / ort_s:8.1f} "
                  f"{row['cycles']:13,} {row['roofline_cycles']:12,} "
                  f"{row['roofline_ratio']:6.2f} {row['ddr_bytes']:13,} {row['min_ddr_bytes']:12,} "
                  f"{row['peak_l1_bytes']:10,} {row['peak_llb_bytes']:10,} {100 * row['mac_utilization']:6.1f} "
                  f"{row['cosine']:9.6f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
