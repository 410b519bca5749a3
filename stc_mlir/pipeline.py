"""The compilation pipeline: a graph-level module in, an allocated `npu.program` out.

    compile_module(module, schedule=None, *, batch=None, level=None, required_pass=(), disabled_pass=())

runs, in place on `module`:

    graph-canonicalize, graph-fuse-conv-add-relu     graph level
    schedule                                         the manual schedule `schedule(mod, batch=...)`,
                                                     then the default for whatever it left out
    schedule-verify                                  capacities, with the numbers
    convert-schedule-to-npu, npu-allocate            per-core command streams, placed buffers

A module that is already at schedule level (an edited `.mlir`) starts at the schedule
stage, where the default schedule only fills in unplaced items. The same pipeline is the
pass `stc-compile{schedule="module:function" batch=16 level=0}` for stc-opt
(`stc_mlir.passes.stc_compile`).

`graph_schedule_level` (TensorTurbo's name) applies when no schedule function is given: 0 is
the default schedule, 1-3 automatic scheduling (`schedule-auto`, docs/auto-schedule.md).
Without a level and without a schedule function it is `DEFAULT_LEVEL` (3, as TensorTurbo's);
if that level refuses the graph, the next lower one is tried, with a note (`Pipeline.notes`).
A level given explicitly is honoured or refused; with a schedule function (or "default", the
default schedule) a level must not be given, except 0.
`required_pass` adds registered passes (kebab-case names, with options as in stc-opt:
`graph-externalize-weights{file="w.bin"}`) to the stage their prefix names (graph-,
schedule-, npu-); `disabled_pass` removes optional ones. TensorTurbo's `FuseConvAddBnRelu`
is accepted for `graph-fuse-conv-add-relu`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import os
from collections.abc import Callable, Iterable, Sequence

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from stc_mlir.errors import StcError
from stc_mlir.gc_pause import gc_paused
from stc_mlir.passes.registry import PASSES
from stc_mlir.progress import Progress, timed

GRAPH_PASSES = ("graph-canonicalize", "graph-fuse-conv-add-relu")
SCHEDULE = "schedule"
VERIFY = "schedule-verify"
LOWERING = ("convert-schedule-to-npu", "npu-allocate")
STAGES = (*GRAPH_PASSES, SCHEDULE, VERIFY, *LOWERING)
"""The pipeline's stages in order (`stop_after` names one)."""

ALIASES = {"FuseConvAddBnRelu": "graph-fuse-conv-add-relu"}
"""TensorTurbo pass names -> ours."""

LEVELS = (0, 1, 2, 3)
DEFAULT = "default"


class PipelineError(StcError):
    """A bad compile option (level, schedule, pass names) or input the pipeline cannot take."""


# ----------------------------------------------------------------------------- options


DEFAULT_LEVEL = 3
"""The graph_schedule_level used when neither a level nor a schedule function is given
(TensorTurbo's default; docs/auto-schedule.md: its search time and the decision cache)."""


def check_level(level: object) -> None:
    """Raise PipelineError unless `level` is a graph_schedule_level (0-3)."""
    if isinstance(level, bool) or not isinstance(level, int) or level not in LEVELS:
        raise PipelineError(f"graph_schedule_level must be 0, 1, 2 or 3, got {level!r}")


def resolve_schedule(schedule: object) -> Callable | None:
    """A schedule function from a callable, `"module:function"`, `"path/file.py:function"`,
    or None / `"default"` (the default schedule: returns None)."""
    if schedule is None or schedule == DEFAULT or schedule == "":
        return None
    if callable(schedule):
        return schedule
    if not isinstance(schedule, str):
        raise PipelineError(f"a schedule is a function or 'module:function', got {type(schedule).__name__}")
    module_name, sep, name = schedule.rpartition(":")
    if not sep or not module_name or not name.isidentifier():
        raise PipelineError(
            f"schedule '{schedule}' is not MODULE:FUNCTION (e.g. stc_mlir.schedules:resnet50_schedule, "
            f"my_schedules.py:my_schedule) or '{DEFAULT}'"
        )
    module = _import_schedule_module(module_name, schedule)
    fn = getattr(module, name, None)
    if fn is None:
        raise PipelineError(f"schedule '{schedule}': module '{module_name}' has no function '{name}'")
    if not callable(fn):
        raise PipelineError(f"schedule '{schedule}': '{name}' in '{module_name}' is not a function")
    return fn


