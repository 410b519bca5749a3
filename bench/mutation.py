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
emulator caught before the provenance check. docs/reliability.md has the figures.
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(BATCH))
    p.add_argument("--per-kind", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kinds", default=",".join(mutate.KINDS))
    p.add_argument("--without-provenance", action="store_true",
                   help="also run each mutant with its expectations removed")
    p.add_argument("--json", help="also write every outcome as JSON")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    outcomes: list[mutate.Outcome] = []
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
            outcomes.append(o)
            rows.append({"model": name, "kind": m.kind, "where": m.where, "verdict": o.verdict,
                         "by": o.by, "changes": o.changes, "message": o.message,
                         "without_provenance": o.without_provenance})
            if o.verdict in ("missed", "crashed"):
                print(f"  {o.verdict.upper()}: {m.kind} {m.where}: {o.by} {o.message[:300]}", flush=True)
    seconds = time.perf_counter() - start
    print()
    columns = ["provenance", "race", "uninitialized_read", "deadlock", "checker", "identical",
               "missed", "crashed", "changed", "changed caught"]
    if args.without_provenance:
        columns.append("missed w/o prov.")
    print(f"{'kind':18}{'mutants':>8}" + "".join(f"{c:>{max(len(c) + 2, 8)}}" for c in columns))
    total: Counter[str] = Counter()
    for kind in kinds:
        mine = [o for o in outcomes if o.mutant.kind == kind]
        c: Counter[str] = Counter()
        for o in mine:
            if o.verdict == "caught":
                c["checker" if o.by.startswith("checker:") or o.by == "emulator" else o.by] += 1
            else:
                c[o.verdict] += 1
            c["changed"] += o.changes
            c["changed caught"] += o.changes and o.verdict == "caught"
            c["missed w/o prov."] += o.changes and o.without_provenance in ("missed", "identical")
        c["mutants"] = len(mine)
        total.update(c)
        print(f"{kind:18}{len(mine):8}" + "".join(f"{c[col]:>{max(len(col) + 2, 8)}}" for col in columns))
    print(f"{'total':18}{total['mutants']:8}" + "".join(f"{total[col]:>{max(len(col) + 2, 8)}}" for col in columns))
    changed = total["changed"]
    print(f"\n{changed} mutants change the results; {total['changed caught']} caught "
          f"({100 * total['changed caught'] / max(changed, 1):.1f}%), {total['missed']} missed, "
          f"{total['crashed']} crashed; {seconds:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if total["missed"] or total["crashed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
