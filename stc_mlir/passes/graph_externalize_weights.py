"""graph-externalize-weights: move large constants into a side-car weight file.

A real model's weights printed inline are tens of megabytes of hex; this pass writes every
`graph.constant` with more than `threshold` elements into one binary file (64-byte aligned
records, identical contents once: `stc_mlir.weights.WeightWriter`) and replaces its value by
`#graph.extern<"file", offset, nbytes>`, so the printed IR stays readable and loads back
with its weights. Constants already in another weight file move too, so the IR and the new
file are self-contained. The file name is recorded without its directory: keep the weight
file next to the IR file (that is where readers look first).

Printing does the same without changing the module while a writer is active (`stc-opt -o`,
`--dump-ir`; see `stc_mlir.weights`); this pass is for a module that should keep its
weights outside from now on (what `stc-import -o` writes).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.passes import ModulePass

from stc_mlir import weights
from stc_mlir.dialects import graph as g


@dataclass(frozen=True)
class GraphExternalizeWeights(ModulePass):
    name = "graph-externalize-weights"

    file: str = "weights.bin"
    """Where to write the weights."""

    threshold: int = 16
    """Constants with more elements than this move to the file."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        constants = [
            c for c in op.walk()
            if isinstance(c, g.ConstantOp)
            and (isinstance(c.value, g.ExternAttr)  # from another weight file: the output must not need it
                 or isinstance(c.value, DenseIntOrFPElementsAttr) and len(c.value) > self.threshold)
        ]
        if not constants:
            return
        writer = weights.WeightWriter(self.file)
        for c in constants:
            data = c.numpy().tobytes()
            c.properties["value"] = g.ExternAttr(writer.name, writer.put(data), len(data))
        writer.close()
