"""convert-schedule-to-npu: schedule-level IR to an npu program (buffers not yet placed).

The scheduled function is replaced by an `npu.program` of the same name: per-core command
streams with their semaphores, `npu.input` / `npu.output` DDR buffers named as the model's
inputs and outputs, weights as constant DDR buffers, and every buffer without an offset
but with the phase range it is live in (`Buffer.live`, printed as `npu.live`; the program's
`phases`, printed as `npu.phases`, name the schedule item of each phase) for npu-allocate.
The work is done on plain data by `stc_mlir.passes.lowering.lower` (see docs/lowering.md),
and its `Program` becomes the op's payload as it is; an item or op it cannot lower is a
diagnostic naming the item, the op and why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from stc_mlir.dialects.npu import ProgramOp
from stc_mlir.isa.program import Program
from stc_mlir.passes.lowering import lower


def lowered_program(lowered) -> Program:
    """The lowered program with its buffers' live ranges and the phase names."""
    program = lowered.program
    buffers = {name: replace(b, live=tuple(lowered.live[name])) if name in lowered.live else b
               for name, b in program.buffers.items()}
    return replace(program, buffers=buffers, phases=tuple(lowered.phase_items))


@dataclass(frozen=True)
class ConvertScheduleToNpu(ModulePass):
    """Lower the scheduled function (`function`, default main) for `target`; `prefetch`:
    a phase's first weights loaded under the previous phase's compute (lowering/prefetch.py);
    `narrow_barriers`: barriers wait only for the cores involved (lowering/barriers.py);
    `fuse_elementwise`: a streamed group's chains of elementwise ops in one stage
    (lowering/vector.py, ChainRule); `stage_weights`: big weights of DDR-bound items
    copied to LLB under earlier items' compute (lowering/staging.py)."""

    name = "convert-schedule-to-npu"

    target: str = "stcp920"
    function: str = ""
    prefetch: bool = True
    narrow_barriers: bool = True
    fuse_elementwise: bool = True
    stage_weights: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lowered = lower(op, self.target, self.function or None, prefetch=self.prefetch,
                        narrow_barriers=self.narrow_barriers,
                        fuse_elementwise=self.fuse_elementwise,
                        stage_weights=self.stage_weights)
        name = lowered.program.name
        old = next(f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == name)
        Rewriter.replace_op(old, ProgramOp(lowered_program(lowered)))
