"""Lowering schedule-level IR to an npu program (the `convert-schedule-to-npu` pass).

    lowered = lower(module)            # -> Lowered(program, live, phase_items)
    program = allocate(lowered)        # stc_mlir.passes.npu_allocate: offsets assigned

`lower` works on plain data (`stc_mlir.isa.program.Program`), so compiling a big model
builds no IR it does not need; the passes wrap it for stc-opt. See docs/lowering.md.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.gc_pause import gc_paused
from stc_mlir.passes.schedule_verify import is_scheduled

from .emitter import Lowered
from .items import FunctionLowering
from .placement import LoweringError


def lower(module: ModuleOp, target: str | targets.Target = "stcp920",
          function: str | None = None, *, prefetch: bool = True,
          narrow_barriers: bool = True, fuse_elementwise: bool = True,
          stage_weights: bool = True) -> Lowered:
    """Lower the scheduled function (`function`, else `main`, else the only scheduled one);
    `prefetch`: weights of a phase loaded under the previous one's compute (prefetch.py);
    `narrow_barriers`: barriers wait only for the cores involved (barriers.py);
    `fuse_elementwise`: a streamed group's chains of elementwise ops computed in one stage
    (vector.ChainRule); `stage_weights`: big weights of DDR-bound items copied to LLB
    under earlier items' compute (staging.py)."""
    t = target if isinstance(target, targets.Target) else targets.load(target)
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    scheduled = [f for f in funcs if is_scheduled(f) or _nothing_to_schedule(f)]
    wanted = function or ("main" if any(f.sym_name.data == "main" for f in scheduled) else None)
    chosen = [f for f in scheduled if wanted is None or f.sym_name.data == wanted]
    if len(chosen) != 1:
        names = ", ".join("@" + f.sym_name.data for f in scheduled) or "none"
        raise LoweringError(f"convert-schedule-to-npu: expected one scheduled function"
                            f"{' @' + wanted if wanted else ''}, found {names}: schedule the "
                            "graph first (e.g. the default schedule)")
    with gc_paused(long_lived=True):  # the program lives on (stc_mlir.gc_pause)
        return FunctionLowering(chosen[0], t, _reference(t), prefetch, narrow_barriers,
                                fuse_elementwise, stage_weights).run()


def _nothing_to_schedule(f: func.FuncOp) -> bool:
    """A function returning only its arguments and constants (an Identity-only model):
    its program just copies them to the outputs."""
    return not f.is_declaration and all(isinstance(op, (g.ConstantOp, func.ReturnOp))
                                        for op in f.body.block.ops)


def _reference(t: targets.Target) -> str:
    """How the program names its target: the built-in name, else the file's path."""
    try:
        if targets.load(t.name).path == t.path:
            return t.name
    except targets.TargetError:
        pass
    return t.path


__all__ = ["Lowered", "LoweringError", "lower"]
