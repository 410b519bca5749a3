"""fp16 range checks: values that would silently become inf when stored as fp16.

The NPU computes in fp16 (largest finite value 65504). A weight or an input beyond that
turns into inf on conversion and every result downstream is inf or nan (the check's
cosine is nan). `check_model` looks at an ONNX model's float constants (initializers and
Constant nodes) before the importer converts them, `check_arrays` at the inputs of a run;
both name the tensor, how many values are out of range and the largest magnitude, and
raise `Fp16RangeError` unless told to go on (`allow=True`, `--allow-fp16-overflow`), in
which case each finding is an `Fp16OverflowWarning`. Values that are already inf or nan in the
source are left alone: they are not an overflow.

One kind of large constant is not an error: an additive attention mask. Float32 exports
write "minus a huge number" where a score must not count (HuggingFace's XLNet subtracts
`1e30 * mask`, newer models add `(1 - mask) * finfo(float32).min`) and the scores then go
to a Softmax. `additive_masks` finds the constants whose every path reaches a Softmax
through mask arithmetic (Mul, Cast, Neg, reshapes, transposes, Where's branches) and then
a single Add/Sub into the scores (and more additions, reshapes or transposes after it);
their out-of-range values are saturated to -/+`MASK_FILL` (`saturate_mask`) when the
importer stores floats as fp16, and `check_model` does not count them. A masked score then
is `score - 10000`, whose exponential underflows to 0 in fp16 exactly as `score - 1e30`
does in fp32, and a few masks added together stay finite (65504 would become -inf on the
first addition, and -inf - -inf is NaN in the softmax of a fully masked row). Only a row
whose every score is masked differs: fp32 gives it a uniform distribution, fp16 the softmax
of the unmasked scores (both are padding that models discard).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from stc_mlir.errors import StcError

FP16_MAX = float(np.finfo(np.float16).max)  # 65504
FLAG = "--allow-fp16-overflow"
MASK_FILL = 10000.0  # HuggingFace's additive mask value before finfo.min (exp(-10000) is 0 in fp16)


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
    if float(np.max(np.abs(a))) < 65520.0:  # the common case, one pass (nan or inf: look closer)
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


# ops through which a mask stays a mask (before it is added to the scores) / scores stay scores
_MASK_OPS = frozenset({"Mul", "Cast", "CastLike", "Neg", "Identity", "Unsqueeze", "Squeeze", "Reshape",
                       "Expand", "Transpose", "Flatten", "Einsum", "Tile", "Concat"})
_SCORE_OPS = frozenset({"Add", "Sub", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Expand",
                        "Transpose", "Flatten", "Cast", "CastLike"})
_SOFTMAX = frozenset({"Softmax", "LogSoftmax"})


def additive_masks(model, constants: Iterable[tuple[str, str, np.ndarray]] | None = None) -> dict[str, str]:
    """The float constants of `model`'s main graph with values beyond fp16's range that are
    only additive attention masks (see the module doc): {constant: the Softmax node it
    reaches}. Their out-of-range values are what `saturate_mask` replaces. `constants`
    ((kind, name, array) triples) saves reading the model's constants again."""
    graph = model.graph
    consumers: dict[str, list] = {}
    for node in graph.node:
        for t in node.input:
            if t:
                consumers.setdefault(t, []).append(node)
    outputs = {o.name for o in graph.output}

    memo: dict[tuple[str, bool], str | None] = {}

    def reaches_softmax(tensor: str, scores: bool) -> str | None:
        """The Softmax every path from `tensor` ends in (None: some path does not)."""
        if (tensor, scores) not in memo:
            memo[tensor, scores] = None  # (a cycle would be a broken graph: not a mask)
            memo[tensor, scores] = _reaches(tensor, scores)
        return memo[tensor, scores]

    def _reaches(tensor: str, scores: bool) -> str | None:
        users = consumers.get(tensor, [])
        if tensor in outputs or not users:
            return None
        found = None
        for node in users:
            op = node.op_type
            if scores and op in _SOFTMAX:
                found = found or (node.name or node.output[0])
                continue
            if op == "Where" and list(node.input).index(tensor) == 0:
                return None  # a condition, not a value
            if op == "Einsum" and len(node.input) != 1:
                return None  # a contraction mixes the mask into other values
            if not scores and op in ("Add", "Sub", "Where"):
                nxt = True  # the mask is added to (or put into) the scores here
            elif (op in _SCORE_OPS) if scores else (op in _MASK_OPS):
                nxt = scores
            else:
                return None
            for out in node.output:
                if not out:
                    continue
                hit = reaches_softmax(out, nxt)
                if hit is None:
                    return None
                found = found or hit
        return found

    masks = {}
    for kind, name, array in (_constants(model) if constants is None else constants):
        if overflow(kind, name, array) is None:
            continue
        hit = reaches_softmax(name, False)
        if hit is not None:
            masks[name] = hit
    return masks


