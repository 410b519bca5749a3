"""Emulator speed: a ~1 GFLOP convolution spread over 8 cores against plain numpy.

    python bench/emulator_conv.py [--repeat 7] [--threads 1] [--no-hazards] [--trace t.json]

The program (stc_mlir.emulator.examples.conv_by_rows) splits a 3x3 conv, 96 -> 96 channels on
80 x 80 (1.06 GFLOP), over the 8 cores by rows: each core loads its rows, exchanges halo rows
with its neighbours over the NoC, loads the weights into its weight buffer, convolves (with
bias and relu fused) and stores its rows. The reference is `stc_mlir.kernels.conv2d` on the
whole tensor. Both are timed alternately in the same process and the ratio of the medians is
reported (target: the emulator, hazard checks on, within 2x of numpy).

BLAS runs with `--threads` threads on both sides (default 1: on a shared machine, OpenBLAS
threads waiting for a busy core swamp small matrix products; 0: the BLAS default, one per
CPU). The emulator sets its threads itself (`run(threads=...)`, see docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1,
                    help="BLAS threads of the numpy conv and threads computing the emulator's values "
                         "(its BLAS stays single-threaded; 0: BLAS default, one per core)")
    ap.add_argument("--no-hazards", action="store_true", help="run without hazard checks")
    ap.add_argument("--trace", help="write a Chrome trace of one run to this path")
    ap.add_argument("--channels", type=int, default=96)
    ap.add_argument("--size", type=int, default=80, help="height = width (multiple of 8)")
    args = ap.parse_args(argv)
    if args.threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(args.threads)
    if "numpy" in sys.modules and args.threads:
        print("warning: numpy was imported before the BLAS thread count was set", file=sys.stderr)

    import numpy as np

    from stc_mlir import kernels
    from stc_mlir.emulator import run
    from stc_mlir.emulator.examples import conv_by_rows

    c, hw = args.channels, args.size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float16)
    w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float16)
    b = rng.standard_normal(c).astype(np.float16)
    program = conv_by_rows(x.shape, w, b, cores=8, act="relu", name="bench_conv")
    gflop = 2 * c * c * 9 * hw * hw / 1e9
    check = not args.no_hazards

    def numpy_conv():
        return kernels.unary("relu", kernels.conv2d(x, w, b, pads=(1, 1, 1, 1))).astype(np.float16)

    def emulate():
        return run(program, {"x": x}, check_hazards=check, threads=args.threads or os.cpu_count())

    want, (out, report) = numpy_conv(), emulate()  # warm-up, and the check
    diff = np.abs(out["y"].astype(np.float32) - want.astype(np.float32))
    assert diff.max() <= 1e-2, f"emulator and numpy disagree by {diff.max()}"
    t_np, t_emu = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        numpy_conv()
        t1 = time.perf_counter()
        emulate()
        t2 = time.perf_counter()
        t_np.append(t1 - t0)
        t_emu.append(t2 - t1)
    if args.trace:
        run(program, {"x": x}, trace=args.trace, check_hazards=check, threads=args.threads or os.cpu_count())

    med_np, med_emu = statistics.median(t_np), statistics.median(t_emu)
    ratio = med_emu / med_np
    print(report.table())
    print()
    print(f"conv 1x{c}x{hw}x{hw}, 3x3, {c} out channels: {gflop:.2f} GFLOP, "
          f"{report.commands} commands on 8 cores; threads: {args.threads or 'default'}; "
          f"hazard checks: {'on' if check else 'off'}; {args.repeat} runs each")
    print(f"numpy    median {1e3 * med_np:8.1f} ms  (min {1e3 * min(t_np):.1f})")
    print(f"emulator median {1e3 * med_emu:8.1f} ms  (min {1e3 * min(t_emu):.1f})")
    print(f"ratio emulator / numpy: {ratio:.2f}x (target <= 2x)  "
          f"[max |emulator - numpy| = {diff.max():.3g}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
