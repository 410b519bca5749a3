"""XLNet-base-cased (Yang et al. 2019) as torch.onnx exports HuggingFace's XLNetModel at
opset 14 (inference: no memory, no permutation mask, content stream only).

Its Transformer-XL relative attention is what sets it apart: time-major hidden states
[S, B, d], every projection an Einsum with a [d, heads, head_size] weight (`ibh,hnd->ibnd`),
three score terms (content `ac`, position `bd` against sinusoidal relative encodings of 2S
distances, segment `ef` from a one-hot same/different-segment matrix), the relative shift
of `bd` (Reshape, Slice, Reshape, Gather of arange), and masks built at run time from the
int64 inputs with Sub/Greater/Cast/Add (non-target mask) and Equal/Not/OneHot (segments).
The relative position encodings depend only on the static shapes, so the export holds them
as a folded constant. LayerNorm and GELU are decomposed as in bert.py.
"""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir.models._builder import TensorProto, check_options, symbolic_or_static
from stc_mlir.models.bert import (
    HEADS,
    HIDDEN,
    INIT_STD,
    INTERMEDIATE,
    OPSETS,
    QUERY_KEY_STD,
    Vocabulary,
    _BertBuilder,
    check_transformer_options,
    token_inputs,
)

VOCAB_SIZE = 32000
VOCABULARY = Vocabulary(VOCAB_SIZE, first_word=9, cls=3, sep=4, pad=5)
# HuggingFace subtracts 1e30 * mask from the scores of a float32 model (65500 for float16).
MASK_SCALE = 1e30
FP16_MASK_SCALE = 65500.0


def build(
    batch: int = 1,
    *,
    seq_len: int = 128,
    num_layers: int = 12,
    hidden_size: int = HIDDEN,
    num_heads: int = HEADS,
    intermediate_size: int = INTERMEDIATE,
    mask_scale: float = MASK_SCALE,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 14,
) -> onnx.ModelProto:
    """`mask_scale` is what masked scores lose: 1e30 as a float32 export writes it (beyond
    fp16's range), 65500 as HuggingFace writes it for a float16 model."""
    shape = check_transformer_options(
        "xlnet", seq_len, num_layers, hidden_size, num_heads, intermediate_size
    )
    check_options("xlnet", opset, OPSETS)
    if dynamic_batch:
        raise ValueError("xlnet: dynamic_batch is not available (the relative position "
                         "encodings are folded for a static batch)")
    n = symbolic_or_static(batch, False)
    b = _XLNetBuilder(seed, batch=n, seq_len=seq_len, shape=shape)
    b.mask_scale = float(mask_scale)
    input_ids = b.add_input("input_ids", TensorProto.INT64, [n, seq_len])
    attention_mask = b.add_input("attention_mask", TensorProto.INT64, [n, seq_len])
    token_type_ids = b.add_input("token_type_ids", TensorProto.INT64, [n, seq_len])

    ids = b.node("Transpose", [input_ids], perm=[1, 0])  # time-major [S, B]
    segments = b.node("Transpose", [token_type_ids], perm=[1, 0])
    mask = b.node("Transpose", [attention_mask], perm=[1, 0])
    non_target_mask = b.non_target_mask(mask)
    segment_matrix = b.segment_matrix(segments)
    table = b.initializer("word_embedding.weight", b.weights((VOCAB_SIZE, hidden_size), INIT_STD))
    hidden = b.node("Gather", [table, ids], scope="/word_embedding")
    hidden = b.node("Identity", [hidden], scope="/dropout")
    positions = b.initializer("pos_emb", b.relative_position_encodings())
    for layer in range(num_layers):
        hidden = b.layer(hidden, positions, segment_matrix, non_target_mask, layer)
    b.node("Transpose", [hidden], perm=[1, 0, 2], output="last_hidden_state")
    b.add_output("last_hidden_state", TensorProto.FLOAT, [n, seq_len, hidden_size])
    return b.make_model(
        "xlnet-base-cased", opset,
        doc=f"HuggingFace XLNetModel (xlnet-base-cased), {num_layers} layers, sequence {seq_len}",
    )


