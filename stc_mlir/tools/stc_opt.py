"""stc-opt: xdsl-opt with stc-mlir's dialects and passes registered next to xDSL's own."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from stc_mlir import ir, universe
from stc_mlir.tools.diagnostics import UserError, run_cli


class StcOptMain(xDSLOptMain):
    """The xDSL driver, plus our lazy dialect and pass registries."""

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="stc-mlir modular optimizer driver", args=args)

    def register_all_dialects(self):
        super().register_all_dialects()
        known = set(self.ctx.registered_dialect_names)
        for name, factory in universe.DIALECTS.items():
            if name not in known:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in universe.PASSES.items():
            self.register_pass(name, factory)

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
