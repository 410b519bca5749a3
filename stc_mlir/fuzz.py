"""Differential fuzzing of the whole compiler: random ONNX graphs under random schedules.

    case = make_case(seed, number)          # a random ONNX model, its inputs and a schedule recipe
    outcome = run_case(case)                # compile, emulate, compare
    outcome.status                          # "ok", "refused", "mismatch" or "crash"

A case is drawn from `numpy.random.default_rng([seed, number])` alone, so any case of a run
is rebuilt from its two numbers. Its graph (`random_model`) takes 1-8 steps of 1-4 nodes on
small tensors of three families (NCHW images, [batch, rows, width] token rows, [batch,
width] vectors): convolutions of random kernel, stride, padding (asymmetric too), dilation
and groups (depthwise too), pools, matmul / gemm (activation x activation too), elementwise
ops with broadcasts, batch norm, softmax, layer norm, concat / split / slice / reshape /
flatten / transpose, reductions and residual blocks, over 1-3 inputs of batch 1-8; every
value no node uses is an output. Axis 0 is the batch throughout, as the schedules assume.

Its schedule is one of the automatic levels 0-3 or a random manual schedule built with the
API of `stc_mlir.graph_schedule` (`random_plan` / `apply_plan`): consecutive ops grouped at
random cut points (a run of ops is a group when only its last result leaves it), some
groups fused, groups split along the batch by random factors that keep samples apart, a
random topological order of the items, random mem scopes and core binds (1, 2, 4 or 8 parts
of 1-8 cores, cores in random order). The plan is recorded as plain data, so a reproducer
replays it without the random generator.

`run_case` compiles the case up to `schedule-verify`, runs the reference interpreter on the
schedule-level IR (and on the graph-level IR), lowers and allocates, emulates (hazard checks
on) and compares the emulator's outputs with both references and with onnxruntime (fp32 on
the ONNX model). The outcome is:

- *refused*: the schedule API, the default schedule, the automatic scheduler, the verifier,
  the lowering or the allocator declined the case with a `StcError` (one line). Counted by
  stage and reason, not a failure;
- *mismatch*: an output differs beyond `Tolerance`, or the emulator reported a hazard;
- *crash*: any other exception (a traceback from inside the compiler), an error from the
  importer, the reference or the emulator (the generator's model is valid and a compiled
  program must run), or a case past `CASE_TIMEOUT` (a hang).

`shrink` simplifies a failing manual schedule while it fails the same way, and
`write_reproducer` puts the case in a directory: the ONNX model, the inputs, the schedule
(`schedule.py`: the plan, for `stc-run model.onnx --schedule schedule.py:schedule`), the
scheduled IR when it got that far (`stc-run scheduled.mlir`) and the outcome.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from stc_mlir.errors import StcError

OPSET = 17
SCOPES = ("L1", "LLB", "DDR")
LEVELS = (0, 1, 2, 3)
MANUAL = "manual"


# ----------------------------------------------------------------------------- tolerances


@dataclass(frozen=True)
class Tolerance:
    """When two fp16 results agree: cosine >= `cosine` and max |a - b| <= `max_abs` times
    max(1, max |golden|).

    The emulator and the reference interpreter share their kernels (fp32 arithmetic, fp16
    storage): they differ only where the lowering sums in another order or cuts a sum into
    chunks (a conv's input channels, a matmul's K), where a stored fp16 value may round to
    its neighbour: 1 ulp, 2^-11 relative, which the following ops can grow by their gain
    (weights are drawn for gain ~1, layer norm and softmax stay below 4). Eight such steps
    of 2^-10 stay under 2^-7 = 0.0078: `REFERENCE` (the largest seen over 3,700 cases, 5.8e-4,
    is in docs/reliability.md). Against onnxruntime, which computes in fp32 from fp32
    inputs and weights, every input, weight and intermediate of ours is rounded to fp16
    (2^-11 relative each) and errors of up to 8 ops add up: `ONNXRUNTIME` allows 2^-5.
    The cosine is not asked of a result that lies within the bound of zero everywhere (a sum
    that cancels, like the sum of x - mean(x)): its direction is rounding noise."""

    cosine: float
    max_abs: float

    def check(self, golden: np.ndarray, actual: np.ndarray) -> tuple[bool, dict[str, float]]:
        from stc_mlir.compare import cosine

        g = np.asarray(golden, np.float64)
        a = np.asarray(actual, np.float64)
        if g.shape != a.shape:
            return False, {"cosine": 0.0, "max_abs": math.inf, "bound": 0.0, "peak": 0.0}
        if not (np.isfinite(g).all() and np.isfinite(a).all()):
            same = bool(np.array_equal(g, a, equal_nan=True))
            return same, {"cosine": 1.0 if same else 0.0, "max_abs": 0.0 if same else math.inf, "bound": 0.0,
                          "peak": 0.0}
        peak = float(np.abs(g).max(initial=0.0))
        diff = float(np.abs(a - g).max(initial=0.0))
        cos = cosine(g, a)
        bound = self.max_abs * max(1.0, peak)
        # a result within the bound of zero everywhere (a sum that cancels) is rounding noise:
        # it has no direction for the cosine to compare
        direction = cos >= self.cosine or peak <= bound
        return direction and diff <= bound, {"cosine": cos, "max_abs": diff, "bound": bound, "peak": peak}


REFERENCE = Tolerance(cosine=0.999, max_abs=2.0 ** -7)
ONNXRUNTIME = Tolerance(cosine=0.999, max_abs=2.0 ** -5)


# ----------------------------------------------------------------------------- graphs


class _Graph:
    """An ONNX graph under construction, with the shape of every value."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.used: set[str] = set()
        self.order: list[str] = []          # activations in creation order
        self.count = 0

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def input(self, shape: Sequence[int]) -> str:
        name = f"in{len(self.inputs)}"
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        self.shapes[name] = tuple(shape)
        self.order.append(name)
        return name

    def const(self, array: np.ndarray, base: str = "w") -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def ints(self, values: Sequence[int]) -> str:
        name = self.fresh("i")
        self.inits.append(numpy_helper.from_array(np.asarray(values, np.int64), name))
        return name

    def weight(self, shape: Sequence[int], fan_in: int) -> str:
        return self.const(self.rng.standard_normal(shape) / math.sqrt(max(fan_in, 1)))

    def node(self, op: str, inputs: Sequence[str], shapes: Sequence[Sequence[int]], **attrs) -> list[str]:
        outs = [self.fresh(op.lower()[:4]) for _ in shapes]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=outs[0], **attrs))
        self.used.update(inputs)
        for name, shape in zip(outs, shapes):
            self.shapes[name] = tuple(int(d) for d in shape)
            self.order.append(name)
        return outs

    def pick(self, rank: int | None = None, shape: Sequence[int] | None = None, avoid: str | None = None) -> str | None:
        """An activation, recent ones more likely; None if none fits."""
        names = [n for n in self.order if n != avoid and (rank is None or len(self.shapes[n]) == rank)
                 and (shape is None or self.shapes[n] == tuple(shape))]
        if not names:
            return None
        weights = np.arange(1, len(names) + 1, dtype=np.float64) ** 2
        return names[self.rng.choice(len(names), p=weights / weights.sum())]

    def model(self) -> onnx.ModelProto:
        producers = {o for n in self.nodes for o in n.output}
        sinks = [n for n in self.order if n in producers and n not in self.used]
        outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(self.shapes[n])) for n in sinks]
        graph = helper.make_graph(self.nodes, "fuzz", self.inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="stc_mlir.fuzz")
        model.ir_version = 8
        return model


