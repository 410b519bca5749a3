"""Mutation test of compiled programs: does the emulator report every injected bug?

    python bench/mutation.py [--models deepfm,dlrm,mobilenetv2,resnet50,bert-base]
                             [--per-kind 10] [--seed 0] [--without-provenance] [--json out.json]

Each built-in model at its small configuration (`models.small_options`) is compiled with
the default schedule and emulated once for its reference outputs; then `--per-kind`
mutants of every kind of `stc_mlir.mutate.KINDS` (sites drawn with `--seed`) are
emulated with every check on. A mutant is *caught* (by a provenance error, a race, an
uninitialised read, a deadlock or a checker error), gives *identical* outputs, or is
*missed* (other outputs, nothing reported: the figure that must be 0). A caught mutant is
run again unchecked to count those that really change the results.
`--without-provenance` also runs each mutant with its expectations removed: what the
emulator caught before the provenance check. Runs are deterministic per model and seed, so
runs over separate models or seeds add up (`--tabulate a.json b.json` prints their table
together, each mutant once).
docs/reliability.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from stc_mlir import models, mutate  # noqa: E402
from stc_mlir import target as targets  # noqa: E402
from stc_mlir.emulator import program_from_module, run  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.pipeline import Pipeline  # noqa: E402

BATCH = {"deepfm": 2, "dlrm": 2, "mobilenetv2": 1, "resnet50": 1, "bert-base": 1}


def compile_small(name: str):
    """(program, inputs, reference outputs) of a built-in model at its small configuration."""
    proto = models.build(name, batch=BATCH.get(name, 1), **models.small_options(name))
    inputs = models.example_inputs(name, proto)
    program = program_from_module(Pipeline(None).run(import_onnx(proto)))
    outputs, _ = run(program, inputs)
    return program, inputs, outputs


COLUMNS = ["provenance", "race", "uninitialized_read", "deadlock", "checker", "identical",
           "missed", "crashed", "changed", "changed caught"]


def table(rows: list[dict], kinds: list[str], seconds: float | None = None) -> Counter[str]:
    """Print the counts per kind (and in all) of outcome rows; returns the totals."""
    columns = COLUMNS + (["missed w/o prov."] if all(r["without_provenance"] for r in rows) else [])
    width = {c: max(len(c) + 2, 8) for c in columns}
    print(f"{'kind':18}{'mutants':>8}" + "".join(f"{c:>{width[c]}}" for c in columns))
    total: Counter[str] = Counter()
    for kind in kinds:
        c: Counter[str] = Counter()
        for r in (r for r in rows if r["kind"] == kind):
            by = r["by"]
            c["mutants"] += 1
            c[r["verdict"] if r["verdict"] != "caught" else
              "checker" if by.startswith("checker:") or by == "emulator" else by] += 1
            c["changed"] += r["changes"]
            c["changed caught"] += r["changes"] and r["verdict"] == "caught"
            c["missed w/o prov."] += r["changes"] and r["without_provenance"] in ("missed", "identical")
        total.update(c)
        print(f"{kind:18}{c['mutants']:8}" + "".join(f"{c[col]:>{width[col]}}" for col in columns))
    print(f"{'total':18}{total['mutants']:8}" + "".join(f"{total[col]:>{width[col]}}" for col in columns))
    changed = total["changed"]
    print(f"\n{changed} mutants change the results; {total['changed caught']} caught "
          f"({100 * total['changed caught'] / max(changed, 1):.1f}%), {total['missed']} missed, "
          f"{total['crashed']} crashed" + (f"; {seconds:.0f} s" if seconds is not None else ""))
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(BATCH))
    p.add_argument("--per-kind", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", default=",".join(mutate.KINDS))
    p.add_argument("--without-provenance", action="store_true",
                   help="also run each mutant with its expectations removed")
    p.add_argument("--json", help="also write every outcome as JSON")
    p.add_argument("--tabulate", nargs="+", metavar="JSON",
                   help="only print the table of earlier runs' --json files together")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    if args.tabulate:
        unique: dict[tuple, dict] = {}  # runs with other seeds may draw the same mutant again
        for path in args.tabulate:
            for r in json.load(open(path)):
                unique.setdefault((r["model"], r["kind"], r["where"]), r)
        rows = list(unique.values())
        print(", ".join(sorted({r["model"] for r in rows})))
        table(rows, kinds)
        return
    rows = []
    start = time.perf_counter()
    for name in args.models.split(","):
        if name not in models.names():
            sys.exit(f"unknown model '{name}'; models: {', '.join(models.names())}")
        program, inputs, expected = compile_small(name)
        tgt = targets.load(program.target)
        made = mutate.mutants(program, tgt, kinds, args.per_kind, args.seed)
        print(f"{name}: {sum(len(s) for s in program.cores.values())} commands, "
              f"{len(made)} mutants", flush=True)
        for m in made:
            o = mutate.run_mutant(m, inputs, expected, tgt, args.without_provenance)
            rows.append({"model": name, "kind": m.kind, "where": m.where, "verdict": o.verdict,
                         "by": o.by, "changes": o.changes, "message": o.message,
                         "without_provenance": o.without_provenance})
            if o.verdict in ("missed", "crashed"):
                print(f"  {o.verdict.upper()}: {m.kind} {m.where}: {o.by} {o.message[:300]}", flush=True)
    print()
    total = table(rows, kinds, time.perf_counter() - start)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if total["missed"] or total["crashed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
