"""`.stcobj` files: a compiled npu program ready to run, no compiler needed to load it.

An `.stcobj` is a zip archive holding
  - `manifest.json`: format name and version, the target, the buffers (space, core, size,
    offset), semaphores, model inputs/outputs (name, DDR buffer, shape, dtype) and the
    command stream of every core (see `stc_mlir.isa.program.to_manifest`);
  - `data/<buffer>.bin`: the raw bytes of each constant DDR buffer (weights), stored
    uncompressed.
`save` then `load` gives back an equal `Program`.

`load` trusts nothing in the file: `validate_manifest` checks every field's type and range
(format version 1, below) and every size against the target's memories before anything is
allocated, then `check_program` checks the program as the emulator would. Each refusal is
a `StcobjError` naming the file, the field (`buffers[3].size`) and the values.

Version 1 manifest (JSON):
  format "stcobj", version 1, name str, target str (a target name or path)
  buffers     [{name, space: l1|wb|llb|ddr, size > 0, core: int|null, offset: int >= 0|null,
                init_dtype: f16|f32|i32|i64|null,           (init_dtype: has data/<name>.bin)
                live: [first, last] phase (optional)}]
  phases      [str] (optional: the schedule item of each phase)
  probes      [{index, op, item, shape, dtype, pieces: [[tile, [start per dim]]],
                after: [[core, command index]], note (optional),
                region: [[lo, hi] per dim] (optional: the part a row stripe computes)}]
              (optional: where each graph value is complete, for compare-all)
  semaphores  [[name, core, init >= 0]]
  inputs, outputs [[name, buffer, shape: [int > 0], dtype]]
  cores       {"<core>": [[op, {slot: [buffer, offset, shape, strides, dtype]}, {param: value},
                          [wait semaphores], [signal semaphores]]]}
  origins     [[item, sub-group, graph op, phase >= -1]] (optional: what the commands lower,
              see `stc_mlir.isa.program.Origin`)
  command_origins {"<core>": [index into origins, or -1]} (optional: one per command of cores)
  expects     {"<core>": [null | {read slot: [[core, index] | [-1, -1] (host)]}]} (optional:
              per command, the writers each read expects; see `Command.expects`)
"""

from __future__ import annotations

import json
import math
import os
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

try:  # optional: a faster writer of the same JSON
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None  # type: ignore[assignment]

from stc_mlir.errors import StcError
from stc_mlir.gc_pause import gc_paused
from stc_mlir.isa.program import DTYPES, OPS, SPACES, Program, from_manifest, to_manifest

FORMAT = "stcobj"
VERSION = 1
MAX_MANIFEST_BYTES = 1 << 30
"""A manifest larger than this (1 GiB of JSON) is refused before it is read."""


class StcobjError(StcError, ValueError):
    """A file that is not a readable `.stcobj`."""


def save(program: Program | Any, path: str | os.PathLike[str]) -> None:
    """Write `program` (a `Program` or a module holding an `npu.program`) to `path`."""
    if not isinstance(program, Program):
        from stc_mlir.dialects.npu import program_from_module  # the op holds the Program: no conversion

        program = program_from_module(program)
    with gc_paused():  # a manifest is ~100k small lists: see stc_mlir.gc_pause
        manifest, blobs = to_manifest(program)
    manifest = {"format": FORMAT, "version": VERSION, **manifest}
    if os.path.isdir(path):
        raise StcobjError(f"{os.fspath(path)}: is a directory; give a file name such as model.stcobj")
    try:
        with zipfile.ZipFile(path, "w") as zf:
            # the fastest deflate level: the manifest of a ResNet-50 b16 is ~10 MB of JSON,
            # and level 6 took 3x as long for a file ~25% smaller
            zf.writestr(_member("manifest.json", zipfile.ZIP_DEFLATED), _dumps(manifest), compresslevel=1)
            for name, data in blobs.items():
                zf.writestr(_member(f"data/{name}.bin", zipfile.ZIP_STORED), data)
    except OSError as err:
        raise StcobjError(f"{os.fspath(path)}: cannot write: {err.strerror}") from None


