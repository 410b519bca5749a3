"""The compiler's passes by kebab-case name, loaded on first use.

The pipeline looks `required_pass` names up here; `stc_mlir.universe` adds the pipeline
itself (`stc-compile`) for stc-opt, so that nothing here depends on the pipeline.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


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
    "convert-schedule-to-npu": _convert_schedule_to_npu,
    "npu-allocate": _npu_allocate,
    # -- more passes register here --
}