def _import_schedule_module(module_name: str, spec_text: str):
    try:
        if module_name.endswith(".py"):
            if not os.path.isfile(module_name):
                raise PipelineError(f"schedule '{spec_text}': no such file '{module_name}'")
            stem = os.path.splitext(os.path.basename(module_name))[0]
            spec = importlib.util.spec_from_file_location(f"stc_user_schedule_{stem}", module_name)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(module_name)
    except PipelineError:
        raise
    except Exception as e:  # ImportError, or anything the user's module raises at import
        raise PipelineError(f"schedule '{spec_text}': cannot import '{module_name}': "
                            f"{type(e).__name__}: {e}") from None


def schedule_batch(schedule: Callable) -> int | None:
    """The batch a schedule function is written for (its `batch` default), if it says."""
    try:
        parameter = inspect.signature(schedule).parameters.get("batch")
    except (TypeError, ValueError):
        return None
    if parameter is None or not isinstance(parameter.default, int):
        return None
    return parameter.default


def _names(value: str | Iterable[str] | None, what: str) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    for item in items:
        if not isinstance(item, str):
            raise PipelineError(f"{what} must be a list of pass names, got {item!r}")
    return [item for item in items if item]


def _valid_passes() -> list[str]:
    return sorted({*PASSES, *LOWERING})


def _unknown(name: str, what: str) -> PipelineError:
    return PipelineError(f"{what}: unknown pass '{name}'; valid passes: {', '.join(_valid_passes())}")


def _parse_specs(value: str | Iterable[str] | None, what: str) -> list[ArgSpec]:
    specs = []
    for text in _names(value, what):
        try:
            parsed = list(parse_pipeline(text))
        except ArgSpecParseError as e:
            raise PipelineError(f"{what}: cannot parse '{text}': {e}") from None
        for spec in parsed:
            name = ALIASES.get(spec.name, spec.name)
            if name not in _valid_passes():
                raise _unknown(spec.name, what)
            specs.append(ArgSpec(name, spec.parameters))
    return specs


def _stage_of(name: str) -> str:
    """Where a required pass runs: after the graph passes, the schedule check or the lowering."""
    if name.startswith("graph-"):
        return "graph"
    if name.startswith("schedule-"):
        return "schedule"
    return "npu"


def _make_pass(spec: ArgSpec, target: str, what: str) -> ModulePass:
    cls = PASSES[spec.name]()
    params = dict(spec.parameters)
    if "target" not in params and any(f.name == "target" for f in dataclasses.fields(cls)):
        params["target"] = (target,)
    try:
        return cls.from_pass_spec(ArgSpec(spec.name, params))
    except Exception as e:  # xDSL raises ValueError / TypeError for bad options
        raise PipelineError(f"{what}: {spec.name}: {e}") from None


def _context() -> Context:
    from stc_mlir.ir import make_context

    return make_context()


def module_level(module: ModuleOp) -> str:
    """"graph", "schedule" or "npu": how far down the pipeline `module` is."""
    from stc_mlir.passes.schedule_verify import is_scheduled

    if any(op.name == "npu.program" for op in module.ops):
        return "npu"
    if any(isinstance(op, func.FuncOp) and is_scheduled(op) for op in module.ops):
        return "schedule"
    return "graph"


def apply_schedule(module: ModuleOp, schedule: Callable | None, batch: int | None,
                   target: str = "stcp920", level: int = DEFAULT_LEVEL, *, fallback: bool = False,
                   notes: list[str] | None = None) -> list:
    """The schedule stage: `schedule(mod, batch=batch)` (batch left to the function's own
    default when None), or automatic scheduling at `level` 1-3 on a graph-level module; then
    the default schedule for every item still unplaced. Returns the automatic scheduler's
    decisions (`stc_mlir.autoschedule.AutoSchedule`, one per function; empty for level 0).
    With `fallback`, a level that refuses the graph gives way to the next lower one (the
    module as it was before), each refusal appended to `notes`; the refusal is raised only
    when level 0 refuses too."""
    from stc_mlir.graph_schedule import IRModule
    from stc_mlir.schedules.default import default_schedule

    decided: list = []
    if schedule is None and level > 0 and module_level(module) == "graph":
        decided = _auto(module, level, target, fallback, notes if notes is not None else [])
    mod = IRModule(module)
    if schedule is not None:
        if batch is not None and _accepts_batch(schedule):
            schedule(mod, batch=batch)
        else:
            schedule(mod)
    try:
        default_schedule(mod, batch, target=target)
    except StcError as e:
        if not (fallback and notes):
            raise
        raise PipelineError(f"every graph_schedule_level refuses the graph: {'; '.join(notes)}; "
                            f"level 0: {e}") from None
    return decided