def _member(name: str, compress_type: int) -> zipfile.ZipInfo:
    """A member dated 1980-01-01 (the zip format's first day), whenever it is written: the
    same program saves to the same bytes (reproducible builds, caches keyed by hash)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = compress_type
    info.external_attr = 0o644 << 16  # -rw-r--r-- when unzipped
    return info


def _dumps(manifest: Mapping[str, Any]) -> bytes:
    """Compact JSON of `manifest`: orjson when installed (5x faster on a ResNet-50's ~100k
    commands), else the standard library (the same JSON value). Non-finite parameters
    (a -inf score threshold) need the standard library: orjson writes them as null."""
    if orjson is not None and all(_finite(params) for stream in manifest["cores"].values()
                                  for _, _, params, _, _ in stream):
        try:
            return orjson.dumps(manifest)
        except TypeError:  # orjson.JSONEncodeError: e.g. an integer beyond 64 bits
            pass
    return json.dumps(manifest, separators=(",", ":"), check_circular=False).encode()


def _finite(params: Mapping[str, Any]) -> bool:
    for v in params.values():
        if type(v) is float:
            if not math.isfinite(v):
                return False
        elif isinstance(v, (list, tuple)) and not all(math.isfinite(x) for x in v if type(x) is float):
            return False
    return True


def load(path: str | os.PathLike[str], target: Any = None) -> Program:
    """The `Program` stored in the `.stcobj` at `path`, checked against `target` (by default
    the target the file names)."""
    from stc_mlir.isa.check import ProgramError, check_program

    where = os.fspath(path)
    if os.path.isdir(where):
        raise StcobjError(f"{where}: is a directory, not an .stcobj file")
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = _read_manifest(zf, where)
            tgt = _target(manifest, target, where)
            validate_manifest(manifest, tgt, where)
            blobs = _read_blobs(zf, manifest, where)
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as err:
        raise StcobjError(f"{where}: cannot read .stcobj: {err}") from None
    program = from_manifest(manifest, blobs)
    try:
        check_program(program, tgt, require_offsets=True)
    except ProgramError as err:
        raise StcobjError(f"{where}: {err}") from None
    return program


def _read_manifest(zf: zipfile.ZipFile, where: str) -> dict[str, Any]:
    try:
        info = zf.getinfo("manifest.json")
    except KeyError:
        raise StcobjError(f"{where}: not an .stcobj file: it has no manifest.json") from None
    if info.file_size > MAX_MANIFEST_BYTES:
        raise StcobjError(f"{where}: manifest.json is {info.file_size:,} bytes, more than the "
                          f"{MAX_MANIFEST_BYTES:,} allowed")
    try:
        manifest = json.loads(zf.read(info))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise StcobjError(f"{where}: manifest.json is not valid JSON: {err}") from None
    if not isinstance(manifest, dict):
        raise StcobjError(f"{where}: manifest.json must hold a JSON object, got {_kind(manifest)}")
    if manifest.get("format") != FORMAT:
        raise StcobjError(f"{where}: not a version {VERSION} {FORMAT} file (format {_show(manifest.get('format'))})")
    if manifest.get("version") != VERSION:
        raise StcobjError(f"{where}: not a version {VERSION} {FORMAT} file (version "
                          f"{_show(manifest.get('version'))}): recompile the model with this stc-mlir")
    return manifest


def _target(manifest: Mapping[str, Any], target: Any, where: str):
    from stc_mlir import target as targets

    name = manifest.get("target")
    if not isinstance(name, str) or not name:
        raise StcobjError(f"{where}: target: expected a target name, got {_show(name)}")
    try:
        return targets.load(target if target is not None else name)
    except targets.TargetError as err:
        raise StcobjError(f"{where}: target: {err}") from None


def _read_blobs(zf: zipfile.ZipFile, manifest: Mapping[str, Any], where: str) -> dict[str, bytes]:
    blobs = {}
    for i, b in enumerate(manifest["buffers"]):
        if b["init_dtype"] is None:
            continue
        member = f"data/{b['name']}.bin"
        try:
            info = zf.getinfo(member)
        except KeyError:
            raise StcobjError(f"{where}: buffers[{i}] (@{b['name']}) has constant data but the "
                              f"archive has no {member}") from None
        if info.file_size > b["size"]:
            raise StcobjError(f"{where}: {member} holds {info.file_size:,} bytes but buffer "
                              f"@{b['name']} has {b['size']:,}")
        blobs[b["name"]] = zf.read(info)
    return blobs


# ----------------------------------------------------------------------------- the schema


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _show(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, type(None))) else _kind(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    """Type and range checks of one manifest; `fail` names the field path."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, message: str):
        raise StcobjError(f"{self.where}: {field}: {message}")

    def get(self, obj: Mapping[str, Any], key: str, field: str) -> Any:
        if key not in obj:
            self.fail(field, f"missing field '{key}'")
        return obj[key]

    def string(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or not value:
            self.fail(field, f"expected a non-empty string, got {_show(value)}")
        return value

    def integer(self, value: Any, field: str, low: int | None = None, high: int | None = None) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(field, f"expected an integer, got {_show(value)}")
        if low is not None and value < low:
            self.fail(field, f"{value} is below the minimum {low}")
        if high is not None and value > high:
            self.fail(field, f"{value:,} is above the maximum {high:,}")
        return value

    def array(self, value: Any, field: str, length: int | None = None) -> list[Any]:
        if not isinstance(value, list):
            self.fail(field, f"expected a list, got {_show(value)}")
        if length is not None and len(value) != length:
            self.fail(field, f"expected {length} entries, got {len(value)}")
        return value

    def obj(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(field, f"expected an object, got {_show(value)}")
        return value

    def choice(self, value: Any, field: str, choices) -> str:
        if value not in choices or not isinstance(value, str):
            self.fail(field, f"{_show(value)} is not one of {', '.join(choices)}")
        return value

    def dims(self, value: Any, field: str, low: int) -> tuple[int, ...]:
        items = self.array(value, field)
        if len(items) > 8:
            self.fail(field, f"rank {len(items)} is above the maximum 8")
        return tuple(self.integer(d, f"{field}[{i}]", low) for i, d in enumerate(items))


def validate_manifest(manifest: Mapping[str, Any], target, where: str = "<manifest>") -> None:
    """Raise `StcobjError` unless `manifest` is a well-formed version-1 manifest whose sizes
    fit `target`'s memories (nothing is allocated before this passes)."""
    c = _Checker(where)
    c.string(c.get(manifest, "name", "name"), "name")
    buffers: dict[str, dict[str, Any]] = {}
    for i, b in enumerate(c.array(c.get(manifest, "buffers", "buffers"), "buffers")):
        field = f"buffers[{i}]"
        b = c.obj(b, field)
        name = c.string(c.get(b, "name", field), f"{field}.name")
        if name in buffers:
            c.fail(f"{field}.name", f"buffer @{name} is declared twice")
        space = c.choice(c.get(b, "space", field), f"{field}.space", SPACES)
        capacity = target.memory[space].size
        c.integer(c.get(b, "size", field), f"{field}.size", 1, capacity)
        core = c.get(b, "core", field)
        if core is not None:
            c.integer(core, f"{field}.core", 0, target.cores - 1)
        offset = c.get(b, "offset", field)
        if offset is not None:
            c.integer(offset, f"{field}.offset", 0, capacity - b["size"])
        dtype = c.get(b, "init_dtype", field)
        if dtype is not None:
            c.choice(dtype, f"{field}.init_dtype", tuple(DTYPES))
        if b.get("live") is not None:  # optional: the phases the buffer is used in
            first, last = c.array(b["live"], f"{field}.live", 2)
            c.integer(last, f"{field}.live[1]", c.integer(first, f"{field}.live[0]", 0))
        buffers[name] = b
    for i, phase in enumerate(c.array(manifest.get("phases", []), "phases")):  # optional
        c.string(phase, f"phases[{i}]")
    semaphores = set()
    for i, s in enumerate(c.array(c.get(manifest, "semaphores", "semaphores"), "semaphores")):
        field = f"semaphores[{i}]"
        name, core, init = c.array(s, field, 3)
        semaphores.add(c.string(name, f"{field}[0] (name)"))
        c.integer(core, f"{field}[1] (core)", 0, target.cores - 1)
        c.integer(init, f"{field}[2] (init)", 0)
    for kind in ("inputs", "outputs"):
        for i, io in enumerate(c.array(c.get(manifest, kind, kind), kind)):
            _io(c, f"{kind}[{i}]", io, buffers)
    cores = c.obj(c.get(manifest, "cores", "cores"), "cores")
    for key, stream in cores.items():
        if not key.isdigit() or int(key) >= target.cores:
            c.fail(f"cores[{key!r}]", f"core ids are 0..{target.cores - 1} ({target.name})")
        for j, cmd in enumerate(c.array(stream, f"cores[{key!r}]")):
            _command(c, f"cores[{key!r}][{j}]", cmd, buffers, semaphores)
    _origins(c, manifest, cores)
    if "expects" in manifest:  # optional: the writers each read expects
        _expects(c, manifest["expects"], cores)
    for i, probe in enumerate(c.array(manifest.get("probes", []), "probes")):  # optional
        _probe(c, f"probes[{i}]", probe, buffers, cores)


def _expects(c: _Checker, expects: Any, cores: Mapping[str, list[Any]]) -> None:
    """Shapes and ranges of `expects` (which writer commands exist and write the buffer read
    is `check_program`'s job, on the loaded program)."""
    for key, wanted in c.obj(expects, "expects").items():
        if key not in cores:
            c.fail(f"expects[{key!r}]", f"no core {key} in 'cores'")
        stream = cores[key]
        for j, want in enumerate(c.array(wanted, f"expects[{key!r}]", len(stream))):
            if want is None:
                continue
            field = f"expects[{key!r}][{j}]"
            spec = OPS[stream[j][0]]
            for slot, writers in c.obj(want, field).items():
                if slot not in spec.reads or slot not in stream[j][1]:
                    c.fail(field, f"npu.{spec.op} reads no operand '{slot}'")
                for i, w in enumerate(c.array(writers, f"{field}.{slot}")):
                    core, index = c.array(w, f"{field}.{slot}[{i}]", 2)
                    if [core, index] == [-1, -1]:
                        continue  # the host
                    if not isinstance(core, int) or str(core) not in cores:
                        c.fail(f"{field}.{slot}[{i}]", f"no core {_show(core)} in 'cores'")
                    c.integer(index, f"{field}.{slot}[{i}][1]", 0, len(cores[str(core)]) - 1)


def _origins(c: _Checker, manifest: Mapping[str, Any], cores: Mapping[str, Any]) -> None:
    """The optional `origins` table and `command_origins` (one index per command)."""
    origins = c.array(manifest.get("origins", []), "origins")
    for i, origin in enumerate(origins):
        item, subgroup, op, phase = c.array(origin, f"origins[{i}]", 4)
        c.string(item, f"origins[{i}][0] (item)")
        for k, (part, value) in enumerate((("sub-group", subgroup), ("op", op)), 1):
            if not isinstance(value, str):
                c.fail(f"origins[{i}][{k}] ({part})", f"expected a string, got {_show(value)}")
        c.integer(phase, f"origins[{i}][3] (phase)", -1)
    tags = c.obj(manifest.get("command_origins", {}), "command_origins")
    for key, indices in tags.items():
        field = f"command_origins[{key!r}]"
        if key not in cores:
            c.fail(field, f"there is no core {key} in cores")
        count = len(cores[key])
        if len(c.array(indices, field)) != count:
            c.fail(field, f"{len(indices)} origins for the {count} commands of core {key}")
        for j, index in enumerate(indices):
            c.integer(index, f"{field}[{j}]", -1, len(origins) - 1)


def _io(c: _Checker, field: str, io: Any, buffers: Mapping[str, Mapping[str, Any]]) -> None:
    name, buffer, shape, dtype = c.array(io, field, 4)
    c.string(name, f"{field}[0] (name)")
    if not isinstance(buffer, str) or buffer not in buffers:
        c.fail(f"{field}[1] (buffer)", f"unknown buffer {_show(buffer)}")
    dims = c.dims(shape, f"{field}[2] (shape)", 1)
    itemsize = DTYPES[c.choice(dtype, f"{field}[3] (dtype)", tuple(DTYPES))].itemsize
    size = buffers[buffer]["size"]
    if math.prod(dims) * itemsize > size:
        c.fail(f"{field}[2] (shape)", f"{'x'.join(map(str, dims))}x{dtype} needs "
               f"{math.prod(dims) * itemsize:,} bytes but buffer @{buffer} has {size:,}")


def _tile(c: _Checker, where: str, t: Any, buffers: Mapping[str, Mapping[str, Any]]) -> tuple[int, ...]:
    """Check a [buffer, offset, shape, strides, dtype] tile inside its buffer; its shape."""
    buffer, offset, shape, strides, dtype = c.array(t, where, 5)
    if not isinstance(buffer, str) or buffer not in buffers:
        c.fail(where, f"unknown buffer {_show(buffer)}")
    size = buffers[buffer]["size"]
    c.integer(offset, f"{where} offset", 0, size)
    dims = c.dims(shape, f"{where} shape", 1)
    steps = c.dims(strides, f"{where} strides", 0)
    if len(steps) != len(dims):
        c.fail(f"{where} strides", f"{len(steps)} strides for a rank-{len(dims)} shape")
    itemsize = DTYPES[c.choice(dtype, f"{where} dtype", tuple(DTYPES))].itemsize
    span = (sum((d - 1) * s for d, s in zip(dims, steps)) + 1) * itemsize
    if offset + span > size:
        c.fail(where, f"the tile reaches byte {offset + span:,} of buffer @{buffer}, which has {size:,}")
    return dims


def _probe(c: _Checker, field: str, p: Any, buffers: Mapping[str, Mapping[str, Any]],
           cores: Mapping[str, list[Any]]) -> None:
    """A probe (`stc_mlir.isa.program.Probe`): its pieces inside the value and their
    buffers, the commands it waits for in the streams."""
    p = c.obj(p, field)
    c.integer(c.get(p, "index", field), f"{field}.index", 0)
    c.string(c.get(p, "op", field), f"{field}.op")
    for key, value in (("item", c.get(p, "item", field)), ("note", p.get("note", ""))):
        if not isinstance(value, str):
            c.fail(f"{field}.{key}", f"expected a string, got {_show(value)}")
    shape = c.dims(c.get(p, "shape", field), f"{field}.shape", 0)
    dtype = c.choice(c.get(p, "dtype", field), f"{field}.dtype", tuple(DTYPES))
    for i, piece in enumerate(c.array(c.get(p, "pieces", field), f"{field}.pieces")):
        where = f"{field}.pieces[{i}]"
        tile, at = c.array(piece, where, 2)
        dims = _tile(c, f"{where}[0]", tile, buffers)
        start = c.dims(at, f"{where}[1]", 0)
        if tile[4] != dtype or len(dims) != len(shape) or len(start) != len(shape) or any(
                a + d > n for a, d, n in zip(start, dims, shape)):
            c.fail(where, f"a {'x'.join(map(str, dims))}x{tile[4]} tile at {list(start)} does not fit the "
                          f"{'x'.join(map(str, shape))}x{dtype} value")
    region = c.array(p.get("region", []), f"{field}.region")
    if region and (len(region) != len(shape) or any(
            not (isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r)
                 and 0 <= r[0] < r[1] <= n) for r, n in zip(region, shape))):
        c.fail(f"{field}.region", f"{_show(region)} is not a box of the "
                                  f"{'x'.join(map(str, shape))} value")
    for i, after in enumerate(c.array(c.get(p, "after", field), f"{field}.after")):
        core, index = c.array(after, f"{field}.after[{i}]", 2)
        stream = cores.get(str(core)) if isinstance(core, int) else None
        if stream is None:
            c.fail(f"{field}.after[{i}]", f"core {_show(core)} has no command stream")
        c.integer(index, f"{field}.after[{i}][1]", 0, len(stream) - 1)


def _command(c: _Checker, field: str, cmd: Any, buffers: Mapping[str, Mapping[str, Any]],
             semaphores: set[str]) -> None:
    op, tiles, params, waits, signals = c.array(cmd, field, 5)
    spec = OPS[c.choice(op, f"{field}[0] (op)", tuple(OPS))]
    for slot, t in c.obj(tiles, f"{field}[1] (tiles)").items():
        where = f"{field}[1].{slot}"
        if slot not in spec.ins + spec.optional + spec.outs:
            c.fail(where, f"npu.{op} has no operand '{slot}'")
        _tile(c, where, t, buffers)
    for slot in spec.ins + spec.outs:
        if slot not in tiles:
            c.fail(f"{field}[1] (tiles)", f"npu.{op} needs a tile for '{slot}'")
    try:
        spec.fill(c.obj(params, f"{field}[2] (params)"))
    except (ValueError, TypeError) as err:
        c.fail(f"{field}[2] (params)", str(err))
    for k, names in (("3] (waits", waits), ("4] (signals", signals)):
        for s in c.array(names, f"{field}[{k})"):
            if not isinstance(s, str) or s not in semaphores:
                c.fail(f"{field}[{k})", f"unknown semaphore {_show(s)}")
