"""Turning exceptions into one-line diagnostics for the command-line tools.

A CLI tool never shows a Python traceback for bad input: it prints `tool: error: ...`
naming the file and what is wrong, and exits non-zero. Set STC_DEBUG=1 to get the
traceback when the failure is ours.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from collections.abc import Callable


from stc_mlir.errors import StcError


class UserError(StcError):
    """A bad command-line argument."""


def run_cli(tool: str, body: Callable[[], int | None]) -> int:
    """Run `body`, mapping every exception to a diagnostic and an exit code (and every
    warning to one `tool: warning: ...` line)."""
    warnings.showwarning = lambda message, *_, **__: print(f"{tool}: warning: {message}", file=sys.stderr)
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


def check_output_file(path: str | None, flag: str) -> None:
    """Refuse, before any work, an output file that cannot be written: a directory, or a
    file in a directory that does not exist."""
    if path is None:
        return
    if os.path.isdir(path):
        raise UserError(f"{flag} {path}: is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UserError(f"{flag} {path}: the directory {parent} does not exist")


def check_output_dir(path: str | None, flag: str) -> None:
    """Refuse, before any work, an output directory that is an existing file."""
    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise UserError(f"{flag} {path}: is a file, not a directory")


def check_model_options(model: str, options: dict[str, object], defaults: dict[str, object]) -> None:
    """Refuse `--option NAME=VALUE` values of the wrong type or range, naming the option."""
    for name, value in options.items():
        if name not in defaults:
            continue  # models.build names the valid options
        default = defaults[name]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise UserError(f"--option {name}={value}: {model}'s {name} is true or false (default {default})")
        elif isinstance(default, int):
            if not isinstance(value, int) or isinstance(value, bool):
                raise UserError(f"--option {name}={value}: {model}'s {name} takes an integer (default {default})")
            if value < (0 if name == "seed" else 1):
                raise UserError(f"--option {name}={value}: must be {'>= 0' if name == 'seed' else '>= 1'}")
