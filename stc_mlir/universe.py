"""Lazy registries of stc-mlir's dialects and passes.

Tools import nothing until a dialect or pass is used, so start-up stays fast. Registered
as an `xdsl.universe` entry point too, so plain `xdsl-opt` sees our dialects and passes.
"""

from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe


def _graph() -> Dialect:
    from stc_mlir.dialects.graph import Graph

    return Graph


def _npu() -> Dialect:
    from stc_mlir.dialects.npu import Npu

    return Npu


def _schedule() -> Dialect:
    from stc_mlir.dialects.schedule import Schedule

    return Schedule


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "graph": _graph,
    "npu": _npu,
    "schedule": _schedule,
    # -- more dialects register here --
}


def _graph_canonicalize() -> type[ModulePass]:
    from stc_mlir.passes.graph_canonicalize import GraphCanonicalize

    return GraphCanonicalize


def _graph_fuse_conv_add_relu() -> type[ModulePass]:
    from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu

    return GraphFuseConvAddRelu


def _graph_externalize_weights() -> type[ModulePass]:
    from stc_mlir.passes.graph_externalize_weights import GraphExternalizeWeights

    return GraphExternalizeWeights


def _schedule_verify() -> type[ModulePass]:
    from stc_mlir.passes.schedule_verify import ScheduleVerify

    return ScheduleVerify


def _schedule_report() -> type[ModulePass]:
    from stc_mlir.passes.schedule_report import ScheduleReport

    return ScheduleReport


def _schedule_auto() -> type[ModulePass]:
    from stc_mlir.passes.schedule_auto import ScheduleAuto

    return ScheduleAuto


def _stc_compile() -> type[ModulePass]:
    from stc_mlir.pipeline import StcCompile

    return StcCompile


def _convert_schedule_to_npu() -> type[ModulePass]:
    from stc_mlir.passes.convert_schedule_to_npu import ConvertScheduleToNpu

    return ConvertScheduleToNpu


def _npu_allocate() -> type[ModulePass]:
    from stc_mlir.passes.npu_allocate import NpuAllocate

    return NpuAllocate


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "graph-canonicalize": _graph_canonicalize,
    "graph-fuse-conv-add-relu": _graph_fuse_conv_add_relu,
    "graph-externalize-weights": _graph_externalize_weights,
    "schedule-verify": _schedule_verify,
    "schedule-report": _schedule_report,
    "schedule-auto": _schedule_auto,
    "stc-compile": _stc_compile,
    "convert-schedule-to-npu": _convert_schedule_to_npu,
    "npu-allocate": _npu_allocate,
    # -- more passes register here --
}

STC_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES)
