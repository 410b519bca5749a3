"""ONNX conformance: ONNX's own node test cases run by ONNX's backend test runner.

    python bench/conformance.py                    # the table's operators, graph level + emulator
    python bench/conformance.py --level graph      # graph level only (fast)
    python bench/conformance.py --ops Resize,TopK --failures   # list each failure and why
    python bench/conformance.py --extra            # the operators beyond the table too

Graph level is `stc_mlir.onnx_backend.Backend` (import at float32 + the reference
interpreter); end to end is `EmulatorBackend` (float16, default schedule, the emulator), run
on every case, so a case the lowering cannot compile counts as an end-to-end failure.
Tolerances are the runner's (each case's rtol/atol, default 1e-3 / 1e-7) at graph level and
1e-2 for both in float16. Prints pass counts per operator and per family.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import unittest
import warnings
from collections import Counter, defaultdict

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from stc_mlir import onnx_backend  # noqa: E402

FP16_TOLERANCE = 1e-2


def _reason(text: str) -> str:
    """The last line of a traceback: the exception and its message, shortened."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if not line.startswith((" ", "\t")):
            return line[:300]
    return lines[-1][:300] if lines else "?"


def run_level(backend, cases: dict[str, str], tolerance: float | None) -> dict[str, str | None]:
    """{case: None if it passed, else the reason} for one backend."""
    runner = onnx_backend.backend_test(backend, list(cases), tolerance=tolerance)
    suite = runner.test_suite
    outcome: dict[str, str | None] = {}
    tests = []

    def flatten(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                flatten(t)
            else:
                tests.append(t)
    flatten(suite)
    start = time.perf_counter()
    tests = [t for t in tests if t.id().rsplit(".", 1)[-1].removesuffix("_cpu") in cases]
    for i, test in enumerate(tests, 1):
        name = test.id().rsplit(".", 1)[-1].removesuffix("_cpu")
        result = unittest.TestResult()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            test.run(result)
        problems = result.failures + result.errors
        if problems:
            outcome[name] = _reason(problems[0][1])
        elif result.skipped:
            outcome[name] = "skipped: " + result.skipped[0][1]
        else:
            outcome[name] = None
        if i % 50 == 0:
            print(f"  {backend.__name__}: {i}/{len(tests)} cases, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--level", choices=("graph", "emulator", "both"), default="both")
    parser.add_argument("--ops", help="comma-separated ONNX operators (default: the table's)")
    parser.add_argument("--extra", action="store_true", help="the operators beyond the table too")
    parser.add_argument("--failures", action="store_true", help="list every failing case and its reason")
    args = parser.parse_args()

    families = dict(onnx_backend.TABLE_OPERATORS)
    if args.extra:
        families["beyond the table"] = onnx_backend.EXTRA_OPERATORS
    if args.ops:
        wanted = set(args.ops.split(","))
        families = {f: tuple(o for o in ops if o in wanted) for f, ops in families.items()}
        families = {f: ops for f, ops in families.items() if ops}
    ops = [op for f in families.values() for op in f]
    cases = onnx_backend.node_cases(ops)
    print(f"{len(cases)} ONNX node test cases for {len(ops)} operators", file=sys.stderr)

    levels = []
    if args.level in ("graph", "both"):
        levels.append(("graph", run_level(onnx_backend.Backend, cases, None)))
    if args.level in ("emulator", "both"):
        levels.append(("emulator", run_level(onnx_backend.EmulatorBackend, cases, FP16_TOLERANCE)))

    total = Counter()
    per_op = defaultdict(Counter)
    for name, op in cases.items():
        per_op[op]["cases"] += 1
        for level, outcome in levels:
            per_op[op][level] += outcome.get(name, "not run") is None
    header = f"{'family':16} {'operator':20} {'cases':>5}" + "".join(f" {lv:>9}" for lv, _ in levels)
    print(header)
    print("-" * len(header))
    for family, family_ops in families.items():
        fam = Counter()
        for op in family_ops:
            c = per_op[op]
            fam.update(c)
            print(f"{family:16} {op:20} {c['cases']:5}" + "".join(f" {c[lv]:9}" for lv, _ in levels))
        print(f"{family + ' total':37} {fam['cases']:5}" + "".join(f" {fam[lv]:9}" for lv, _ in levels))
        total.update(fam)
    print("-" * len(header))
    print(f"{'all':37} {total['cases']:5}" + "".join(
        f" {total[lv]:4} {100 * total[lv] / max(total['cases'], 1):3.0f}%" for lv, _ in levels))
    if args.failures:
        for level, outcome in levels:
            failing = {n: r for n, r in outcome.items() if r is not None}
            print(f"\n{level}: {len(failing)} failing cases")
            for name in sorted(failing):
                print(f"  {name} ({cases.get(name)}): {failing[name]}")


if __name__ == "__main__":
    main()