class _XLNetBuilder(_BertBuilder):
    mask_scale = MASK_SCALE

    def relative_position_encodings(self) -> np.ndarray:
        """pos_emb [2S, B, d]: sin / cos of the distances S .. -S+1 (attn_type 'bi')."""
        d = self.shape.hidden
        inverse_frequency = 1.0 / np.power(10000.0, np.arange(0, d, 2.0) / d)
        distances = np.arange(self.seq_len, -self.seq_len, -1.0)
        sinusoid = np.outer(distances, inverse_frequency)
        encodings = np.concatenate([np.sin(sinusoid), np.cos(sinusoid)], axis=-1)
        return np.ascontiguousarray(
            np.broadcast_to(encodings[:, None, :], (2 * self.seq_len, self.batch, d)),
            dtype=np.float32,
        )

    def non_target_mask(self, mask: str) -> str:
        """[S, S, B, 1]: 1 where query i may not attend key j (a padded key, never itself
        masked for a padded query: `((1 - mask)[None, :, :, None] > 0) - eye > 0`)."""
        mask = self.node("Cast", [mask], to=TensorProto.FLOAT)
        inverted = self.node("Sub", [self.scalar(1.0), mask])  # input_mask
        data = self.node("Unsqueeze", [inverted, self.ints([0])])  # [1, S, B]
        data = self.node("Unsqueeze", [data, self.ints([3])])  # [1, S, B, 1]
        data = self.node("Greater", [data, self.scalar(0.0)])
        data = self.node("Cast", [data], to=TensorProto.FLOAT)
        eye = -np.eye(self.seq_len, dtype=np.float32)[:, :, None, None]
        combined = self.node("Add", [data, self.initializer("onnx::Add", eye)])
        combined = self.node("Greater", [combined, self.scalar(0.0)])
        return self.node("Cast", [combined], to=TensorProto.FLOAT)

    def segment_matrix(self, segments: str) -> str:
        """[S, S, B, 2]: one_hot(segment_i != segment_j)."""
        rows = self.node("Unsqueeze", [segments, self.ints([1])])  # [S, 1, B]
        columns = self.node("Unsqueeze", [segments, self.ints([0])])  # [1, S, B]
        same = self.node("Equal", [rows, columns])
        different = self.node("Not", [same])
        different = self.node("Cast", [different], to=TensorProto.INT64)
        one_hot = self.node(
            "OneHot", [different, self.ints([2]), self.ints([0, 1])], axis=-1
        )
        return self.node("Cast", [one_hot], to=TensorProto.FLOAT)

    def projection(self, x: str, name: str, param: str, scope: str, std: float) -> str:
        """einsum("ibh,hnd->ibnd", x, weight[d, heads, head_size])."""
        shape = (self.shape.hidden, self.shape.heads, self.shape.head_size)
        weight = self.initializer(f"{param}.{name}", self.weights(shape, std))
        return self.node("Einsum", [x, weight], scope=scope, equation="ibh,hnd->ibnd")

    def layer(self, hidden: str, positions: str, segment_matrix: str, mask: str, layer: int) -> str:
        param = f"layer.{layer}.rel_attn"
        scope = f"/layer.{layer}/rel_attn"
        heads, head_size = self.shape.heads, self.shape.head_size
        query_key_std = QUERY_KEY_STD * float(np.sqrt(HIDDEN / self.shape.hidden))
        key = self.projection(hidden, "k", param, scope, query_key_std)
        value = self.projection(hidden, "v", param, scope, INIT_STD)
        position_key = self.projection(positions, "r", param, scope, query_key_std)
        query = self.projection(hidden, "q", param, scope, query_key_std)

        def biased(name: str) -> str:
            bias = self.initializer(f"{param}.{name}", self.normal((heads, head_size), INIT_STD))
            return self.node("Add", [query, bias], scope=scope)

        content = self.node(
            "Einsum", [biased("r_w_bias"), key], scope=scope, equation="ibnd,jbnd->bnij"
        )
        position = self.node(
            "Einsum", [biased("r_r_bias"), position_key], scope=scope, equation="ibnd,jbnd->bnij"
        )
        position = self.relative_shift(position, scope)
        segment_embedding = self.initializer(
            f"{param}.seg_embed", self.weights((2, heads, head_size), query_key_std)
        )
        segment = self.node(
            "Einsum", [biased("r_s_bias"), segment_embedding], scope=scope,
            equation="ibnd,snd->ibns",
        )
        segment = self.node(
            "Einsum", [segment_matrix, segment], scope=scope, equation="ijbs,ibns->bnij"
        )
        scores = self.node("Add", [content, position], scope=scope)
        scores = self.node("Add", [scores, segment], scope=scope)
        scores = self.node("Mul", [scores, self.scalar(1.0 / float(np.sqrt(head_size)))], scope=scope)
        masked = self.node("Einsum", [mask], scope=scope, equation="ijbn->bnij")
        masked = self.node("Mul", [masked, self.scalar(self.mask_scale)], scope=scope)
        scores = self.node("Sub", [scores, masked], scope=scope)
        probs = self.node("Softmax", [scores], scope=scope, axis=3)
        context = self.node("Einsum", [probs, value], scope=scope, equation="bnij,jbnd->ibnd")

        output = self.initializer(
            f"{param}.o", self.weights((self.shape.hidden, heads, head_size), INIT_STD)
        )
        attended = self.node("Einsum", [context, output], scope=scope, equation="ibnd,hnd->ibh")
        attended = self.node("Add", [attended, hidden], scope=scope)
        attended = self.layer_norm(attended, f"{param}.layer_norm", f"{scope}/layer_norm")

        ff_param, ff_scope = f"layer.{layer}.ff", f"/layer.{layer}/ff"
        inner = self.linear(
            attended, self.shape.hidden, self.shape.intermediate, f"{ff_param}.layer_1",
            f"{ff_scope}/layer_1",
        )
        inner = self.gelu(inner, f"{ff_scope}/activation_function")
        out = self.linear(
            inner, self.shape.intermediate, self.shape.hidden, f"{ff_param}.layer_2",
            f"{ff_scope}/layer_2",
        )
        out = self.node("Add", [out, attended], scope=ff_scope)
        return self.layer_norm(out, f"{ff_param}.layer_norm", f"{ff_scope}/layer_norm")

    def relative_shift(self, scores: str, scope: str) -> str:
        """rel_shift_bnij: [B, n, S, 2S] -> view [B, n, 2S, S] -> drop row 0 -> view
        [B, n, S, 2S - 1] -> index_select(3, arange(S))."""
        batch, heads, s = self.batch, self.shape.heads, self.seq_len
        x = self.node("Reshape", [scores, self.ints([batch, heads, 2 * s, s])], scope=scope)
        x = self.node(
            "Slice", [x, self.ints([1]), self.ints([2**63 - 1]), self.ints([2]), self.ints([1])],
            scope=scope,
        )
        x = self.node("Reshape", [x, self.ints([batch, heads, s, 2 * s - 1])], scope=scope)
        return self.node(
            "Gather", [x, self.initializer("onnx::Gather", np.arange(s, dtype=np.int64))],
            scope=scope, axis=3,
        )


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """SentencePiece-like inputs as XLNet's tokenizer makes them: padding first, then
    pieces, <sep>, <cls> (segment 2)."""
    return token_inputs(model, seed, VOCABULARY, cls_last=True)
