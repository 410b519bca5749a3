"""A pass plugin for the stc-opt tests: its one ModulePass is found without STC_PASSES."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from stc_mlir.dialects import graph as g


class _DoubleNegation(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: g.NegOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, g.NegOp):
            rewriter.replace(op, [], [inner.input])
            if not inner.output.uses:
                rewriter.erase(inner)


@dataclass(frozen=True)
class TestFoldDoubleNeg(ModulePass):
    """Fold neg(neg(x)) to x."""

    name = "test-fold-double-neg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_DoubleNegation()).rewrite_module(op)
