"""The numpy reference interpreter: golden results for graph- and schedule-level IR.

Executes a `func.func` of graph ops op by op with the shared kernels of `stc_mlir.kernels`:
each result is computed in float32 and stored in its IR element type (fp16 storage, fp32
accumulation), exactly as the NPU emulator's kernels do. Schedule-level items run in
block order: a group runs its body, split and concat cut and join along the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from stc_mlir import kernels
from stc_mlir.dialects import graph as g
from stc_mlir.dialects import schedule as sched
from stc_mlir.errors import StcError


class InterpreterError(StcError):
    """The program cannot be executed: missing input, wrong input shape, unknown op."""


NAME_ATTR = "graph.name"
VALID_COUNT_ATTR = "graph.valid_count"
VALID_AXIS_ATTR = "graph.valid_axis"
"""On a function result that is a static upper bound of a data-dependent shape: the name
of the result holding how many leading entries along `graph.valid_axis` (default 0) are
valid (NonMaxSuppression's rows, TopK with a k computed at run time)."""


def find_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function called `name`, or `main`, or the only function of the module."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is not None or len(funcs) != 1:
        wanted = name or "main"
        for f in funcs:
            if f.sym_name.data == wanted:
                return f
        raise InterpreterError(
            f"no function '@{wanted}' in the module (functions: {', '.join('@' + f.sym_name.data for f in funcs) or 'none'})"
        )
    return funcs[0]


def _names(attrs, count: int, default: str) -> list[str]:
    names = []
    for i in range(count):
        d = attrs.data[i].data if attrs is not None else {}
        attr = d.get(NAME_ATTR)
        names.append(attr.data if isinstance(attr, StringAttr) else f"{default}{i}")
    return names


def input_names(f: func.FuncOp) -> list[str]:
    """Model input names: the `graph.name` argument attributes, else the SSA name hints."""
    names = _names(f.arg_attrs, len(f.args), "arg")
    return [
        n if f.arg_attrs is not None and NAME_ATTR in f.arg_attrs.data[i].data else (a.name_hint or n)
        for i, (n, a) in enumerate(zip(names, f.args))
    ]


def output_names(f: func.FuncOp) -> list[str]:
    return _names(f.res_attrs, len(f.function_type.outputs), "output")


Kernel = Callable[[g.GraphOp, list[np.ndarray], dict], np.ndarray | Sequence[np.ndarray]]
Observer = Callable[[SSAValue, np.ndarray], None]
"""Shown every graph op's result (inside groups too) as it is computed."""


def _unary(kind: str) -> Kernel:
    return lambda op, x, p: kernels.unary(kind, x[0], **p)


def _unary_extra(kind: str) -> Kernel:
    return lambda op, x, p: kernels.unary_extra(kind, x[0], **p)


def _binary(kind: str) -> Kernel:
    """Floats through float32 (as the vector unit), integers exactly in their own dtype."""
    def run(op, x, p):
        if kernels.is_exact(x[0], x[1]):
            return kernels.binary_exact(kind, x[0], x[1])
        return kernels.binary(kind, x[0], x[1])
    return run


def _compare(kind: str) -> Kernel:
    return lambda op, x, p: kernels.compare(kind, x[0], x[1])


def _reduce(kind: str) -> Kernel:
    return lambda op, x, p: kernels.reduce_any(kind, x[0], p["axes"] or tuple(range(x[0].ndim)), p["keepdims"])


def _conv(op: g.Conv2DOp, x: list[np.ndarray], p: dict) -> np.ndarray:
    out = kernels.conv2d(x[0], x[1], x[2] if op.bias is not None else None,
                         p["strides"], p["pads"], p["dilations"], p["group"])
    return kernels.epilogue(out, x[-1] if op.residual is not None else None, p["activation"])


def _gemm(op: g.GemmOp, x: list[np.ndarray], p: dict) -> np.ndarray:
    a = x[0].T if p["trans_a"] else x[0]
    b = x[1].T if p["trans_b"] else x[1]
    out = kernels.matmul(a, b) * np.float32(p["alpha"])
    if len(x) == 3:
        out = out + np.float32(p["beta"]) * x[2].astype(np.float32)
    return out


def _slice(op: g.SliceOp, x: list[np.ndarray], p: dict) -> np.ndarray:
    index = [slice(None)] * x[0].ndim
    steps = p.get("steps") or (1,) * len(p["axes"])
    for start, end, axis, step in zip(p["starts"], p["ends"], p["axes"], steps):
        axis %= x[0].ndim
        r = g.slice_bounds(x[0].shape[axis], start, end, step)  # ONNX clamping, not Python's
        index[axis] = slice(r.start, r.stop if r.stop >= 0 else None, r.step)
    return x[0][tuple(index)]


def _split(op: g.SplitOp, x: list[np.ndarray], p: dict) -> list[np.ndarray]:
    bounds = np.cumsum(p["sizes"])[:-1]
    return np.split(x[0], bounds, axis=p["axis"])


def _sum(op: g.SumOp, x: list[np.ndarray], p: dict) -> np.ndarray:
    exact = kernels.is_exact(*x)
    out = x[0] if exact else x[0].astype(np.float32)
    for y in x[1:]:
        out = out + (y if exact else y.astype(np.float32))
    return out


def _nms(op: g.NonMaxSuppressionOp, x: list[np.ndarray], p: dict):
    bound = g.shape_of(op.selected.type)[0]
    return kernels.non_max_suppression(x[0], x[1], p["max_output_boxes_per_class"], p["iou_threshold"],
                                       p["score_threshold"], p["center_point_box"], bound)


KERNELS: dict[type[Operation], Kernel] = {
    **{cls: _unary(cls.name.removeprefix("graph.")) for cls in (
        g.ReluOp, g.SigmoidOp, g.TanhOp, g.ErfOp, g.ExpOp, g.LogOp, g.SqrtOp, g.RsqrtOp,
        g.ReciprocalOp, g.AbsOp, g.NegOp, g.GeluOp, g.ClipOp, g.LeakyReluOp)},
    **{cls: _unary_extra(cls.name.removeprefix("graph.")) for cls in (
        g.SignOp, g.CoshOp, g.SinhOp, g.SoftplusOp, g.MishOp, g.HardSwishOp, g.HardSigmoidOp, g.NotOp)},
    **{cls: _binary(cls.name.removeprefix("graph.")) for cls in (
        g.AddOp, g.SubOp, g.MulOp, g.DivOp, g.PowOp, g.MaximumOp, g.MinimumOp)},
    **{cls: _compare(cls.name.removeprefix("graph.")) for cls in (
        g.EqualOp, g.LessOp, g.LessEqualOp, g.GreaterOp, g.GreaterEqualOp, g.AndOp, g.OrOp, g.XorOp)},
    g.WhereOp: lambda op, x, p: np.where(x[0], x[1], x[2]),
    g.IdentityOp: lambda op, x, p: x[0],
    g.PReluOp: lambda op, x, p: kernels.prelu(x[0], x[1]),
    g.SumOp: _sum,
    g.Conv2DOp: _conv,
    g.MatmulOp: lambda op, x, p: kernels.matmul(x[0], x[1]),
    g.GemmOp: _gemm,
    g.SoftmaxOp: lambda op, x, p: kernels.softmax(x[0], p["axis"]),
    g.LayerNormOp: lambda op, x, p: kernels.layer_norm(
        x[0], x[1] if op.scale is not None else None,
        x[-1] if op.bias is not None else None, p["axis"], p["epsilon"]),
    g.BatchNormOp: lambda op, x, p: kernels.batch_norm(*x, epsilon=p["epsilon"]),
    g.MaxPoolOp: lambda op, x, p: kernels.max_pool(
        x[0], p["kernel"], p["strides"], p["pads"], p["dilations"], p["ceil_mode"]),
    g.AvgPoolOp: lambda op, x, p: kernels.avg_pool(
        x[0], p["kernel"], p["strides"], p["pads"], p["ceil_mode"], p["count_include_pad"]),
    g.GlobalAvgPoolOp: lambda op, x, p: kernels.global_avg_pool(x[0]),
    **{cls: _reduce(cls.name.removeprefix("graph.")) for cls in (
        g.ReduceSumOp, g.ReduceMeanOp, g.ReduceMaxOp, g.ReduceMinOp, g.ReduceProdOp, g.ReduceL1Op,
        g.ReduceL2Op, g.ReduceSumSquareOp, g.ReduceLogSumOp, g.ReduceLogSumExpOp)},
    **{cls: (lambda kind: lambda op, x, p: kernels.arg_reduce(
        kind, x[0], p["axis"], p["keepdims"], p["select_last_index"]))(cls.name.removeprefix("graph."))
       for cls in (g.ArgMaxOp, g.ArgMinOp)},
    g.TopKOp: lambda op, x, p: kernels.topk(x[0], p["k"], p["axis"] % x[0].ndim, p["largest"]),
    g.ReshapeOp: lambda op, x, p: x[0].reshape(p["shape"]),
    g.ExpandOp: lambda op, x, p: np.broadcast_to(x[0], p["shape"]),
    g.CastOp: lambda op, x, p: kernels.cast(x[0], g.numpy_dtype(p["dtype"]), p["saturate"]),
    g.FlattenOp: lambda op, x, p: x[0].reshape(g.shape_of(op.output.type)),
    g.SqueezeOp: lambda op, x, p: x[0].reshape(g.shape_of(op.output.type)),
    g.UnsqueezeOp: lambda op, x, p: x[0].reshape(g.shape_of(op.output.type)),
    g.TransposeOp: lambda op, x, p: np.transpose(x[0], p["perm"]),
    g.ConcatOp: lambda op, x, p: np.concatenate(x, axis=p["axis"]),
    g.SplitOp: _split,
    g.SliceOp: _slice,
    g.GatherOp: lambda op, x, p: kernels.gather(x[0], x[1], p["axis"]),
    g.GatherElementsOp: lambda op, x, p: kernels.gather_elements(x[0], x[1], p["axis"] % x[0].ndim),
    g.GatherNDOp: lambda op, x, p: kernels.gather_nd(x[0], x[1], p["batch_dims"]),
    g.OneHotOp: lambda op, x, p: kernels.one_hot(x[0], x[1], p["depth"], p["axis"]),
    g.EinsumOp: lambda op, x, p: kernels.einsum(p["equation"], *x),
    g.ResizeOp: lambda op, x, p: kernels.resize(x[0], p["shape"], p["scales"], p),
    g.LRNOp: lambda op, x, p: kernels.lrn(x[0], p["size"], p["alpha"], p["beta"], p["bias"]),
    g.RoiAlignOp: lambda op, x, p: kernels.roi_align(
        x[0], x[1], x[2], p["output_height"], p["output_width"], p["sampling_ratio"],
        p["spatial_scale"], p["mode"], p["half_pixel"]),
    g.MaxRoiPoolOp: lambda op, x, p: kernels.max_roi_pool(x[0], x[1], p["pooled_shape"], p["spatial_scale"]),
    g.NonMaxSuppressionOp: _nms,
}


def _group(op: sched.GroupOp, x: list[np.ndarray], p: dict, observe: Observer | None = None) -> np.ndarray:
    """Run a schedule group's body on its inputs; weights come from the enclosing function."""
    env: dict[SSAValue, np.ndarray] = dict(zip(op.body.block.args, x))
    body = op.body_ops()
    for inner in body:
        for v in inner.operands:
            if v not in env and isinstance(v.owner, g.ConstantOp):
                env[v] = v.owner.numpy()
    run_ops(body, env, observe)
    out = env[op.yield_op.value]
    if op.stripe is not None:  # a row stripe: its rows of the body's output
        out = out[:, :, op.stripe[0]:op.stripe[1]]
    return out


KERNELS.update({
    sched.GroupOp: _group,
    sched.SplitOp: lambda op, x, p: np.split(x[0], len(op.outputs), axis=sched.BATCH_AXIS),
    sched.ConcatOp: lambda op, x, p: np.concatenate(x, axis=op.axis.data),
})


def _store(value: np.ndarray, t: TensorType) -> np.ndarray:
    """Round a computed value to its IR storage type and check its shape."""
    out = np.asarray(value).astype(g.numpy_dtype(t.element_type), copy=False)
    shape = g.shape_of(t)
    if out.shape != shape:
        out = np.broadcast_to(out, shape) if out.size == 1 else out
    if out.shape != shape:
        raise InterpreterError(f"kernel produced shape {out.shape}, IR says {t}")
    return out


def run_ops(ops: Sequence[Operation], env: dict[SSAValue, np.ndarray], observe: Observer | None = None) -> None:
    """Execute graph ops in order, binding their results in `env` (and showing each graph
    op's result to `observe`)."""
    for op in ops:
        if isinstance(op, g.ConstantOp):
            env[op.output] = op.numpy()
            continue
        args = [env[v] for v in op.operands]
        if isinstance(op, sched.GroupOp):
            env[op.output] = _store(_group(op, args, op.props(), observe), op.output.type)  # type: ignore[arg-type]
            continue
        kernel = KERNELS.get(type(op))
        if kernel is None:
            raise InterpreterError(f"the reference interpreter cannot execute '{op.name}'")
        result = kernel(op, args, op.props())  # type: ignore[arg-type]
        values = result if isinstance(result, list | tuple) else [result]
        for r, v in zip(op.results, values, strict=True):
            env[r] = _store(v, r.type)  # type: ignore[arg-type]
            if observe is not None and isinstance(op, g.GraphOp):
                observe(r, env[r])


def graph_values(f: func.FuncOp) -> list[SSAValue]:
    """The results of `f`'s graph ops (not constants) in graph order: block order, a
    group's body in its place (nested groups too). Per-tensor comparison keys values by
    their position here (`stc_mlir.compare_all`), on both the reference and the npu side."""
    out: list[SSAValue] = []

    def walk(ops) -> None:
        for op in ops:
            if isinstance(op, sched.GroupOp):
                walk(op.body_ops())
            elif isinstance(op, g.GraphOp) and not isinstance(op, g.ConstantOp):
                out.extend(op.results)

    walk(f.body.block.ops)
    return out


def run(
    module: ModuleOp, inputs: Mapping[str, np.ndarray], function: str | None = None,
    observe: Observer | None = None,
) -> list[np.ndarray]:
    """Run a graph-level function on named inputs; returns its results in order.

    Inputs are matched by model input name (or position name `arg0`...) and converted to
    the argument's element type; a missing input or a shape mismatch is an error.
    `observe(value, array)` sees every graph op's result (per-tensor comparison).
    """
    f = find_function(module, function)
    env: dict[SSAValue, np.ndarray] = {}
    names = input_names(f)
    for name, arg in zip(names, f.args):
        if name not in inputs:
            raise InterpreterError(f"missing input '{name}' (expected: {', '.join(names)})")
        t = arg.type
        assert isinstance(t, TensorType)
        value = np.asarray(inputs[name])
        if value.shape != g.shape_of(t):
            raise InterpreterError(f"input '{name}' has shape {value.shape}, the function expects {t}")
        env[arg] = value.astype(g.numpy_dtype(t.element_type), copy=False)
    body = list(f.body.block.ops)
    run_ops(body[:-1], env, observe)
    ret = body[-1]
    return [np.asarray(env[v]) for v in ret.operands]
