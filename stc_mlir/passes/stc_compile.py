"""stc-compile: the whole compile pipeline (`stc_mlir.pipeline`) as one pass for stc-opt."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from stc_mlir.pipeline import compile_module


@dataclass(frozen=True)
class StcCompile(ModulePass):
    """The whole pipeline as one pass:
    `stc-compile{schedule="stc_mlir.schedules:resnet50_schedule" batch=16 level=0}`.
    `schedule` is "default" (the default schedule, level 0) or "module:function" (quoted: it
    holds a colon); without `schedule` and `level`, the pipeline's default level (3, falling
    back to a lower level if it refuses the graph); `batch` 0 leaves the batch to the
    schedule function."""

    name = "stc-compile"

    schedule: str = ""
    batch: int = 0
    level: int | None = None
    target: str = "stcp920"
    required_pass: tuple[str, ...] = ()
    disabled_pass: tuple[str, ...] = ()
    dump_ir: str | None = None
    stop_after: str | None = None

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        compile_module(op, self.schedule, batch=self.batch or None, level=self.level,
                       required_pass=self.required_pass, disabled_pass=self.disabled_pass,
                       target=self.target, dump_ir=self.dump_ir, stop_after=self.stop_after)
