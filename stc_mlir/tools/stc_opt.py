"""stc-opt: xdsl-opt with stc-mlir's dialects and passes registered next to xDSL's own,
plus users' passes (`--load-pass-plugin FILE.py`, the `stc_mlir.passes` entry points).
`--help` lists our passes first, with one-line descriptions and their options."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from stc_mlir import ir, pass_plugins, universe
from stc_mlir.tools.diagnostics import UserError, run_cli

DESCRIPTION = "stc-mlir modular optimizer driver: xdsl-opt with the graph, schedule and npu dialects."
PLUGIN_FLAG = "--load-pass-plugin"


class StcOptMain(xDSLOptMain):
    """The xDSL driver, plus our lazy dialect and pass registries and users' pass plugins."""

    def __init__(self, args: Sequence[str] | None = None):
        argv = list(sys.argv[1:] if args is None else args)
        self.plugin_files = _plugin_files(argv)  # needed before xDSL parses -p
        self.describe_passes = "-h" in argv or "--help" in argv
        super().__init__(description=DESCRIPTION, args=argv)

    def register_all_dialects(self):
        super().register_all_dialects()
        known = set(self.ctx.registered_dialect_names)
        for name, factory in universe.DIALECTS.items():
            if name not in known:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        xdsl_passes = {name: f for name, f in self.available_passes.items() if name not in universe.PASSES}
        pass_plugins.register_installed(xdsl_passes)
        for path in self.plugin_files:
            pass_plugins.register_plugin_file(path, xdsl_passes)
        for name, factory in universe.PASSES.items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--export-netron", metavar="FILE.onnx",
                                help="also write the resulting graph- or schedule-level module as ONNX for "
                                     "Netron, each node carrying its group, sub-group, mem_scope and core_bind")
        arg_parser.add_argument(PLUGIN_FLAG, action="append", default=[], metavar="FILE.py",
                                help="register the xDSL ModulePasses defined in FILE.py (repeatable; "
                                     "docs/pass-authoring.md)")
        ours = [name for name in self.available_passes if name in universe.PASSES]
        others = [name for name in self.available_passes if name not in universe.PASSES]
        for action in arg_parser._actions:
            if "--passes" in action.option_strings:
                action.help = (f"comma-separated pass pipeline, NAME or NAME{{option=value ...}}: "
                               f"stc-mlir's passes ({', '.join(ours)}) are described above; xDSL's: "
                               f"{', '.join(others)}")
        if self.describe_passes:
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
            arg_parser.description = DESCRIPTION + "\n\n" + pass_listing()

    def register_all_frontends(self):
        super().register_all_frontends()
        # decodes with file:line:col errors, guards the lexer, checks SSA dominance
        self.available_frontends["mlir"] = lambda io: ir.parse_for_opt(
            io.read(), self.get_input_name(), self.ctx, not self.args.no_implicit_module,
            check_ssa=not self.args.disable_verify, line_offset=self._line_offset)

    _line_offset = 0

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        self._line_offset = start_offset  # --split-input-file: where the chunk starts
        return super().parse_chunk(chunk, file_extension, start_offset)

    def get_input_stream(self):
        path = self.args.input_file
        if path is not None:
            if not os.path.isfile(path):
                raise UserError(f"cannot open input file '{path}'")
            # side-car weight files named in the IR are found next to the IR file
            from stc_mlir.weights import add_search_dir

            add_search_dir(os.path.dirname(os.path.abspath(path)))
        return super().get_input_stream()


    def apply_passes(self, prog: ModuleOp) -> None:
        super().apply_passes(prog)
        if self.args.export_netron:
            export_netron(prog, self.args.export_netron)

    def run(self):
        # `-o X.mlir`: weights of the printed IR go to X.weights.bin (stc_mlir.weights)
        from contextlib import nullcontext

        from stc_mlir.weights import weights_file_for, writing_to

        output = self.args.output_file
        try:
            with writing_to(weights_file_for(output)) if output else nullcontext():
                super().run()
        except (VerifyException, DiagnosticException) as e:
            if isinstance(e, ir.IRError):  # already names file:line:col (ir.DominanceError)
                raise
            raise UserError(f"{self.get_input_name()}: verification failed: {e}") from None


def export_netron(module: ModuleOp, path: str) -> None:
    """Write `module` (graph or schedule level) as ONNX for Netron; refuse an npu program."""
    from stc_mlir.pipeline import module_level
    from stc_mlir.viz import netron

    if module_level(module) == "npu":
        raise UserError("--export-netron draws graph- or schedule-level IR, not an npu program: "
                        "stop the pipeline before convert-schedule-to-npu")
    netron.export(module, path)
    print(f"stc-opt: wrote {path} (open it in Netron)", file=sys.stderr)


def pass_listing() -> str:
    """stc-mlir's passes, then plugin passes: name, one-line description, options."""
    plugins = [n for n in universe.PASSES if n not in pass_plugins.BUILTIN]
    width = max(len(n) for n in universe.PASSES) + 2
    lines = []
    for title, names in (("stc-mlir passes", pass_plugins.BUILTIN),
                         (f"plugin passes ({PLUGIN_FLAG}, entry points '{pass_plugins.ENTRY_POINT_GROUP}')",
                          plugins)):
        if names:
            lines.append(f"{title}:")
        for name in names:
            cls = universe.PASSES[name]()
            lines.append(f"  {name:<{width}}{pass_plugins.describe(cls)}")
            if pass_plugins.options(cls):
                lines.append(f"  {'':<{width}}options: {pass_plugins.options(cls)}")
    return "\n".join(lines)


def _plugin_files(argv: list[str]) -> list[str]:
    """The FILEs of every `--load-pass-plugin FILE` / `--load-pass-plugin=FILE` in argv."""
    files = []
    for i, arg in enumerate(argv):
        if arg == PLUGIN_FLAG and i + 1 < len(argv):
            files.append(argv[i + 1])
        elif arg.startswith(PLUGIN_FLAG + "="):
            files.append(arg.split("=", 1)[1])
    return files


def _main(argv: Sequence[str] | None) -> None:
    try:
        tool = StcOptMain(argv)
    except ArgSpecParseError as e:  # a malformed -p pipeline: keep xDSL's caret diagnostic
        raise UserError(f"bad pass pipeline: {e}".rstrip()) from None
    except ValueError as e:  # xDSL reports unknown passes and bad pass options this way
        raise UserError(f"{e} (list them with --help)") from None
    tool.run()


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli("stc-opt", lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
