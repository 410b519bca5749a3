"""Fingerprints of the lowering and the emulator, to check that a speed-up changes nothing.

    python bench/fingerprint.py [--configs r50s,berts] [--json before.json]
    python bench/fingerprint.py --against before.json       # exit 1 on any difference

For each configuration: a hash of the lowered program (`to_manifest` + weights) and of the
allocated one, of the live ranges and phases, the emulated cycles, a hash of the report and
of the output bytes, whether a timing-only run gives the same report, the cosine with
onnxruntime, and the CPU seconds of lowering and emulation (BLAS single-threaded). The
full-size configurations (r50f, bertf, mnv2f) take minutes each.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

from stc_mlir import blas  # noqa: E402

blas.single_threaded()  # as in stc-run (export the variables to override)

import numpy as np  # noqa: E402

from stc_mlir import compare, models  # noqa: E402
from stc_mlir.emulator import run  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.isa.program import to_manifest  # noqa: E402
from stc_mlir.passes.lowering import lower  # noqa: E402
from stc_mlir.passes.npu_allocate import allocate  # noqa: E402
from stc_mlir.pipeline import Pipeline  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402

CONFIGS = {  # name: (model, batch, options, manual schedule?)
    "r50s": ("resnet50", 16, {"image_size": 32}, True),
    "berts": ("bert-base", 8, {"seq_len": 32, "num_layers": 2}, True),
    "deepfm": ("deepfm", 2560, {}, False),
    "mnv2s": ("mobilenetv2", 16, {"image_size": 32}, False),
    "r50f": ("resnet50", 16, {}, True),
    "bertf": ("bert-base", 8, {}, True),
    "mnv2f": ("mobilenetv2", 16, {}, False),
}
SMALL = "r50s,berts,deepfm,mnv2s"
SAME = ("lowered", "allocated", "live", "phases", "cycles", "report", "outputs", "timing_same")


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def program_hash(program) -> str:
    """Of the program without its origins (`origins_hash`): tagging changes no command."""
    manifest, blobs = to_manifest(program)
    manifest.pop("origins", None)
    manifest.pop("command_origins", None)
    h = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode())
    for name in sorted(blobs):
        h.update(name.encode())
        h.update(bytes(blobs[name]))
    return h.hexdigest()[:16]


def fingerprint(name: str) -> dict:
    model, batch, options, manual = CONFIGS[name]
    proto = models.build(model, batch=batch, **options)
    inputs = models.example_inputs(model, proto)
    module = Pipeline(SCHEDULES[model] if manual else None, stop_after="schedule-verify").run(import_onnx(proto))
    start = time.process_time()
    lowered = lower(module)
    row = {"config": name, "lower_cpu_s": time.process_time() - start,
           "lowered": program_hash(lowered.program),
           "live": _hash(repr(sorted(lowered.live.items())).encode()),
           "phases": _hash(repr(lowered.phase_items).encode())}
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    row["allocated"] = program_hash(program)
    row["origins"] = _hash(repr((program.origins, [c.origin for _, _, c in program.commands()])).encode())
    start = time.process_time()
    outputs, report = run(program, inputs)
    row["emulate_cpu_s"] = time.process_time() - start
    start = time.process_time()
    _, timing = run(program, inputs, numerics=False)
    row["timing_cpu_s"] = time.process_time() - start
    d = report.as_dict()
    row["timing_same"] = timing.as_dict() == d
    row["cycles"] = d["cycles"]
    totals = {k: v for k, v in d.items() if k not in ("items", "ops")}  # the per-item rows are new
    row["report"] = _hash(json.dumps(totals, sort_keys=True, default=str).encode())
    row["outputs"] = _hash(b"".join(np.ascontiguousarray(outputs[k]).tobytes() for k in sorted(outputs)))
    golden = dict(zip((o.name for o in proto.graph.output), compare.onnxruntime_outputs(proto, inputs)))
    row["cosine"] = min(compare.cosine(golden[k], v) for k, v in outputs.items())
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", default=SMALL, help=f"comma-separated, of {', '.join(CONFIGS)} (default {SMALL})")
    p.add_argument("--json", help="write the fingerprints as JSON")
    p.add_argument("--against", help="a --json file of an earlier run: report every difference")
    args = p.parse_args()
    names = args.configs.split(",")
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        sys.exit(f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(CONFIGS)}")
    before = {r["config"]: r for r in json.load(open(args.against))} if args.against else {}
    rows, differ = [], False
    for name in names:
        row = fingerprint(name)
        rows.append(row)
        print(json.dumps(row), flush=True)
        old = before.get(name)
        if old is not None:
            changed = [k for k in SAME if k in old and old[k] != row[k]]
            differ |= bool(changed)
            print(f"{name}: {'DIFFERS in ' + ', '.join(changed) if changed else 'identical'}; "
                  f"lower {old['lower_cpu_s']:.2f} -> {row['lower_cpu_s']:.2f} CPU s, emulate "
                  f"{old['emulate_cpu_s']:.2f} -> {row['emulate_cpu_s']:.2f} CPU s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
