"""Progress of long steps (compile stages, emulation): `progress(stage, None)` when a stage
starts, `progress(stage, seconds)` when it ends or fails."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

Progress = Callable[[str, float | None], None]


@contextlib.contextmanager
def timed(progress: Progress | None, stage: str) -> Iterator[None]:
    """Report `stage` to `progress` (if any) when it starts and when it ends or fails."""
    if progress is not None:
        progress(stage, None)
    start = time.perf_counter()
    try:
        yield
    finally:
        if progress is not None:
            progress(stage, time.perf_counter() - start)


def print_progress(tool: str) -> Progress:
    """A progress callback writing `tool: stage ... 1.23 s` lines to stderr."""

    def progress(stage: str, seconds: float | None) -> None:
        if seconds is None:
            print(f"{tool}: {stage} ...", end="", file=sys.stderr, flush=True)
        else:
            print(f" {seconds:.2f} s", file=sys.stderr, flush=True)

    return progress
