"""The model zoo: every built-in model (the seeds' supported-model list) and the `light`
zoo graphs shipped inside the `onnx` package, through each stage of the compiler.

    python bench/model_zoo.py [--size small|full] [--batch N] [--models a,b] [--light-only]
                              [--no-light] [--json out.json]

Per model: import (fp16; constants beyond fp16's range refused, as stc-run does), the
reference interpreter's cosine against onnxruntime, compile with the default schedule,
emulate (cosine against onnxruntime, cycles against the roofline). A stage that fails is
reported with its one-line diagnostic and the later stages that need it are skipped;
nothing stops the run. `--size full` is each model's real size
(slow: minutes per large model), `--size small` the tiny configurations the tests use.

The `light` graphs (onnx/backend/test/data/light: AlexNet, DenseNet-121, Inception v1/v2,
ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512) carry their weights as ConstantOfShape
fills of 0.02; they get the input ONNX's backend test runner gives them (arange / size: an
image in [0, 1), the `random=False` dummy data), at their own batch of 1. With the fills
most of them leave fp16's range whatever the input (each conv multiplies by 0.02 x its
fan-in): the row names the first op that overflows (`fp16_range.first_overflow`). Each
graph is run a second time as `NAME+random`, its fills replaced by seeded trained-like
weights (`light_random_weights`): the same architecture with numbers fp16 holds.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import warnings  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from stc_mlir import compare, fp16_range, models, reference  # noqa: E402
from stc_mlir.emulator import program_from_module, run  # noqa: E402
from stc_mlir.frontend import import_onnx  # noqa: E402
from stc_mlir.pipeline import Pipeline  # noqa: E402

LIGHT_DIRECTORY = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def light_models() -> list[str]:
    """Paths of the `light` zoo graphs of the installed onnx package."""
    return sorted(p for p in glob.glob(os.path.join(LIGHT_DIRECTORY, "light_*.onnx")))


def light_inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """The input ONNX's backend runner feeds a light model: arange(n) / n per float input."""
    initializers = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                      for d in value.type.tensor_type.shape.dim)
        size = int(np.prod(shape))
        feeds[value.name] = (np.arange(size).reshape(shape) / size).astype(np.float32)
    return feeds


# the fills a light graph's weights are made of, by the (op, input) that finally uses them
_UNIFORM_NEAR_ONE = {("BatchNormalization", 1), ("BatchNormalization", 4), ("Mul", 0), ("Mul", 1)}
_SMALL = {("BatchNormalization", 2), ("BatchNormalization", 3), ("Add", 0), ("Add", 1), ("Conv", 2),
          ("Gemm", 2)}


def light_random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A light graph with trained-like weights: every constant fill (ConstantOfShape of
    0.02) replaced by a seeded random initializer. Conv and Gemm weights are He-normal
    (std sqrt(2 / fan-in): activations keep their scale layer after layer, as trained
    weights do); BatchNorm scales and variances, and the scales of decomposed BatchNorms
    (Mul), uniform in [0.5, 1.5], except the scales of BatchNorms ending a residual branch
    (feeding an Add or Sum), in [0.1, 0.3] (else every block doubles the variance); biases, means and shifts normal with std 0.1. The same
    architecture, every op the compiler meets, but numbers fp16 can hold: with the fills
    every conv multiplies its input by 0.02 x its fan-in, far past fp16 within a few layers."""
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    known = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
    users: dict[str, list] = {}
    for node in graph.node:
        for i, t in enumerate(node.input):
            users.setdefault(t, []).append((node, i))

    def final_use(tensor: str):
        """(op, input index, Gemm's transB) past single-use Unsqueeze/Reshape/Squeeze."""
        while True:
            uses = users.get(tensor, [])
            if len(uses) != 1:
                return None
            node, i = uses[0]
            if node.op_type in ("Unsqueeze", "Reshape", "Squeeze") and i == 0:
                tensor = node.output[0]
                continue
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            residual = any(user.op_type in ("Add", "Sum") for user, _ in users.get(node.output[0], []))
            return node.op_type, i, trans_b, residual

    keep = []
    for node in graph.node:
        use = final_use(node.output[0]) if node.op_type == "ConstantOfShape" else None
        if use is None or node.input[0] not in known:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in known[node.input[0]])
        op, i, trans_b, residual = use
        if (op, i) == ("BatchNormalization", 1) and residual:
            value = rng.uniform(0.1, 0.3, shape)  # a residual branch adds a little to its input
        elif (op, i) in (("Conv", 1), ("Gemm", 1)):
            fan_in = int(np.prod(shape)) // shape[0] if op == "Conv" or trans_b else shape[0]
            value = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
        elif (op, i) in _UNIFORM_NEAR_ONE:
            value = rng.uniform(0.5, 1.5, shape)
        elif (op, i) in _SMALL:
            value = rng.normal(0.0, 0.1, shape)
        else:
            keep.append(node)
            continue
        graph.initializer.append(onnx.numpy_helper.from_array(value.astype(np.float32), node.output[0]))
        if out.ir_version < 4:  # (initializers must be graph inputs too before IR version 4)
            graph.input.append(onnx.helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT, shape))
    del graph.node[:]
    graph.node.extend(keep)
    return out


