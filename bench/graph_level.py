"""Graph level on the full-size built-in models: import time, reference interpreter vs onnxruntime.

    python bench/graph_level.py [--models resnet50,bert-base] [--batch N]

For each model: build, import (fp32 and fp16) and interpreter wall times next to
onnxruntime's on the same inputs (same run, so the ratio is meaningful on a noisy machine),
cosine / max relative error against onnxruntime, and the same after graph-canonicalize +
graph-fuse-conv-add-relu.
"""

from __future__ import annotations

import argparse
import time

from xdsl.context import Context

from stc_mlir import compare, models, reference
from stc_mlir.frontend import import_onnx
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize
from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(models.names()))
    p.add_argument("--batch", type=int, default=1)
    args = p.parse_args()
    print(f"{'model':12} {'dtype':8} {'import s':>9} {'interp s':>9} {'ort s':>7} {'cosine':>10} {'max rel':>9} {'passes cos':>11}")
    for name in args.models.split(","):
        model, t_build = timed(models.build, name, batch=args.batch)
        inputs = models.example_inputs(name, model)
        golden, t_ort = timed(compare.onnxruntime_outputs, model, inputs)
        for dtype in ("float32", "float16"):
            module, t_import = timed(import_onnx, model, dtype=dtype)
            outputs, t_run = timed(reference.run, module, inputs)
            GraphCanonicalize().apply(Context(), module)
            GraphFuseConvAddRelu().apply(Context(), module)
            after = reference.run(module, inputs)
            cos = min(compare.cosine(a, b) for a, b in zip(golden, outputs))
            rel = max(compare.max_relative_error(a, b) for a, b in zip(golden, outputs))
            cos_after = min(compare.cosine(a, b) for a, b in zip(golden, after))
            print(f"{name:12} {dtype:8} {t_import:9.2f} {t_run:9.2f} {t_ort:7.2f} {cos:10.7f} {rel:9.2e} {cos_after:11.7f}")
        print(f"{'':12} (build {t_build:.2f} s)")


if __name__ == "__main__":
    main()