def _auto(module: ModuleOp, level: int, target: str, fallback: bool, notes: list[str]) -> list:
    """auto_schedule at `level`, else (with `fallback`) at the levels below it."""
    from stc_mlir.autoschedule import AutoScheduleError, UnsupportedGraph, auto_schedule
    from stc_mlir.passes.schedule_verify import ScheduleVerifyError

    for tried in range(level, 0, -1):
        snapshot = module.clone() if fallback else None
        try:
            return auto_schedule(module, tried, target)
        except (AutoScheduleError, ScheduleVerifyError) as e:
            if snapshot is None:
                raise PipelineError(f"graph_schedule_level {level}: {e} (a lower level may take the graph: "
                                    "--level / graph_schedule_level)") from None
            lower = tried > 1 and not isinstance(e, UnsupportedGraph)  # (no level lowers that graph)
            notes.append(f"graph_schedule_level {tried} refused the graph ({e}); "
                         f"{'trying level ' + str(tried - 1) if lower else 'using the default schedule (level 0)'}")
            module.body.detach_block(0)
            module.body.add_block(snapshot.body.detach_block(0))
            if not lower:
                break
    return []


def _accepts_batch(schedule: Callable) -> bool:
    try:
        return "batch" in inspect.signature(schedule).parameters
    except (TypeError, ValueError):
        return False


class Pipeline:
    """A checked set of compile options; `run(module)` compiles a module with them.

    Every option is checked when the pipeline is made, before any work on a model; see
    `compile_module` for their meaning."""

    def __init__(
        self,
        schedule: Callable | str | None = None,
        *,
        batch: int | None = None,
        level: int | None = None,
        required_pass: Sequence[str] | str = (),
        disabled_pass: Sequence[str] | str = (),
        target: str = "stcp920",
        progress: Progress | None = None,
        dump_ir: str | os.PathLike[str] | None = None,
        stop_after: str | None = None,
    ):
        self.level_given = level is not None
        """a level given explicitly is honoured or refused; the default one falls back"""
        if level is None:  # the default level, unless a schedule function (or "default") is named
            level = DEFAULT_LEVEL if schedule in (None, "") else 0
        check_level(level)
        if self.level_given and level != 0 and schedule not in (None, DEFAULT, ""):
            raise PipelineError(f"graph_schedule_level {level} applies only without a schedule function "
                                f"(TensorTurbo: 'only when schedule is None'); drop one of them")
        self.level = level
        """the level asked for (`level_used`: the one that made the schedule)"""
        self.level_used = level
        self.decided: list = []
        """after `run`: the automatic scheduler's decisions (levels 1-3)"""
        self.notes: list[str] = []
        """after `run`: why the default level gave way to a lower one, if it did"""
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise PipelineError(f"batch must be a positive integer, got {batch!r}")
        self.schedule = resolve_schedule(schedule)
        self.batch, self.target, self.progress, self.dump_ir = batch, target, progress, dump_ir
        required = _parse_specs(required_pass, "required_pass")
        disabled = [spec.name for spec in _parse_specs(disabled_pass, "disabled_pass")]
        if stop_after is not None and stop_after not in (*STAGES, *(spec.name for spec in required)):
            raise PipelineError(f"stop_after: unknown stage '{stop_after}'; stages: {', '.join(STAGES)} "
                                f"(or a required pass)")
        for name in disabled:
            if name in LOWERING:
                raise PipelineError(f"disabled_pass: '{name}' cannot be disabled: the pipeline needs it to "
                                    f"produce an npu program")
            if any(spec.name == name for spec in required):
                raise PipelineError(f"'{name}' is both in required_pass and in disabled_pass")
        extra = {stage: [spec for spec in required if _stage_of(spec.name) == stage
                         and spec.name not in (*GRAPH_PASSES, VERIFY, *LOWERING)]
                 for stage in ("graph", "schedule", "npu")}
        steps: list[tuple[str, ArgSpec | None]] = [
            *((name, ArgSpec(name, {})) for name in GRAPH_PASSES),
            *((spec.name, spec) for spec in extra["graph"]),
            (SCHEDULE, None),
            (VERIFY, ArgSpec(VERIFY, {})),
            *((spec.name, spec) for spec in extra["schedule"]),
            *((name, ArgSpec(name, {})) for name in LOWERING),
            *((spec.name, spec) for spec in extra["npu"]),
        ]
        self.stages: list[tuple[str, ModulePass | None]] = []
        """(name, pass); the schedule stage (and a pass not registered) has None"""
        for name, spec in steps:
            if name in disabled:
                continue
            if spec is not None and spec.name in PASSES:
                self.stages.append((name, _make_pass(spec, target, "required_pass")))
            else:  # the schedule stage, or a pipeline pass not registered (it fails when reached)
                self.stages.append((name, None))
            if name == stop_after:
                break

    def run(self, module: ModuleOp) -> ModuleOp:
        """Compile `module` (graph or schedule level) in place; returns it."""
        level = module_level(module)
        if level == "npu":
            raise PipelineError("the module is already an npu program: there is nothing to compile")
        if self.level_given and self.level != 0 and level == "schedule":
            raise PipelineError(f"the module is already scheduled: graph_schedule_level {self.level} applies to a "
                                "graph-level module")
        if self.schedule is not None and level == "schedule":
            raise PipelineError("the module is already scheduled: a schedule function applies to a "
                                "graph-level module (use the default schedule)")
        from stc_mlir.limits import check_module_fits  # a model beyond the DDR: refused before any work

        check_module_fits(module, self.target)
        stages = [(name, p) for name, p in self.stages if level == "graph" or name not in GRAPH_PASSES]
        dump = _Dumper(self.dump_ir, module) if self.dump_ir is not None else None
        ctx = _context()
        try:
            for name, p in stages:
                # (the lowering's plain-data program lives on: aged at once, stc_mlir.gc_pause;
                # the graph passes leave erased ops in reference cycles for the collector)
                with timed(self.progress, name), gc_paused(long_lived=name in LOWERING):
                    if p is not None:
                        p.apply(ctx, module)
                    elif name == SCHEDULE:
                        self.notes = []
                        self.decided = apply_schedule(module, self.schedule, self.batch, self.target,
                                                      self.level, fallback=not self.level_given,
                                                      notes=self.notes)
                        self.level_used = self.decided[0].level if self.decided else 0
                    else:
                        raise PipelineError(f"the pass '{name}' is not available: it is not registered in "
                                            "stc_mlir/passes/registry.py")
                if dump is not None:
                    dump(name, module)
        finally:
            if dump is not None:
                dump.close()
        return module


