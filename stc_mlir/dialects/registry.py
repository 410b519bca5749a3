"""stc-mlir's dialects by name, loaded on first use (tool start-up stays fast)."""

from collections.abc import Callable

from xdsl.ir import Dialect


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
