"""The on-disk decision cache (TPU-MLIR's layer-group cache): a second compile of the same
graph for the same target and level skips the search.

The key is a hash of the graph's structure (op names, properties, operand wiring and
types; weight *values* are left out: they do not change the schedule), the target file's
contents, the level and `VERSION` (bumped when the search changes). The value is the
search's groups as JSON, with the level whose ordering and placement rules built them and the share of L1 / LLB the
placement filled. The directory is `$STC_MLIR_CACHE_DIR`, else
`~/.cache/stc-mlir/autoschedule`; a cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from xdsl.dialects import func

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g

from .search import Segment

VERSION = 19


def directory() -> Path:
    root = os.environ.get("STC_MLIR_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "stc-mlir" / "autoschedule"


def key(f: func.FuncOp, target: targets.Target, level: int) -> str:
    h = hashlib.sha256()
    h.update(f"v{VERSION} level {level}\n".encode())
    h.update(Path(target.path).read_bytes())
    number: dict[object, int] = {a: i for i, a in enumerate(f.body.block.args)}
    for a in f.body.block.args:
        h.update(f"arg {a.type}\n".encode())
    for op in f.body.block.ops:
        for r in op.results:
            number[r] = len(number)
        operands = ",".join(str(number.get(v, "?")) for v in op.operands)
        props = "" if isinstance(op, g.ConstantOp) else str(sorted((k, str(v)) for k, v in op.properties.items()))
        types = ",".join(str(r.type) for r in op.results)
        h.update(f"{op.name}({operands}) {props} -> {types}\n".encode())
    return h.hexdigest()


def load(k: str) -> tuple[list[Segment], int, float, float, bool] | None:
    """(groups, build style, L1 fill, LLB fill, ops sunk) stored under key `k`, or None."""
    try:
        data = json.loads((directory() / f"{k}.json").read_text())
        return ([Segment(**seg) for seg in data["groups"]], int(data["style"]), float(data["fill"]),
                float(data["llb_fill"]), bool(data["sunk"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(k: str, segments: list[Segment], style: int, fill: float, llb_fill: float, sunk: bool) -> None:
    try:
        directory().mkdir(parents=True, exist_ok=True)
        tmp = directory() / f"{k}.json.tmp{os.getpid()}"
        tmp.write_text(json.dumps({"version": VERSION, "style": style, "fill": fill, "llb_fill": llb_fill, "sunk": sunk,
                                   "groups": [seg.as_dict() for seg in segments]}))
        os.replace(tmp, directory() / f"{k}.json")
    except OSError:
        pass
