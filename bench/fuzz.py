"""Differential fuzzer: random ONNX graphs under random schedules, compiled, emulated and
compared with the reference interpreter and onnxruntime (`stc_mlir.fuzz`).

    python bench/fuzz.py --seed 1 --cases 1000               # a run; failures -> fuzz-failures/
    python bench/fuzz.py --seed 1 --case 296                 # replay one case, with its traceback
    python bench/fuzz.py --seed 1 --case 296 --show          # ... and print its graph and schedule IR
    python bench/fuzz.py --seed 1 --cases 200 --json out.json --large 0   # small shapes only

Every case is drawn from (seed, case number) alone. Each failing case (a mismatch, or a
traceback from inside the compiler) is printed with its seed and number and written to
`--out/seed{S}-case{N}/` (model.onnx, inputs.npz, schedule.py, scheduled.mlir,
outcome.json). Refusals (a clean one-line error from the schedule API, the verifier, the
automatic scheduler, the lowering or the allocator) are counted by stage and reason.
Exit status 1 if any case failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict

from stc_mlir import blas  # noqa: E402

blas.single_threaded()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
    parser.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    parser.add_argument("--first", type=int, default=0, help="number of the first case (default 0)")
    parser.add_argument("--case", type=int, help="run only this case and show its outcome in full")
    parser.add_argument("--max-nodes", type=int, default=8, help="graph steps per case (default 8)")
    parser.add_argument("--large", type=float, default=0.05,
                        help="fraction of cases with a large first input, 0.1-1.2 MB (default 0.05)")
    parser.add_argument("--out", default="fuzz-failures", help="directory for reproducers (default fuzz-failures)")
    parser.add_argument("--json", help="write the summary and every non-ok outcome as JSON here")
    parser.add_argument("--show", action="store_true", help="with --case: print the graph and the schedule IR")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    args = parser.parse_args(argv)
    if args.cases < 1 or args.max_nodes < 1 or args.seed < 0 or args.first < 0 or not 0 <= args.large <= 1:
        parser.error("--cases, --max-nodes must be >= 1; --seed, --first >= 0; --large in [0, 1]")

    # level 3's decision cache goes to a scratch directory: random graphs would fill the user's
    os.environ.setdefault("STC_MLIR_CACHE_DIR", tempfile.mkdtemp(prefix="stc-fuzz-cache-"))
    from stc_mlir import fuzz
    from stc_mlir.progress import ConsoleProgress, steps

    if args.case is not None:
        return replay(fuzz, args)

    numbers = range(args.first, args.first + args.cases)
    outcomes = []
    with ConsoleProgress("fuzz", quiet=args.quiet), steps(f"seed {args.seed}: cases", args.cases) as advance:
        def progress(outcome):
            if outcome.status != "ok":
                outcomes.append(outcome)
            if outcome.failed:
                print(outcome.line(), file=sys.stderr)
            advance()

        summary = fuzz.run_cases(args.seed, numbers, args.out, args.max_nodes, progress, args.large)
    print(summary.table())
    if summary.failures:
        print(f"reproducers in {args.out}/; replay one with: python bench/fuzz.py --seed {args.seed} --case N "
              f"--large {args.large:g}")
    if args.json:
        with open(args.json, "w") as f:
            data = asdict(summary)
            data["failures"] = [o.line() for o in summary.failures]
            data["outcomes"] = [{k: v for k, v in asdict(o).items() if k not in ("scheduled_ir", "plan")}
                                for o in outcomes]
            json.dump(data, f, indent=1, default=str)
    return 1 if summary.failures else 0


def replay(fuzz, args) -> int:
    case = fuzz.make_case(args.seed, args.case, args.max_nodes, args.large)
    outcome = fuzz.run_case(case)
    print(outcome.line())
    print(f"graph: {outcome.graph}")
    if outcome.plan is not None:
        print(f"plan: {json.dumps(outcome.plan)}")
    if outcome.metrics:
        print("metrics: " + ", ".join(f"{k} {v:.6g}" for k, v in sorted(outcome.metrics.items())))
    if outcome.traceback:
        print(outcome.traceback, end="")
    if args.show:
        print(case.model.graph)
        print(outcome.scheduled_ir or "(not scheduled)")
    if outcome.failed:
        small = fuzz.shrink(case, outcome)
        if small is not outcome:
            print(f"shrunk plan: {json.dumps(small.plan)}")
        print(f"reproducer: {fuzz.write_reproducer(case, small, args.out)}")
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    sys.exit(main())
