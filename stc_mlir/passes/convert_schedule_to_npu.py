"""convert-schedule-to-npu: schedule-level IR to an npu program (buffers not yet placed).

The scheduled function is replaced by an `npu.program` of the same name: per-core command
streams with their semaphores, `npu.input` / `npu.output` DDR buffers named as the model's
inputs and outputs, weights as constant DDR buffers, and every buffer without an offset
but with the phase range it is live in (`npu.live`; `npu.phases` on the program names the
schedule item of each phase) for npu-allocate. The work is done on plain data by
`stc_mlir.passes.lowering.lower` (see docs/lowering.md); an item or op it cannot lower is
a diagnostic naming the item, the op and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from stc_mlir.isa.program import program_to_module
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import annotate


def lowered_module(lowered) -> ModuleOp:
    """A module holding the lowered program, with live ranges and phase names."""
    module = program_to_module(lowered.program)
    annotate(module, lowered.live, lowered.phase_items)
    return module


@dataclass(frozen=True)
class ConvertScheduleToNpu(ModulePass):
    """Lower the scheduled function (`function`, default main) for `target`."""

    name = "convert-schedule-to-npu"

    target: str = "stcp920"
    function: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lowered = lower(op, self.target, self.function or None)
        name = lowered.program.name
        program = lowered_module(lowered).body.block.first_op
        assert program is not None
        program.detach()
        old = next(f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)
        Rewriter.replace_op(old, program)
