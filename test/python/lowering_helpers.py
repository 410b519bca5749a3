"""Helpers of the lowering tests: build small graph functions in Python, schedule them,
lower, allocate and emulate, and compare with the reference interpreter."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Region, SSAValue

from stc_mlir import reference
from stc_mlir.dialects import graph as g
from stc_mlir.emulator import run
from stc_mlir.graph_schedule import ListItems, NPUMemScope, Schedule, ScheduleInfo
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate

RNG = np.random.default_rng(2024)


def f16(*shape, scale=1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


class Builder:
    """Appends graph ops to a function body: `b(Op.make(...))` returns the result."""

    def __init__(self, block: Block):
        self.block = block

    def __call__(self, op):
        self.block.add_op(op)
        return op.results[0] if len(op.results) == 1 else list(op.results)

    def const(self, array: np.ndarray) -> SSAValue:
        return self(g.ConstantOp.from_numpy(np.asarray(array)))


def function(inputs: Mapping[str, tuple[tuple[int, ...], object]],
             body: Callable[..., SSAValue | list[SSAValue]]) -> ModuleOp:
    """`@main(inputs...)` whose body `body(builder, *args)` builds; returns its result(s)."""
    types = [g.tensor(shape, g.element_type_of(dtype)) for shape, dtype in inputs.values()]
    block = Block(arg_types=types)
    for arg, name in zip(block.args, inputs):
        arg.name_hint = name
    results = body(Builder(block), *block.args)
    results = results if isinstance(results, list) else [results]
    block.add_op(func.ReturnOp(*results))
    f = func.FuncOp("main", (types, [r.type for r in results]), Region(block),
                    arg_attrs=ArrayAttr([DictionaryAttr({"graph.name": StringAttr(n)}) for n in inputs]))
    module = ModuleOp([f])
    module.verify()
    return module


def default_schedule(module: ModuleOp, cores=range(8), scope=NPUMemScope.DDR) -> ModuleOp:
    """Every op its own item, its result in `scope`, spread over `cores` (one part)."""
    f = module.body.block.first_op
    Schedule([ScheduleInfo(op, scope, [list(cores)]) for op in ListItems(f)], verify=False)(module)
    return module


def ulps(got: np.ndarray, want: np.ndarray) -> int:
    """The largest distance in fp16 units in the last place, ignoring elements within one
    ulp of the largest result of each other (sums that cancel to near zero differ in many
    of their own tiny ulps when fp32 adds the same terms in another order)."""
    a = np.asarray(got, np.float16).view(np.int16).astype(np.int32)
    b = np.asarray(want, np.float16).view(np.int16).astype(np.int32)
    a = np.where(a < 0, -32768 - a, a)
    b = np.where(b < 0, -32768 - b, b)
    diff = np.abs(a - b)
    scale = float(np.abs(np.asarray(want, np.float32)).max(initial=0.0))
    close = np.abs(np.asarray(got, np.float32) - np.asarray(want, np.float32)) <= scale * 2.0 ** -11
    diff = np.where(close, 0, diff)
    return int(diff.max()) if diff.size else 0


def lower_and_run(module: ModuleOp, inputs: Mapping[str, np.ndarray], max_ulps: int = 0):
    """Lower, allocate and emulate `module` (the emulator stops on any hazard); compare
    every output with the reference interpreter. Returns (outputs, report, program)."""
    want = reference.run(module, inputs)
    lowered = lower(module)
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    outputs, report = run(program, dict(inputs))
    assert not report.hazards
    for got, expected in zip(outputs.values(), want):
        assert got.shape == expected.shape
        if np.issubdtype(expected.dtype, np.floating):
            assert ulps(got, expected) <= max_ulps, f"{ulps(got, expected)} ulps apart"
        else:
            np.testing.assert_array_equal(got, expected)
    return outputs, report, program
