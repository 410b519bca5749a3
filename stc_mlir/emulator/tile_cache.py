"""Values derived from tiles (fp32 copies, im2col columns), kept while the tile's bytes are
unchanged (see `TileCache`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from threading import Lock
from typing import Any

import numpy as np

try:
    from . import _values  # type: ignore[attr-defined]
except ImportError:  # not built (a plain source tree) or not buildable here
    _values = None

INTERFACE = 7
"""The `_values.c` interface this file calls (its `INTERFACE`)."""
NATIVE = bool(_values is not None and getattr(_values, "INTERFACE", None) == INTERFACE
              and os.environ.get("STC_VALUES_NATIVE", "1") != "0")
"""Whether the bookkeeping of `written`, `copied` and `origin` and the dense copies are
done in C (`_values`: the same dicts, the same results as the Python methods here;
`STC_VALUES_NATIVE=0` in the environment, or tests, turn it off)."""


class TileCache:
    """Values derived from tiles (their fp32 copies, a conv's im2col columns), kept until a
    write touches the tile's bytes, so a tile read by many commands (an input tile against
    every weight chunk, a weight chunk against every input tile) is converted once.

    Entries are keyed by (memory, tile, what) and dropped when a write to that memory
    overlaps the tile's byte hull; beyond `per_memory` entries of one memory its least
    recently used goes, beyond `budget` bytes in all that of the fullest memory. The
    values are read-only arrays: a kernel writing into its input would raise.

    A dense DMA makes its destination bytes an *alias* of its source bytes until either is
    written again: a tile read in the copy is looked up at its origin, so a weight chunk
    passed from core to core over the NoC is converted once, not once per core.

    Commands running on several threads may use it at once (`parallel`): each call takes a
    lock, `make()` runs outside it, and a value made from a copy's origin is not kept if an
    alias went meanwhile (those bytes may have been written since it was looked up; a
    value made from the tile's own bytes stays right: no command writes them while one
    reads them).

    With `native` (the C module `_values` built), `written`, `copied`, `copy` and `get`
    work on the same dicts in C (`_values.c`: the same steps, the same order, the lock
    taken the same way, `make()` called outside it); the methods here are its reference.
    A run's computed commands reach it from C too (`_values.computer`)."""

    def __init__(self, budget: int = 256 << 20, per_memory: int = 64, native: bool | None = None):
        self.native = NATIVE if native is None else native and NATIVE  # (`_values`)
        self.budget = budget
        self.per_memory = per_memory
        self.nbytes = 0
        self.memories: dict[Any, dict[tuple, tuple[int, int, np.ndarray]]] = {}  # LRU order
        # an alias (memory, lo, hi, source memory, source lo), indexed by both memories
        self.aliases: dict[Any, dict[tuple, None]] = {}
        self.sources: dict[Any, dict[tuple, None]] = {}
        self.dropped = 0  # aliases dropped so far
        self.lock = Lock()

    def origin(self, memory: Any, lo: int, hi: int) -> tuple[Any, int]:
        """Where bytes [lo, hi) of `memory` were copied from (themselves if not a copy): one
        copy, or copies one after the other of consecutive bytes of one source (a region
        moved in pieces)."""
        aliases = self.aliases.get(memory)
        if not aliases:
            return memory, lo
        for alias in aliases:  # (the copies into one memory do not overlap)
            if alias[1] <= lo < alias[2]:
                if hi <= alias[2]:
                    return alias[3], alias[4] + lo - alias[1]
                end, source, at = alias[2], alias[3], alias[4] + alias[2] - alias[1]
                while end < hi:  # the next piece: from where this one ended, to where it ended
                    for piece in aliases:
                        if piece[1] == end and piece[4] == at and piece[3] == source:
                            end, at = piece[2], at + piece[2] - piece[1]
                            break
                    else:
                        return memory, lo
                return source, alias[4] + lo - alias[1]
        return memory, lo

    def get(self, memory: Any, lo: int, hi: int, key: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
        """`make()` for the tile at `lo` (`key`: its address, shape, strides, type and what is
        derived), or the value kept for those bytes or the bytes they were copied from."""
        if self.native:
            return _values.get(self, memory, lo, hi, key, make)
        with self.lock:
            aliased, dropped = bool(self.aliases.get(memory)), self.dropped
            if aliased:  # (no copy into this memory: the bytes are their own)
                memory, at = _values.origin(self, memory, lo, hi) if self.native else self.origin(memory, lo, hi)
                if at != lo:
                    lo, hi, key = at, hi + at - lo, (key[0] + at - lo, *key[1:])
            entries = self.memories.get(memory)
            if entries is None:
                entries = self.memories[memory] = {}
            hit = entries.pop(key, None)
            if hit is not None:
                entries[key] = hit  # most recently used
                return hit[2]
        value = make()
        value.flags.writeable = False
        with self.lock:
            if value.nbytes > self.budget or (aliased and self.dropped != dropped):
                return value
            self._keep(entries, key, lo, hi, value)
        return value

    def _keep(self, entries: dict, key: tuple, lo: int, hi: int, value: np.ndarray) -> None:
        old = entries.pop(key, None)  # (made meanwhile by another thread)
        if old is not None:
            self.nbytes -= old[2].nbytes
        entries[key] = (lo, hi, value)
        self.nbytes += value.nbytes
        if len(entries) > self.per_memory:
            self._drop(entries, next(iter(entries)))
        while self.nbytes > self.budget:
            oldest = max(self.memories.values(), key=len)
            self._drop(oldest, next(iter(oldest)))

    def written(self, memory: Any, lo: int, hi: int) -> None:
        """Bytes [lo, hi) of `memory` change: forget what was derived from them and the
        aliases they are part of."""
        if self.native:
            _values.written(self, memory, lo, hi)
            return
        with self.lock:
            self._written(memory, lo, hi)

    def _written(self, memory: Any, lo: int, hi: int) -> None:
        entries = self.memories.get(memory)
        if entries:
            for key in [k for k, e in entries.items() if e[0] < hi and lo < e[1]]:
                self.nbytes -= entries.pop(key)[2].nbytes
        aliases, sources = self.aliases.get(memory), self.sources.get(memory)
        if not aliases and not sources:
            return
        stale = [a for a in aliases or () if a[1] < hi and lo < a[2]]
        stale += [a for a in sources or () if a[4] < hi and lo < a[4] + a[2] - a[1]]
        for alias in stale:
            self.aliases[alias[0]].pop(alias, None)
            self.sources[alias[3]].pop(alias, None)
        self.dropped += len(stale)

    def copied(self, memory: Any, lo: int, hi: int, source: Any, source_lo: int) -> None:
        """Bytes [lo, hi) of `memory` were just written as a copy of `source` from
        `source_lo` on (after `written` for them)."""
        if self.native:
            _values.copied(self, memory, lo, hi, source, source_lo)
            return
        with self.lock:
            self._copied(memory, lo, hi, source, source_lo)

    def copy(self, data: np.ndarray, lo: int, hi: int, memory: Any, source_data: np.ndarray, source_lo: int,
             source: Any) -> None:
        """A dense copy: bytes [lo, hi) of `data` (those of `memory`) become those of
        `source_data` (of `source`) from `source_lo` on, then `written` and `copied` for
        them (all in C with `native`)."""
        if self.native:
            _values.copy(self, data, lo, hi, memory, source_data, source_lo, source)
            return
        data[lo:hi] = source_data[source_lo:source_lo + hi - lo]
        with self.lock:
            self._written(memory, lo, hi)
            self._copied(memory, lo, hi, source, source_lo)

    def _copied(self, memory: Any, lo: int, hi: int, source: Any, source_lo: int) -> None:
        source, source_lo = self.origin(source, source_lo, source_lo + hi - lo)
        if (source, source_lo) == (memory, lo):
            return
        alias = (memory, lo, hi, source, source_lo)
        self.aliases.setdefault(memory, {})[alias] = None
        self.sources.setdefault(source, {})[alias] = None

    def _drop(self, entries: dict, key: tuple) -> None:
        self.nbytes -= entries.pop(key)[2].nbytes
