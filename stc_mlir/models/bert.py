"""BERT-base as torch.onnx exports HuggingFace's BertModel at opset 14.

What makes it look exported rather than hand-written: LayerNorm decomposed into
ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add (no LayerNormalization before opset 17),
GELU as Div/Erf/Add/Mul/Mul, Linear weights stored transposed for MatMul and added with the
bias first, the additive attention mask built from the int64 mask with Unsqueeze/Cast/Sub/Mul,
and head-splitting Reshapes whose shape is computed at run time (Shape -> Gather -> Unsqueeze
-> Concat) in the even layers and a folded constant in the odd ones, so the importer has to
fold both. Weights follow BERT's init (std 0.02, LayerNorm gamma ~1, beta ~0).
"""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir.models._builder import GraphBuilder, TensorProto, check_options, input_shape, symbolic_or_static

VOCAB_SIZE = 30522
HIDDEN = 768
HEADS = 12
HEAD_SIZE = HIDDEN // HEADS
INTERMEDIATE = 3072
MAX_POSITIONS = 512
TYPE_VOCAB_SIZE = 2
LAYER_NORM_EPS = 1e-12
INIT_STD = 0.02
# Query/key projections get twice BERT's init std: with 0.02 random attention is almost
# uniform (max probability ~1.5x uniform), which would hide softmax errors; at 0.04 the
# scores have std ~1.2, peaked but nowhere near one-hot.
QUERY_KEY_STD = 0.04
# HuggingFace's additive mask value before it switched to finfo.min (which overflows fp16).
MASK_VALUE = -10000.0
OPSETS = range(13, 17)

CLS, SEP, PAD = 101, 102, 0
FIRST_WORDPIECE = 1996  # ids below are [unused], special and single-character tokens


def build(
    batch: int = 1,
    *,
    seq_len: int = 128,
    num_layers: int = 12,
    dynamic_batch: bool = False,
    pooler: bool = False,
    seed: int = 0,
    opset: int = 14,
) -> onnx.ModelProto:
    if not 1 <= seq_len <= MAX_POSITIONS:
        raise ValueError(f"bert-base: seq_len must be in 1..{MAX_POSITIONS}, got {seq_len}")
    if num_layers < 1:
        raise ValueError(f"bert-base: num_layers must be positive, got {num_layers}")
    check_options("bert-base", opset, OPSETS)
    n = symbolic_or_static(batch, dynamic_batch)
    b = _BertBuilder(seed, batch=n, seq_len=seq_len)
    input_ids = b.add_input("input_ids", TensorProto.INT64, [n, seq_len])
    attention_mask = b.add_input("attention_mask", TensorProto.INT64, [n, seq_len])
    token_type_ids = b.add_input("token_type_ids", TensorProto.INT64, [n, seq_len])

    hidden = b.embeddings(input_ids, token_type_ids)
    mask = b.extended_attention_mask(attention_mask)
    for layer in range(num_layers):
        last = layer == num_layers - 1
        hidden = b.encoder_layer(
            hidden, mask, layer, computed_shapes=layer % 2 == 0,
            output="last_hidden_state" if last else None,
        )
    b.add_output("last_hidden_state", TensorProto.FLOAT, [n, seq_len, HIDDEN])
    if pooler:
        b.pooler("last_hidden_state")
        b.add_output("pooler_output", TensorProto.FLOAT, [n, HIDDEN])
    return b.make_model(
        "bert-base", opset, doc=f"HuggingFace BertModel (bert-base-uncased), {num_layers} layers"
    )


