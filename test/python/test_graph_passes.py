"""graph-canonicalize and graph-fuse-conv-add-relu: each rewrite fires where it should, stays
away where it must not, and the program computes the same values before and after (exactly
where the arithmetic is unchanged, within fp16 rounding where the pass moves a rounding)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from stc_mlir import reference
from stc_mlir.dialects import graph as g
from stc_mlir.passes.graph_canonicalize import GraphCanonicalize
from stc_mlir.passes.graph_fuse_conv_add_relu import GraphFuseConvAddRelu, per_channel_values

F16 = np.float16


# ----------------------------------------------------------------------------- helpers


def build(arg_shapes: Sequence[Sequence[int] | TensorType], body: Callable[..., Sequence[SSAValue]]) -> ModuleOp:
    """A module with `func @main(args...)` whose body `body(emit, *args)` builds in order
    (arguments given by shape are f16)."""
    block = Block(arg_types=[s if isinstance(s, TensorType) else g.tensor(s, g.f16) for s in arg_shapes])

    def emit(op: Operation):
        block.add_op(op)
        return op.results[0] if len(op.results) == 1 else op

    results = list(body(emit, *block.args))
    block.add_op(func.ReturnOp(*results))
    f = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]), Region(block))
    module = ModuleOp([f])
    module.verify()
    return module


def const(emit, array) -> SSAValue:
    return emit(g.ConstantOp.from_numpy(np.asarray(array, dtype=F16)))


def names(module: ModuleOp) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("graph."))


def random_inputs(module: ModuleOp, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = reference.find_function(module)
    return {
        name: rng.standard_normal(g.shape_of(a.type)).astype(F16)
        for name, a in zip(reference.input_names(f), f.args)
    }


def run_pass(module: ModuleOp, pass_, inputs: dict[str, np.ndarray] | None = None
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Results before and after applying `pass_` (the module must still verify); random
    inputs unless given."""
    inputs = random_inputs(module) if inputs is None else inputs
    before = reference.run(module, inputs)
    pass_.apply(Context(), module)
    module.verify()
    after = reference.run(module, inputs)
    assert [a.shape for a in after] == [b.shape for b in before]
    assert [a.dtype for a in after] == [b.dtype for b in before]
    return before, after


def assert_exact(before, after):
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)


def assert_fp16_close(before, after, ulps: float = 8):
    """Equal up to a few fp16 roundings of values of the result's magnitude."""
    for b, a in zip(before, after, strict=True):
        b32, a32 = b.astype(np.float32), a.astype(np.float32)
        scale = float(np.max(np.abs(b32))) + 1.0
        np.testing.assert_allclose(a32, b32, rtol=ulps * 2.0**-11, atol=ulps * 2.0**-11 * scale)


canonicalize = GraphCanonicalize()
fuse = GraphFuseConvAddRelu()


def conv_bn(emit, x, w, b, bn, **conv_props):
    gamma, beta, mean, var = (const(emit, v) for v in bn)
    y = emit(g.Conv2DOp.make(x, w, b, **conv_props))
    return y, emit(g.BatchNormOp.make(y, gamma, beta, mean, var, epsilon=1e-3))


def bn_params(rng, channels):
    return (
        rng.uniform(0.5, 2.0, channels), rng.uniform(-1, 1, channels),
        rng.uniform(-1, 1, channels), rng.uniform(0.5, 2.0, channels),
    )


