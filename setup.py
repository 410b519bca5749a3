"""Build of the optional C accelerators (everything else is in pyproject.toml).

`stc_mlir.emulator._f16` converts fp16 <-> fp32 with the x86 F16C instructions and computes
conv and matmul commands, on the caller's thread or on a pool of POSIX threads; it is
optional: if it cannot be built (no compiler, not x86), the install goes on and
`stc_mlir.emulator.halves` uses numpy's casts, which give the same bits.
`stc_mlir.emulator._loop` has helpers of the event loop in C; optional the same way
(`stc_mlir.emulator.native` has their Python versions).
`stc_mlir.passes.lowering._sync` walks the lowering's synchronisation (vector clocks) in C;
optional the same way (`stc_mlir.passes.lowering.sync` has the Python).
`stc_mlir.emulator._values` keeps the emulator's derived-value cache's index and does its
dense copies in C; optional the same way (`stc_mlir.emulator.tile_cache` has the Python).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("stc_mlir.emulator._f16", ["stc_mlir/emulator/_f16.c"],
                             optional=True),
                   # helpers of the event loop (`stc_mlir.emulator.native`), as optional
                   Extension("stc_mlir.emulator._loop", ["stc_mlir/emulator/_loop.c"],
                             optional=True),
                   # the lowering's synchronisation walk (`stc_mlir.passes.lowering.sync`)
                   Extension("stc_mlir.passes.lowering._sync", ["stc_mlir/passes/lowering/_sync.c"],
                             optional=True),
                   # the derived-value cache's bookkeeping (`stc_mlir.emulator.tile_cache`)
                   Extension("stc_mlir.emulator._values", ["stc_mlir/emulator/_values.c"],
                             optional=True)])
