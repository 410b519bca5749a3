"""Shapes and element types of graph values as the lowering sees them: rank-0 tensors are
1-element vectors (npu tiles have 1 to 4 dims), element types by their npu names."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from stc_mlir.dialects import graph as g
from stc_mlir.isa.program import DTYPES

_NAMES = {v: k for k, v in DTYPES.items()}


def shape_of(v: SSAValue) -> tuple[int, ...]:
    return g.shape_of(v.type) or (1,)


def dtype_of(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, TensorType)
    dtype = g.numpy_dtype(t.element_type)
    if dtype not in _NAMES:
        raise KeyError(f"element type {t.element_type}")
    return _NAMES[dtype]


def constant(v: SSAValue) -> g.ConstantOp | None:
    return v.owner if isinstance(v.owner, g.ConstantOp) else None
