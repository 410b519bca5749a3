"""All of stc-mlir's dialects and passes, for stc-opt (and plain `xdsl-opt`, through the
`xdsl.universe` entry point). Nothing is imported until a dialect or pass is used.

The registries themselves are `stc_mlir.dialects.registry` and `stc_mlir.passes.registry`;
this module adds the whole pipeline as the pass `stc-compile`, so that neither the pipeline
nor `stc_mlir.ir` depends on it.
"""

from collections import ChainMap
from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.universe import Universe

from stc_mlir.dialects.registry import DIALECTS
from stc_mlir.passes import registry


def _stc_compile() -> type[ModulePass]:
    from stc_mlir.passes.stc_compile import StcCompile

    return StcCompile


PASSES: ChainMap[str, Callable[[], type[ModulePass]]] = ChainMap({"stc-compile": _stc_compile}, registry.PASSES)
"""stc-compile, then a live view of the registry (passes that plugins add there show here too)."""

STC_UNIVERSE = Universe(all_dialects=DIALECTS, all_passes=PASSES)

__all__ = ["DIALECTS", "PASSES", "STC_UNIVERSE"]
