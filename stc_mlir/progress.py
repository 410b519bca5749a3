"""Progress of long work: stages (compile passes, emulation) and the steps inside them.

Two levels, both silent unless a tool asks for them:

- a *stage* callback `progress(stage, None)` when a stage starts, `progress(stage, seconds)`
  when it ends or fails (`Pipeline(progress=...)`, `Model.compile(progress=...)`);
- *steps* inside a long stage, reported from the loop that does the work, without passing
  a callback down every call:

      with progress.steps("lower items", total=len(items)) as advance:
          for item in items:
              ...
              advance()

  `steps` does nothing (a few nanoseconds per call) unless a tool has installed a reporter
  with `with ConsoleProgress("stc-run"):`, so library code can always call it;
  `for x in counted(xs, "what")` is the same for a plain loop.

`ConsoleProgress` is what the tools show on stderr: one line per stage with its time; on a
terminal also a live line (rich) with a spinner, the elapsed time and, for steps with a
known total, a bar; nothing at all with `quiet` (`-q`). When stderr is not a terminal (a
log, CI) the live part is left out and only the stage lines remain.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import IO, TypeVar

T = TypeVar("T")
Progress = Callable[[str, float | None], None]
Advance = Callable[..., None]  # advance(n=1)

_REPORTER: ContextVar[ConsoleProgress | None] = ContextVar("stc_progress_reporter", default=None)


def nothing(n: int = 1) -> None:
    """The step callback when no tool shows progress (callers may skip calling it)."""


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


@contextlib.contextmanager
def steps(description: str, total: int | None = None) -> Iterator[Advance]:
    """Steps of the current stage: yields `advance(n=1)`; shown only if a tool asked."""
    reporter = _REPORTER.get()
    if reporter is None:
        yield nothing
        return
    with reporter.steps(description, total) as advance:
        yield advance


def counted(items: Iterable[T], description: str) -> Iterator[T]:
    """`items`, reported as the steps of `description` as the loop takes them:

        for item in counted(items, "lower items"):
            ...

    Silent in a forked worker process (its parent shows the progress)."""
    items = list(items)
    if multiprocessing.parent_process() is not None:
        yield from items
        return
    with steps(description, total=len(items)) as advance:
        for item in items:
            yield item
            advance()


class ConsoleProgress:
    """Stage lines on stderr (`tool: stage ... 1.23 s`), plus a live spinner / bar on a
    terminal; nothing when `quiet`. Call it as the stage callback; use it as a context
    manager around the work so `steps()` inside reaches it."""

    def __init__(self, tool: str, *, quiet: bool = False, live: bool | None = None,
                 stream: IO[str] | None = None):
        self.tool, self.quiet, self._stream = tool, quiet, stream
        self.live = not quiet and (self.stream.isatty() if live is None else live)
        self._bar = None
        self._stages: dict[str, int] = {}
        self._token = None

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr  # stderr at the time of use

    # --- the stage callback

    def __call__(self, stage: str, seconds: float | None) -> None:
        if self.quiet:
            return
        if not self.live:
            if seconds is None:
                print(f"{self.tool}: {stage} ...", end="", file=self.stream, flush=True)
            else:
                print(f" {seconds:.2f} s", file=self.stream, flush=True)
            return
        bar = self._live_bar()
        if seconds is None:
            self._stages[stage] = bar.add_task(f"{self.tool}: {stage}", total=None, count="")
        else:
            task = self._stages.pop(stage, None)
            if task is not None:
                bar.remove_task(task)
            bar.console.print(f"{self.tool}: {stage} ... {seconds:.2f} s", highlight=False)

    @contextlib.contextmanager
    def steps(self, description: str, total: int | None) -> Iterator[Advance]:
        if not self.live:
            yield nothing
            return
        bar = self._live_bar()
        task = bar.add_task(f"  {description}", total=total, count="")
        done = 0

        def advance(n: int = 1) -> None:
            nonlocal done
            done += n
            bar.update(task, advance=n, count=f"{done}/{total}" if total else str(done))

        try:
            yield advance
        finally:
            bar.remove_task(task)

    # --- installing it

    def __enter__(self) -> ConsoleProgress:
        self._token = _REPORTER.set(self)
        return self

    def __exit__(self, *exc) -> None:
        if self._token is not None:
            _REPORTER.reset(self._token)
            self._token = None
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _live_bar(self):
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, force_terminal=True)
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 TextColumn("{task.fields[count]}"), TimeElapsedColumn(), console=console,
                                 transient=True, redirect_stdout=False)  # stdout: the tools' results
            self._bar.start()
        return self._bar


def print_progress(tool: str) -> Progress:
    """A stage callback writing `tool: stage ... 1.23 s` lines to stderr (no live part)."""
    return ConsoleProgress(tool, live=False)
