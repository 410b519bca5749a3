"""MMoE (Ma et al. 2018), multi-gate mixture-of-experts multi-task ranking, as tf2onnx
exports a TensorFlow implementation on Criteo-style features.

A shared input (16-wide embeddings of the 26 categorical fields, by field-local id + field
offset into one table, concatenated with the 13 numeric features) feeds 8 experts (each a
256-128 ReLU MLP, stacked by Unsqueeze + Concat to [B, 8, 128]); each of the 2 tasks has a
softmax gate over the experts (MatMul + Add + Softmax), mixes them (Mul + ReduceSum) and
runs its own 64-wide tower to a sigmoid: the click (`ctr`) and conversion (`cvr`)
probabilities.
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

EMBEDDING_SIZE = 16
NUM_EXPERTS = 8
EXPERT_UNITS = (256, 128)
TOWER_UNITS = (64,)
TASKS = ("ctr", "cvr")
OPSETS = range(13, 18)


def build(
    batch: int = 1,
    *,
    num_experts: int = NUM_EXPERTS,
    expert_units: tuple[int, ...] | str = EXPERT_UNITS,
    tower_units: tuple[int, ...] | str = TOWER_UNITS,
    embedding_size: int = EMBEDDING_SIZE,
    max_table_rows: int = DEFAULT_MAX_ROWS,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    check_options("mmoe", opset, OPSETS)
    experts_shape = int_tuple("mmoe", "expert_units", expert_units)
    towers_shape = int_tuple("mmoe", "tower_units", tower_units)
    if num_experts < 2:
        raise ValueError(f"mmoe: num_experts must be at least 2, got {num_experts}")
    rows = vocabulary("mmoe", max_table_rows)
    n = symbolic_or_static(batch, dynamic_batch)
    b = RecommenderBuilder(seed)
    dense = b.add_input("dense_features", TensorProto.FLOAT, [n, NUMERIC_FIELDS])
    ids = b.add_input("categorical_ids", TensorProto.INT64, [n, CATEGORICAL_FIELDS])

    scope = "/input_layer"
    table = b.embedding_table("input_layer/embedding_weights", sum(rows), embedding_size,
                              1.0 / np.sqrt(embedding_size))
    embedded = b.node("Gather", [table, b.global_ids(ids, rows, "input_layer")], scope=scope)
    width = CATEGORICAL_FIELDS * embedding_size
    embedded = b.node("Reshape", [embedded, b.ints([-1, width])], scope=scope)
    features = b.node("Concat", [embedded, dense], scope=scope, axis=1)
    width += NUMERIC_FIELDS

    experts = []
    for expert in range(num_experts):
        out, expert_width = b.mlp(features, width, experts_shape, f"mmoe/expert_{expert}")
        experts.append(b.node("Unsqueeze", [out, b.ints([1])], scope="/mmoe/stack"))
    stacked = b.node("Concat", experts, scope="/mmoe/stack", axis=1)  # [B, experts, units]

    for task in TASKS:
        gate = b.dense(features, width, num_experts, f"mmoe/gate_{task}", activation=None, gain=1.0)
        gate = b.node("Softmax", [gate], scope=f"/mmoe/gate_{task}", axis=-1)
        gate = b.node("Unsqueeze", [gate, b.ints([2])], scope=f"/mmoe/mix_{task}")
        mixed = b.node("Mul", [stacked, gate], scope=f"/mmoe/mix_{task}")
        mixed = b.node("ReduceSum", [mixed, b.ints([1])], scope=f"/mmoe/mix_{task}", keepdims=0)
        tower, tower_width = b.mlp(mixed, expert_width, towers_shape, f"tower_{task}")
        logit = b.dense(tower, tower_width, 1, f"tower_{task}/logit", activation=None, gain=2.0)
        b.node("Sigmoid", [logit], scope=f"/tower_{task}", output=task)
        b.add_output(task, TensorProto.FLOAT, [n, 1])
    model = b.make_model("mmoe", opset, doc=f"MMoE: {num_experts} experts, tasks {', '.join(TASKS)}")
    return record_vocabulary(model, rows)


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    return criteo_inputs(model, seed, "dense_features", "categorical_ids")