def compile_module(module: ModuleOp, schedule: Callable | str | None = None, *, batch: int | None = None,
                   level: int | None = None, required_pass: Sequence[str] | str = (),
                   disabled_pass: Sequence[str] | str = (), target: str = "stcp920",
                   progress: Progress | None = None, dump_ir: str | os.PathLike[str] | None = None,
                   stop_after: str | None = None) -> ModuleOp:
    """Compile `module` (graph or schedule level) in place down to an allocated npu program
    and return it.

    `schedule` is a function `schedule(mod, batch=...)`, `"module:function"` or
    `"file.py:function"`, or None / "default" for the default schedule; `batch` is handed to
    the schedule function (None: the function's own default, which it checks against the
    model). `level` is the graph_schedule_level (1-3: automatic scheduling, without a
    schedule function; None: `DEFAULT_LEVEL` without a schedule function, falling back to a
    lower level if it refuses the graph, else 0). `required_pass` / `disabled_pass` add or remove passes by name. `progress(stage, seconds or None)` is called around each
    stage. `dump_ir` is a directory that gets each stage's IR as `NN-stage.mlir` (weights in
    `weights.bin` beside them). `stop_after` ends after one of `STAGES`. Bad options raise
    `PipelineError` before any work is done."""
    return Pipeline(schedule, batch=batch, level=level, required_pass=required_pass,
                    disabled_pass=disabled_pass, target=target, progress=progress, dump_ir=dump_ir,
                    stop_after=stop_after).run(module)


class _Dumper:
    """Writes `00-input.mlir` then one file per stage into a directory; every stage's
    weights go to one `weights.bin` beside them (each distinct constant once), so the dumps
    stay small and load back with their weights."""

    def __init__(self, directory: str | os.PathLike[str], module: ModuleOp):
        from stc_mlir.weights import WeightWriter

        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.writer = WeightWriter(os.path.join(self.directory, "weights.bin"))
        self.count = 0
        self("input", module)

    def __call__(self, stage: str, module: ModuleOp) -> None:
        from stc_mlir.ir import print_module
        from stc_mlir.weights import writing_to

        with writing_to(self.writer), open(os.path.join(self.directory, f"{self.count:02d}-{stage}.mlir"), "w") as f:
            print_module(module, f)
        self.count += 1

    def close(self) -> None:
        """Put `weights.bin` in place (the dumps name it)."""
        self.writer.close()
