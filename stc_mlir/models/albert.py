"""ALBERT-base v2 (Lan et al. 2019) as torch.onnx exports HuggingFace's AlbertModel at
opset 14.

What sets it apart from BERT: a factorised embedding (128-wide word / position / type
tables and LayerNorm, then `embedding_hidden_mapping_in`, a 128 -> 768 Linear), one
transformer layer whose weights all 12 applications share (the export stores each weight
once and every layer's MatMuls read the same initializer), and the tanh GELU approximation
(`gelu_new`: Pow/Mul/Add/Tanh). Exported idioms as in bert.py.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from stc_mlir.models._builder import TensorProto, check_options, symbolic_or_static
from stc_mlir.models.bert import (
    HEADS,
    HIDDEN,
    INTERMEDIATE,
    OPSETS,
    LayerNames,
    Vocabulary,
    _BertBuilder,
    check_transformer_options,
    token_inputs,
)

VOCAB_SIZE = 30000
EMBEDDING_SIZE = 128
VOCABULARY = Vocabulary(VOCAB_SIZE, first_word=5, cls=2, sep=3, pad=0)

ALBERT_LAYER = LayerNames(
    attention="attention", attention_dense="attention/dense", attention_residual="attention",
    attention_norm="attention/LayerNorm", intermediate="ffn", activation="activation",
    output="ffn_output", output_residual="", output_norm="full_layer_layer_norm",
)
SHARED_LAYER = "encoder.albert_layer_groups.0.albert_layers.0"


def build(
    batch: int = 1,
    *,
    seq_len: int = 128,
    num_layers: int = 12,
    embedding_size: int = EMBEDDING_SIZE,
    hidden_size: int = HIDDEN,
    num_heads: int = HEADS,
    intermediate_size: int = INTERMEDIATE,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 14,
) -> onnx.ModelProto:
    shape = check_transformer_options(
        "albert", seq_len, num_layers, hidden_size, num_heads, intermediate_size
    )
    if embedding_size < 1:
        raise ValueError(f"albert: embedding_size must be positive, got {embedding_size}")
    check_options("albert", opset, OPSETS)
    n = symbolic_or_static(batch, dynamic_batch)
    b = _AlbertBuilder(seed, batch=n, seq_len=seq_len, shape=shape)
    input_ids = b.add_input("input_ids", TensorProto.INT64, [n, seq_len])
    attention_mask = b.add_input("attention_mask", TensorProto.INT64, [n, seq_len])
    token_type_ids = b.add_input("token_type_ids", TensorProto.INT64, [n, seq_len])

    embedded = b.embeddings(input_ids, token_type_ids, VOCAB_SIZE, width=embedding_size)
    mask = b.extended_attention_mask(attention_mask)
    hidden = b.linear(
        embedded, embedding_size, hidden_size, "encoder.embedding_hidden_mapping_in",
        "/encoder/embedding_hidden_mapping_in",
    )
    for layer in range(num_layers):
        last = layer == num_layers - 1
        hidden = b.encoder_layer(
            hidden, mask, SHARED_LAYER, "/encoder/albert_layer_groups.0/albert_layers.0",
            computed_shapes=layer % 2 == 0, output="last_hidden_state" if last else None,
            names=ALBERT_LAYER,
        )
    b.add_output("last_hidden_state", TensorProto.FLOAT, [n, seq_len, hidden_size])
    return b.make_model(
        "albert-base-v2", opset,
        doc=f"HuggingFace AlbertModel (albert-base-v2), {num_layers} applications of one "
            f"shared layer, sequence {seq_len}",
    )


class _AlbertBuilder(_BertBuilder):
    def activation(self, x: str, scope: str) -> str:
        """gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in export order."""
        half = self.node("Mul", [x, self.scalar(0.5)], scope=scope)
        cubed = self.node("Pow", [x, self.scalar(3.0)], scope=scope)
        cubed = self.node("Mul", [cubed, self.scalar(0.044715)], scope=scope)
        inner = self.node("Add", [x, cubed], scope=scope)
        inner = self.node("Mul", [inner, self.scalar(math.sqrt(2.0 / math.pi))], scope=scope)
        tanh = self.node("Tanh", [inner], scope=scope)
        shifted = self.node("Add", [tanh, self.scalar(1.0)], scope=scope)
        return self.node("Mul", [half, shifted], scope=scope)


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """SentencePiece-like inputs: [CLS] pieces [SEP] [PAD]..., as for BERT."""
    return token_inputs(model, seed, VOCABULARY)
