"""IR round trip at every level: print + parse + verify of the graph, schedule and npu IR.

For ResNet-50 224 b16 and BERT-base S128 b8 with their manual schedules (`--size small`:
ResNet-50 32x32 and a 2-layer BERT S32, for a quick look), the model is imported, compiled
to schedule level, then to an allocated npu program; at each level the module is printed
to a file with its weights in a side-car file (as `stc-opt -o` writes it), parsed back
(`stc_mlir.ir.parse_file`) and verified, and the parsed npu program is checked to equal the
compiled one. Prints seconds per step and the text and weight-file sizes, one row per model
and level, side by side in one run:

    python bench/ir_roundtrip.py [--size small|full] [--models resnet50,bert-base] [--json rows.json]
                                 [--breakdown]

`--breakdown` also prints where the npu level's text goes (MB per part: the aliases, the
origins table, buffers, and in the commands the buffer names and offsets, layouts, sync,
origin, expects, parameters and the rest).

Targets (issue 11): npu level of ResNet-50 b16 print + parse + verify <= 5 s, text <= 10 MB;
graph level kilobytes. Wall times on a shared machine are noisy: the CPU seconds column
(process time of the three steps) is the steadier figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from stc_mlir import blas  # noqa: E402

blas.single_threaded()

from stc_mlir import ir, models, weights  # noqa: E402
from stc_mlir.dialects.npu import program_from_module  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.isa.program import OPS  # noqa: E402
from stc_mlir.pipeline import Pipeline, module_level  # noqa: E402
from stc_mlir.schedules import SCHEDULES  # noqa: E402

from end_to_end import CONFIGS as _ALL  # noqa: E402  (bench/ is on the path when run as a script)

CONFIGS = {name: _ALL[name] for name in ("resnet50", "bert-base")}


class _Clock:
    """Wall and CPU seconds of a block."""

    def __enter__(self) -> _Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def round_trip(module, path: str) -> dict:
    """Print `module` to `path` (weights beside it), parse it back, verify it."""
    with _Clock() as printing, weights.writing_to(weights.weights_file_for(path)), open(path, "w") as f:
        ir.print_module(module, f)
    with _Clock() as parsing:
        parsed = ir.parse_file(path)
    with _Clock() as verifying:
        parsed.verify()
    weight_file = weights.weights_file_for(path)
    return {
        "print_s": printing.wall, "parse_s": parsing.wall, "verify_s": verifying.wall,
        "total_s": printing.wall + parsing.wall + verifying.wall,
        "cpu_s": printing.cpu + parsing.cpu + verifying.cpu,
        "text_mb": os.path.getsize(path) / 1e6,
        "weights_mb": os.path.getsize(weight_file) / 1e6 if os.path.exists(weight_file) else 0.0,
        "parsed": parsed,
    }


_PARTS = {  # part of a command line -> what matches it, taken out in this order (the rest: "other")
    "expects": r'(?:, )?expects = "[^"]*"',
    "sync": r"(?:, )?(?:sync = #\w+|(?:waits|signals) = \[[^\]]*\])",
    "origin": r"(?:, )?origin = -?\d+",
    "tile names": r"@(?:[A-Za-z_][\w$.\-]*|\"(?:[^\"\\]|\\.)*\")(?=\[| :)",
    "tile offsets": r"\[\d+\](?= :)",
    "tile layouts": r" : (?:#\w+|(?:\d+x)*\w+(?: strides \[[^\]]*\])?)(?=,| ->| \{| [a-z]+ @|\n|$)",
    "parameters": r"(?:, )?[a-z_]+ = (?:array<[^>]*>|\[[^\]]*\]|\"[^\"]*\"|-?[\d.e+-]+ : [if]64|true|false)",
}
_PART_RES = {part: re.compile(pattern) for part, pattern in _PARTS.items()}


def breakdown(path: str) -> dict[str, float]:
    """MB of the npu text at `path` per part (see `--breakdown`)."""
    parts = dict.fromkeys(["aliases", "origins table", "buffers", "other statements", *_PARTS, "other"], 0)
    with open(path) as f:
        for line in f:
            stripped = line.lstrip()
            if stripped.startswith("#"):
                parts["aliases"] += len(line)
            elif stripped.startswith("npu.origin "):
                parts["origins table"] += len(line)
            elif stripped.startswith("npu.buffer "):
                parts["buffers"] += len(line)
            elif stripped.split(" ", 1)[0].removeprefix("npu.") not in OPS:  # commands: `dma ...` or `npu.dma ...`
                parts["other statements"] += len(line)
            else:
                for part, regex in _PART_RES.items():
                    line, before = regex.sub("", line), len(line)
                    parts[part] += before - len(line)
                parts["other"] += len(line)  # the op, its kind, ` -> `, braces, indentation
    return {k: v / 1e6 for k, v in parts.items()}


def measure(name: str, batch: int, options: dict, directory: str, show_breakdown: bool = False) -> list[dict]:
    proto = models.build(name, batch=batch, **options)
    module = import_onnx(proto)
    rows = []

    def level(label: str, mod) -> None:
        row = round_trip(mod, os.path.join(directory, f"{name}.{label}.mlir"))
        parsed = row.pop("parsed")
        assert module_level(parsed) == module_level(mod)
        if label == "npu":
            assert program_from_module(parsed) == program_from_module(mod), "the npu program changed in the round trip"
        rows.append({"model": name, "batch": batch, "level": label, **row})
        print(f"{name:10} {batch:5} {label:9} {row['print_s']:8.2f} {row['parse_s']:8.2f} {row['verify_s']:9.2f} "
              f"{row['total_s']:8.2f} {row['cpu_s']:8.2f} {row['text_mb']:10.3f} {row['weights_mb']:11.1f}", flush=True)
        if label == "npu" and show_breakdown:
            rows[-1]["breakdown_mb"] = parts = breakdown(os.path.join(directory, f"{name}.{label}.mlir"))
            print("  npu text, MB: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()), flush=True)

    level("graph", module)
    with _Clock() as to_schedule:
        Pipeline(SCHEDULES[name], batch=batch, stop_after="schedule-verify").run(module)
    level("schedule", module)
    with _Clock() as to_npu:
        Pipeline(batch=batch).run(module)  # already scheduled: continues with the lowering
    level("npu", module)
    rows[-1]["compile_s"] = to_schedule.wall + to_npu.wall
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=("small", "full"), default="full")
    p.add_argument("--models", default=",".join(CONFIGS))
    p.add_argument("--json", help="also write the rows as JSON")
    p.add_argument("--breakdown", action="store_true", help="also print where the npu text's bytes go")
    args = p.parse_args()
    print(f"{'model':10} {'batch':>5} {'level':9} {'print s':>8} {'parse s':>8} {'verify s':>9} {'total s':>8} "
          f"{'CPU s':>8} {'text MB':>10} {'weights MB':>11}")
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for name in args.models.split(","):
            if name not in CONFIGS:
                sys.exit(f"unknown model '{name}'; models: {', '.join(CONFIGS)}")
            batch, small, full = CONFIGS[name]
            rows += measure(name, batch, small if args.size == "small" else full, directory, args.breakdown)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
