"""fp16 range checks: values that would silently become inf when stored as fp16.

The NPU computes in fp16 (largest finite value 65504). A weight or an input beyond that
turns into inf on conversion and every result downstream is inf or nan (the check's
cosine is nan). `check_model` looks at an ONNX model's float constants (initializers and
Constant nodes) before the importer converts them, `check_arrays` at the inputs of a run;
both name the tensor, how many values are out of range and the largest magnitude, and
raise `Fp16RangeError` unless told to go on (`allow=True`, `--allow-fp16-overflow`), in
which case each finding is an `Fp16OverflowWarning`. Values that are already inf or nan in the
source are left alone: they are not an overflow.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from stc_mlir.errors import StcError

FP16_MAX = float(np.finfo(np.float16).max)  # 65504
FLAG = "--allow-fp16-overflow"


class Fp16RangeError(StcError, ValueError):
    """Float values beyond fp16's range where they would be converted to fp16."""


class Fp16OverflowWarning(UserWarning):
    """What `allow=True` let through (the CLI tools print it as one `warning:` line)."""


@dataclass(frozen=True)
class Overflow:
    """`count` of `total` finite values of `tensor` exceed fp16's range; `largest` is the
    largest magnitude among them."""

    kind: str  # "initializer", "constant" or "input"
    tensor: str
    count: int
    total: int
    largest: float

    def __str__(self) -> str:
        return (f"{self.kind} '{self.tensor}' has {self.count:,} of {self.total:,} values outside fp16's "
                f"range (largest magnitude {self.largest:.6g}; fp16 holds up to {FP16_MAX:g}): "
                f"they become inf")


def overflow(kind: str, name: str, array: np.ndarray) -> Overflow | None:
    """The overflow of `array` if converted to fp16, or None (non-float arrays: None)."""
    a = np.asarray(array)
    if not np.issubdtype(a.dtype, np.floating) or a.dtype.itemsize <= 2 or a.size == 0:
        return None
    magnitude = np.abs(a[np.isfinite(a)])
    # values that round to FP16_MAX are fine: fp16 conversion overflows from 65520 on
    out = magnitude >= 65520.0
    count = int(np.count_nonzero(out))
    if not count:
        return None
    return Overflow(kind, name, count, int(a.size), float(magnitude[out].max()))


def _report(found: list[Overflow], where: str, allow: bool) -> list[Overflow]:
    if found and not allow:
        first = found[0]
        more = f" (and {len(found) - 1} more tensor(s))" if len(found) > 1 else ""
        raise Fp16RangeError(f"{where}{first}{more}; pass {FLAG} (allow_fp16_overflow=True) to go on")
    for o in found:
        warnings.warn(f"{where}{o} (allowed by {FLAG})", Fp16OverflowWarning, stacklevel=3)
    return found


def _constants(model) -> Iterable[tuple[str, str, np.ndarray]]:
    from onnx import numpy_helper

    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for init in graph.initializer:
            yield "initializer", init.name, _array(numpy_helper, init)
        for node in graph.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield "constant", node.output[0] if node.output else node.name, _array(numpy_helper, attr.t)
                if attr.HasField("g"):
                    graphs.append(attr.g)
                graphs.extend(attr.graphs)


def _array(numpy_helper, tensor) -> np.ndarray:
    try:
        return numpy_helper.to_array(tensor)
    except Exception:  # noqa: BLE001 - external data or a broken tensor: the importer reports it
        return np.zeros(0, np.float32)


def check_model(model, source: str = "", allow: bool = False) -> list[Overflow]:
    """Check the float constants of an ONNX `model` against fp16's range."""
    found = [o for kind, name, a in _constants(model) if (o := overflow(kind, name, a)) is not None]
    return _report(found, f"{source}: " if source else "", allow)


def check_arrays(arrays: Mapping[str, object], fp16_names: Iterable[str], allow: bool = False,
                 where: str = "") -> list[Overflow]:
    """Check the inputs named in `fp16_names` (those stored as fp16) against fp16's range."""
    wanted = set(fp16_names)
    found = [o for name, a in arrays.items()
             if name in wanted and (o := overflow("input", name, np.asarray(a))) is not None]
    return _report(found, f"{where}: " if where else "", allow)

