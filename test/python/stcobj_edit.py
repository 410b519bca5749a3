"""`edited_stcobj`: a saved program whose manifest a test has changed (to check what
`stcobj.load` refuses or still accepts)."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stc_mlir import stcobj


def edited_stcobj(program, path: Path, edit: Callable[[dict[str, Any]], Any]) -> Path:
    """Save `program` at `path`, apply `edit` to its manifest and write it back."""
    stcobj.save(program, path)
    with zipfile.ZipFile(path) as zf:
        files = {name: zf.read(name) for name in zf.namelist()}
    manifest = json.loads(files["manifest.json"])
    edit(manifest)
    files["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path
