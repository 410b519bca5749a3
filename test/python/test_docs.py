"""The docs run: every code block of README.md and docs/*.md is executed, so an example
cannot rot. How a block is written decides what happens to it (README.md, "Docs that run"):

    ```python              executed; a document's python blocks share one namespace, in order
    ```sh                  run by bash -e (stc-run, stc-opt, python ... on the PATH)
    ```mlir                parsed and verified with every stc-mlir dialect
    ```text  or  ```       not code: output, diagrams (an untagged block must not look
                           like a command, or it would escape the test)
    ```LANG notest         never run (a fragment, a download, a full-size model); say why
    ```LANG slow           run only when STC_DOCS_SLOW=1 (a minute or more)
    ```LANG file=NAME      not run: written to NAME for the blocks after it

All blocks of one document run in order in one scratch directory, which is the working
directory and on the import path.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from stc_mlir import blas

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_SLOW = os.environ.get("STC_DOCS_SLOW") == "1"
LANGUAGES = {"python", "sh", "mlir", "text", ""}
COMMAND = re.compile(r"^\s*(\$ |stc-|python |pip |lit |filecheck |xdsl-opt )")
FENCE = re.compile(r"^(?P<indent> *)```(?P<info>.*)$")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    flags: set[str]
    file: str | None
    text: str

    @property
    def where(self) -> str:
        return f"{_name(self.path)}:{self.line}"


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file with their info strings."""
    found, lines, i = [], path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        words = m["info"].split()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(m["indent"]):])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{_name(path)}:{start}: code block is not closed")
        i += 1
        file = next((w.split("=", 1)[1] for w in words[1:] if w.startswith("file=")), None)
        found.append(Block(path, start, words[0] if words else "", set(words[1:]), file,
                           "\n".join(body) + "\n"))
    return found


def _environment(scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(scratch), env.get("PYTHONPATH", "")])
    blas.single_threaded(env)
    return env


def _run_sh(block: Block, scratch: Path) -> None:
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=scratch,
                          env=_environment(scratch), capture_output=True, text=True, timeout=600)
    if done.returncode:
        pytest.fail(f"{block.where}: the commands exit {done.returncode}\n{block.text}"
                    f"--- stderr:\n{done.stderr[-3000:]}", pytrace=False)


def _run_python(block: Block, namespace: dict, scratch: Path) -> None:
    code = compile("\n" * (block.line) + block.text, str(block.path), "exec")  # real line numbers
    with contextlib.chdir(scratch), contextlib.redirect_stdout(open(os.devnull, "w")):
        sys.path.insert(0, str(scratch))
        try:
            exec(code, namespace)
        finally:
            sys.path.remove(str(scratch))


def _run_mlir(block: Block) -> None:
    from stc_mlir import ir

    try:
        ir.parse_text(block.text, block.where).verify()
        return
    except Exception as e:  # ParseError, VerifyException: the message names the line
        error = str(e)
    pytest.fail(f"{block.where}: the IR does not parse and verify:\n{error}", pytrace=False)


def _check_tags(block: Block) -> None:
    if block.language not in LANGUAGES:
        pytest.fail(f"{block.where}: code block language '{block.language}': use one of "
                    f"python, sh, mlir (run) or text (not code)", pytrace=False)
    unknown = {f for f in block.flags if f not in ("notest", "slow") and not f.startswith("file=")}
    if unknown:
        pytest.fail(f"{block.where}: unknown code block flag(s) {sorted(unknown)}: notest, slow, "
                    f"file=NAME", pytrace=False)
    first = block.text.lstrip("\n").split("\n")[0]
    if block.language in ("", "text") and COMMAND.match(first):
        pytest.fail(f"{block.where}: this block looks like commands ({first.strip()!r}) but is not "
                    f"run: tag it ```sh (or ```sh notest / ```sh slow and say why)", pytrace=False)


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_document_code_blocks_run(path: Path, tmp_path: Path):
    namespace: dict = {"__name__": "__doc__"}
    modules_before = set(sys.modules)
    try:
        for block in blocks(path):
            _check_tags(block)
            if block.file is not None:
                (tmp_path / block.file).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / block.file).write_text(block.text, encoding="utf-8")
                continue
            if "notest" in block.flags or block.language in ("", "text"):
                continue
            if "slow" in block.flags and not RUN_SLOW:
                continue
            if block.language == "sh":
                _run_sh(block, tmp_path)
            elif block.language == "python":
                _run_python(block, namespace, tmp_path)
            else:
                _run_mlir(block)
    finally:  # modules the document wrote (my_schedules.py) must not leak into other tests
        for name in set(sys.modules) - modules_before:
            module = sys.modules[name]
            if str(tmp_path) in str(getattr(module, "__file__", "") or ""):
                del sys.modules[name]


def test_block_parser_reads_languages_flags_and_files(tmp_path: Path):
    doc = tmp_path / "x.md"
    doc.write_text("a\n```python file=m.py\nX = 1\n```\n\n  ```sh slow\n  stc-run\n  ```\n```\nplain\n```\n")
    assert [(b.line, b.language, b.flags, b.file, b.text) for b in blocks(doc)] == [
        (2, "python", {"file=m.py"}, "m.py", "X = 1\n"),
        (6, "sh", {"slow"}, None, "stc-run\n"),
        (9, "", set(), None, "plain\n"),
    ]
