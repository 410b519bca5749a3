"""Turning exceptions into one-line diagnostics for the command-line tools.

A CLI tool never shows a Python traceback for bad input: it prints `tool: error: ...`
naming the file and what is wrong, and exits non-zero. Set STC_DEBUG=1 to get the
traceback when the failure is ours.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable


from stc_mlir.errors import StcError


class UserError(StcError):
    """A bad command-line argument."""


def run_cli(tool: str, body: Callable[[], int | None]) -> int:
    """Run `body`, mapping every exception to a diagnostic and an exit code."""
    try:
        return body() or 0
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the point is to catch everything
        if os.environ.get("STC_DEBUG"):
            traceback.print_exc()
        kind = "" if isinstance(exc, StcError) else _KINDS.get(type(exc).__name__, f"{type(exc).__name__}: ")
        text = condense(str(exc).rstrip() or repr(exc))
        print(f"{tool}: error: {kind}{text}", file=sys.stderr)
        return 1


_KINDS = {
    "ParseError": "parse error: ",
    "VerifyException": "verification failed: ",
    "DiagnosticException": "",
    "FileNotFoundError": "",
    "PassPipelineParseError": "bad pass pipeline: ",
}


def condense(text: str, context: int = 1) -> str:
    """Keep only the annotated part of an xDSL diagnostic that prints a whole module.

    xDSL reports a verification failure by printing the entire module with the failing op
    underlined; for a real model that is megabytes. Keep the underlined op, its message
    and `context` lines around it.
    """
    lines = text.splitlines()
    if len(lines) < 40:
        return text
    marks = [i for i, line in enumerate(lines) if line.lstrip().startswith("^")]
    if not marks:
        return "\n".join(lines[:20] + [f"... ({len(lines) - 20} more lines)"])
    keep: set[int] = set()
    for i in marks:
        end = i + 1
        while end < len(lines) and lines[end].lstrip().startswith(("|", "-")):
            end += 1
        keep.update(range(max(0, i - 1 - context), min(len(lines), end + context)))
    return "\n".join(lines[i][:400] for i in sorted(keep))
