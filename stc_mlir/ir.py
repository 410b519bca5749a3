"""Reading and writing IR text with every stc-mlir dialect available."""

from __future__ import annotations

import os
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer

from stc_mlir import weights
from stc_mlir.dialects.registry import DIALECTS


def make_context() -> Context:
    """A context with xDSL's builtin/func/arith and our dialects (loaded on first use)."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = Context()
    for dialect in (Builtin, Func, Arith):
        ctx.load_dialect(dialect)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_text(text: str, name: str = "<string>") -> ModuleOp:
    return Parser(make_context(), text, name).parse_module()


def parse_file(path: str) -> ModuleOp:
    """Parse an .mlir file; weight files it names are looked up next to it."""
    weights.add_search_dir(os.path.dirname(os.path.abspath(path)))
    with open(path) as f:
        return parse_text(f.read(), path)


def print_module(module: ModuleOp, stream: IO[str]) -> None:
    Printer(stream=stream).print_op(module)
    stream.write("\n")
