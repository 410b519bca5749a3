"""Wide & Deep (Cheng et al. 2016) on Criteo, as tf2onnx exports a TensorFlow
DNNLinearCombinedClassifier.

Wide: a linear model over the numeric features and the one-hot categorical ids (a [rows, 1]
weight column gathered per id and summed over the fields). Deep: 32-wide embeddings of the
categorical ids concatenated with the numeric features, through a 1024-512-256 ReLU MLP to a
logit. The two logits are added and a sigmoid gives the click probability. One shared
table per part, addressed by field-local id + field offset (int64 arithmetic at run time).
"""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir.models._builder import TensorProto, check_options, int_tuple, symbolic_or_static
from stc_mlir.models._recsys import (
    CATEGORICAL_FIELDS,
    DEFAULT_MAX_ROWS,
    NUMERIC_FIELDS,
    RecommenderBuilder,
    criteo_inputs,
    record_vocabulary,
    vocabulary,
)

EMBEDDING_SIZE = 32
HIDDEN_UNITS = (1024, 512, 256)
OPSETS = range(13, 18)


def build(
    batch: int = 1,
    *,
    embedding_size: int = EMBEDDING_SIZE,
    hidden_units: tuple[int, ...] | str = HIDDEN_UNITS,
    max_table_rows: int = DEFAULT_MAX_ROWS,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    check_options("wide-deep", opset, OPSETS)
    units = int_tuple("wide-deep", "hidden_units", hidden_units)
    rows = vocabulary("wide-deep", max_table_rows)
    n = symbolic_or_static(batch, dynamic_batch)
    b = RecommenderBuilder(seed)
    dense = b.add_input("dense_features", TensorProto.FLOAT, [n, NUMERIC_FIELDS])
    ids = b.add_input("categorical_ids", TensorProto.INT64, [n, CATEGORICAL_FIELDS])

    # wide: sum of the ids' weights + a linear term of the numeric features
    wide_ids = b.global_ids(ids, rows, "linear/linear_model")
    wide_weights = b.embedding_table("linear/linear_model/weights", sum(rows), 1, 0.1)
    wide = b.node("Gather", [wide_weights, wide_ids], scope="/linear/linear_model")  # [B, 26, 1]
    wide = b.node("ReduceSum", [wide, b.ints([1])], scope="/linear/linear_model", keepdims=0)
    wide_dense = b.dense(dense, NUMERIC_FIELDS, 1, "linear/linear_model/numeric",
                         activation=None, gain=0.05)
    wide = b.node("Add", [wide, wide_dense], scope="/linear/linear_model")

    # deep: embeddings + numeric features through the MLP
    deep_ids = b.global_ids(ids, rows, "dnn/input_from_feature_columns")
    table = b.embedding_table("dnn/input_from_feature_columns/embedding_weights", sum(rows),
                              embedding_size, 1.0 / np.sqrt(embedding_size))
    embedded = b.node("Gather", [table, deep_ids], scope="/dnn/input_from_feature_columns")
    width = CATEGORICAL_FIELDS * embedding_size
    embedded = b.node("Reshape", [embedded, b.ints([-1, width])],
                      scope="/dnn/input_from_feature_columns")
    deep = b.node("Concat", [embedded, dense], scope="/dnn/input_from_feature_columns", axis=1)
    deep, width = b.mlp(deep, width + NUMERIC_FIELDS, units, "dnn/hiddenlayer")
    deep = b.dense(deep, width, 1, "dnn/logits", activation=None, gain=0.5)

    logit = b.node("Add", [wide, deep], scope="/head")
    b.node("Sigmoid", [logit], scope="/head", output="probabilities")
    b.add_output("probabilities", TensorProto.FLOAT, [n, 1])
    model = b.make_model("wide-deep", opset, doc="Wide & Deep on Criteo (DNNLinearCombinedClassifier)")
    return record_vocabulary(model, rows)


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    return criteo_inputs(model, seed, "dense_features", "categorical_ids")
