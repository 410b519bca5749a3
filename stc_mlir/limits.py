"""Resource limits checked up front, before any compile or host work is done.

`check_module_fits(module, target)` refuses a graph- or schedule-level model whose
inputs, outputs, weights and largest intermediate cannot be in the target's DDR together
(a lower bound: every schedule keeps the model's inputs, outputs and weights in DDR for the
whole run), naming the bytes and the largest batch that would fit. `check_host_bytes`
refuses host arrays (random inputs, the reference interpreter's tensors) beyond a sane
share of the machine's memory, instead of letting numpy try to allocate terabytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Attribute, SSAValue

from stc_mlir.errors import StcError

HOST_FRACTION = 0.5
"""Host arrays may take at most this share of the machine's physical memory
(override with STC_HOST_MEMORY_LIMIT, in bytes)."""


class ResourceError(StcError):
    """A model or batch that cannot fit the target's memory or the host's."""


def tensor_bytes(t: Attribute) -> int:
    """Bytes of a tensor on the device (floating point elements are fp16 there)."""
    if not isinstance(t, TensorType):
        return 0
    element = t.element_type
    itemsize = max(1, element.width.data // 8) if isinstance(element, IntegerType) else 2
    return math.prod(max(d, 0) for d in t.get_shape()) * itemsize


def _sum(values: Iterable[SSAValue]) -> int:
    return sum(tensor_bytes(v.type) for v in values)


def fmt(n: int) -> str:
    return f"{n:,}"


def check_module_fits(module: ModuleOp, target) -> None:
    """Raise `ResourceError` if `module`'s buffers cannot fit the DDR of `target` (a name,
    a path or a `Target`) together."""
    from stc_mlir import target as targets

    target = targets.load(target)
    for f in module.ops:
        if not isinstance(f, func.FuncOp) or f.body.block is None or not f.body.blocks:
            continue
        block = f.body.block
        inputs = _sum(block.args)
        returned = block.last_op.operands if block.last_op is not None else ()
        outputs = _sum(returned)
        weights, largest, largest_op = 0, 0, None
        for op in f.walk():
            if op.name == "graph.constant":
                weights += _sum(op.results)
                continue
            for r in op.results:
                size = tensor_bytes(r.type)
                if r not in returned and size > largest:
                    largest, largest_op = size, op
        need = inputs + outputs + weights + largest
        ddr = target.memory["ddr"].size
        if need <= ddr:
            continue
        detail = (f"inputs {fmt(inputs)}, outputs {fmt(outputs)}, weights {fmt(weights)}, largest "
                  f"intermediate {fmt(largest)}" + (f" ({largest_op.name})" if largest_op is not None else ""))
        raise ResourceError(f"@{f.sym_name.data} needs at least {fmt(need)} bytes of DDR ({detail}), "
                            f"more than the {fmt(ddr)}-byte DDR of {target.name}" + _hint(block, need, weights, ddr))


def _hint(block, need: int, weights: int, ddr: int) -> str:
    from stc_mlir.dialects.schedule import batch_of

    batch = batch_of(block.args[0].type) if block.args else None
    if not batch or weights >= ddr:
        return ""
    per_sample = (need - weights) / batch
    fits = int((ddr - weights) // per_sample)
    return f"; use a batch of at most {fits:,}" if fits >= 1 else "; even a batch of 1 does not fit"


def host_limit() -> int:
    """The most bytes of host arrays stc-mlir allocates for one purpose."""
    env = os.environ.get("STC_HOST_MEMORY_LIMIT")
    if env:
        try:
            return int(env)
        except ValueError:
            raise ResourceError(f"STC_HOST_MEMORY_LIMIT={env!r}: expected a number of bytes") from None
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * HOST_FRACTION)
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def check_host_bytes(nbytes: int, what: str) -> None:
    """Raise `ResourceError` if `nbytes` of host memory for `what` is beyond `host_limit()`."""
    limit = host_limit()
    if nbytes > limit:
        raise ResourceError(f"{what} need {fmt(nbytes)} bytes of host memory, more than the "
                            f"{fmt(limit)} allowed (half the machine's memory; set "
                            f"STC_HOST_MEMORY_LIMIT to change it)")


def check_reference_fits(module: ModuleOp) -> None:
    """Refuse to interpret `module` on the host when its tensors (as float32, all alive at
    once in the reference interpreter) exceed `host_limit()`."""
    total = 0
    for op in module.walk():
        for r in op.results:
            if isinstance(r.type, TensorType):
                total += math.prod(max(d, 0) for d in r.type.get_shape()) * 4
    check_host_bytes(total, "the reference interpreter's tensors")
