"""Side-car weight files: where `#graph.extern<"file", offset, nbytes>` data is found.

A relative path in the IR is resolved against the directories of the IR files read so far
(tools register them with `add_search_dir`), then the working directory. Files are
memory-mapped once, so constants are zero-copy views of the file.
"""

from __future__ import annotations

import math
import os

import numpy as np

_search_dirs: list[str] = []
_mapped: dict[str, np.memmap] = {}


def add_search_dir(directory: str) -> None:
    """Look for relative weight files in `directory` (most recently added first)."""
    directory = os.path.abspath(directory)
    if directory in _search_dirs:
        _search_dirs.remove(directory)
    _search_dirs.insert(0, directory)


def resolve(path: str) -> str:
    """The file a weight path names, or FileNotFoundError naming where it was looked for."""
    candidates = [path] if os.path.isabs(path) else [os.path.join(d, path) for d in _search_dirs] + [path]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    raise FileNotFoundError(f"weight file '{path}' not found (looked in: {', '.join(candidates)})")


def read(path: str, offset: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A read-only view of `shape` elements of `dtype` at byte `offset` of a weight file."""
    full = resolve(path)
    data = _mapped.get(full)
    if data is None:
        data = _mapped[full] = np.memmap(full, dtype=np.uint8, mode="r")
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if offset + nbytes > data.size:
        raise ValueError(
            f"weight file '{path}' has {data.size} bytes; {nbytes} bytes at offset {offset} are past its end"
        )
    return data[offset : offset + nbytes].view(dtype).reshape(shape)


def forget(path: str) -> None:
    """Drop a cached mapping (the file was rewritten)."""
    _mapped.pop(os.path.abspath(path), None)
