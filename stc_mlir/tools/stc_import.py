"""stc-import: ONNX model (file or built-in name) -> graph dialect IR.

    stc-import MODEL.onnx [--shape NAME=16x3x224x224] [--dtype float16|float32] [-o OUT.mlir]
    stc-import resnet50 --batch 16 --run      # built-in model, run on the reference interpreter
    stc-import bert-base --option num_layers=2 --option seq_len=32
    stc-import --list-models                  # the built-in models, their options and defaults

Weights larger than a few elements go to a side-car file next to the output
(`OUT.weights.bin`, or `MODEL.weights.bin` in the working directory when printing to
stdout) so the IR stays readable; `--inline-weights` keeps them in the IR as hex.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from stc_mlir.tools.diagnostics import UserError, check_model_options, check_output_file, run_cli


def _parse_shape(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, [int(d) for d in dims.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=D0xD1x..., got '{text}'") from None


def parse_option(text: str) -> tuple[str, object]:
    """`NAME=VALUE` of a built-in model option; VALUE an int, true/false, or a string."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got '{text}'")
    if value.lower() in ("true", "false"):
        return name, value.lower() == "true"
    try:
        return name, int(value)
    except ValueError:
        return name, value


def list_models() -> str:
    """Every built-in model: what it is, its builder options with their defaults, and the
    batch its manual schedule is written for (what `--list-models` prints)."""
    from stc_mlir import models
    from stc_mlir.pipeline import schedule_batch
    from stc_mlir.schedules import SCHEDULES

    lines = ["built-in models (set an option with --option NAME=VALUE, the batch with --batch N):"]
    for name in models.names():
        lines.append(f"  {name:<14}{models.summary(name)}")
        options = ", ".join(f"{k}={v}" for k, v in models.options(name).items())
        lines.append(f"  {'':<14}options: {options or '(none)'}")
        manual = SCHEDULES.get(name)
        if manual is not None:
            lines.append(f"  {'':<14}manual schedule: {manual.__name__}, batch {schedule_batch(manual)}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stc-import", description="Import an ONNX model into the graph dialect.")
    p.add_argument("model", nargs="?", help="an .onnx file or a built-in model name (see --list-models)")
    p.add_argument("--shape", action="append", type=_parse_shape, default=[], metavar="NAME=DIMS",
                   help="fix an input's shape, e.g. data=16x3x224x224 (repeatable)")
    p.add_argument("--batch", type=int, default=1, help="batch size of a built-in model (default 1)")
    p.add_argument("--option", action="append", type=parse_option, default=[], metavar="NAME=VALUE",
                   help="an option of a built-in model, e.g. image_size=32 (repeatable; see --list-models)")
    p.add_argument("--dtype", choices=("float16", "float32"), default="float16",
                   help="storage type of float tensors (default float16)")
    p.add_argument("-o", "--output", help="write the IR here (default: stdout)")
    p.add_argument("--weights", help="side-car weight file (default: next to the output)")
    p.add_argument("--inline-weights", action="store_true", help="keep all weights inline as hex")
    p.add_argument("--run", action="store_true",
                   help="run the imported graph on the reference interpreter and compare with onnxruntime")
    p.add_argument("--list-models", action="store_true", help="list the built-in models and exit")
    p.add_argument("--allow-fp16-overflow", action="store_true",
                   help="go on (with a warning) when weights are beyond fp16's range (they become inf)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    return p


def load_model(spec: str, batch: int, options: dict | None = None):
    """An ONNX ModelProto and a short name from a file path or a built-in model name."""
    from stc_mlir import models

    if os.path.exists(spec) or spec.endswith(".onnx"):
        if options:
            raise UserError("--option applies to built-in models, not to an ONNX file")
        return spec, os.path.splitext(os.path.basename(spec))[0]
    if spec in models.names():
        if batch < 1:
            raise UserError(f"--batch must be >= 1, got {batch}")
        check_model_options(spec, options or {}, models.options(spec))
        try:
            return models.build(spec, batch=batch, **(options or {})), spec
        except (ValueError, TypeError) as e:
            raise UserError(f"--option: {e}") from None
    raise UserError(f"'{spec}' is neither an ONNX file nor a built-in model ({', '.join(models.names())})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.model is None and not args.list_models:
        parser.error("the following arguments are required: model (or --list-models)")

    def body() -> int:
        from stc_mlir.frontend import import_onnx
        from stc_mlir.ir import print_module

        check_output_file(args.output, "-o")
        check_output_file(args.weights, "--weights")
        if args.list_models:
            print(list_models())
            return 0
        model, stem = load_model(args.model, args.batch, dict(args.option))
        t0 = time.perf_counter()
        if args.dtype == "float16":
            from stc_mlir import fp16_range
            from stc_mlir.frontend.onnx_importer import load_model as read_onnx

            fp16_range.check_model(*read_onnx(model), allow=args.allow_fp16_overflow)
        module = import_onnx(model, shape=dict(args.shape) or None, dtype=args.dtype)
        n_ops = sum(1 for _ in module.walk()) - 3
        _note(args, f"imported {stem}: {n_ops} ops in {time.perf_counter() - t0:.2f} s")
        if args.output or not args.run:
            _write(module, args, stem, print_module)
        if args.run:
            return _run(model, module, args)
        return 0

    return run_cli("stc-import", body)


def _note(args, text: str) -> None:
    """A progress line on stderr (not with -q)."""
    if not args.quiet:
        print(f"stc-import: {text}", file=sys.stderr)


def _write(module, args, stem: str, print_module) -> None:
    if not args.inline_weights:
        from stc_mlir.passes.graph_externalize_weights import GraphExternalizeWeights

        base = os.path.splitext(args.output)[0] if args.output else stem
        path = args.weights or base + ".weights.bin"
        GraphExternalizeWeights(file=path).apply(None, module)  # type: ignore[arg-type]
        _note(args, f"weights written to {path}")
    if args.output:
        with open(args.output, "w") as f:
            print_module(module, f)
    else:
        print_module(module, sys.stdout)


def _run(model, module, args) -> int:
    """Interpret the module on example inputs; compare with onnxruntime when it is installed."""
    from stc_mlir import compare, models, reference
    from stc_mlir.frontend.onnx_importer import load_model as read_onnx

    proto, _ = read_onnx(model)
    f = reference.find_function(module)
    arg_shapes = {n: a.type for n, a in zip(reference.input_names(f), f.args)}
    if args.model in models.names():
        inputs = models.example_inputs(args.model, proto)
    else:
        inputs = compare.random_inputs(arg_shapes)
    t0 = time.perf_counter()
    outputs = reference.run(module, inputs)
    _note(args, f"reference interpreter: {time.perf_counter() - t0:.2f} s")
    golden = compare.onnxruntime_outputs(proto, inputs)
    names = reference.output_names(f)
    ok = True
    for name, out, ref in zip(names, outputs, golden or [None] * len(outputs)):
        line = f"  {name}: {'x'.join(map(str, out.shape))} {out.dtype}"
        if ref is not None:
            cos, rel = compare.cosine(ref, out), compare.max_relative_error(ref, out)
            ok &= cos >= compare.MIN_COSINE
            line += f"  cosine {cos:.6f}  max rel err {rel:.3g} vs onnxruntime"
        print(line)
    if golden is None:
        print("  (onnxruntime is not installed: no comparison)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
