"""The Python NPU emulator: runs npu programs on an emulated STCP920 cluster.

    from stc_mlir.emulator import run, program_from_module
    outputs, report = run(program_from_module(module), {"x": x}, trace="trace.json")
    print(report.table()); report.as_dict()
    once = prepare(program, target)          # the set-up, for many runs of one program
    outputs, report = run(program, inputs, prepared=once)

It needs only the npu program (`program.Program`, from IR or a `.stcobj`) and the target
description; see docs/npu.md for the cycle model, the hazards and the report fields.
"""

from stc_mlir.isa.check import ProgramError, check_program
from .memory import EmulatorError, HazardError
from stc_mlir.isa.program import Buffer, Command, IOSpec, Program, Semaphore, Tile, command, tile
from .report import Report
from .simulator import Prepared, prepare, run

__all__ = [
    "Buffer", "Command", "EmulatorError", "HazardError", "IOSpec", "Prepared", "Program", "ProgramError",
    "Report", "Semaphore", "Tile", "check_program", "command", "prepare", "program_from_module",
    "program_to_module", "run", "tile",
]


def __getattr__(name: str):
    """`program_from_module` / `program_to_module` live with the npu dialect (they import
    xDSL, which running a program never needs)."""
    if name in ("program_from_module", "program_to_module"):
        from stc_mlir.dialects import npu

        return getattr(npu, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
