"""graph-externalize-weights: move large constants into a side-car weight file.

A real model's weights printed inline are tens of megabytes of hex; this pass writes every
`graph.constant` with more than `threshold` elements into one binary file (64-byte aligned
records) and replaces its value by `#graph.extern<"file", offset, nbytes>`, so the printed
IR stays readable and loads back with its weights. Constants already in another weight
file move too, so the IR and the new file are self-contained. The file name is recorded
without its directory: keep the weight file next to the IR file (that is where readers
look first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.passes import ModulePass

from stc_mlir.dialects import graph as g
from stc_mlir import weights

ALIGNMENT = 64


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
        directory = os.path.dirname(os.path.abspath(self.file))
        os.makedirs(directory, exist_ok=True)
        recorded = os.path.basename(self.file)
        blobs = [c.numpy().tobytes() for c in constants]  # read all first: some may live in self.file
        weights.forget(os.path.abspath(self.file))
        offset = 0
        with open(self.file, "wb") as out:
            for c, data in zip(constants, blobs):
                out.write(data)
                pad = -len(data) % ALIGNMENT
                out.write(b"\0" * pad)
                c.properties["value"] = g.ExternAttr(recorded, offset, len(data))
                offset += len(data) + pad
        weights.add_search_dir(directory)
        weights.forget(os.path.abspath(self.file))
