"""stc-run: compile a model and run it on the NPU emulator, with a Vela-style report.

    stc-run                                   # the built-in default job (see DEFAULT_* below)
    stc-run resnet50 --batch 16               # a built-in model; batch 16 uses its manual schedule
    stc-run model.onnx --batch 4 --check      # compare with onnxruntime
    stc-run model.mlir                        # graph- or schedule-level IR (weights next to it)
    stc-run model.stcobj --trace t.json       # a compiled program
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stc_mlir import blas
from stc_mlir.progress import ConsoleProgress
from stc_mlir.progress import timed as _stage
from stc_mlir.tools.diagnostics import UserError, check_model_options, check_output_dir, check_output_file, run_cli
from stc_mlir.tools.stc_import import _parse_shape, list_models, parse_option

DEFAULT_MODEL = "resnet50"
DEFAULT_BATCH = 2
DEFAULT_OPTIONS = {"image_size": 32}
"""What `stc-run` without a MODEL runs: ResNet-50 on 32 x 32 images at batch 2, default level (3)."""

EPILOG = f"""\
MODEL is an .onnx file, an .mlir file (graph or schedule level, or an npu program; its
weight file is looked up next to it), an .stcobj, or a built-in model name (see
--list-models). Without MODEL, stc-run runs {DEFAULT_MODEL} at batch {DEFAULT_BATCH} with
{', '.join(f'{k}={v}' for k, v in DEFAULT_OPTIONS.items())} at the default graph_schedule_level.

Schedules: a built-in model whose batch is the one its manual schedule is written for
(resnet50 16, bert-base 8, deepfm 2560) runs that schedule, unless --schedule default is
given; a built-in model's batch defaults to that batch (1 if it has no manual schedule).
Anything else uses graph_schedule_level 3, the automatic search (its decision is cached
on disk: $STC_MLIR_CACHE_DIR, else ~/.cache/stc-mlir; if it refuses the graph, level 2, 1
then 0 are tried, with a note), or --level N, or --schedule default (the default schedule:
every result in DDR, each op over all 8 cores, as --level 0), or --schedule
MODULE:FUNCTION (also FILE.py:FUNCTION), called as function(mod, batch=N).

