"""DSSM (Huang et al. 2013), the two-tower semantic matching model, as tf2onnx exports a
TensorFlow implementation.

Query and document arrive as bag-of-letter-trigram vectors (word hashing: 30k trigrams);
each tower is a 300-300-128 tanh MLP (MatMul + Add + Tanh, separate weights per tower); the
relevance is the cosine of the two 128-d semantic vectors, with tf.nn.l2_normalize exported
as Mul / ReduceSum / Max / Sqrt / Reciprocal / Mul.
"""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir.models._builder import TensorProto, check_options, input_shape, int_tuple, symbolic_or_static
from stc_mlir.models._recsys import RecommenderBuilder

TRIGRAMS = 30000
HIDDEN_UNITS = (300, 300, 128)
OPSETS = range(13, 18)
L2_EPSILON = 1e-12
WORDS_PER_TEXT = (3, 12)  # query / document length range, in words
TRIGRAMS_PER_WORD = 6


def build(
    batch: int = 1,
    *,
    trigrams: int = TRIGRAMS,
    hidden_units: tuple[int, ...] | str = HIDDEN_UNITS,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    check_options("dssm", opset, OPSETS)
    units = int_tuple("dssm", "hidden_units", hidden_units)
    if trigrams < TRIGRAMS_PER_WORD * WORDS_PER_TEXT[1]:
        raise ValueError(f"dssm: trigrams must be at least {TRIGRAMS_PER_WORD * WORDS_PER_TEXT[1]}")
    n = symbolic_or_static(batch, dynamic_batch)
    b = _DSSMBuilder(seed)
    towers = []
    for text in ("query", "doc"):
        x = b.add_input(text, TensorProto.FLOAT, [n, trigrams])
        width = trigrams
        for index, out in enumerate(units):
            # a bag of ~40 trigram counts: scale the first layer for that, not for 30k inputs
            gain = 1.0 if index else trigrams / 40.0
            x = b.dense(x, width, out, f"{text}_tower/dense_{index}", activation="Tanh", gain=gain)
            width = out
        towers.append(b.l2_normalize(x, f"{text}_tower/l2_normalize"))
    product = b.node("Mul", towers, scope="/cosine")
    b.node("ReduceSum", [product, b.ints([1])], scope="/cosine", keepdims=1, output="similarity")
    b.add_output("similarity", TensorProto.FLOAT, [n, 1])
    return b.make_model("dssm", opset, doc="DSSM: letter-trigram towers, cosine relevance")


class _DSSMBuilder(RecommenderBuilder):
    def l2_normalize(self, x: str, name: str) -> str:
        """tf.nn.l2_normalize(x, axis=1): x * rsqrt(max(sum(x^2), eps))."""
        scope = f"/{name}"
        square = self.node("Mul", [x, x], scope=scope)
        total = self.node("ReduceSum", [square, self.ints([1])], scope=scope, keepdims=1)
        total = self.node("Max", [total, self.scalar(L2_EPSILON)], scope=scope)
        norm = self.node("Sqrt", [total], scope=scope)
        inverse = self.node("Reciprocal", [norm], scope=scope)
        return self.node("Mul", [x, inverse], scope=scope)


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Trigram count vectors of short texts: each word adds ~6 trigrams, some shared."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        batch, trigrams = input_shape(value)
        counts = np.zeros((batch, trigrams), dtype=np.float32)
        for row in range(batch):
            words = int(rng.integers(*WORDS_PER_TEXT))
            hashed = rng.integers(0, trigrams, words * TRIGRAMS_PER_WORD)
            np.add.at(counts[row], hashed, 1.0)
        feeds[value.name] = counts
    return feeds
