"""Shapes and element types of graph values as the lowering sees them: rank-0 tensors are
1-element vectors (npu tiles have 1 to 4 dims), element types by their npu names."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, OpResult, SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.ir import value_name
from stc_mlir.isa.program import DTYPES

from .placement import LoweringError

_NAMES = {v: k for k, v in DTYPES.items()}


def shape_of(v: SSAValue) -> tuple[int, ...]:
    return g.shape_of(v.type) or (1,)


def dtype_of(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, TensorType)
    dtype = g.numpy_dtype(t.element_type)
    if dtype not in _NAMES:
        raise LoweringError(f"{_what(v)} has element type {t.element_type}: the npu stores "
                            f"only {', '.join(DTYPES)} tensors (cast it in the model)")
    return _NAMES[dtype]


def _what(v: SSAValue) -> str:
    """The value and the op making it (or the function taking it), for diagnostics."""
    name = value_name(v)
    if isinstance(v, OpResult):
        return f"{name} (result of {v.op.name})" if name.startswith("%") else name
    assert isinstance(v, BlockArgument)
    owner = v.block.parent_op()
    where = f" of @{owner.sym_name.data}" if isinstance(owner, func.FuncOp) else ""
    return f"{name} (argument #{v.index}{where})"


def constant(v: SSAValue) -> g.ConstantOp | None:
    return v.owner if isinstance(v.owner, g.ConstantOp) else None
