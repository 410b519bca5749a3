"""`.stcobj` files: a compiled npu program ready to run, no compiler needed to load it.

An `.stcobj` is a zip archive holding
  - `manifest.json`: format name and version, the target, the buffers (space, core, size,
    offset), semaphores, model inputs/outputs (name, DDR buffer, shape, dtype) and the
    command stream of every core (see `stc_mlir.isa.program.to_manifest`);
  - `data/<buffer>.bin`: the raw bytes of each constant DDR buffer (weights), stored
    uncompressed.
`save` then `load` gives back an equal `Program`.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any

from stc_mlir.errors import StcError
from stc_mlir.isa.program import Program, from_manifest, to_manifest

FORMAT = "stcobj"
VERSION = 1


class StcobjError(StcError, ValueError):
    """A file that is not a readable `.stcobj`."""


def save(program: Program | Any, path: str | os.PathLike[str]) -> None:
    """Write `program` (a `Program` or a module holding an `npu.program`) to `path`."""
    if not isinstance(program, Program):
        from stc_mlir.dialects.npu import program_from_module  # the op holds the Program: no conversion

        program = program_from_module(program)
    manifest, blobs = to_manifest(program)
    manifest = {"format": FORMAT, "version": VERSION, **manifest}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest), compress_type=zipfile.ZIP_DEFLATED)
        for name, data in blobs.items():
            zf.writestr(f"data/{name}.bin", data, compress_type=zipfile.ZIP_STORED)


def load(path: str | os.PathLike[str]) -> Program:
    """The `Program` stored in the `.stcobj` at `path`."""
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read("manifest.json"))
            if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
                raise StcobjError(f"{path}: not a version {VERSION} {FORMAT} file")
            blobs = {b["name"]: zf.read(f"data/{b['name']}.bin")
                     for b in manifest["buffers"] if b["init_dtype"] is not None}
    except (OSError, zipfile.BadZipFile, KeyError, json.JSONDecodeError) as err:
        raise StcobjError(f"{path}: cannot read .stcobj: {err}") from None
    return from_manifest(manifest, blobs)
