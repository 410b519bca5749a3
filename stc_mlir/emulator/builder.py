"""Building npu programs by hand in Python (tests, benchmarks, experiments).

    b = ProgramBuilder("relu")
    x = b.input("x", (4, 64))                   # DDR buffer + model input, returns its tile
    y = b.output("y", (4, 64))
    t = b.buffer("t", "l1", core=0, size=512)
    s = b.semaphore("loaded", core=0)
    b.add(0, "dma", src=x, dst=tile(t, (4, 64)), signals=[s])
    ...
    program = b.build()                         # places buffers without an offset

`build()` places the buffers that have no offset one after another in their memory (64-byte
aligned), which is enough for hand-written programs; compiled programs get their offsets
from the compiler's allocator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from stc_mlir.isa.program import DTYPES, Buffer, Command, IOSpec, Program, Semaphore, Tile, command, tile

ALIGN = 64
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class ProgramBuilder:
    def __init__(self, name: str = "main", target: str = "stcp920"):
        self.program = Program(name=name, target=target)

    def buffer(
        self, name: str, space: str, size: int | None = None, core: int | None = None,
        offset: int | None = None, data: np.ndarray | None = None,
    ) -> str:
        """Declare a buffer; `data` gives a DDR buffer constant contents (and its size)."""
        if name in self.program.buffers:
            raise ValueError(f"buffer @{name} is declared twice")
        init = init_dtype = None
        if data is not None:
            arr = np.ascontiguousarray(data)
            init, init_dtype = arr.tobytes(), _DTYPE_NAMES[arr.dtype]
            size = arr.nbytes if size is None else size
        if size is None:
            raise ValueError(f"buffer @{name} needs a size")
        self.program.buffers[name] = Buffer(name, space, size, core, offset, init,
                                            init_dtype or "f16")
        return name

    def constant(self, name: str, value: np.ndarray) -> Tile:
        """A constant DDR tensor (weights); returns the tile covering it."""
        self.buffer(name, "ddr", data=value)
        return tile(name, value.shape, dtype=_DTYPE_NAMES[value.dtype])

    def _io(self, ios: list[IOSpec], name: str, shape: Iterable[int], dtype: str) -> Tile:
        shape = tuple(shape)
        t = tile(name, shape, dtype=dtype)
        self.buffer(name, "ddr", t.span)
        ios.append(IOSpec(name, name, shape, dtype))
        return t

    def input(self, name: str, shape: Iterable[int], dtype: str = "f16") -> Tile:
        """A model input in a DDR buffer of the same name; returns its tile."""
        return self._io(self.program.inputs, name, shape, dtype)

    def output(self, name: str, shape: Iterable[int], dtype: str = "f16") -> Tile:
        return self._io(self.program.outputs, name, shape, dtype)

    def semaphore(self, name: str, core: int = 0, init: int = 0) -> str:
        self.program.semaphores[name] = Semaphore(name, core, init)
        return name

    def add(self, core: int, op: str, waits: Iterable[str] = (), signals: Iterable[str] = (),
            **operands: Any) -> Command:
        """Append a command to `core`'s stream (operands: tiles and parameters by name)."""
        cmd = command(op, waits, signals, **operands)
        self.program.cores.setdefault(core, []).append(cmd)
        return cmd

    def build(self) -> Program:
        """The program, with unplaced buffers placed after the placed ones of their memory."""
        ends: dict[tuple[str, int | None], int] = {}
        for b in self.program.buffers.values():
            if b.offset is not None:
                key = b.memory
                ends[key] = max(ends.get(key, 0), b.offset + b.size)
        buffers = {}
        for name, b in self.program.buffers.items():
            if b.offset is None:
                key = b.memory
                offset = -(-ends.get(key, 0) // ALIGN) * ALIGN
                ends[key] = offset + b.size
                b = replace(b, offset=offset)
            buffers[name] = b
        return replace(self.program, buffers=buffers,
                       cores={c: list(s) for c, s in sorted(self.program.cores.items())})
