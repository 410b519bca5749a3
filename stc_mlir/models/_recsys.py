"""Shared parts of the recommendation models: Criteo-style inputs and the layers
TensorFlow recommenders export to (tf2onnx).

Criteo's display-advertising rows have 13 integer (count) features and 26 categorical ones;
the vocabulary sizes are the Kaggle data set's, capped (`max_table_rows`) so a table fits a
test machine; an id is local to its field's vocabulary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from stc_mlir.models._builder import GraphBuilder, input_shape

NUMERIC_FIELDS = 13
CATEGORICAL_FIELDS = 26
# Criteo Kaggle (Display Advertising Challenge) vocabulary size of each categorical field.
KAGGLE_VOCABULARY = (
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
    14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
)
DEFAULT_MAX_ROWS = 100_000


def vocabulary(model: str, max_table_rows: int) -> list[int]:
    """Each categorical field's vocabulary size, capped at `max_table_rows`."""
    if max_table_rows < 4:
        raise ValueError(f"{model}: max_table_rows must be at least 4, got {max_table_rows}")
    return [min(rows, max_table_rows) for rows in KAGGLE_VOCABULARY]


class RecommenderBuilder(GraphBuilder):
    def dense(
        self, x: str, in_features: int, out_features: int, name: str, *,
        activation: str | None = "Relu", gain: float = 2.0, output: str | None = None,
    ) -> str:
        """A Keras Dense layer as tf2onnx writes it: MatMul, Add(bias), activation.
        Weights ~ sqrt(gain / fan_in) (He for ReLU, gain 1 for a linear or tanh layer)."""
        scope = f"/{name}"
        weight = self.initializer(
            f"{name}/kernel", self.weights((in_features, out_features), math.sqrt(gain / in_features))
        )
        bias = self.initializer(f"{name}/bias", self.normal((out_features,), 0.01))
        y = self.node("MatMul", [x, weight], scope=scope)
        y = self.node("Add", [y, bias], scope=scope, output=None if activation else output)
        return self.node(activation, [y], scope=scope, output=output) if activation else y

    def mlp(self, x: str, in_features: int, widths: Sequence[int], name: str) -> tuple[str, int]:
        """A stack of ReLU Dense layers; returns the result and its width."""
        for index, width in enumerate(widths):
            x = self.dense(x, in_features, width, f"{name}/dense_{index}")
            in_features = width
        return x, in_features

    def global_ids(self, ids: str, vocabulary: Sequence[int], scope: str) -> str:
        """Field-local ids [B, F] + each field's offset into one shared table (int64 Add,
        as a shared-embedding export computes them)."""
        offsets = np.cumsum([0, *vocabulary[:-1]], dtype=np.int64)[None, :]
        return self.node("Add", [ids, self.initializer(f"{scope}/offsets", offsets)], scope=scope)

    def embedding_table(self, name: str, rows: int, width: int, std: float) -> str:
        return self.initializer(name, self.weights((rows, width), std))


VOCABULARY_KEY = "field_vocabulary"


def record_vocabulary(model: onnx.ModelProto, rows: Sequence[int]) -> onnx.ModelProto:
    """Keeps the fields' vocabulary sizes in the model's metadata, for `criteo_inputs`."""
    entry = model.metadata_props.add()
    entry.key, entry.value = VOCABULARY_KEY, ",".join(map(str, rows))
    return model


def criteo_inputs(
    model: onnx.ModelProto, seed: int, dense_name: str, ids_name: str
) -> dict[str, np.ndarray]:
    """log(1 + count) numeric features in [0, ~8] and field-local categorical ids, with
    Zipf-like frequent small ids (as hashed Criteo data has), within the vocabulary sizes
    the model records."""
    recorded = next(p.value for p in model.metadata_props if p.key == VOCABULARY_KEY)
    vocabulary = [int(v) for v in recorded.split(",")]
    rng = np.random.default_rng(seed)
    shapes = {i.name: input_shape(i) for i in model.graph.input}
    batch = shapes[ids_name][0]
    counts = rng.exponential(20.0, (batch, NUMERIC_FIELDS)).astype(np.int64)
    dense = np.log1p(counts).astype(np.float32)
    ids = np.stack(
        [np.minimum(rng.zipf(1.3, batch) - 1, rows - 1) for rows in vocabulary], axis=1
    ).astype(np.int64)
    return {dense_name: dense, ids_name: ids}