# ----------------------------------------------------------------------------- batch norm folding


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cin_per_group=st.integers(1, 4), group=st.sampled_from([1, 2]), cout_per_group=st.integers(1, 4),
    kernel=st.integers(1, 3), stride=st.integers(1, 2), with_bias=st.booleans(), seed=st.integers(0, 100),
)
def test_batch_norm_folds_into_conv(cin_per_group, group, cout_per_group, kernel, stride, with_bias, seed):
    rng = np.random.default_rng(seed)
    cin, cout = cin_per_group * group, cout_per_group * group

    def body(emit, x):
        w = const(emit, rng.standard_normal((cout, cin_per_group, kernel, kernel)))
        b = const(emit, rng.standard_normal(cout)) if with_bias else None
        _, y = conv_bn(emit, x, w, b, bn_params(rng, cout), strides=(stride, stride), group=group,
                       pads=(1, 1, 1, 1))
        return [y]

    module = build([(1, cin, 6, 6)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.conv2d": 1, "graph.constant": 2}
    assert_fp16_close(before, after)


def test_batch_norm_folding_uses_float32_and_stores_in_the_weight_type():
    w = np.array([[[[1.0]]], [[[3.0]]]], dtype=F16)
    bn = ([2.0, 0.5], [1.0, -1.0], [0.5, 2.0], [3.0, 0.25])

    def body(emit, x):
        return [conv_bn(emit, x, const(emit, w), const(emit, [1.0, 1.0]), bn)[1]]

    module = build([(1, 1, 2, 2)], body)
    canonicalize.apply(Context(), module)
    conv = next(op for op in module.walk() if isinstance(op, g.Conv2DOp))
    gamma, beta, mean, var = (np.asarray(v, np.float32) for v in bn)
    scale = gamma / np.sqrt(var + np.float32(1e-3))
    np.testing.assert_array_equal(conv.weight.owner.numpy(), (w.astype(np.float32) * scale.reshape(-1, 1, 1, 1)).astype(F16))
    np.testing.assert_array_equal(conv.bias.owner.numpy(), ((1.0 - mean) * scale + beta).astype(F16))


@pytest.mark.parametrize("case", ["weight_not_constant", "conv_has_second_user", "conv_has_activation",
                                  "conv_has_residual", "bias_not_constant", "no_conv"])
def test_batch_norm_that_cannot_fold_into_its_conv_becomes_a_scale_and_shift(case):
    rng = np.random.default_rng(1)

    def body(emit, x, wx, r):
        w = wx if case == "weight_not_constant" else const(emit, rng.standard_normal((4, 4, 1, 1)))
        b = emit(g.ReduceMeanOp.make(x, axes=(0, 2, 3), keepdims=False)) if case == "bias_not_constant" else None
        if case == "no_conv":
            y = emit(g.ReluOp.make(x))
        else:
            y = emit(g.Conv2DOp.make(x, w, b, r if case == "conv_has_residual" else None,
                                     activation="relu" if case == "conv_has_activation" else "none"))
        out = [emit(g.BatchNormOp.make(y, *(const(emit, v) for v in bn_params(rng, 4))))]
        return out + [y] if case == "conv_has_second_user" else out

    module = build([(1, 4, 3, 3), (4, 4, 1, 1), (1, 4, 3, 3)], body)
    convs_before = [op.weight.owner for op in module.walk() if isinstance(op, g.Conv2DOp)]
    before, after = run_pass(module, canonicalize)
    counts = names(module)
    assert counts["graph.batch_norm"] == 0 and counts["graph.mul"] == 1 and counts["graph.add"] == 1
    # the conv is left as it was: its weight is not rescaled
    assert [op.weight.owner for op in module.walk() if isinstance(op, g.Conv2DOp)] == convs_before
    assert_fp16_close(before, after)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rank=st.integers(2, 5), channels=st.integers(1, 6), f32=st.booleans(), seed=st.integers(0, 100))
def test_standalone_batch_norm_becomes_a_per_channel_scale_and_shift(rank, channels, f32, seed):
    rng = np.random.default_rng(seed)
    shape = (2, channels) + (3,) * (rank - 2)
    dtype = np.float32 if f32 else F16
    bn = [np.asarray(v, dtype) for v in bn_params(rng, channels)]

    def body(emit, x):
        params = [emit(g.ConstantOp.from_numpy(v)) for v in bn]
        return [emit(g.BatchNormOp.make(x, *params, epsilon=1e-3))]

    module = build([g.tensor(shape, g.f32 if f32 else g.f16)], body)
    inputs = {"arg0": rng.standard_normal(shape).astype(dtype)}
    before, after = run_pass(module, canonicalize, inputs)
    # (5-D: the mul and add run on merged dims, coalesce_dims.py, between two reshapes)
    reshapes = {"graph.reshape": 2} if rank > 4 else {}
    assert names(module) == {"graph.mul": 1, "graph.add": 1, "graph.constant": 2, **reshapes}
    mul = next(op for op in module.walk() if isinstance(op, g.MulOp))
    add = next(op for op in module.walk() if isinstance(op, g.AddOp))
    gamma, beta, mean, var = (v.astype(np.float32) for v in bn)
    scale = gamma / np.sqrt(var + np.float32(1e-3))
    per_channel = (channels,) + (1,) * (rank - 2)
    for op, want in ((mul, scale), (add, beta - mean * scale)):
        got = op.rhs.owner.numpy()
        np.testing.assert_array_equal(got.reshape(-1), want.astype(dtype))
        assert rank > 4 or got.shape == per_channel
    if f32:
        np.testing.assert_allclose(after[0], before[0], rtol=1e-5, atol=1e-5)
    else:
        assert_fp16_close(before, after)


def test_batch_norm_with_runtime_statistics_stays():
    rng = np.random.default_rng(2)

    def body(emit, x):
        params = [const(emit, v) for v in bn_params(rng, 4)]
        params[2] = emit(g.ReduceMeanOp.make(x, axes=(0, 2, 3), keepdims=False))
        return [emit(g.BatchNormOp.make(x, *params))]

    module = build([(1, 4, 3, 3)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module)["graph.batch_norm"] == 1 and names(module)["graph.mul"] == 0
    assert_exact(before, after)


# ----------------------------------------------------------------------------- scalar gather


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data(),
       constant_index=st.booleans(), seed=st.integers(0, 100))
def test_scalar_index_gather_becomes_a_one_element_gather_and_a_reshape(shape, data, constant_index, seed):
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    index = data.draw(st.integers(-shape[axis], shape[axis] - 1))
    index_type = g.tensor((), g.i64)

    def body(emit, x, *runtime_index):
        i = runtime_index[0] if runtime_index else emit(g.ConstantOp.from_numpy(np.asarray(index, np.int64)))
        return [emit(g.GatherOp.make(x, i, axis=axis))]

    module = build([tuple(shape)] + ([] if constant_index else [index_type]), body)
    rng = np.random.default_rng(seed)
    inputs = {"arg0": rng.standard_normal(shape).astype(F16)}
    if not constant_index:
        inputs["arg1"] = np.asarray(index, np.int64)
    before, after = run_pass(module, canonicalize, inputs)
    assert_exact(before, after)
    gathers = [op for op in module.walk() if isinstance(op, g.GatherOp)]
    assert len(gathers) == 1 and g.shape_of(gathers[0].indices.type) == (1,)
    assert isinstance(next(iter(gathers[0].output.uses)).operation, g.ReshapeOp)
    assert names(module)["graph.reshape"] == (1 if constant_index else 2)


def test_gathers_with_index_tensors_stay():
    def body(emit, x):
        ids = emit(g.ConstantOp.from_numpy(np.array([[0, 2], [1, 1]], np.int64)))
        one = emit(g.ConstantOp.from_numpy(np.array([1], np.int64)))
        return [emit(g.GatherOp.make(x, ids, axis=1)), emit(g.GatherOp.make(x, one))]

    module = build([(2, 3)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.gather": 2, "graph.constant": 2}
    assert_exact(before, after)


# ----------------------------------------------------------------------------- gemm


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 5), k=st.integers(1, 5), n=st.integers(1, 5),
    trans_a=st.booleans(), trans_b=st.booleans(),
    alpha=st.sampled_from([1.0, 0.5, -2.0]), beta=st.sampled_from([1.0, 0.25, 0.0]),
    c_kind=st.sampled_from(["none", "full", "row", "scalar", "arg"]),
    b_constant=st.booleans(), seed=st.integers(0, 100),
)
def test_gemm_decomposes(m, k, n, trans_a, trans_b, alpha, beta, c_kind, b_constant, seed):
    rng = np.random.default_rng(seed)
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)

    def body(emit, a, b_arg, c_arg):
        b = const(emit, rng.standard_normal(b_shape)) if b_constant else b_arg
        c = {"none": None, "arg": c_arg, "full": const(emit, rng.standard_normal((m, n))),
             "row": const(emit, rng.standard_normal(n)), "scalar": const(emit, rng.standard_normal(()))}[c_kind]
        return [emit(g.GemmOp.make(a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b))]

    module = build([a_shape, b_shape, (m, n)], body)
    before, after = run_pass(module, canonicalize)
    ops = names(module)
    assert ops["graph.gemm"] == 0 and ops["graph.matmul"] == 1
    # only a non-constant operand is transposed by an op; a constant b is transposed in numpy
    assert ops["graph.transpose"] == int(trans_a) + int(trans_b and not b_constant)
    has_c = c_kind != "none" and beta != 0.0
    assert ops["graph.add"] == int(has_c)
    # alpha and beta scale constants in numpy, other operands with a mul
    assert ops["graph.mul"] == int(alpha != 1.0 and not b_constant) + int(has_c and beta != 1.0 and c_kind == "arg")
    assert_fp16_close(before, after)