Exit status: 0, or 1 on an error (a one-line diagnostic) or when --check finds an output
below the cosine similarity threshold (0.999). Progress goes to stderr, the report to stdout.
The emulation computes values on --threads threads, each with single-threaded BLAS (the
same output bits; default $STC_EMULATOR_THREADS, else 2 if a core is idle, else 1); the rest
of stc-run runs BLAS single-threaded unless OPENBLAS_NUM_THREADS (OMP_, MKL_) is set.
"""


def _tolerance(text: str) -> tuple[float, float]:
    """--tolerance COS,EUCLID (TPU-MLIR's form): two numbers in (0, 1]."""
    try:
        cos, euclid = (float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected two numbers COS,EUCLID such as 0.999,0.99, got '{text}'") from None
    if not (0 < cos <= 1 and 0 < euclid <= 1):
        raise argparse.ArgumentTypeError(f"similarities are in (0, 1], got '{text}'")
    return cos, euclid


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, like every other stc-run diagnostic (not the usage)
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="stc-run", description="Compile a model for the STCP920 and run it on "
                                "the NPU emulator.", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", help="an .onnx, .mlir or .stcobj file, or a built-in model name")
    p.add_argument("--batch", type=int, help="batch size (axis 0 of every input)")
    p.add_argument("--level", type=int, metavar="0-3",
                   help="graph_schedule_level without a schedule function: 0 = default schedule, 1 = results "
                        "in LLB, 2 = in L1 where they fit, 3 = automatic search (the default; "
                        "docs/auto-schedule.md)")
    p.add_argument("--emit-schedule", metavar="FILE.py",
                   help="write the schedule found by --level 1-3 as a Python script (manual API); "
                        "compile it back with --schedule FILE.py:schedule")
    p.add_argument("--schedule", metavar="MODULE:FUNCTION",
                   help="a manual schedule function, or 'default' for the default schedule")
    p.add_argument("--check", action="store_true",
                   help="compare the outputs with onnxruntime (the reference interpreter for .mlir input)")
    compare = p.add_argument_group("per-tensor comparison (docs/compare.md)")
    compare.add_argument("--compare-all", action="store_true",
                         help="compare every graph op's result, reference interpreter vs emulator (cosine, "
                              "euclidean similarity, max abs error), naming the first op that diverges")
    compare.add_argument("--tolerance", metavar="COS,EUCLID", type=_tolerance,
                         help="the similarities a value must reach (default 0.999,0.99)")
    compare.add_argument("--scheduled", metavar="FILE.mlir",
                         help="for an .stcobj: the schedule-level IR it was compiled from (--dump-ir writes "
                              "it as NN-schedule-verify.mlir)")
    compare.add_argument("--dump-tensors", metavar="DIR",
                         help="write both sides' values to DIR/reference.npz and DIR/npu.npz")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (chrome://tracing, Perfetto)")
    p.add_argument("--timing-only", action="store_true",
                   help="emulate without computing values: the same report (cycles, bytes, hazards), faster")
    p.add_argument("--threads", type=int, metavar="N",
                   help="threads computing the emulation's values, each with single-threaded BLAS "
                        "(the same bits; default $STC_EMULATOR_THREADS, else 2 if a core is idle, else 1)")
    p.add_argument("--report-json", metavar="FILE",
                   help="write the emulator's report as JSON (with a row per schedule item and per graph op)")
    p.add_argument("--report-csv", metavar="FILE",
                   help="write the per-layer report as CSV: a row per schedule item, each followed by its "
                        "graph ops (cycles, busy/idle per core, MACs, bytes, peak memory, bound; docs/report.md)")
    p.add_argument("--plot", metavar="DIR",
                   help="write pictures of the run into DIR: timeline, utilisation over time, cores, summary, "
                        "and per schedule item cycles against its roofline and DDR bytes against its minimum")
    p.add_argument("--plot-format", choices=("png", "svg"), default="png", help="format of --plot (default png)")
    p.add_argument("--export-netron", metavar="FILE.onnx",
                   help="write the scheduled graph as ONNX for Netron (nodes carry group, sub-group, "
                        "mem_scope, core_bind)")
    p.add_argument("-o", "--output", metavar="OUT.stcobj", help="write the compiled program")
    p.add_argument("--shape", action="append", type=_parse_shape, default=[], metavar="NAME=DIMS",
                   help="fix an ONNX input's shape, e.g. data=16x3x224x224 (repeatable)")
    p.add_argument("--option", action="append", type=parse_option, default=[], metavar="NAME=VALUE",
                   help="an option of a built-in model, e.g. image_size=32, num_layers=1 (repeatable)")
    p.add_argument("--required-pass", action="append", default=[], metavar="PASS",
                   help="add a pass to the pipeline (repeatable)")
    p.add_argument("--load-pass-plugin", action="append", default=[], metavar="FILE.py",
                   help="register the xDSL ModulePasses defined in FILE.py, for --required-pass (repeatable)")
    p.add_argument("--disabled-pass", action="append", default=[], metavar="PASS",
                   help="leave a pass out of the pipeline (repeatable)")
    p.add_argument("--target", default="stcp920", help="target name or file (default stcp920)")
    p.add_argument("--dump-ir", metavar="DIR", help="write each compile stage's IR into DIR")
    p.add_argument("--allow-fp16-overflow", action="store_true",
                   help="go on (with a warning) when weights are beyond fp16's range (they become inf)")
    p.add_argument("--list-models", action="store_true", help="list the built-in models and exit")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress on stderr (stage times; on a terminal, live progress of long steps)")
    return p


@dataclass
class Job:
    """What to run: a program, its inputs, and how to get the golden outputs (if any)."""

    title: str
    program: object  # stc_mlir.isa.program.Program
    inputs: dict
    golden: Callable[[dict], dict] | None = None  # inputs -> {output name: array}
    golden_name: str = ""
    graph: Callable[[], object] | None = None  # the fp16 graph-level module again (diagnosing NaN)


def _kind(spec: str) -> str:
    for ext in ("stcobj", "mlir", "onnx"):
        if spec.endswith("." + ext):
            if os.path.isdir(spec):
                raise UserError(f"{spec}: is a directory, not an .{ext} file")
            if not os.path.isfile(spec):
                raise UserError(f"cannot open '{spec}': no such file")
            return ext
    from stc_mlir import models

    if spec in models.names():
        return "builtin"
    if os.path.isfile(spec):
        return "onnx"
    raise UserError(f"'{spec}' is neither a file (.onnx, .mlir, .stcobj) nor a built-in model "
                    f"({', '.join(models.names())})")


def _refuse(args, source: str, output: bool = False) -> None:
    """Compile options make no sense for an already compiled program (nor -o, unless `output`)."""
    given = [flag for flag, value in (
        ("--batch", args.batch), ("--level", args.level), ("--schedule", args.schedule),
        ("--emit-schedule", args.emit_schedule),
        ("-o", None if output else args.output), ("--shape", args.shape), ("--option", args.option),
        ("--required-pass", args.required_pass), ("--disabled-pass", args.disabled_pass),
        ("--dump-ir", args.dump_ir), ("--check", args.check or None),
        ("--export-netron", args.export_netron)) if value]
    if given:
        raise UserError(f"{given[0]} does not apply to {source}: it is already compiled")


def _pipeline(args, schedule, batch: int | None):
    from stc_mlir.pipeline import VERIFY, Pipeline

    named = schedule not in (None, "default") or (args.level is None and schedule is not None)
    if args.emit_schedule and (args.level == 0 or named):
        raise UserError("--emit-schedule writes the schedule found by --level 1-3 or the default level 3 "
                        "(without --schedule)")
    pipeline = Pipeline(schedule, batch=batch, level=args.level, required_pass=args.required_pass,
                        disabled_pass=args.disabled_pass, target=args.target, progress=args.progress,
                        dump_ir=args.dump_ir)
    if args.compare_all:  # the schedule-level module the program is lowered from
        from stc_mlir.compare_all import keep_scheduled

        args.keep = keep_scheduled().into(pipeline)
    if args.export_netron:  # the scheduled graph, right after it is verified
        from stc_mlir.viz.netron import ExportNetron

        after = next(i for i, (name, _) in enumerate(pipeline.stages) if name == VERIFY) + 1
        pipeline.stages.insert(after, (f"export-netron to {args.export_netron}", ExportNetron(args.export_netron)))
    return pipeline


def _emit_schedule(args, pipeline) -> None:
    """The default level's fallback notes, then --emit-schedule: the automatic schedule as a
    Python script."""
    for note in pipeline.notes:
        _note(args, note)
    if not args.emit_schedule:
        return
    if not pipeline.decided:
        raise UserError("--emit-schedule: the module was already scheduled; there is no automatic schedule to write")
    try:
        with open(args.emit_schedule, "w") as f:
            f.write(pipeline.decided[0].script(file=args.emit_schedule))
    except OSError as e:
        raise UserError(f"--emit-schedule: cannot write '{args.emit_schedule}': {e.strerror}") from None
    _note(args, f"wrote the level {pipeline.level_used} schedule to {args.emit_schedule}")


def _program(args, module):
    from stc_mlir import stcobj
    from stc_mlir.emulator import program_from_module

    program = program_from_module(module)
    if args.output:
        stcobj.save(program, args.output)
        _note(args, f"wrote {args.output}")
    return program


def _random_inputs(program) -> dict:
    from stc_mlir.compare import random_arrays
    from stc_mlir.isa.program import DTYPES

    return random_arrays({io.name: (io.shape, DTYPES[io.dtype]) for io in program.inputs})


def _onnx_golden(make_proto: Callable[[], object]) -> Callable[[dict], dict]:
    """onnxruntime's outputs by name (the model is made only if --check asks for them)."""

    def golden(inputs: dict) -> dict:
        from stc_mlir.compare import onnxruntime_outputs

        proto = make_proto()
        outputs = onnxruntime_outputs(proto, inputs)
        if outputs is None:
            raise UserError("--check needs onnxruntime: pip install onnxruntime")
        return dict(zip((o.name for o in proto.graph.output), outputs))

    return golden


def select_schedule(name: str, batch: int | None, spec: str | None) -> tuple[object, int]:
    """(schedule, batch) for a built-in model: --schedule if given, else the model's manual
    schedule when the batch is the one it is written for (the default batch), else None."""
    from stc_mlir.pipeline import schedule_batch
    from stc_mlir.schedules import SCHEDULES

    manual = SCHEDULES.get(name)
    manual_batch = schedule_batch(manual) if manual is not None else None
    if batch is None:
        batch = manual_batch or 1
    if spec is None and manual is not None and batch == manual_batch:
        return manual, batch
    return spec, batch


def _builtin_job(args, name: str) -> Job:
    from stc_mlir import fp16_range, models
    from stc_mlir.frontend import import_onnx

    if args.shape:
        raise UserError("--shape applies to ONNX files, not to a built-in model (use --batch, --option)")
    options = dict(args.option)
    check_model_options(name, options, models.options(name))
    batch = args.batch
    if args.model is None:
        options = {**DEFAULT_OPTIONS, **options}
        batch = DEFAULT_BATCH if batch is None else batch
    schedule, batch = select_schedule(name, batch, args.schedule if args.level is None else args.schedule or "default")
    pipeline = _pipeline(args, schedule, batch)
    if callable(schedule):
        _note(args, f"{name} at batch {batch}: using the built-in manual schedule {schedule.__name__} "
                    f"(--schedule default for the default one)")
    with _stage(args.progress, f"build and import {name}"):
        try:
            proto = models.build(name, batch=batch, **options)
        except (ValueError, TypeError) as e:
            raise UserError(f"--option: {e}") from None
        fp16_range.check_model(proto, name, allow=args.allow_fp16_overflow)
        module = import_onnx(proto)
    module = pipeline.run(module)
    _emit_schedule(args, pipeline)
    title = (f"{name} batch {batch}" + "".join(f" {k}={v}" for k, v in options.items())
             + f", {_schedule_name(pipeline)}")
    return Job(title, _program(args, module), models.example_inputs(name, proto), _onnx_golden(lambda: proto),
               "onnxruntime", lambda: import_onnx(proto))


def _schedule_name(pipeline) -> str:
    fn = pipeline.schedule
    if fn is not None:
        return f"schedule {getattr(fn, '__name__', fn)}"
    return f"graph_schedule_level {pipeline.level_used}" if pipeline.level_used else "default schedule"


def _onnx_job(args, path: str) -> Job:
    from stc_mlir.model import from_onnx

    if args.option:
        raise UserError("--option applies to built-in models, not to an ONNX file")
    pipeline = _pipeline(args, args.schedule, args.batch)
    with _stage(args.progress, f"import {path}"):
        model = from_onnx(path, shape=dict(args.shape) or None, allow_fp16_overflow=args.allow_fp16_overflow)
        module = model.graph_module(args.batch)
    module = pipeline.run(module)
    _emit_schedule(args, pipeline)
    program = _program(args, module)
    title = f"{path}, {_schedule_name(pipeline)}"
    return Job(title, program, _random_inputs(program), _onnx_golden(lambda: model.onnx_model(args.batch)),
               "onnxruntime", lambda: model.graph_module(args.batch))


def _mlir_job(args, path: str) -> Job:
    from stc_mlir import ir, reference
    from stc_mlir.dialects.schedule import batch_of
    from stc_mlir.pipeline import module_level

    if args.shape or args.option:
        raise UserError(f"{'--shape' if args.shape else '--option'} does not apply to IR: its shapes are fixed")
    with _stage(args.progress, f"parse {path}"):
        module = ir.read_ir(path)
    if module_level(module) == "npu":
        _refuse(args, f"{path} (an npu program)", output=True)
        program = _program(args, module)
        return Job(path, program, _random_inputs(program))
    f = reference.find_function(module)
    model_batch = batch_of(f.args[0].type) if f.args else None
    if args.batch is not None and args.batch != model_batch:
        raise UserError(f"{path} has batch {model_batch}; --batch {args.batch} cannot change it "
                        f"(import the model again with that batch)")
    pipeline = _pipeline(args, args.schedule, args.batch)
    source = module.clone() if args.check else None
    program = _program(args, pipeline.run(module))
    _emit_schedule(args, pipeline)

    def golden(inputs: dict) -> dict:
        from stc_mlir.limits import check_reference_fits

        assert source is not None
        check_reference_fits(source)
        return dict(zip(reference.output_names(f), reference.run(source, inputs)))

    return Job(f"{path}, {_schedule_name(pipeline)}", program, _random_inputs(program), golden,
               "the reference interpreter")


def _stcobj_job(args, path: str) -> Job:
    from stc_mlir import stcobj

    _refuse(args, path)
    program = stcobj.load(path)
    return Job(path, program, _random_inputs(program))


def _load_pass_plugins(files: list[str]) -> None:
    """Users' passes for --required-pass: installed packages' and --load-pass-plugin files'."""
    from stc_mlir import pass_plugins

    pass_plugins.register_installed()
    for path in files:
        pass_plugins.register_plugin_file(path)


def _report(job: Job, report) -> None:
    d = report.as_dict()
    ddr_ratio = d["ddr_bytes"] / d["min_ddr_bytes"] if d["min_ddr_bytes"] else 0.0
    print(report.table())
    print()
    print(f"summary: {job.title}")
    print(f"  cycles {d['cycles']:,} vs roofline {d['roofline_cycles']:,}: {d['roofline_ratio']:.2f}x")
    print(f"  DDR bytes {d['ddr_bytes']:,} vs minimum {d['min_ddr_bytes']:,}: {ddr_ratio:.2f}x")
    print(f"  peak L1 {d['peak_l1_bytes']:,} bytes per core, peak LLB {d['peak_llb_bytes']:,} bytes")
    print(f"  MAC utilisation {100 * d['mac_utilization']:.1f}%")


def _check(job: Job, outputs: dict, progress: ConsoleProgress) -> bool:
    from stc_mlir import compare

    with _stage(progress, f"golden outputs from {job.golden_name}"):
        assert job.golden is not None
        golden = job.golden(job.inputs)
    ok = True
    print(f"check vs {job.golden_name} (cosine similarity >= {compare.MIN_COSINE}):")
    for name, value in outputs.items():
        if name not in golden:
            raise UserError(f"--check: {job.golden_name} has no output '{name}'")
        cos = compare.cosine(golden[name], value)
        rel = compare.max_relative_error(golden[name], value)
        passed = cos >= compare.MIN_COSINE
        ok &= passed
        print(f"  {name}: cosine {cos:.6f}  max relative error {rel:.3g}  {'ok' if passed else 'FAIL'}")
    import numpy as np

    if job.graph is not None and not all(np.isfinite(np.asarray(v, np.float32)).all() for v in outputs.values()):
        from stc_mlir import fp16_range

        with _stage(progress, "find where the values leave fp16's range (reference interpreter)"):
            found = fp16_range.first_overflow(job.graph(), job.inputs)
        if found is not None:
            print(f"  fp16 overflow: {found}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    # the emulator and the model builders compute many small matrix products: BLAS threads
    # waiting for a busy core make them many times slower (set the variables to override)
    blas.single_threaded()
    args = build_parser().parse_args(argv)
    args.progress = ConsoleProgress("stc-run", quiet=args.quiet)

    def body() -> int:
        from stc_mlir.emulator import run

        if args.list_models:
            print(list_models())
            return 0
        if args.timing_only and args.check:
            raise UserError("--check compares output values, which --timing-only does not compute")
        if args.timing_only and args.compare_all:
            raise UserError("--compare-all compares values, which --timing-only does not compute")
        for flag, value in (("--dump-tensors", args.dump_tensors), ("--tolerance", args.tolerance),
                            ("--scheduled", args.scheduled)):
            if value and not args.compare_all:
                raise UserError(f"{flag} applies to --compare-all: add it")
        if args.threads is not None and args.threads < 1:
            raise UserError(f"--threads must be at least 1, got {args.threads}")
        check_output_file(args.output, "-o")
        check_output_file(args.report_json, "--report-json")
        check_output_file(args.report_csv, "--report-csv")
        check_output_file(args.trace, "--trace")
        check_output_dir(args.dump_ir, "--dump-ir")
        check_output_dir(args.dump_tensors, "--dump-tensors")
        from stc_mlir import target

        target.load(args.target)  # a bad --target is reported before any work
        spec = args.model if args.model is not None else DEFAULT_MODEL
        kind = _kind(spec)
        make = {"builtin": _builtin_job, "onnx": _onnx_job, "mlir": _mlir_job, "stcobj": _stcobj_job}[kind]
        _load_pass_plugins(args.load_pass_plugin)
        if args.compare_all and kind == "stcobj" and not args.scheduled:
            raise UserError(f"--compare-all needs the graph the program comes from: {spec} holds none; give "
                            "the schedule-level IR it was compiled from with --scheduled FILE.mlir (--dump-ir "
                            "writes it), or run the model itself (ONNX, built-in or .mlir)")
        if args.scheduled and kind != "stcobj":
            raise UserError(f"--scheduled applies to an .stcobj: {spec} is compiled here, its scheduled "
                            "graph is known")
        args.keep = None
        job = make(args, spec)
        comparison = None
        if args.compare_all:
            comparison = _compare_all(args, job)
            outputs, report = comparison.outputs, comparison.report
        else:
            with _stage(args.progress, "emulate"):
                outputs, report = run(job.program, job.inputs, trace=args.trace,
                                      numerics=not args.timing_only, threads=args.threads)
        _report(job, report)
        if args.report_json:
            with open(args.report_json, "w") as f:
                json.dump(report.as_dict(), f, indent=1)
        if args.report_csv:
            report.write_csv(args.report_csv)
            _note(args, f"per-layer report written to {args.report_csv}")
        if args.trace:
            _note(args, f"trace written to {args.trace}")
        if args.plot:
            from stc_mlir.viz.plots import items_of, write_plots

            with _stage(args.progress, f"plots into {args.plot}"):
                written = write_plots(report, args.plot, fmt=args.plot_format, items=items_of(report))
            _note(args, f"wrote {', '.join(p.name for p in written)} in {args.plot}")
        if comparison is not None:
            print()
            print(comparison.table())
            if args.dump_tensors:
                _note(args, f"wrote {' and '.join(comparison.save_npz(args.dump_tensors))}")
        if args.check and outputs is not None and not _check(job, outputs, args.progress):
            return 1
        return 0 if comparison is None or comparison.ok else 1

    return run_cli("stc-run", lambda: _showing_progress(args.progress, body))


def _compare_all(args, job: Job):
    """--compare-all: the emulation reads every graph value back and the reference
    interpreter computes them too (stc_mlir.compare_all)."""
    from stc_mlir.compare_all import MIN_COSINE, MIN_EUCLIDEAN, compare_program

    if args.scheduled:
        scheduled = _read_scheduled(args, args.scheduled)
    elif args.keep is not None and args.keep.module is not None:
        scheduled = args.keep.module
    else:
        raise UserError(f"--compare-all needs the graph the program comes from: {job.title} is an npu program")
    with _stage(args.progress, "emulate and compare every graph value with the reference interpreter"):
        cos, euclid = args.tolerance or (MIN_COSINE, MIN_EUCLIDEAN)
        return compare_program(scheduled, job.program, job.inputs, min_cosine=cos,
                               min_euclidean=euclid, threads=args.threads, trace=args.trace)


def _read_scheduled(args, path: str):
    """--scheduled FILE.mlir: a schedule-level module."""
    from stc_mlir import ir
    from stc_mlir.pipeline import module_level

    if not os.path.isfile(path):
        raise UserError(f"--scheduled: cannot open '{path}': no such file")
    with _stage(args.progress, f"parse {path}"):
        module = ir.read_ir(path)
    level = module_level(module)
    if level != "schedule":
        raise UserError(f"--scheduled {path}: expected schedule-level IR (the graph the program was lowered "
                        f"from), got {level}-level IR")
    return module


def _showing_progress(progress: ConsoleProgress, body: Callable[[], int]) -> int:
    """Run `body` with `progress` installed (live steps on a terminal), then stop it."""
    with progress:
        return body()


def _note(args, text: str) -> None:
    """An informational line on stderr (not with -q)."""
    if not args.quiet:
        print(f"stc-run: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