class _BertBuilder(GraphBuilder):
    def __init__(self, seed: int, batch: int | str, seq_len: int):
        super().__init__(seed)
        self.batch = batch
        self.seq_len = seq_len

    def linear(
        self, x: str, in_features: int, out_features: int, param: str, scope: str,
        std: float = INIT_STD,
    ) -> str:
        """torch's Linear on a 3-D input: MatMul by the transposed weight, then Add(bias, .)."""
        weight = self.initializer(f"{param}.weight", self.weights((in_features, out_features), std))
        bias = self.initializer(f"{param}.bias", self.normal((out_features,), INIT_STD))
        product = self.node("MatMul", [x, weight], scope=scope)
        return self.node("Add", [bias, product], scope=scope)

    def layer_norm(self, x: str, param: str, scope: str, output: str | None = None) -> str:
        """LayerNorm over the last axis as torch exports it before opset 17."""
        gamma = self.initializer(f"{param}.weight", self.uniform((HIDDEN,), 0.9, 1.1))
        beta = self.initializer(f"{param}.bias", self.normal((HIDDEN,), INIT_STD))
        mean = self.node("ReduceMean", [x], scope=scope, axes=[-1], keepdims=1)
        centered = self.node("Sub", [x, mean], scope=scope)
        squared = self.node("Pow", [centered, self.scalar(2.0)], scope=scope)
        variance = self.node("ReduceMean", [squared], scope=scope, axes=[-1], keepdims=1)
        variance = self.node("Add", [variance, self.scalar(LAYER_NORM_EPS)], scope=scope)
        std = self.node("Sqrt", [variance], scope=scope)
        normalized = self.node("Div", [centered, std], scope=scope)
        scaled = self.node("Mul", [normalized, gamma], scope=scope)
        return self.node("Add", [scaled, beta], scope=scope, output=output)

    def gelu(self, x: str, scope: str) -> str:
        """Exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), in torch's exported order."""
        scaled = self.node("Div", [x, self.scalar(1.4142135381698608)], scope=scope)
        erf = self.node("Erf", [scaled], scope=scope)
        shifted = self.node("Add", [erf, self.scalar(1.0)], scope=scope)
        gated = self.node("Mul", [x, shifted], scope=scope)
        return self.node("Mul", [gated, self.scalar(0.5)], scope=scope)

    def embeddings(self, input_ids: str, token_type_ids: str) -> str:
        def table(name: str, rows: int) -> str:
            return self.initializer(
                f"embeddings.{name}.weight", self.weights((rows, HIDDEN), INIT_STD)
            )

        words = self.node(
            "Gather", [table("word_embeddings", VOCAB_SIZE), input_ids],
            scope="/embeddings/word_embeddings",
        )
        token_types = self.node(
            "Gather", [table("token_type_embeddings", TYPE_VOCAB_SIZE), token_type_ids],
            scope="/embeddings/token_type_embeddings",
        )
        summed = self.node("Add", [words, token_types], scope="/embeddings")
        # The registered `position_ids` buffer, already sliced to [1, S] by constant folding.
        position_ids = self.initializer(
            "embeddings.position_ids", np.arange(self.seq_len, dtype=np.int64)[None, :]
        )
        positions = self.node(
            "Gather", [table("position_embeddings", MAX_POSITIONS), position_ids],
            scope="/embeddings/position_embeddings",
        )
        summed = self.node("Add", [summed, positions], scope="/embeddings")
        normalized = self.layer_norm(summed, "embeddings.LayerNorm", "/embeddings/LayerNorm")
        # What is left of the embedding dropout in an inference export.
        return self.node("Identity", [normalized], scope="/embeddings/dropout")

    def extended_attention_mask(self, attention_mask: str) -> str:
        """[B, S] int64 of 1/0 -> [B, 1, 1, S] float of 0/-10000, added to the scores."""
        mask = self.node("Unsqueeze", [attention_mask, self.ints([1])])
        mask = self.node("Unsqueeze", [mask, self.ints([2])])
        mask = self.node("Cast", [mask], to=TensorProto.FLOAT)
        inverted = self.node("Sub", [self.scalar(1.0), mask])
        return self.node("Mul", [inverted, self.scalar(MASK_VALUE)])

    def target_shape(self, x: str, tail: list[int], scope: str, computed: bool) -> str:
        """The shape [B, S, *tail] for a Reshape of `x`: computed from Shape(x) as a dynamic
        export leaves it, or the constant that shape inference and folding make of it."""
        if not computed:
            leading = [-1 if isinstance(self.batch, str) else self.batch, self.seq_len]
            return self.ints(leading + tail, "onnx::Reshape")
        shape = self.node("Shape", [x], scope=scope)
        dims = []
        for axis in (0, 1):
            index = self.constant_node(np.array(axis, dtype=np.int64), scope)
            dim = self.node("Gather", [shape, index], scope=scope, axis=0)
            unsqueeze_axes = self.constant_node(np.array([0], dtype=np.int64), scope)
            dims.append(self.node("Unsqueeze", [dim, unsqueeze_axes], scope=scope))
        tail_values = [self.constant_node(np.array([d], dtype=np.int64), scope) for d in tail]
        return self.node("Concat", dims + tail_values, scope=scope, axis=0)

    def encoder_layer(
        self, hidden: str, mask: str, layer: int, computed_shapes: bool, output: str | None
    ) -> str:
        param = f"encoder.layer.{layer}"
        scope = f"/encoder/layer.{layer}"
        attention = f"{scope}/attention/self"

        def heads(projection: str, perm: list[int]) -> str:
            x = self.linear(
                hidden, HIDDEN, HIDDEN, f"{param}.attention.self.{projection}",
                f"{attention}/{projection}", QUERY_KEY_STD if projection != "value" else INIT_STD,
            )
            shape = self.target_shape(x, [HEADS, HEAD_SIZE], attention, computed_shapes)
            x = self.node("Reshape", [x, shape], scope=attention)
            return self.node("Transpose", [x], scope=attention, perm=perm)

        query = heads("query", [0, 2, 1, 3])  # [B, 12, S, 64]
        key = heads("key", [0, 2, 3, 1])  # [B, 12, 64, S]: permute and transpose(-1, -2)
        value = heads("value", [0, 2, 1, 3])
        scores = self.node("MatMul", [query, key], scope=attention)
        scores = self.node("Div", [scores, self.scalar(float(np.sqrt(HEAD_SIZE)))], scope=attention)
        scores = self.node("Add", [scores, mask], scope=attention)
        probs = self.node("Softmax", [scores], scope=attention, axis=-1)
        context = self.node("MatMul", [probs, value], scope=attention)
        context = self.node("Transpose", [context], scope=attention, perm=[0, 2, 1, 3])
        shape = self.target_shape(context, [HIDDEN], attention, computed_shapes)
        context = self.node("Reshape", [context, shape], scope=attention)

        output_scope = f"{scope}/attention/output"
        attended = self.linear(
            context, HIDDEN, HIDDEN, f"{param}.attention.output.dense", f"{output_scope}/dense"
        )
        attended = self.node("Add", [attended, hidden], scope=output_scope)
        attended = self.layer_norm(
            attended, f"{param}.attention.output.LayerNorm", f"{output_scope}/LayerNorm"
        )

        intermediate = self.linear(
            attended, HIDDEN, INTERMEDIATE, f"{param}.intermediate.dense",
            f"{scope}/intermediate/dense",
        )
        intermediate = self.gelu(intermediate, f"{scope}/intermediate/intermediate_act_fn")
        dense = self.linear(
            intermediate, INTERMEDIATE, HIDDEN, f"{param}.output.dense", f"{scope}/output/dense"
        )
        dense = self.node("Add", [dense, attended], scope=f"{scope}/output")
        return self.layer_norm(
            dense, f"{param}.output.LayerNorm", f"{scope}/output/LayerNorm", output
        )

    def pooler(self, hidden: str) -> str:
        """BertPooler: the [CLS] token's state through Linear (a Gemm on 2-D) and Tanh."""
        first = self.node(
            "Gather", [hidden, self.constant_node(np.array(0, dtype=np.int64), "/pooler")],
            scope="/pooler", axis=1,
        )
        weight = self.initializer("pooler.dense.weight", self.weights((HIDDEN, HIDDEN), INIT_STD))
        bias = self.initializer("pooler.dense.bias", self.normal((HIDDEN,), INIT_STD))
        dense = self.node(
            "Gemm", [first, weight, bias], scope="/pooler/dense", alpha=1.0, beta=1.0, transB=1
        )
        return self.node("Tanh", [dense], scope="/pooler/activation", output="pooler_output")


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Tokenizer-like inputs: [CLS] words [SEP] [PAD]...; even rows are padded (when S >= 4),
    and the second half of each sentence is segment 1."""
    rng = np.random.default_rng(seed)
    batch, seq_len = input_shape(next(i for i in model.graph.input if i.name == "input_ids"))
    input_ids = np.full((batch, seq_len), PAD, dtype=np.int64)
    attention_mask = np.zeros((batch, seq_len), dtype=np.int64)
    token_type_ids = np.zeros((batch, seq_len), dtype=np.int64)
    for row in range(batch):
        padded = row % 2 == 0 and seq_len >= 4
        length = int(rng.integers(seq_len // 2, seq_len)) if padded else seq_len
        input_ids[row, :length] = rng.integers(FIRST_WORDPIECE, VOCAB_SIZE, length)
        input_ids[row, 0] = CLS
        input_ids[row, length - 1] = SEP
        attention_mask[row, :length] = 1
        token_type_ids[row, length // 2 : length] = 1
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "token_type_ids": token_type_ids,
    }
