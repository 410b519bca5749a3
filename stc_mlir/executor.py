"""Running a compiled model: TensorTurbo's Executor on the NPU emulator.

    executor = Executor.load_from_stcobj("resnet50.stcobj")
    executor.set_input({"data": images})
    outputs = executor()                    # list of numpy arrays, in the model's output order
    executor.report.as_dict()["cycles"]     # the emulator's report of that run

Loading and running needs neither xDSL nor the compiler (see `stc_mlir.stcobj`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from stc_mlir.errors import StcError
from stc_mlir.isa.program import DTYPES, IOSpec, Program


class ExecutorError(StcError):
    """Bad use of an Executor (an unknown input name...)."""


def io_info(specs: list[IOSpec]) -> dict[str, dict[str, object]]:
    """TensorTurbo's `{name: {"shape": [...], "dtype": "float16"}}` for program inputs or outputs."""
    return {io.name: {"shape": list(io.shape), "dtype": np.dtype(DTYPES[io.dtype]).name} for io in specs}


class Executor:
    """A compiled program, its inputs and, after a call, the emulator's report."""

    def __init__(self, program: Program, path: str | None = None):
        self.program = program
        self.path = path
        self.inputs: dict[str, np.ndarray] = {}
        self.report = None
        """The `stc_mlir.emulator.Report` of the last call (None before the first)."""
        self._preparations: dict[bool, object] = {}  # check_hazards -> the emulator's set-up

    def _prepared(self, check_hazards: bool):
        """The emulator's set-up of `program` (`emulator.prepare`), made at the first call
        and reused by the next ones, as an onnxruntime session is; None for a program the
        emulator refuses (the call then reports why)."""
        from stc_mlir import target as targets
        from stc_mlir.emulator import ProgramError, prepare

        made = self._preparations.get(check_hazards)
        if made is None or made.program is not self.program:  # type: ignore[attr-defined]
            try:
                made = prepare(self.program, targets.load(self.program.target), check_hazards)
            except ProgramError:
                return None
            self._preparations[check_hazards] = made
        return made

    @classmethod
    def load_from_stcobj(cls, path: str | os.PathLike[str]) -> Executor:
        from stc_mlir import stcobj

        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ExecutorError(f"cannot open '{path}': no such file")
        return cls(stcobj.load(path), path)

    def get_input_info(self) -> dict[str, dict[str, object]]:
        return io_info(self.program.inputs)

    def get_output_info(self) -> dict[str, dict[str, object]]:
        return io_info(self.program.outputs)

    def set_input(self, inputs: Mapping[str, object], *, allow_fp16_overflow: bool = False) -> None:
        """Set (some of) the model's inputs by name; arrays are cast to the program's dtypes.
        Values beyond fp16's range for an fp16 input are an error unless `allow_fp16_overflow`."""
        from stc_mlir import fp16_range

        names = [io.name for io in self.program.inputs]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise ExecutorError(f"unknown input(s) {', '.join(map(repr, unknown))}; "
                                f"the model's inputs are {', '.join(map(repr, names))}")
        arrays = {name: np.asarray(value) for name, value in inputs.items()}
        for name, a in arrays.items():
            if a.dtype.kind not in "biuf":
                raise ExecutorError(f"set_input: input '{name}' must hold numbers, got an array of {a.dtype}")
        fp16_range.check_arrays(arrays, [io.name for io in self.program.inputs if io.dtype == "f16"],
                                allow=allow_fp16_overflow, where="set_input")
        self.inputs.update(arrays)

    def __call__(self, trace: str | os.PathLike[str] | None = None, check_hazards: bool = True,
                 threads: int | None = None) -> list[np.ndarray]:
        """Run the program on the inputs set; returns its outputs in order. `trace` writes a
        Chrome trace of the run to that path; `threads` is the number of threads computing
        values, each with single-threaded BLAS, the outputs the same bits (default
        $STC_EMULATOR_THREADS, else 2 if a core is idle, else 1: see
        `stc_mlir.emulator.simulator.numerics_threads`)."""
        from stc_mlir.emulator import run

        self._check_inputs()
        outputs, self.report = run(self.program, self.inputs, trace=os.fspath(trace) if trace else None,
                                   check_hazards=check_hazards, threads=threads,
                                   prepared=self._prepared(check_hazards))
        return [outputs[io.name] for io in self.program.outputs]

    call = __call__

    def compare_all(self, scheduled, *, min_cosine: float | None = None, min_euclidean: float | None = None,
                    threads: int | None = None):
        """Run the inputs set on the emulator and on the reference interpreter and compare
        every graph op's result (docs/compare.md): `scheduled` is the schedule-level module
        the program was compiled from, or its `.mlir` file (`dump_ir`'s
        `NN-schedule-verify.mlir`). Returns a `stc_mlir.compare_all.Comparison`; sets `report`."""
        from stc_mlir import ir
        from stc_mlir.compare_all import MIN_COSINE, MIN_EUCLIDEAN, compare_program

        if isinstance(scheduled, str | os.PathLike):
            if not os.path.isfile(scheduled):
                raise ExecutorError(f"compare_all: cannot open '{os.fspath(scheduled)}': no such file")
            scheduled = ir.read_ir(os.fspath(scheduled))
        self._check_inputs()
        comparison = compare_program(
            scheduled, self.program, self.inputs, threads=threads,
            min_cosine=MIN_COSINE if min_cosine is None else min_cosine,
            min_euclidean=MIN_EUCLIDEAN if min_euclidean is None else min_euclidean)
        self.report = comparison.report
        return comparison

    def _check_inputs(self) -> None:
        missing = [io.name for io in self.program.inputs if io.name not in self.inputs]
        if missing:
            raise ExecutorError(f"input(s) {', '.join(map(repr, missing))} not set: call set_input first")

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"Executor(program '{self.program.name}'{where})"