def test_gemm_keeps_a_shared_large_weight_and_transposes_with_an_op():
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((8, 4))

    def body(emit, a):
        w = const(emit, weight)
        y1 = emit(g.GemmOp.make(a, w, trans_b=True))
        y2 = emit(g.GemmOp.make(a, w, trans_b=True, alpha=2.0))
        return [y1, y2]

    module = build([(3, 4)], body)
    before, after = run_pass(module, GraphCanonicalize(fold_limit=0))
    ops = names(module)
    assert ops == {"graph.constant": 2, "graph.transpose": 2, "graph.matmul": 2, "graph.mul": 1}
    assert_fp16_close(before, after)


# ----------------------------------------------------------------------------- sum, identities


def test_sum_becomes_a_chain_of_adds():
    def body(emit, x, y, z):
        return [emit(g.SumOp.make([x, y, z])), emit(g.SumOp.make([x]))]

    module = build([(2, 3), (1, 3), (3,)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.add": 2}
    assert_fp16_close(before[:1], after[:1], ulps=2)
    assert_exact(before[1:], after[1:])
    ret = list(module.walk())[-1]
    assert ret.operands[1] is reference.find_function(module).args[0]


def test_identities_are_removed():
    def body(emit, x):
        y = emit(g.IdentityOp.make(x))
        y = emit(g.ReshapeOp.make(y, shape=(2, 3, 4)))
        y = emit(g.TransposeOp.make(y, perm=(0, 1, 2)))
        y = emit(g.ExpandOp.make(y, shape=(2, 3, 4)))
        y = emit(g.CastOp.make(y, dtype=g.f16))
        y = emit(g.SqueezeOp.make(y, axes=()))
        return [emit(g.ReluOp.make(y))]

    module = build([(2, 3, 4)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.relu": 1}
    assert_exact(before, after)


def test_layout_ops_that_change_something_stay():
    def body(emit, x):
        y = emit(g.ReshapeOp.make(x, shape=(6, 4)))
        z = emit(g.TransposeOp.make(x, perm=(0, 2, 1)))
        e = emit(g.ExpandOp.make(x, shape=(5, 2, 3, 4)))
        return [y, z, e]

    module = build([(2, 3, 4)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.reshape": 1, "graph.transpose": 1, "graph.expand": 1}
    assert_exact(before, after)


def test_layout_chains_compose():
    def body(emit, x):
        y = emit(g.FlattenOp.make(x, axis=1))  # 2x12
        y = emit(g.ReshapeOp.make(y, shape=(4, 6)))
        y = emit(g.UnsqueezeOp.make(y, axes=(0,)))  # 1x4x6
        t = emit(g.TransposeOp.make(x, perm=(1, 2, 0)))  # 3x4x2
        t = emit(g.TransposeOp.make(t, perm=(2, 0, 1)))  # back to 2x3x4: identity
        u = emit(g.TransposeOp.make(x, perm=(1, 0, 2)))
        u = emit(g.TransposeOp.make(u, perm=(0, 2, 1)))
        return [y, emit(g.ReluOp.make(t)), u]

    module = build([(2, 3, 4)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.reshape": 1, "graph.relu": 1, "graph.transpose": 1}
    transpose = next(op for op in module.walk() if isinstance(op, g.TransposeOp))
    assert transpose.props()["perm"] == (1, 2, 0)
    assert_exact(before, after)


# ----------------------------------------------------------------------------- constant folding


def test_small_constant_expressions_fold():
    def body(emit, x):
        a = const(emit, np.arange(6).reshape(2, 3))
        b = const(emit, [0.5, 1.5, 2.5])
        c = emit(g.MulOp.make(emit(g.AddOp.make(a, b)), a))
        c = emit(g.ReduceSumOp.make(c, axes=(), keepdims=False))  # rank 0
        return [emit(g.AddOp.make(x, c))]

    module = build([(2, 3)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.constant": 1, "graph.add": 1}
    folded = next(op for op in module.walk() if isinstance(op, g.ConstantOp))
    assert g.shape_of(folded.output.type) == ()
    assert_exact(before, after)


def test_large_results_are_not_folded():
    def body(emit, x):
        a = const(emit, np.ones((512, 1024)))  # 1 MiB
        b = const(emit, np.ones((1, 1024)))
        big = emit(g.MulOp.make(a, b))  # 1 MiB: folds
        bigger = emit(g.ExpandOp.make(b, shape=(1024, 1024)))  # 2 MiB from 2 KiB: stays
        return [emit(g.AddOp.make(x, big)), emit(g.AddOp.make(x, bigger))]

    module = build([(1, 1024)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module) == {"graph.constant": 2, "graph.expand": 1, "graph.add": 2}
    assert_exact(before, after)


@pytest.mark.parametrize("shared", [False, True])
def test_transpose_of_a_large_weight_folds_only_if_the_weight_has_no_other_user(shared):
    weight = np.random.default_rng(3).standard_normal((1024, 600))  # 1.2 MiB

    def body(emit, x):
        w = const(emit, weight)
        out = [emit(g.MatmulOp.make(x, emit(g.TransposeOp.make(w, perm=(1, 0)))))]
        return out + [emit(g.ReluOp.make(w))] if shared else out

    module = build([(2, 600)], body)
    before, after = run_pass(module, canonicalize)
    assert names(module)["graph.transpose"] == int(shared)
    assert names(module)["graph.constant"] == 1
    assert_exact(before, after)


@pytest.mark.parametrize("form", ["torch", "half_first", "mul_by_rsqrt2"])
def test_exported_erf_gelu_fuses(form):
    def body(emit, x):
        if form == "mul_by_rsqrt2":
            scaled = emit(g.MulOp.make(x, const(emit, 0.70710678)))
        else:
            scaled = emit(g.DivOp.make(x, const(emit, 1.4142135)))
        one_plus = emit(g.AddOp.make(emit(g.ErfOp.make(scaled)), const(emit, 1.0)))
        if form == "half_first":
            return [emit(g.MulOp.make(emit(g.MulOp.make(const(emit, 0.5), x)), one_plus))]
        return [emit(g.MulOp.make(emit(g.MulOp.make(x, one_plus)), const(emit, 0.5)))]

    module = build([(4, 32)], body)
    before, after = run_pass(module, canonicalize)
    assert_fp16_close(before, after, ulps=4)
    assert names(module) == Counter({"graph.gelu": 1})


@pytest.mark.parametrize("case", ["shared_intermediate", "wrong_constant"])
def test_erf_gelu_lookalikes_stay(case):
    def body(emit, x):
        scaled = emit(g.DivOp.make(x, const(emit, 2.0 if case == "wrong_constant" else 1.4142135)))
        erf = emit(g.ErfOp.make(scaled))
        one_plus = emit(g.AddOp.make(erf, const(emit, 1.0)))
        out = emit(g.MulOp.make(emit(g.MulOp.make(x, one_plus)), const(emit, 0.5)))
        return [out, erf] if case == "shared_intermediate" else [out]

    module = build([(4, 32)], body)
    run_pass(module, canonicalize)
    assert "graph.gelu" not in names(module) and names(module)["graph.erf"] == 1


def test_dead_pure_ops_are_removed():
    def body(emit, x):
        emit(g.ReluOp.make(emit(g.SigmoidOp.make(x))))
        const(emit, [1.0])
        return [emit(g.TanhOp.make(x))]

    module = build([(4,)], body)
    run_pass(module, canonicalize)
    assert names(module) == {"graph.tanh": 1}


# ----------------------------------------------------------------------------- conv epilogue fusion


def conv(emit, x, cout, rng, bias=None, **props):
    cin = g.shape_of(x.type)[1]
    w = const(emit, rng.standard_normal((cout, cin, 3, 3)) / 4)
    return emit(g.Conv2DOp.make(x, w, bias, pads=(1, 1, 1, 1), **props))


def only_conv(module: ModuleOp) -> g.Conv2DOp:
    (op,) = [op for op in module.walk() if isinstance(op, g.Conv2DOp)]
    return op


@pytest.mark.parametrize("bias_shape", [(1, 4, 1, 1), (4, 1, 1), (1,), ()])
@pytest.mark.parametrize("activation", ["relu", "relu6"])
def test_conv_bias_residual_activation_fuse(bias_shape, activation):
    rng = np.random.default_rng(4)

    def body(emit, x, r):
        y = conv(emit, x, 4, rng)
        y = emit(g.AddOp.make(const(emit, rng.standard_normal(bias_shape)), y))
        y = emit(g.AddOp.make(y, r))
        act = g.ReluOp.make(y) if activation == "relu" else g.ClipOp.make(y, min=0.0, max=6.0)
        return [emit(act)]

    module = build([(1, 3, 5, 5), (1, 4, 5, 5)], body)
    before, after = run_pass(module, fuse)
    assert names(module) == {"graph.conv2d": 1, "graph.constant": 2}
    op = only_conv(module)
    assert op.bias is not None and op.residual is not None and op.props()["activation"] == activation
    assert_fp16_close(before, after, ulps=4)


def test_conv_add_of_two_convs_and_existing_bias():
    rng = np.random.default_rng(5)

    def body(emit, x):
        main = conv(emit, x, 4, rng, bias=const(emit, rng.standard_normal(4)))
        main = emit(g.AddOp.make(main, const(emit, rng.standard_normal((4, 1, 1)))))  # merged into bias
        shortcut = conv(emit, x, 4, rng)
        return [emit(g.ReluOp.make(emit(g.AddOp.make(main, shortcut))))]

    module = build([(1, 3, 5, 5)], body)
    before, after = run_pass(module, fuse)
    convs = [op for op in module.walk() if isinstance(op, g.Conv2DOp)]
    assert names(module) == {"graph.conv2d": 2, "graph.constant": 3}
    fused = convs[-1]
    assert fused.residual is convs[0].output and fused.props()["activation"] == "relu"
    assert fused.bias is not None
    assert_fp16_close(before, after, ulps=4)


@pytest.mark.parametrize("case", [
    "conv_has_second_user", "bias_along_w", "bias_not_constant", "add_after_activation",
    "clip_not_relu6", "residual_broadcasts", "add_of_non_conv",
])
def test_conv_fusion_must_not_fire(case):
    rng = np.random.default_rng(6)

    def body(emit, x, r):
        if case == "add_of_non_conv":
            return [emit(g.ReluOp.make(emit(g.AddOp.make(x, r))))]
        y = conv(emit, x, 4, rng, activation="relu" if case == "add_after_activation" else "none")
        out = []
        if case == "conv_has_second_user":
            out.append(y)
            y = emit(g.ReluOp.make(y))
        elif case == "bias_along_w":  # x is 1x4x4x4: a [4] vector is added along W
            y = emit(g.AddOp.make(y, const(emit, [1.0, 2.0, 3.0, 4.0])))
        elif case == "bias_not_constant":
            y = emit(g.AddOp.make(y, emit(g.ReduceMeanOp.make(r, axes=(0, 2, 3)))))  # 1x4x1x1
        elif case == "add_after_activation":
            y = emit(g.AddOp.make(y, r))
        elif case == "clip_not_relu6":
            y = emit(g.ClipOp.make(y, min=0.0, max=5.0))
        elif case == "residual_broadcasts":
            y = emit(g.AddOp.make(y, emit(g.ReshapeOp.make(r, shape=(4, 1, 4, 4)))))
        return [y, *out]

    module = build([(1, 4, 4, 4), (1, 4, 4, 4)], body)
    ops_before = names(module)
    before, after = run_pass(module, fuse)
    assert names(module) == ops_before
    assert_exact(before, after)


def test_fusion_does_not_remove_unrelated_dead_code():
    def body(emit, x):
        emit(g.SigmoidOp.make(x))
        return [emit(g.ReluOp.make(x))]

    module = build([(4,)], body)
    run_pass(module, fuse)
    assert names(module) == {"graph.sigmoid": 1, "graph.relu": 1}


def test_activations_combine():
    rng = np.random.default_rng(7)

    def body(emit, x):
        y = conv(emit, x, 4, rng, activation="relu")
        return [emit(g.ClipOp.make(emit(g.ReluOp.make(y)), min=0.0, max=6.0))]

    module = build([(1, 3, 4, 4)], body)
    before, after = run_pass(module, fuse)
    assert only_conv(module).props()["activation"] == "relu6"
    assert_exact(before, after)


def test_per_channel_values():
    out = (2, 8, 5, 5)
    assert per_channel_values((1, 8, 1, 1), out) and per_channel_values((8, 1, 1), out)
    assert per_channel_values((1,), out) and per_channel_values((), out)
    assert not per_channel_values((8,), out)  # broadcasts along W
    assert not per_channel_values((2, 8, 1, 1), out)  # varies along N
    assert not per_channel_values((1, 1, 8, 1, 1), out)


def test_resnet_bottleneck_becomes_three_convs():
    """canonicalize (BN folding) then fusion turn conv+bn+relu / +residual+relu into convs."""
    rng = np.random.default_rng(8)

    def cbn(emit, x, cout, k):
        cin = g.shape_of(x.type)[1]
        w = const(emit, rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k))
        return conv_bn(emit, x, w, None, bn_params(rng, cout), pads=(k // 2,) * 4)[1]

    def body(emit, x):
        y = emit(g.ReluOp.make(cbn(emit, x, 4, 1)))
        y = emit(g.ReluOp.make(cbn(emit, y, 4, 3)))
        y = cbn(emit, y, 8, 1)
        return [emit(g.ReluOp.make(emit(g.AddOp.make(y, x))))]

    module = build([(1, 8, 6, 6)], body)
    inputs = random_inputs(module)
    before = reference.run(module, inputs)
    canonicalize.apply(Context(), module)
    fuse.apply(Context(), module)
    module.verify()
    assert names(module) == {"graph.conv2d": 3, "graph.constant": 6}
    assert [op.props()["activation"] for op in module.walk() if isinstance(op, g.Conv2DOp)] == ["relu"] * 3
    assert_fp16_close(before, reference.run(module, inputs), ulps=16)


# ----------------------------------------------------------------------------- >4-D dims coalesced


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 3), min_size=5, max_size=6), kind=st.sampled_from(["add", "where", "relu", "transpose", "gather"]),
       data=st.data(), seed=st.integers(0, 100))
def test_more_than_four_dims_coalesce_exactly(shape, kind, data, seed):
    """Elementwise ops, gathers and transposes of 5-D and 6-D tensors, random shapes and
    broadcasts: merging the dims that go together (coalesce_dims.py) changes no value
    (test_coalesce_dims.py and coalesce-dims.mlir check which dims merge)."""
    shape = tuple(shape)
    rank = len(shape)
    kept = data.draw(st.lists(st.booleans(), min_size=rank, max_size=rank))  # the other operand: whole or broadcast
    other = tuple(d if k else 1 for d, k in zip(shape, kept))
    other = other[data.draw(st.integers(0, 2)):]  # numpy broadcasting: leading dims may be absent
    rng = np.random.default_rng(seed)

    def body(emit, x):
        if kind == "add":
            return [emit(g.AddOp.make(x, const(emit, rng.standard_normal(other))))]
        if kind == "where":
            mask = emit(g.ConstantOp.from_numpy(rng.random(other) < 0.5))
            return [emit(g.WhereOp.make(mask, x, const(emit, 0.5)))]
        if kind == "relu":
            return [emit(g.ReluOp.make(x))]
        if kind == "transpose":
            return [emit(g.TransposeOp.make(x, perm=tuple(data.draw(st.permutations(range(rank))))))]
        axis = data.draw(st.integers(0, rank - 1))
        index = rng.integers(0, shape[axis], size=data.draw(st.integers(1, 3)))
        return [emit(g.GatherOp.make(x, emit(g.ConstantOp.from_numpy(index.astype(np.int64))), axis=axis))]

    module = build([shape], body)
    before, after = run_pass(module, canonicalize, random_inputs(module, seed))
    assert_exact(before, after)
    cores = [op for op in module.walk() if op.name.startswith("graph.") and op.name not in ("graph.reshape", "graph.constant")]
    assert all(len(g.shape_of(v.type)) <= rank for op in cores for v in (*op.operands, *op.results))