def saturate_mask(array: np.ndarray) -> np.ndarray:
    """An additive mask constant with its values beyond fp16's range set to -/+MASK_FILL."""
    a = np.asarray(array)
    out = np.isfinite(a) & (np.abs(a) >= 65520.0)
    return np.where(out, np.sign(a) * MASK_FILL, a).astype(a.dtype)


def check_model(model, source: str = "", allow: bool = False) -> list[Overflow]:
    """Check the float constants of an ONNX `model` against fp16's range (additive attention
    masks excepted: the importer saturates them, see the module doc)."""
    found = [o for kind, name, a in _constants(model) if (o := overflow(kind, name, a)) is not None]
    if found:
        masks = additive_masks(model)
        found = [o for o in found if o.tensor not in masks]
    return _report(found, f"{source}: " if source else "", allow)


def check_arrays(arrays: Mapping[str, object], fp16_names: Iterable[str], allow: bool = False,
                 where: str = "") -> list[Overflow]:
    """Check the inputs named in `fp16_names` (those stored as fp16) against fp16's range."""
    wanted = set(fp16_names)
    found = [o for name, a in arrays.items()
             if name in wanted and (o := overflow("input", name, np.asarray(a))) is not None]
    return _report(found, f"{where}: " if where else "", allow)



@dataclass(frozen=True)
class ActivationOverflow:
    """The first graph op whose result leaves fp16's range: `largest` is the largest
    magnitude it computes from its (fp16) operands in fp32 (inf if even fp32 overflows, nan
    if the op makes NaN from finite operands: log or sqrt of a negative...)."""

    op: str  # e.g. "graph.conv2d 'conv2_1'"
    largest: float

    def __str__(self) -> str:
        if np.isnan(self.largest):
            return f"{self.op} makes NaN from finite operands"
        return (f"{self.op} computes values up to {self.largest:.3g} (fp16 holds up to {FP16_MAX:g}): "
                f"they become inf, and inf - inf or 0 * inf downstream NaN")


class _Found(Exception):
    pass


def first_overflow(module, inputs: Mapping[str, np.ndarray]) -> ActivationOverflow | None:
    """Where an fp16 graph-level `module` first leaves fp16's range on `inputs`: the first
    graph op (in graph order, with the reference interpreter) whose result has an inf or a
    NaN while its operands are finite; None if every value stays finite. What to tell a
    user whose outputs are inf or NaN: the compiler computed what the model says, in fp16."""
    from stc_mlir import reference

    def finite(a) -> bool:
        a = np.asarray(a)
        return not np.issubdtype(a.dtype, np.floating) or bool(np.isfinite(a).all())

    f = reference.find_function(module)
    env_of: dict = {arg: np.asarray(inputs[name]) for name, arg in zip(reference.input_names(f), f.args)
                    if name in inputs}

    def observe(value, array) -> None:
        env_of[value] = array
        if finite(array):
            return
        op = value.owner
        operands = [env_of.get(v) for v in op.operands]
        if not all(a is None or finite(a) for a in operands):
            return  # (unreachable: an operand's op would have been reported first)
        raise _Found(value, op)

    try:
        with np.errstate(all="ignore"):
            reference.run(module, inputs, observe=observe)
    except _Found as found:
        value, op = found.args
        return ActivationOverflow(f"{op.name} '{value.name_hint or '?'}'", _fp32_largest(op, value, env_of))
    return None


def _fp32_largest(op, value, env_of) -> float:
    """The op recomputed with float operands in fp32: how far beyond fp16 it goes."""
    from stc_mlir import reference

    kernel = reference.KERNELS.get(type(op))
    args = []
    for v in op.operands:
        a = env_of.get(v)
        if a is None:
            owner = v.owner
            a = owner.numpy() if hasattr(owner, "numpy") else None
        if a is None:
            return float("inf")
        a = np.asarray(a)
        args.append(a.astype(np.float32) if a.dtype == np.float16 else a)
    if kernel is None:
        return float("inf")
    with np.errstate(all="ignore"):
        result = kernel(op, args, op.props())
    out = np.asarray(result[op.results.index(value)] if isinstance(result, list | tuple) else result)
    if not np.issubdtype(out.dtype, np.floating):
        return float("inf")
    if np.isnan(out).any() and not np.isinf(out).any() and np.abs(out[np.isfinite(out)]).max(initial=0) < 65520:
        return float("nan")
    return float(np.abs(out).max())
