"""Side-car weight files: where `#graph.extern<"file", offset, nbytes>` data is found, and
where printed IR puts its weights.

Reading: a relative path in the IR is resolved against the directories of the IR files read
so far (tools register them with `add_search_dir`), then the working directory. Files are
memory-mapped once, so constants are zero-copy views of the file. Data read from a file
into an npu buffer is an `ExternBytes`: bytes that remember the file and offset they came
from, so printing the program again names the same file instead of writing the bytes out.

Writing: while a `WeightWriter` is active (`with writing_to("out.weights.bin"):`), printers
put every constant larger than `INLINE_LIMIT` bytes (graph constants, npu buffer contents;
splats stay inline) into its file and print `#graph.extern<"out.weights.bin", offset,
nbytes>` instead; identical contents are written once. `stc-opt -o X.mlir` writes
`X.weights.bin` (`weights_file_for`), `--dump-ir DIR` writes `DIR/weights.bin`. Without an
active writer, constants print inline (hex) and data from a file keeps naming its file.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator

import numpy as np

ALIGNMENT = 64
"""Records in a weight file start at multiples of this many bytes."""

INLINE_LIMIT = 64
"""Constants of at most this many bytes stay inline in printed IR."""

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


class ExternBytes(bytes):
    """Bytes read from a weight file; `path` and `offset` say where (as the IR named them)."""

    path: str
    offset: int

    def __new__(cls, data: bytes | np.ndarray, path: str, offset: int) -> ExternBytes:
        self = super().__new__(cls, data)
        self.path, self.offset = path, offset
        return self


def read_bytes(path: str, offset: int, nbytes: int) -> ExternBytes:
    """`nbytes` bytes at `offset` of a weight file, remembering where they came from."""
    return ExternBytes(read(path, offset, np.dtype(np.uint8), (nbytes,)).tobytes(), path, offset)


# ----------------------------------------------------------------------------- writing


def weights_file_for(ir_path: str | os.PathLike[str]) -> str:
    """The weight file printed IR at `ir_path` uses: `X.mlir` -> `X.weights.bin`."""
    root, ext = os.path.splitext(os.fspath(ir_path))
    return (root if ext == ".mlir" else os.fspath(ir_path)) + ".weights.bin"


class WeightWriter:
    """Appends constants to one weight file (64-byte aligned records, each content once).

    The file is written under a temporary name and moved into place by `close()`, so data
    still being read from an older file of the same name stays valid while printing."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.path.abspath(os.fspath(path))
        self.name = os.path.basename(self.path)
        """How the IR names the file: keep the weight file next to the IR file."""
        self._tmp = self.path + ".tmp"
        self._file = None
        self._size = 0
        self._offsets: dict[bytes, int] = {}

    def put(self, data: bytes) -> int:
        """Write `data` (unless the same bytes were written already); its offset."""
        key = data
        offset = self._offsets.get(key)
        if offset is not None:
            return offset
        if self._file is None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self._file = open(self._tmp, "wb")
        offset = self._size
        self._file.write(key)
        pad = -len(key) % ALIGNMENT
        self._file.write(b"\0" * pad)
        self._size += len(key) + pad
        self._offsets[key] = offset
        return offset

    def close(self) -> None:
        """Move the written file into place (nothing is created if nothing was written)."""
        if self._file is None:
            return
        self._file.close()
        self._file = None
        os.replace(self._tmp, self.path)
        forget(self.path)
        add_search_dir(os.path.dirname(self.path))


_writer: WeightWriter | None = None


def active_writer() -> WeightWriter | None:
    """The writer printers put large constants into, if any."""
    return _writer


@contextlib.contextmanager
def writing_to(path: str | os.PathLike[str] | WeightWriter) -> Iterator[WeightWriter]:
    """Print IR with its weights going to `path` (or to an open writer, kept open)."""
    global _writer
    writer = path if isinstance(path, WeightWriter) else WeightWriter(path)
    previous, _writer = _writer, writer
    try:
        yield writer
    finally:
        _writer = previous
        if writer is not path:
            writer.close()
