"""DLRM (Naumov et al. 2019), the Criteo Kaggle configuration of Facebook's
dlrm_s_pytorch.py, as torch.onnx exports it.

A bottom MLP 13-512-256-64-16 on the numeric features; 26 embedding tables of width 16, one
per categorical field, each looked up with its column of the index matrix (`lS_i[:, k]`: a
Gather with a scalar index, then the table Gather); the dot interaction (Concat the 27
vectors, Reshape to [B, 27, 16], a batched MatMul with its transpose, the 351 strictly lower
triangular entries gathered from the flattened [B, 729] product) concatenated with the
bottom MLP's output; a top MLP 367-512-256-1 and a sigmoid. Linear layers export as Gemm
(transB=1). Every table gets a single id per sample (the bag of one that the Kaggle data
has), so EmbeddingBag(sum) is exactly the Gather.
"""

from __future__ import annotations

import math

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
BOTTOM_MLP = (512, 256, 64)  # then EMBEDDING_SIZE
TOP_MLP = (512, 256)  # then 1
OPSETS = range(13, 18)
# Embeddings ~ N(0, 0.5^2) (DLRM's U(+-1/sqrt(rows)) would make the interactions vanish
# for the big tables): the pairwise dots then have about unit scale.
EMBEDDING_STD = 0.5


def build(
    batch: int = 1,
    *,
    embedding_size: int = EMBEDDING_SIZE,
    bottom_mlp: tuple[int, ...] | str = BOTTOM_MLP,
    top_mlp: tuple[int, ...] | str = TOP_MLP,
    max_table_rows: int = DEFAULT_MAX_ROWS,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    check_options("dlrm", opset, OPSETS)
    bottom = int_tuple("dlrm", "bottom_mlp", bottom_mlp)
    top = int_tuple("dlrm", "top_mlp", top_mlp)
    rows = vocabulary("dlrm", max_table_rows)
    n = symbolic_or_static(batch, dynamic_batch)
    b = _DLRMBuilder(seed)
    dense_x = b.add_input("dense_x", TensorProto.FLOAT, [n, NUMERIC_FIELDS])
    indices = b.add_input("lS_i", TensorProto.INT64, [n, CATEGORICAL_FIELDS])

    x, width = dense_x, NUMERIC_FIELDS
    for index, out in enumerate((*bottom, embedding_size)):
        x = b.linear(x, width, out, f"bot_l.{2 * index}", f"/bot_l/bot_l.{2 * index + 1}")
        width = out

    vectors = [x]
    for field, table_rows in enumerate(rows):
        column = b.node(
            "Gather", [indices, b.constant_node(np.array(field, dtype=np.int64), "")], axis=1
        )
        table = b.embedding_table(f"emb_l.{field}.weight", table_rows, embedding_size, EMBEDDING_STD)
        vectors.append(b.node("Gather", [table, column], scope=f"/emb_l.{field}"))

    count = len(vectors)
    stacked = b.node("Concat", vectors, axis=1)
    stacked = b.node("Reshape", [stacked, b.ints([-1, count, embedding_size])])
    transposed = b.node("Transpose", [stacked], perm=[0, 2, 1])
    products = b.node("MatMul", [stacked, transposed])  # [B, 27, 27]
    products = b.node("Reshape", [products, b.ints([-1, count * count])])
    lower = [i * count + j for i in range(count) for j in range(i)]
    pairs = b.node("Gather", [products, b.ints(lower, "onnx::Gather")], axis=1)
    x = b.node("Concat", [x, pairs], axis=1)

    width = embedding_size + len(lower)
    for index, out in enumerate(top):
        x = b.linear(x, width, out, f"top_l.{2 * index}", f"/top_l/top_l.{2 * index + 1}")
        width = out
    # a small gain on the last layer keeps the click probability out of saturation
    logit = b.linear(x, width, 1, f"top_l.{2 * len(top)}", "", activation=None, gain=0.25)
    b.node("Sigmoid", [logit], scope=f"/top_l/top_l.{2 * len(top) + 1}", output="pred")
    b.add_output("pred", TensorProto.FLOAT, [n, 1])
    model = b.make_model("dlrm", opset, doc="DLRM, Criteo Kaggle configuration")
    return record_vocabulary(model, rows)


class _DLRMBuilder(RecommenderBuilder):
    def linear(
        self, x: str, in_features: int, out_features: int, param: str, relu_scope: str,
        activation: str | None = "Relu", gain: float = 2.0,
    ) -> str:
        """nn.Linear (Gemm, transB=1), then the Sequential's ReLU; the weights are
        He-scaled (gain 2) so the activations keep unit scale through the ReLUs."""
        std = math.sqrt(gain / in_features)
        weight = self.initializer(f"{param}.weight", self.weights((out_features, in_features), std))
        bias = self.initializer(f"{param}.bias", self.normal((out_features,), math.sqrt(1.0 / out_features)))
        scope = f"/{param.split('.')[0]}/{param}"
        y = self.node("Gemm", [x, weight, bias], scope=scope, alpha=1.0, beta=1.0, transB=1)
        return self.node(activation, [y], scope=relu_scope) if activation else y


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    return criteo_inputs(model, seed, "dense_x", "lS_i")