def largest_activation(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> float:
    """The largest |value| of any float tensor onnxruntime computes (fp32): above fp16_range.FP16_MAX
    the model cannot run in fp16 as it is."""
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    probe.graph.output.extend(onnx.ValueInfoProto(name=t) for n in probe.graph.node for t in n.output
                              if t and t not in known)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    values = session.run(None, inputs)
    return max((float(np.abs(v).max()) for v in values
                if isinstance(v, np.ndarray) and v.dtype == np.float32 and v.size), default=0.0)


def _error(e: BaseException) -> str:
    message = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {message}"[:300]


def _worst_cosine(golden: list[np.ndarray], outputs: list[np.ndarray]) -> float:
    return min(compare.cosine(want, got) for want, got in zip(golden, outputs, strict=True))


def evaluate(name: str, proto: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict:
    """One model through every stage; each stage's result or its failure."""
    row: dict = {"model": name}
    start = time.perf_counter()
    golden = compare.onnxruntime_outputs(proto, inputs)
    row["ort_s"] = time.perf_counter() - start
    row["largest_activation"] = largest_activation(proto, inputs)
    try:
        start = time.perf_counter()
        fp16_range.check_model(proto, name)  # as stc-run: no constant silently becomes inf
        module = import_onnx(proto)
        row["import_s"] = time.perf_counter() - start
    except Exception as e:  # a model the compiler cannot take yet: say why, go on
        row["import_error"] = _error(e)
        return row
    try:
        start = time.perf_counter()
        computed = reference.run(module, inputs)
        row["reference_cosine"] = _worst_cosine(golden, computed)
        row["reference_s"] = time.perf_counter() - start
        if not all(np.isfinite(np.asarray(v, np.float32)).all() for v in computed):
            found = fp16_range.first_overflow(module, inputs)  # say where, not just "nan"
            row["fp16_overflow"] = str(found) if found else "outputs are not finite"
    except Exception as e:
        row["reference_error"] = _error(e)
    try:
        start = time.perf_counter()
        program = program_from_module(Pipeline(None).run(module))
        row["compile_s"] = time.perf_counter() - start
    except Exception as e:
        row["compile_error"] = _error(e)
        return row
    try:
        start = time.perf_counter()
        outputs, report = run(program, inputs)
        row["emulate_s"] = time.perf_counter() - start
    except Exception as e:
        row["emulate_error"] = _error(e)
        return row
    by_name = dict(zip((o.name for o in proto.graph.output), golden))
    row["emulator_cosine"] = min(compare.cosine(by_name[k], v) for k, v in outputs.items())
    d = report.as_dict()
    row.update({k: d[k] for k in ("cycles", "roofline_cycles", "roofline_ratio", "mac_utilization")})
    return row


def _cell(row: dict, key: str, fmt: str) -> str:
    return "FAIL" if f"{key}_error" in row else ("-" if key not in row else format(row[key], fmt))


def print_row(row: dict) -> None:
    imported = "FAIL" if "import_error" in row else "yes"
    compiled = "-" if "import_error" in row else ("FAIL" if "compile_error" in row else "yes")
    cycles = f"{row['cycles']:,}" if "cycles" in row else "-"
    roofline = f"{row['roofline_ratio']:.2f}" if "roofline_ratio" in row else "-"
    print(f"{row['model']:24} {imported:>6} {_cell(row, 'reference_cosine', '.6f'):>9} {compiled:>8} "
          f"{_cell(row, 'emulator_cosine', '.6f'):>9} {cycles:>14} {roofline:>8}", flush=True)
    for stage in ("import", "reference", "compile", "emulate"):
        if f"{stage}_error" in row:
            print(f"{'':24}   {stage}: {row[f'{stage}_error']}", flush=True)
    if "fp16_overflow" in row:
        print(f"{'':24}   fp16 overflow: {row['fp16_overflow']}; onnxruntime's fp32 activations reach "
              f"{row['largest_activation']:.3g}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=("small", "full"), default="small")
    p.add_argument("--batch", type=int, default=2, help="batch of the built-in models (default 2)")
    p.add_argument("--models", default=",".join(models.names()), help="built-in models to run")
    p.add_argument("--no-light", action="store_true", help="leave out the onnx package's light graphs")
    p.add_argument("--light-only", action="store_true", help="only the onnx package's light graphs")
    p.add_argument("--light-weights", choices=("fill", "random", "both"), default="both",
                   help="the light graphs as shipped (constant fills: fp16 overflows), with seeded "
                        "random weights (light_random_weights), or both (default)")
    p.add_argument("--json", help="also write the rows as JSON")
    args = p.parse_args()
    # overflow warnings of fp16 casts would bury the table: the fp16-overflow line says it
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    print(f"{'model':24} {'import':>6} {'ref cos':>9} {'compiles':>8} {'emu cos':>9} {'cycles':>14} "
          f"{'/roofline':>8}", flush=True)
    rows = []
    if not args.light_only:
        for name in args.models.split(","):
            if name not in models.names():
                sys.exit(f"unknown model '{name}'; models: {', '.join(models.names())}")
            options = models.small_options(name) if args.size == "small" else {}
            proto = models.build(name, batch=args.batch, **options)
            row = {**evaluate(name, proto, models.example_inputs(name, proto)), "batch": args.batch,
                   "options": {k: str(v) for k, v in options.items()}}
            rows.append(row)
            print_row(row)
    if not args.no_light:
        for path in light_models():
            shipped = onnx.load(path)
            name = os.path.basename(path)[: -len(".onnx")]
            variants = {"fill": (name, shipped), "random": (name + "+random", None)}
            for kind in ("fill", "random") if args.light_weights == "both" else (args.light_weights,):
                label, proto = variants[kind]
                proto = proto or light_random_weights(shipped)
                row = {**evaluate(label, proto, light_inputs(proto)), "batch": 1, "weights": kind}
                rows.append(row)
                print_row(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
