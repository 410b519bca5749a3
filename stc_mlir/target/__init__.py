"""Target descriptions: the figures of a chip, read from a TOML file.

`load("stcp920")` reads the description shipped in this package (`stcp920.toml`);
`load(path)` reads a user's own file. Every capacity, rate and latency used by the npu
verifier, the emulator's cycle model and the roofline comes from the loaded `Target`.
A malformed file raises `TargetError` naming the file and the key.
"""

from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stc_mlir.errors import StcError

__all__ = ["MEMORY_LEVELS", "MemoryLevel", "Target", "TargetError", "load"]

#: memory levels in order from the cores outwards; l1 and wb exist once per core
MEMORY_LEVELS = ("l1", "wb", "llb", "ddr")
PER_CORE_LEVELS = ("l1", "wb")

_HERE = Path(__file__).resolve().parent


class TargetError(StcError, ValueError):
    """A target description file is missing, unreadable or has a bad key."""


@dataclass(frozen=True)
class MemoryLevel:
    name: str
    size: int
    latency: int
    bandwidth: float | None  # bytes/cycle shared by all its users; None: not a shared limit


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    clock_ghz: float
    clusters: int
    cores: int
    issue_cycles: int
    memory: dict[str, MemoryLevel]
    k_lanes: int
    n_lanes: int
    vector_elements: int
    special_cost: int
    special: frozenset[str]
    noc_rows: int
    noc_cols: int
    link_bandwidth: float
    hop_latency: int
    dma_bandwidth: float

    @property
    def macs_per_cycle(self) -> int:
        return self.k_lanes * self.n_lanes

    def position(self, core: int) -> tuple[int, int]:
        """(row, column) of a core in the NoC mesh."""
        return core // self.noc_cols, core % self.noc_cols

    def route(self, src: int, dst: int) -> list[tuple[int, int]]:
        """Directed NoC links (core, core) on the X-then-Y route from src to dst."""
        links = []
        (r, c), (r1, c1) = self.position(src), self.position(dst)
        while c != c1:
            nc = c + (1 if c1 > c else -1)
            links.append((r * self.noc_cols + c, r * self.noc_cols + nc))
            c = nc
        while r != r1:
            nr = r + (1 if r1 > r else -1)
            links.append((r * self.noc_cols + c, nr * self.noc_cols + c))
            r = nr
        return links

    def hops(self, src: int, dst: int) -> int:
        (r, c), (r1, c1) = self.position(src), self.position(dst)
        return abs(r - r1) + abs(c - c1)


# key -> (kind, required); kinds: int (>= 1), count (>= 0), number (> 0), str, strlist
_SCHEMA: dict[str, tuple[str, bool]] = {
    "name": ("str", True),
    "clock_ghz": ("number", True),
    "clusters": ("int", True),
    "cores": ("int", True),
    "issue_cycles": ("count", True),
    **{f"memory.{lvl}.size": ("int", True) for lvl in MEMORY_LEVELS},
    **{f"memory.{lvl}.latency": ("count", True) for lvl in MEMORY_LEVELS},
    **{f"memory.{lvl}.bandwidth": ("number", lvl in ("llb", "ddr")) for lvl in MEMORY_LEVELS},
    "matrix.k_lanes": ("int", True),
    "matrix.n_lanes": ("int", True),
    "vector.elements_per_cycle": ("int", True),
    "vector.special_cost": ("int", True),
    "vector.special": ("strlist", True),
    "noc.rows": ("int", True),
    "noc.cols": ("int", True),
    "noc.link_bandwidth": ("number", True),
    "noc.hop_latency": ("count", True),
    "dma.engine_bandwidth": ("number", True),
}


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _check_value(path: str, key: str, kind: str, value: Any) -> Any:
    def bad(expected: str) -> TargetError:
        return TargetError(f"{path}: key '{key}': expected {expected}, got {value!r}")

    is_int = isinstance(value, int) and not isinstance(value, bool)
    if kind == "int":
        if not is_int or value < 1:
            raise bad("a positive integer")
    elif kind == "count":
        if not is_int or value < 0:
            raise bad("a non-negative integer")
    elif kind == "number":
        if not (is_int or isinstance(value, float)) or not value > 0:
            raise bad("a positive number")
    elif kind == "str":
        if not isinstance(value, str) or not value:
            raise bad("a non-empty string")
    elif kind == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("a list of strings")
    return value


def _parse(path: str, text: str) -> Target:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise TargetError(f"{path}: not valid TOML: {err}") from None
    flat = _flatten(raw)
    for key in flat:
        if key not in _SCHEMA:
            raise TargetError(f"{path}: unknown key '{key}'")
    values: dict[str, Any] = {}
    for key, (kind, required) in _SCHEMA.items():
        if key not in flat:
            if required:
                raise TargetError(f"{path}: missing key '{key}'")
            continue
        values[key] = _check_value(path, key, kind, flat[key])
    if values["cores"] > values["noc.rows"] * values["noc.cols"]:
        raise TargetError(
            f"{path}: key 'cores': {values['cores']} cores do not fit the "
            f"{values['noc.rows']} x {values['noc.cols']} NoC mesh"
        )
    memory = {
        lvl: MemoryLevel(
            lvl,
            values[f"memory.{lvl}.size"],
            values[f"memory.{lvl}.latency"],
            values.get(f"memory.{lvl}.bandwidth"),
        )
        for lvl in MEMORY_LEVELS
    }
    return Target(
        name=values["name"],
        path=path,
        clock_ghz=float(values["clock_ghz"]),
        clusters=values["clusters"],
        cores=values["cores"],
        issue_cycles=values["issue_cycles"],
        memory=memory,
        k_lanes=values["matrix.k_lanes"],
        n_lanes=values["matrix.n_lanes"],
        vector_elements=values["vector.elements_per_cycle"],
        special_cost=values["vector.special_cost"],
        special=frozenset(values["vector.special"]),
        noc_rows=values["noc.rows"],
        noc_cols=values["noc.cols"],
        link_bandwidth=float(values["noc.link_bandwidth"]),
        hop_latency=values["noc.hop_latency"],
        dma_bandwidth=float(values["dma.engine_bandwidth"]),
    )


@functools.lru_cache(maxsize=16)
def _load_file(path: str, mtime: float) -> Target:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise TargetError(f"{path}: cannot read target description: {err.strerror}") from None
    return _parse(path, text)


def load(name_or_path: str | os.PathLike[str] | Target = "stcp920") -> Target:
    """The target named `name_or_path` (a file shipped in this package) or read from a path."""
    if isinstance(name_or_path, Target):
        return name_or_path
    text = os.fspath(name_or_path)
    packaged = _HERE / f"{text}.toml"
    if os.sep not in text and "/" not in text and not text.endswith(".toml") and packaged.is_file():
        path = packaged
    else:
        path = Path(text)
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in _HERE.glob("*.toml")))
            raise TargetError(f"{text}: no such target file (built-in targets: {known})")
    path = path.resolve()
    return _load_file(str(path), path.stat().st_mtime)