def _choice(rng: np.random.Generator, values: Sequence):
    return values[int(rng.integers(len(values)))]


UNARY = ("Relu", "Sigmoid", "Tanh", "Abs", "Neg", "LeakyRelu", "Erf", "Clip")
BINARY = ("Add", "Sub", "Mul", "Max", "Min", "Div")


def _unary(gr: _Graph, x: str) -> None:
    op = _choice(gr.rng, UNARY)
    attrs = {"alpha": 0.1} if op == "LeakyRelu" else {}
    inputs = [x]
    if op == "Clip":
        inputs += [gr.const(np.float32(-1.0), "lo"), gr.const(np.float32(1.5), "hi")]
    gr.node(op, inputs, [gr.shapes[x]], **attrs)


def _binary(gr: _Graph, x: str) -> None:
    """x op y: y another activation of x's shape, a broadcast activation, or a constant."""
    rng, shape = gr.rng, gr.shapes[x]
    op = _choice(gr.rng, BINARY)
    kind = rng.integers(4)
    other = gr.pick(shape=shape, avoid=x) if op != "Div" else None
    if kind == 0 and other is not None:
        y, out = other, shape
    elif kind == 1 and op != "Div":
        # a per-sample broadcast activation: a keepdims mean over the last axes
        axes = list(range(2, len(shape))) if len(shape) > 2 else [1]
        mean_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
        (y,) = gr.node("ReduceMean", [x], [mean_shape], axes=axes, keepdims=1)
        out = shape
    else:
        # a constant: per channel (NCHW), per last axis, or a scalar
        if len(shape) == 4 and rng.integers(2):
            cshape: tuple[int, ...] = (shape[1], 1, 1)
        elif rng.integers(2):
            cshape = (shape[-1],)
        else:
            cshape = ()
        values = rng.standard_normal(cshape)
        if op == "Div":
            values = np.sign(values + 1e-3) * (0.5 + np.abs(values))   # |divisor| >= 0.5
        y, out = gr.const(values, "c"), shape
    operands = [x, y] if rng.integers(2) or op in ("Sub", "Div") else [y, x]
    gr.node(op, operands, [out])


