"""DeepFM (Guo et al. 2017) as the seed documents' TensorFlow DeepFM exports it (opset 13).

Criteo-style inputs: 39 fields, 13 numeric (one feature index each, value in [0, 1)) and 26
categorical (one index out of the field's own range, value 1). An FM part (first-order bias
per feature and second-order pairwise interactions of 8-wide embeddings) and a 400-400-400
DNN on the same embeddings are concatenated and projected to one click probability. Weight
names follow the seeds: feature_bias, feature_embeddings, layer_i / bias_i,
concat_projection / concat_bias.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from stc_mlir.models._builder import GraphBuilder, TensorProto, check_options, input_shape, symbolic_or_static

FIELD_SIZE = 39
FEATURE_SIZE = 259
EMBEDDING_SIZE = 8
NUMERIC_FIELDS = 13
DEEP_LAYERS = [400, 400, 400]
OPSETS = range(13, 18)

# Embedding scale chosen so the second-order term, a sum over 39*38/2 field pairs, is ~1.
EMBEDDING_STD = 0.2
FEATURE_BIAS_STD = 0.1


def build(
    batch: int = 1, *, dynamic_batch: bool = False, seed: int = 0, opset: int = 13
) -> onnx.ModelProto:
    check_options("deepfm", opset, OPSETS)
    n = symbolic_or_static(batch, dynamic_batch)
    b = GraphBuilder(seed)
    feat_index = b.add_input("feat_index", TensorProto.INT64, [n, FIELD_SIZE])
    feat_value = b.add_input("feat_value", TensorProto.FLOAT, [n, FIELD_SIZE])

    feature_embeddings = b.initializer(
        "feature_embeddings", b.weights((FEATURE_SIZE, EMBEDDING_SIZE), EMBEDDING_STD)
    )
    feature_bias = b.initializer("feature_bias", b.weights((FEATURE_SIZE, 1), FEATURE_BIAS_STD))
    axis_1, axis_2 = b.ints([1], "axis_1"), b.ints([2], "axis_2")

    # [B, 39] -> [B, 39, 1], shared by both parts.
    value = b.node("Unsqueeze", [feat_value, axis_2], scope="/feat_value")
    embeddings = b.node("Gather", [feature_embeddings, feat_index], scope="/embeddings", axis=0)
    embeddings = b.node("Mul", [embeddings, value], scope="/embeddings")  # [B, 39, 8]

    # FM first order: sum_k bias[index] * value over the trailing unit axis -> [B, 39].
    first = b.node("Gather", [feature_bias, feat_index], scope="/first_order", axis=0)
    first = b.node("Mul", [first, value], scope="/first_order")
    first = b.node("ReduceSum", [first, axis_2], scope="/first_order", keepdims=0)

    # FM second order: 0.5 * ((sum_i e_i)^2 - sum_i e_i^2) -> [B, 8].
    summed = b.node("ReduceSum", [embeddings, axis_1], scope="/second_order", keepdims=0)
    summed_square = b.node("Mul", [summed, summed], scope="/second_order")
    squared = b.node("Mul", [embeddings, embeddings], scope="/second_order")
    squared_sum = b.node("ReduceSum", [squared, axis_1], scope="/second_order", keepdims=0)
    second = b.node("Sub", [summed_square, squared_sum], scope="/second_order")
    second = b.node("Mul", [second, b.scalar(0.5)], scope="/second_order")

    # Deep part; a mix of Gemm (with and without transB) and MatMul+Add, as exporters differ.
    deep_width = FIELD_SIZE * EMBEDDING_SIZE
    deep = b.node(
        "Reshape", [embeddings, b.ints([-1, deep_width], "deep_shape")], scope="/deep"
    )
    for i, width in enumerate(DEEP_LAYERS):
        weight = b.weights((deep_width, width), math.sqrt(2.0 / deep_width))  # He, for Relu
        bias = b.initializer(f"bias_{i}", b.normal((1, width), 0.01))
        scope = f"/deep/layer_{i}"
        if i == 1:
            product = b.node("MatMul", [deep, b.initializer(f"layer_{i}", weight)], scope=scope)
            deep = b.node("Add", [product, bias], scope=scope)
        else:
            trans_b = i == 2  # stored [out, in], as torch's Linear exports
            stored = weight.T.copy() if trans_b else weight
            deep = b.node(
                "Gemm", [deep, b.initializer(f"layer_{i}", stored), bias], scope=scope,
                alpha=1.0, beta=1.0, transB=int(trans_b),
            )
        deep = b.node("Relu", [deep], scope=scope)
        deep_width = width

    concat = b.node("Concat", [first, second, deep], scope="/concat", axis=1)
    concat_width = FIELD_SIZE + EMBEDDING_SIZE + deep_width
    # Scaled so the logit is ~N(0, 1) and the sigmoid stays out of saturation.
    projection = b.initializer(
        "concat_projection", b.weights((concat_width, 1), 1.0 / math.sqrt(26.0))
    )
    logit = b.node("MatMul", [concat, projection], scope="/out")
    logit = b.node("Add", [logit, b.initializer("concat_bias", b.normal((1,), 0.1))], scope="/out")
    b.node("Sigmoid", [logit], scope="/out", output="output")
    b.add_output("output", TensorProto.FLOAT, [n, 1])
    return b.make_model("deepfm", opset, doc="DeepFM (field 39, feature 259, embedding 8)")


def field_index_ranges() -> list[range]:
    """The feature indices each field may take: one per numeric field, then the remaining
    indices split over the categorical fields."""
    numeric = [range(i, i + 1) for i in range(NUMERIC_FIELDS)]
    bounds = np.linspace(NUMERIC_FIELDS, FEATURE_SIZE, FIELD_SIZE - NUMERIC_FIELDS + 1)
    bounds = bounds.round().astype(int)
    return numeric + [range(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {i.name: input_shape(i) for i in model.graph.input}
    batch = shapes["feat_index"][0]
    feat_index = np.stack(
        [rng.integers(r.start, r.stop, batch) for r in field_index_ranges()], axis=1
    ).astype(np.int64)
    feat_value = np.ones((batch, FIELD_SIZE), dtype=np.float32)
    feat_value[:, :NUMERIC_FIELDS] = rng.random((batch, NUMERIC_FIELDS), dtype=np.float32)
    return {"feat_index": feat_index, "feat_value": feat_value}