def _conv(gr: _Graph, x: str) -> None:
    rng = gr.rng
    n, c, h, w = gr.shapes[x]
    k = [int(_choice(rng, (1, 2, 3, 3, 5))) for _ in range(2)]
    if rng.integers(3):
        k = [k[0], k[0]]
    strides = [int(_choice(rng, (1, 1, 2))) for _ in range(2)]
    dil = [int(_choice(rng, (1, 1, 1, 2))) for _ in range(2)]
    pads = [int(rng.integers(0, kk)) if kk > 1 else 0 for kk in k] * 2
    if rng.integers(3) == 0:
        pads = [int(rng.integers(0, kk)) if kk > 1 else 0 for kk in k + k]
    ho = (h + pads[0] + pads[2] - dil[0] * (k[0] - 1) - 1) // strides[0] + 1
    wo = (w + pads[1] + pads[3] - dil[1] * (k[1] - 1) - 1) // strides[1] + 1
    if ho < 1 or wo < 1:
        k, dil, pads, ho, wo = [1, 1], [1, 1], [0, 0, 0, 0], (h - 1) // strides[0] + 1, (w - 1) // strides[1] + 1
    kind = rng.integers(4)
    if kind == 0:      # depthwise (channel multiplier 1 or 2)
        groups, cout = c, c * int(_choice(rng, (1, 2)))
    elif kind == 1:    # grouped
        divisors = [d for d in (2, 4) if c % d == 0]
        groups = int(_choice(rng, divisors)) if divisors else 1
        cout = groups * int(_choice(rng, (1, 2, 4)))
    else:
        groups, cout = 1, int(_choice(rng, (4, 8, 16)))
    fan_in = c // groups * k[0] * k[1]
    inputs = [x, gr.weight((cout, c // groups, *k), fan_in)]
    if rng.integers(2):
        inputs.append(gr.const(rng.standard_normal(cout) * 0.1, "b"))
    gr.node("Conv", inputs, [(n, cout, ho, wo)], kernel_shape=k, strides=strides, pads=pads,
            dilations=dil, group=groups)


def _pool(gr: _Graph, x: str) -> None:
    rng = gr.rng
    n, c, h, w = gr.shapes[x]
    if rng.integers(4) == 0:
        gr.node(_choice(rng, ("GlobalAveragePool", "GlobalMaxPool")), [x], [(n, c, 1, 1)])
        return
    op = _choice(rng, ("MaxPool", "AveragePool"))
    k = int(min(_choice(rng, (2, 3)), h, w))
    stride = int(_choice(rng, (1, 2)))
    pad = int(rng.integers(0, k // 2 + 1)) if k > 1 else 0
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [pad] * 4}
    if op == "AveragePool" and pad and rng.integers(2):
        attrs["count_include_pad"] = 1
    gr.node(op, [x], [(n, c, ho, wo)], **attrs)


def _batchnorm(gr: _Graph, x: str) -> None:
    rng, c = gr.rng, gr.shapes[x][1]
    params = [gr.const(rng.standard_normal(c) * 0.3 + 1), gr.const(rng.standard_normal(c) * 0.1),
              gr.const(rng.standard_normal(c) * 0.1), gr.const(rng.uniform(0.5, 1.5, c))]
    gr.node("BatchNormalization", [x, *params], [gr.shapes[x]])


def _matmul(gr: _Graph, x: str) -> None:
    rng, shape = gr.rng, gr.shapes[x]
    d = shape[-1]
    if len(shape) == 3 and rng.integers(3) == 0:
        # activation x activation: x @ other^T (attention scores) or x @ other
        other = gr.pick(rank=3, shape=shape)
        if other is not None:
            n, r, _ = shape
            (t,) = gr.node("Transpose", [other], [(n, d, r)], perm=[0, 2, 1])
            (scores,) = gr.node("MatMul", [x, t], [(n, r, r)])
            gr.node("Mul", [scores, gr.const(np.float32(1 / d), "scale")], [(n, r, r)])  # keeps chains in range
            return
    if len(shape) == 2 and rng.integers(2):
        dout = int(_choice(rng, (8, 16, 24, 32)))
        trans_b = int(rng.integers(2))
        wshape = (dout, d) if trans_b else (d, dout)
        inputs = [x, gr.weight(wshape, d)]
        if rng.integers(2):
            inputs.append(gr.const(rng.standard_normal(_choice(rng, ((dout,), (1, dout)))) * 0.1, "b"))
        gr.node("Gemm", inputs, [(shape[0], dout)], transB=trans_b, alpha=float(_choice(rng, (1.0, 0.5))))
        return
    dout = int(_choice(rng, (8, 16, 32)))
    gr.node("MatMul", [x, gr.weight((d, dout), d)], [(*shape[:-1], dout)])


def _norm(gr: _Graph, x: str) -> None:
    rng, shape = gr.rng, gr.shapes[x]
    if rng.integers(2):
        axis = -1 if len(shape) != 4 or rng.integers(2) else 1
        gr.node("Softmax", [x], [shape], axis=axis)
    else:
        d = shape[-1]
        scale, bias = gr.const(rng.standard_normal(d) * 0.3 + 1), gr.const(rng.standard_normal(d) * 0.1)
        gr.node("LayerNormalization", [x, scale, bias], [shape], axis=-1, epsilon=1e-5)


def _reduce(gr: _Graph, x: str) -> None:
    rng, shape = gr.rng, gr.shapes[x]
    op = _choice(rng, ("ReduceMean", "ReduceSum", "ReduceMax"))
    axis = len(shape) - 1 if len(shape) < 4 or rng.integers(2) else 1
    out = tuple(1 if i == axis else d for i, d in enumerate(shape))
    if op == "ReduceSum":   # opset 13: axes an input
        gr.node(op, [x, gr.ints([axis])], [out], keepdims=1)
    else:
        gr.node(op, [x], [out], axes=[axis], keepdims=1)


def _concat(gr: _Graph, x: str) -> None:
    rng, shape = gr.rng, gr.shapes[x]
    axis = int(rng.integers(1, len(shape)))
    others = [n for n in gr.order if n != x and len(gr.shapes[n]) == len(shape)
              and all(a == b for i, (a, b) in enumerate(zip(gr.shapes[n], shape)) if i != axis)]
    if others and rng.integers(3):
        y = _choice(rng, others)
    else:
        (y,) = gr.node("Relu", [x], [shape])
    out = list(shape)
    out[axis] += gr.shapes[y][axis]
    operands = [x, y] if rng.integers(2) else [y, x]
    gr.node("Concat", operands, [out], axis=axis)


def _cut_axis(gr: _Graph, x: str) -> int | None:
    """A random axis of `x` but the batch with 2 or more elements (None if there is none)."""
    axes = [a for a in range(1, len(gr.shapes[x])) if gr.shapes[x][a] >= 2]
    return int(_choice(gr.rng, axes)) if axes else None


def _split(gr: _Graph, x: str) -> None:
    rng, shape, axis = gr.rng, gr.shapes[x], _cut_axis(gr, x)
    if axis is None:
        _unary(gr, x)
        return
    first = int(rng.integers(1, shape[axis]))
    sizes = [first, shape[axis] - first]
    outs = [tuple(s if i == axis else d for i, d in enumerate(shape)) for s in sizes]
    a, b = gr.node("Split", [x, gr.ints(sizes)], outs, axis=axis)
    # only the next op uses the halves, which meet again there: a group with one output can
    # hold the split with it
    gr.order = gr.order[:-2]
    if outs[0] == outs[1] and rng.integers(2):
        gr.node(_choice(rng, ("Add", "Mul", "Max")), [a, b], [outs[0]])
    else:
        gr.node("Concat", [b, a], [shape], axis=axis)


def _slice(gr: _Graph, x: str) -> None:
    rng, shape, axis = gr.rng, gr.shapes[x], _cut_axis(gr, x)
    if axis is None:
        _unary(gr, x)
        return
    start = int(rng.integers(0, shape[axis] - 1))
    end = int(rng.integers(start + 1, shape[axis] + 1))
    out = tuple(end - start if i == axis else d for i, d in enumerate(shape))
    gr.node("Slice", [x, gr.ints([start]), gr.ints([end]), gr.ints([axis]), gr.ints([1])], [out])


def _transpose(gr: _Graph, x: str) -> None:
    shape = gr.shapes[x]
    perm = [0, *(gr.rng.permutation(len(shape) - 1) + 1).tolist()]
    if len(shape) == 4 and gr.rng.integers(2):
        perm = [0, 1, 3, 2]
    gr.node("Transpose", [x], [tuple(shape[p] for p in perm)], perm=perm)


def _reshape(gr: _Graph, x: str) -> None:
    rng, shape = gr.rng, gr.shapes[x]
    n, rest = shape[0], math.prod(shape[1:])
    if len(shape) == 4 and rng.integers(2):
        gr.node("Flatten", [x], [(n, rest)], axis=1)
        return
    if len(shape) == 4:
        out: tuple[int, ...] = (n, shape[1], shape[2] * shape[3])
    elif len(shape) == 3 and rng.integers(2):
        out = (n, rest)
    else:
        divisors = [d for d in (2, 4, 8) if rest % d == 0 and rest // d >= 2]
        d = int(_choice(rng, divisors)) if divisors else 1
        out = (n, rest // d, d) if len(shape) == 2 or rng.integers(2) else (n, d, rest // d)
    gr.node("Reshape", [x, gr.ints(out)], [out])


def _residual(gr: _Graph, x: str) -> None:
    """A block whose result is added back to its input: conv (images) or matmul (rows)."""
    shape = gr.shapes[x]
    if len(shape) == 4:
        c = shape[1]
        (y,) = gr.node("Conv", [x, gr.weight((c, c, 3, 3), 9 * c)], [shape], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    else:
        (y,) = gr.node("MatMul", [x, gr.weight((shape[-1], shape[-1]), shape[-1])], [shape])
    if gr.rng.integers(2):
        (y,) = gr.node("Relu", [y], [shape])
    gr.node("Add", [y, x] if gr.rng.integers(2) else [x, y], [shape])


IMAGE_OPS: list[tuple[Callable[[_Graph, str], None], int]] = [
    (_conv, 6), (_pool, 3), (_unary, 2), (_binary, 3), (_batchnorm, 1), (_concat, 2), (_split, 1),
    (_slice, 1), (_transpose, 1), (_reshape, 1), (_reduce, 1), (_norm, 1), (_residual, 2),
]
ROW_OPS: list[tuple[Callable[[_Graph, str], None], int]] = [
    (_matmul, 5), (_unary, 2), (_binary, 3), (_norm, 3), (_concat, 2), (_split, 1), (_slice, 1),
    (_transpose, 1), (_reshape, 1), (_reduce, 1), (_residual, 2),
]
VECTOR_OPS: list[tuple[Callable[[_Graph, str], None], int]] = [
    (_matmul, 5), (_unary, 2), (_binary, 3), (_norm, 2), (_concat, 1), (_split, 1), (_slice, 1),
    (_reshape, 1), (_reduce, 1), (_residual, 1),
]
FAMILIES = {4: IMAGE_OPS, 3: ROW_OPS, 2: VECTOR_OPS}


def _input_shape(rng: np.random.Generator, batch: int, rank: int, large: bool = False) -> tuple[int, ...]:
    """A small input shape; `large` ones (~0.1-1.2 MB) make the L1 and LLB capacities bite."""
    if rank == 4:
        if large:
            return (batch, int(_choice(rng, (16, 32))), int(rng.integers(24, 49)), int(rng.integers(24, 49)))
        return (batch, int(_choice(rng, (1, 3, 4, 8, 16))), int(rng.integers(3, 13)), int(rng.integers(3, 13)))
    if rank == 3:
        if large:
            return (batch, int(rng.integers(64, 129)), int(_choice(rng, (128, 256))))
        return (batch, int(rng.integers(2, 13)), int(_choice(rng, (8, 16, 24, 32))))
    return (batch, int(_choice(rng, (1024, 4096)) if large else _choice(rng, (8, 16, 32, 48))))


def random_model(rng: np.random.Generator, max_nodes: int = 8, large: float = 0.0) -> onnx.ModelProto:
    """A random ONNX model of 1-`max_nodes` steps on small tensors (see the module doc); with
    probability `large` its first input is large (0.1-1.2 MB: a case then takes seconds)."""
    gr = _Graph(rng)
    batch = int(_choice(rng, (1, 2, 2, 4, 4, 8)))
    rank = int(_choice(rng, (4, 4, 3, 2)))
    big = rng.random() < large   # drawn whatever `large` is: the cases stay the same
    for _ in range(int(_choice(rng, (1, 1, 1, 2, 3)))):
        same = rng.integers(2)
        gr.input(_input_shape(rng, batch, rank if same or not gr.inputs else int(_choice(rng, (4, 3, 2))),
                              big and not gr.inputs))
    for _ in range(int(rng.integers(1, max_nodes + 1))):
        x = gr.pick()
        assert x is not None
        table = FAMILIES[len(gr.shapes[x])]
        weights = np.array([w for _, w in table], np.float64)
        build = table[rng.choice(len(table), p=weights / weights.sum())][0]
        build(gr, x)
    for name in [i.name for i in gr.inputs]:
        if name not in gr.used:     # an unused input: give it a use so the model keeps it
            _unary(gr, name)
    return gr.model()


def model_inputs(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Standard-normal inputs for the model's graph inputs."""
    out = {}
    for info in model.graph.input:
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
        out[info.name] = rng.standard_normal(dims).astype(np.float32)
    return out


def describe(model: onnx.ModelProto) -> str:
    """`Conv,Relu,Add: in0 2x4x8x8 -> y 2x8x8x8` in one line."""
    def dims(info):
        return "x".join(str(d.dim_value) for d in info.type.tensor_type.shape.dim)

    ops = ",".join(n.op_type for n in model.graph.node)
    ins = " ".join(f"{i.name} {dims(i)}" for i in model.graph.input)
    outs = " ".join(f"{o.name} {dims(o)}" for o in model.graph.output)
    return f"{ops}: {ins} -> {outs}"


# ----------------------------------------------------------------------------- schedules


def random_plan(module, rng: np.random.Generator) -> dict:
    """A random manual schedule for the graph-level `module` (after the graph passes), as
    plain data: groups as lists of op indices (block order of the top-level graph ops), their
    split factors and fusion. `apply_plan` adds, the first time it runs, the items in
    execution order with their placements (`items`: [index in ListItems after the splits,
    mem scope, core bind]), so the plan then replays without the generator. Valid by
    construction where the API can tell (groups with one output, factors that divide the
    batch of a group that keeps samples apart); capacities are left to the verifier."""
    from xdsl.dialects import func

    from stc_mlir.dialects import graph as g
    from stc_mlir.dialects import schedule as s
    from stc_mlir.reference import find_function

    f = find_function(module)
    ops = [op for op in f.body.block.ops if isinstance(op, g.GraphOp) and not isinstance(op, g.ConstantOp)]
    cut_p = float(_choice(rng, (0.0, 0.3, 0.6, 1.0)))
    returned = {v for op in f.body.block.ops if isinstance(op, func.ReturnOp) for v in op.operands}

    def closed(run: list[int]) -> bool:
        """Only the last op's (single) result is used outside the run."""
        members = {ops[j] for j in run}
        return len(ops[run[-1]].results) == 1 and all(
            use.operation in members for j in run[:-1] for r in ops[j].results for use in r.uses)

    groups: list[list[int]] = []
    start = 0
    while start < len(ops):
        run: list[int] = []
        for i in range(start, len(ops)):
            run.append(i)
            must = ops[i].results[0] in returned or i == len(ops) - 1  # a run cannot grow past an output
            if closed(run) and (must or rng.random() < cut_p):
                break
        if not closed(run):
            # no cut closes this run: close the shortest closed prefix, else leave its first op alone
            run = next((run[:k] for k in range(1, len(run) + 1) if closed(run[:k])), run[:1])
        groups.append(run)
        start = run[-1] + 1
    plan_groups = []
    for members in groups:
        ok = closed(members)
        batch = s.batch_of(ops[members[-1]].results[0].type)
        factor = 1
        if ok and batch and s.batch_mixing([ops[j] for j in members], batch) is None:
            factor = int(_choice(rng, [d for d in (1, 1, 2, 4, 8) if batch % d == 0]))
        plan_groups.append({"ops": members, "split": factor, "fused": bool(ok and rng.random() < 0.1), "group": ok})
    return {"groups": plan_groups, "seed": int(rng.integers(2 ** 31)),
            "scope_bias": _choice(rng, ("any", "L1", "LLB", "DDR")),
            "parts_bias": _choice(rng, ("any", "one", "many"))}


def _core_bind(rng: np.random.Generator, batch: int | None, separable: bool, bias: str) -> list[list[int]]:
    parts_choices = [p for p in (1, 2, 4, 8) if batch and batch % p == 0 and (p == 1 or separable)] or [1]
    if bias == "one":
        parts = 1
    elif bias == "many":
        parts = max(parts_choices)
    else:
        parts = int(_choice(rng, parts_choices))
    per = int(_choice(rng, [c for c in (1, 2, 4, 8) if parts * c <= 8]))
    cores = rng.permutation(8)[: parts * per].tolist()
    if rng.integers(2):
        cores = sorted(cores)
    return [cores[i * per:(i + 1) * per] for i in range(parts)]


def apply_plan(mod, plan: dict) -> None:
    """Build the schedule `plan` describes with the graph_schedule API (in place)."""
    from stc_mlir.dialects import graph as g
    from stc_mlir.dialects import schedule as s
    from stc_mlir.graph_schedule import (
        FuseTargetOps, GetNPUSubFunctions, Group, GroupOps, ListItems, NPUMemScope, Schedule, ScheduleInfo,
        SplitGroups,
    )

    rng = np.random.default_rng(plan["seed"])
    func = GetNPUSubFunctions(mod["main"])[0]
    ops = [op for op in func.block.ops if isinstance(op, g.GraphOp) and not isinstance(op, g.ConstantOp)]
    specs = [spec for spec in plan["groups"] if spec["group"]]
    groups = {}
    for spec in specs:
        members = [ops[i] for i in spec["ops"]]
        inside = set(members)
        inputs = list(dict.fromkeys(v for op in members for v in op.operands
                                    if v.owner not in inside and not isinstance(v.owner, g.ConstantOp)))
        groups[members[-1].results[0]] = (Group(inputs, members[-1].results[0]), spec)
    # fused groups first; the others then name a fused group by its handle, not its old output
    fused = [grp for grp, spec in groups.values() if spec["fused"]]
    if fused:
        FuseTargetOps(fused)(mod)
        for grp, spec in groups.values():
            if not spec["fused"]:
                grp.inputs = [groups[v][0] if v in groups and groups[v][1]["fused"] else v for v in grp.inputs]
    made = [grp for grp, spec in groups.values() if not spec["fused"]]
    if made:
        GroupOps(made)(mod)
    factors = {grp: spec["split"] for grp, spec in groups.values() if spec["split"] > 1}
    if factors:
        SplitGroups(factors)(mod)
    items = ListItems(func)
    if "items" not in plan:   # draw the order and placements once; the plan then replays them
        placements = []
        for op in _random_topological(items, rng):
            separable = True
            if isinstance(op, s.GroupOp) and op.batch:
                separable = s.batch_mixing(op.body_ops(), op.batch) is None
            elif isinstance(op, g.GraphOp) and op.results and s.batch_of(op.results[0].type):
                separable = s.batch_mixing([op], s.batch_of(op.results[0].type)) is None
            batch = op.batch if isinstance(op, s.ScheduledItem) else s.batch_of(op.results[0].type)
            bias = plan["scope_bias"]
            scope = bias if bias != "any" and rng.random() < 0.7 else _choice(rng, SCOPES)
            placements.append([items.index(op), scope, _core_bind(rng, batch, separable, plan["parts_bias"])])
        plan["items"] = placements
    Schedule([ScheduleInfo(items[k], NPUMemScope[scope], bind) for k, scope, bind in plan["items"]])(mod)


def _random_topological(items: list, rng: np.random.Generator) -> list:
    """The items in a random order in which every item follows its producers."""
    position = {op: i for i, op in enumerate(items)}
    waiting = {op: {position[v.owner] for v in op.operands if v.owner in position} for op in items}
    done: set[int] = set()
    order = []
    while len(order) < len(items):
        ready = [op for op in items if position[op] not in done and waiting[op] <= done]
        op = ready[int(rng.integers(len(ready)))]
        done.add(position[op])
        order.append(op)
    return order


# ----------------------------------------------------------------------------- cases


@dataclass
class Case:
    seed: int
    number: int
    model: onnx.ModelProto
    inputs: dict[str, np.ndarray]
    level: int | None               # None: a manual schedule (plan drawn after the graph passes)
    plan_seed: int
    large: float = 0.0              # the fraction of large cases it was drawn with

    @property
    def replay(self) -> str:
        return f"python bench/fuzz.py --seed {self.seed} --case {self.number} --large {self.large:g}"

    @property
    def schedule_name(self) -> str:
        return MANUAL if self.level is None else f"level {self.level}"


def make_case(seed: int, number: int, max_nodes: int = 8, large: float = 0.0) -> Case:
    """Case `number` of the run with `seed` (depends on those numbers and the options only)."""
    rng = np.random.default_rng([seed, number])
    model = random_model(rng, max_nodes, large)
    inputs = model_inputs(model, rng)
    level = _choice(rng, (None, None, None, *LEVELS))   # None: manual, 3 in 7
    return Case(seed, number, model, inputs, level, int(rng.integers(2 ** 31)), large)


@dataclass
class Outcome:
    seed: int
    number: int
    schedule: str
    status: str                      # ok | refused | mismatch | crash
    stage: str = ""                  # where it stopped: import, schedule, verify, lowering, emulator, compare
    reason: str = ""                 # the refusal / failure class, numbers stripped
    message: str = ""
    graph: str = ""
    seconds: float = 0.0
    metrics: dict = field(default_factory=dict)
    plan: dict | None = None
    scheduled_ir: str | None = None  # the schedule-level IR, when the case got that far
    traceback: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status in ("mismatch", "crash")

    def line(self) -> str:
        where = f"seed {self.seed} case {self.number} ({self.schedule})"
        text = f"{where}: {self.status}" + (f" at {self.stage}" if self.stage else "")
        return text + (f": {self.message}" if self.message else "")


def reason_of(message: str) -> str:
    """A refusal's class: its message with names, numbers and shapes stripped."""
    text = message.splitlines()[0] if message else ""
    text = re.sub(r"'[^']*'|\"[^\"]*\"|%[\w.#]+|@\w+", "_", text)
    text = re.sub(r"tensor<[^>]*>|\[[^\]]*\]|(?<![A-Za-z])\d[\d,.x]*", "N", text)  # "L1" stays
    return re.sub(r"\s+", " ", text)[:150]


class _Stage:
    """How far a case got (set as it goes, read by the handlers)."""

    name = ""


CASE_TIMEOUT = 120.0
"""Seconds a case may take before it counts as a hang (cases take well under a second)."""


class CaseTimeout(Exception):
    """A case ran past its time limit."""


def run_case(case: Case, plan: dict | None = None, timeout: float | None = CASE_TIMEOUT) -> Outcome:
    """Compile, emulate and compare one case (see the module doc); a manual case uses `plan`
    if given, else draws one. Past `timeout` seconds (main thread, POSIX) the case is a
    crash: a hang."""
    import signal
    import threading

    alarm = (timeout is not None and hasattr(signal, "setitimer")
             and threading.current_thread() is threading.main_thread())
    if alarm:
        def expire(signum, frame):
            raise CaseTimeout(f"no result after {timeout:g} s (a hang)")

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with np.errstate(over="ignore", invalid="ignore"):   # fp16 overflow is a result here
            return _run_case(case, plan)
    except CaseTimeout as e:  # outside the stages' handlers (between them, or at the very end)
        return Outcome(case.seed, case.number, case.schedule_name, "crash", "", "CaseTimeout: a hang",
                       f"CaseTimeout: {e}", describe(case.model), float(timeout or 0))
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _raise_hang(error: BaseException) -> None:
    """Re-raise the `CaseTimeout` an error was raised while handling, if any: the alarm can land
    inside a stage that wraps whatever it catches (the importer reading an initializer), and the
    case is a hang, not that stage's error."""
    seen = error
    while seen is not None:
        if isinstance(seen, CaseTimeout):
            raise seen
        seen = seen.__cause__ or seen.__context__


def _run_case(case: Case, plan: dict | None) -> Outcome:
    from stc_mlir import reference
    from stc_mlir.compare import onnxruntime_outputs
    from stc_mlir.dialects.npu import program_from_module
    from stc_mlir.emulator import run
    from stc_mlir.frontend import import_onnx
    from stc_mlir.ir import print_module
    from stc_mlir.pipeline import VERIFY, Pipeline

    start = time.perf_counter()
    out = Outcome(case.seed, case.number, case.schedule_name, "ok", graph=describe(case.model),
                  plan=copy.deepcopy(plan))
    stage = _Stage()

    def step(name: str):
        stage.name = name

    try:
        step("import")
        module = import_onnx(case.model)
        graph_module = module.clone()
        step("schedule")
        if case.level is None:
            def schedule(mod):
                from stc_mlir.graph_schedule import IRModule

                if out.plan is None:
                    out.plan = random_plan(IRModule.of(mod).module, np.random.default_rng(case.plan_seed))
                apply_plan(mod, out.plan)

            Pipeline(schedule, stop_after=VERIFY).run(module)
        else:
            Pipeline(level=case.level, stop_after=VERIFY).run(module)
        text = io.StringIO()
        print_module(module, text)
        out.scheduled_ir = text.getvalue()
        step("reference")
        want = reference.run(module, case.inputs)
        graph_want = reference.run(graph_module, case.inputs)
        step("lowering")
        Pipeline().run(module)
        step("emulator")
        program = program_from_module(module)
        got, report = run(program, {k: v for k, v in case.inputs.items()})
        if report.hazards:
            raise _Mismatch(f"{len(report.hazards)} hazard(s): {report.hazards[0]}")
        step("compare")
        names = [io.name for io in program.outputs]
        golden = onnxruntime_outputs(case.model, case.inputs)
        worst: dict[str, float] = {}
        for k, name in enumerate(names):
            checks = [("reference", REFERENCE, want[k]), ("graph reference", REFERENCE, graph_want[k])]
            if golden is not None:
                checks.append(("onnxruntime", ONNXRUNTIME, golden[k]))
            if golden is not None and fp16_overflow(golden[k], want[k]):
                checks.pop()   # the model leaves fp16's range: only our two fp16 results compare
                out.notes.append(OVERFLOW)
            for what, tol, expected in checks:
                ok, m = tol.check(expected, got[name])
                if not ok and what == "onnxruntime" and fp16_conditioned(expected, want[k]):
                    out.notes.append(CONDITIONED)   # the emulator agreed with the fp16 reference
                    continue
                key = what.replace(" ", "_")
                if m["peak"] > m["bound"]:   # see Tolerance: a cancelled result has no direction
                    worst[f"{key}_cos"] = min(worst.get(f"{key}_cos", 1.0), m["cosine"])
                # max |diff| / max(1, max |golden|): the quantity the bound limits
                worst[f"{key}_err"] = max(worst.get(f"{key}_err", 0.0), m["max_abs"] / max(1.0, m["peak"]))
                if not ok:
                    raise _Mismatch(f"output '{name}' vs {what}: cosine {m['cosine']:.6f}, max |diff| "
                                    f"{m['max_abs']:.4g} (bound {m['bound']:.4g})")
        out.metrics = worst
    except _Mismatch as e:
        out.status, out.stage, out.message = "mismatch", stage.name, str(e)
        out.reason = reason_of(str(e))
    except StcError as e:
        _raise_hang(e)
        message = str(e).strip()
        if stage.name in ("schedule", "lowering"):
            out.status = "refused"
            out.stage = _refusal_stage(e, stage.name, case.level)
        else:  # the generator's model, the reference or the emulator refusing: a finding
            out.status = "crash"
            out.stage = stage.name
            out.traceback = traceback.format_exc()
        out.message = f"{type(e).__name__}: {message.splitlines()[0] if message else ''}"
        out.reason = f"{type(e).__name__}: {reason_of(message)}"
    except Exception as e:  # noqa: BLE001 - a traceback from inside the compiler is what we look for
        _raise_hang(e)
        out.status, out.stage = "crash", stage.name
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        out.message = f"{type(e).__name__}: {first}"
        out.reason = f"{type(e).__name__}: {reason_of(first)}"
        out.traceback = traceback.format_exc()
    out.seconds = time.perf_counter() - start
    return out


OVERFLOW = "leaves fp16's range (compared with the references only)"
CONDITIONED = ("ill-conditioned in fp16: the fp16 reference is as far from onnxruntime as the emulator "
               "(cosine >= 0.99)")


def fp16_conditioned(golden: np.ndarray, reference: np.ndarray) -> bool:
    """Whether our fp16 reference itself misses onnxruntime's fp32 result by more than the
    bound, but keeps its direction (cosine >= 0.99): a model that fp16 cannot compute more
    closely (a layer norm of nearly equal values divides rounding noise by a tiny spread),
    not a compiler error. A kernel computing the wrong thing loses the direction."""
    ok, m = ONNXRUNTIME.check(golden, reference)
    return not ok and m["cosine"] >= 0.99


def fp16_overflow(golden: np.ndarray, reference: np.ndarray) -> bool:
    """Whether an fp32 result (onnxruntime's) lies beyond fp16's range, or our fp16
    reference overflowed on the way: the numbers cannot agree, a property of the model."""
    limit = float(np.finfo(np.float16).max)
    return bool(np.abs(np.asarray(golden, np.float64)).max(initial=0.0) > limit
                or not np.isfinite(np.asarray(reference, np.float64)).all())


class _Mismatch(Exception):
    pass


def _refusal_stage(error: Exception, stage: str, level: int | None) -> str:
    """Which part of the compiler refused: the schedule API (manual schedules), the default
    schedule (level 0), the automatic scheduler, the verifier, the lowering or the allocator."""
    name = type(error).__name__
    if name == "ScheduleVerifyError":
        return "verify"
    if name in ("AllocationError",):
        return "allocate"
    if name in ("LoweringError",):
        return "lowering"
    if name in ("PipelineError", "AutoScheduleError", "ScheduleAutoError"):
        return "auto-schedule"
    if stage == "schedule":
        return "schedule API" if level is None else "default schedule" if level == 0 else "auto-schedule"
    return stage


# ----------------------------------------------------------------------------- reproducers


def shrink(case: Case, outcome: Outcome) -> Outcome:
    """A simpler manual schedule that fails the same way (status and reason): greedily, each
    fused group unfused, each item's mem scope DDR, each core bind all 8 cores as one part,
    kept where the failure stays. Level cases and passing cases come back unchanged."""
    if outcome.plan is None or "items" not in outcome.plan or not outcome.failed:
        return outcome
    edits: list[tuple[str, int, object, object]] = [
        ("groups", k, "fused", False) for k, spec in enumerate(outcome.plan["groups"]) if spec["fused"]]
    for k in range(len(outcome.plan["items"])):
        edits += [("items", k, 1, "DDR"), ("items", k, 2, [list(range(8))])]
    best = outcome
    for table, k, key, value in edits:
        plan = copy.deepcopy(best.plan)
        if plan[table][k][key] == value:
            continue
        plan[table][k][key] = value
        trial = run_case(case, plan)
        if trial.status == best.status and trial.reason == best.reason:
            best = trial
    return best



def write_reproducer(case: Case, outcome: Outcome, directory: str) -> str:
    """Write `case` into `directory/seed{S}-case{N}/`; returns that path."""
    path = os.path.join(directory, f"seed{case.seed}-case{case.number}")
    os.makedirs(path, exist_ok=True)
    onnx.save(case.model, os.path.join(path, "model.onnx"))
    np.savez(os.path.join(path, "inputs.npz"), **case.inputs)
    info = asdict(outcome)
    info.pop("scheduled_ir")
    with open(os.path.join(path, "outcome.json"), "w") as f:
        json.dump(info, f, indent=1, default=str)
    if outcome.scheduled_ir:
        with open(os.path.join(path, "scheduled.mlir"), "w") as f:
            f.write(outcome.scheduled_ir)
    with open(os.path.join(path, "schedule.py"), "w") as f:
        f.write(_reproducer_script(case, outcome))
    return path


def _reproducer_script(case: Case, outcome: Outcome) -> str:
    if outcome.plan is not None:
        schedule = (f"PLAN = {outcome.plan!r}\n\n\ndef schedule(mod):\n"
                    f"    from stc_mlir.fuzz import apply_plan\n\n    apply_plan(mod, PLAN)\n    return mod\n")
        usage = "stc-run model.onnx --schedule schedule.py:schedule --check"
    else:
        schedule = f"LEVEL = {case.level}\n"
        usage = f"stc-run model.onnx --level {case.level} --check"
    return (f'"""Fuzz case: seed {case.seed} case {case.number}, {outcome.schedule}.\n\n'
            f"{outcome.line()}\n\nGraph: {outcome.graph}\n\nReplay: {case.replay}\n"
            f"or:     {usage}\n\"\"\"\n\n{schedule}")


# ----------------------------------------------------------------------------- runs


@dataclass
class Summary:
    """The figures of a run: counts by status and schedule, refusals by stage and reason,
    the failures, and the largest differences seen among the cases that passed."""

    seed: int
    cases: int = 0
    seconds: float = 0.0
    status: dict[str, int] = field(default_factory=dict)
    by_schedule: dict[str, dict[str, int]] = field(default_factory=dict)
    refusals: dict[str, int] = field(default_factory=dict)
    failures: list[Outcome] = field(default_factory=list)
    worst: dict[str, float] = field(default_factory=dict)
    worst_case: dict[str, int] = field(default_factory=dict)
    slowest: float = 0.0
    notes: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.cases += 1
        self.status[outcome.status] = self.status.get(outcome.status, 0) + 1
        row = self.by_schedule.setdefault(outcome.schedule, {})
        row[outcome.status] = row.get(outcome.status, 0) + 1
        if outcome.status == "refused":
            key = f"{outcome.stage}: {outcome.reason}"
            self.refusals[key] = self.refusals.get(key, 0) + 1
        if outcome.failed:
            self.failures.append(outcome)
        for note in set(outcome.notes):
            self.notes[note] = self.notes.get(note, 0) + 1
        for key, value in outcome.metrics.items():
            worse = min if key.endswith("_cos") else max
            if key not in self.worst or worse(self.worst[key], value) != self.worst[key]:
                self.worst[key], self.worst_case[key] = value, outcome.number
        self.slowest = max(self.slowest, outcome.seconds)

    def table(self) -> str:
        lines = [f"seed {self.seed}: {self.cases} cases in {self.seconds:.1f} s "
                 f"({self.seconds / max(self.cases, 1):.3f} s per case, slowest {self.slowest:.2f} s)"]
        lines.append("  " + ", ".join(f"{k} {self.status.get(k, 0)}" for k in ("ok", "refused", "mismatch", "crash")))
        for name in sorted(self.by_schedule):
            row = self.by_schedule[name]
            lines.append(f"  {name:8} " + ", ".join(f"{k} {v}" for k, v in sorted(row.items())))
        for note, n in sorted(self.notes.items()):
            lines.append(f"  {n} case(s) {note}")
        if self.worst:
            lines.append("  worst among passing cases (cosine; max |diff| / max(1, max |golden|)), by golden:")
            for what in ("reference", "graph_reference", "onnxruntime"):
                shown = [(f"{v:.6f}" if k.endswith("_cos") else f"{v:.2e}") + f" (case {self.worst_case[k]})"
                         for k in (f"{what}_cos", f"{what}_err") if (v := self.worst.get(k)) is not None]
                if shown:
                    lines.append(f"    {what.replace('_', ' '):16} " + ", ".join(shown))
        if self.refusals:
            lines.append("  refusals by stage and reason:")
            for key, n in sorted(self.refusals.items(), key=lambda kv: -kv[1]):
                lines.append(f"    {n:5}  {key}")
        for outcome in self.failures:
            lines.append("  FAIL " + outcome.line())
        return "\n".join(lines)


def run_cases(seed: int, numbers: Sequence[int], reproducers: str | None = None, max_nodes: int = 8,
              progress: Callable[[Outcome], None] | None = None, large: float = 0.0) -> Summary:
    """Run the cases `numbers` of seed `seed`; failing ones are written under `reproducers`."""
    summary = Summary(seed)
    start = time.perf_counter()
    for number in numbers:
        case = make_case(seed, number, max_nodes, large)
        outcome = run_case(case)
        summary.add(outcome)
        if outcome.failed and reproducers:
            write_reproducer(case, shrink(case, outcome), reproducers)
        if progress is not None:
            progress(outcome)
    summary.seconds = time.perf_counter() - start
    return summary
