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

from dataclasses import dataclass

import numpy as np
import onnx

from stc_mlir.models._builder import GraphBuilder, TensorProto, check_options, input_shape, symbolic_or_static

VOCAB_SIZE = 30522
HIDDEN = 768
HEADS = 12
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
    hidden_size: int = HIDDEN,
    num_heads: int = HEADS,
    intermediate_size: int = INTERMEDIATE,
    dynamic_batch: bool = False,
    pooler: bool = False,
    seed: int = 0,
    opset: int = 14,
) -> onnx.ModelProto:
    """BERT-base by default; BERT-large is hidden_size 1024, num_heads 16,
    intermediate_size 4096, num_layers 24. Smaller sizes make tiny test networks."""
    shape = check_transformer_options(
        "bert", seq_len, num_layers, hidden_size, num_heads, intermediate_size
    )
    check_options("bert", opset, OPSETS)
    n = symbolic_or_static(batch, dynamic_batch)
    b = _BertBuilder(seed, batch=n, seq_len=seq_len, shape=shape)
    input_ids = b.add_input("input_ids", TensorProto.INT64, [n, seq_len])
    attention_mask = b.add_input("attention_mask", TensorProto.INT64, [n, seq_len])
    token_type_ids = b.add_input("token_type_ids", TensorProto.INT64, [n, seq_len])

    hidden = b.embeddings(input_ids, token_type_ids)
    mask = b.extended_attention_mask(attention_mask)
    for layer in range(num_layers):
        last = layer == num_layers - 1
        hidden = b.encoder_layer(
            hidden, mask, f"encoder.layer.{layer}", f"/encoder/layer.{layer}",
            computed_shapes=layer % 2 == 0, output="last_hidden_state" if last else None,
        )
    b.add_output("last_hidden_state", TensorProto.FLOAT, [n, seq_len, hidden_size])
    if pooler:
        b.pooler("last_hidden_state")
        b.add_output("pooler_output", TensorProto.FLOAT, [n, hidden_size])
    size = "base" if hidden_size == HIDDEN else "large" if hidden_size == 1024 else str(hidden_size)
    return b.make_model(
        f"bert-{size}", opset,
        doc=f"HuggingFace BertModel (bert-{size}-uncased), {num_layers} layers, sequence {seq_len}",
    )


@dataclass(frozen=True)
class TransformerShape:
    hidden: int
    heads: int
    intermediate: int

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


def check_transformer_options(
    model: str, seq_len: int, num_layers: int, hidden: int, heads: int, intermediate: int
) -> TransformerShape:
    """ValueError naming the option for a size that makes no transformer."""
    if not 1 <= seq_len <= MAX_POSITIONS:
        raise ValueError(f"{model}: seq_len must be in 1..{MAX_POSITIONS}, got {seq_len}")
    for option, value in (("num_layers", num_layers), ("hidden_size", hidden),
                          ("num_heads", heads), ("intermediate_size", intermediate)):
        if value < 1:
            raise ValueError(f"{model}: {option} must be positive, got {value}")
    if hidden % heads:
        raise ValueError(f"{model}: hidden_size {hidden} is not a multiple of num_heads {heads}")
    return TransformerShape(hidden, heads, intermediate)


@dataclass(frozen=True)
class LayerNames:
    """Where a transformer layer's modules sit, relative to the layer (HuggingFace names;
    '/' separates module levels)."""

    attention: str
    attention_dense: str
    attention_residual: str
    attention_norm: str
    intermediate: str
    activation: str
    output: str
    output_residual: str
    output_norm: str


BERT_LAYER = LayerNames(
    attention="attention/self", attention_dense="attention/output/dense",
    attention_residual="attention/output", attention_norm="attention/output/LayerNorm",
    intermediate="intermediate/dense", activation="intermediate/intermediate_act_fn",
    output="output/dense", output_residual="output", output_norm="output/LayerNorm",
)


class _BertBuilder(GraphBuilder):
    def __init__(self, seed: int, batch: int | str, seq_len: int, shape: TransformerShape):
        super().__init__(seed)
        self.batch = batch
        self.seq_len = seq_len
        self.shape = shape
        self.parameters: dict[str, str] = {}

    def linear(
        self, x: str, in_features: int, out_features: int, param: str, scope: str,
        std: float = INIT_STD,
    ) -> str:
        """torch's Linear on a 3-D input: MatMul by the transposed weight, then Add(bias, .)."""
        weight = self.parameter(
            f"{param}.weight", lambda: self.weights((in_features, out_features), std)
        )
        bias = self.parameter(f"{param}.bias", lambda: self.normal((out_features,), INIT_STD))
        product = self.node("MatMul", [x, weight], scope=scope)
        return self.node("Add", [bias, product], scope=scope)

    def layer_norm(
        self, x: str, param: str, scope: str, output: str | None = None,
        eps: float = LAYER_NORM_EPS, width: int | None = None,
    ) -> str:
        """LayerNorm over the last axis (of `width`, the hidden size by default) as torch
        exports it before opset 17."""
        width = width or self.shape.hidden
        gamma = self.parameter(f"{param}.weight", lambda: self.uniform((width,), 0.9, 1.1))
        beta = self.parameter(f"{param}.bias", lambda: self.normal((width,), INIT_STD))
        mean = self.node("ReduceMean", [x], scope=scope, axes=[-1], keepdims=1)
        centered = self.node("Sub", [x, mean], scope=scope)
        squared = self.node("Pow", [centered, self.scalar(2.0)], scope=scope)
        variance = self.node("ReduceMean", [squared], scope=scope, axes=[-1], keepdims=1)
        variance = self.node("Add", [variance, self.scalar(eps)], scope=scope)
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

    def embeddings(
        self, input_ids: str, token_type_ids: str, vocab_size: int = VOCAB_SIZE,
        width: int | None = None,
    ) -> str:
        """Word + token type + position embeddings, LayerNorm; `width` is the embedding
        width when it is not the hidden size (ALBERT's factorised embedding)."""
        width = width or self.shape.hidden

        def table(name: str, rows: int) -> str:
            return self.initializer(
                f"embeddings.{name}.weight", self.weights((rows, width), INIT_STD)
            )

        words = self.node(
            "Gather", [table("word_embeddings", vocab_size), input_ids],
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
        normalized = self.layer_norm(
            summed, "embeddings.LayerNorm", "/embeddings/LayerNorm", width=width
        )
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

    def parameter(self, name: str, make) -> str:
        """The initializer of parameter `name`, made by `make()` the first time: a module
        applied several times (ALBERT's shared layer) exports its weights once."""
        if name not in self.parameters:
            self.parameters[name] = self.initializer(name, make())
        return self.parameters[name]

    def encoder_layer(
        self, hidden: str, mask: str, param: str, scope: str, computed_shapes: bool,
        output: str | None, names: LayerNames = BERT_LAYER,
    ) -> str:
        """Self-attention, residual + LayerNorm, feed-forward, residual + LayerNorm; `names`
        maps each module to its parameter prefix and scope under `param` / `scope`."""
        hidden_size, heads, head_size = self.shape.hidden, self.shape.heads, self.shape.head_size
        attention = f"{scope}/{names.attention}"
        # Query/key init keeps the score std ~1.2 whatever the width (see QUERY_KEY_STD).
        query_key_std = QUERY_KEY_STD * float(np.sqrt(HIDDEN / hidden_size))

        def heads_of(projection: str, perm: list[int]) -> str:
            x = self.linear(
                hidden, hidden_size, hidden_size,
                f"{param}.{names.attention.replace('/', '.')}.{projection}",
                f"{attention}/{projection}", query_key_std if projection != "value" else INIT_STD,
            )
            shape = self.target_shape(x, [heads, head_size], attention, computed_shapes)
            x = self.node("Reshape", [x, shape], scope=attention)
            return self.node("Transpose", [x], scope=attention, perm=perm)

        query = heads_of("query", [0, 2, 1, 3])  # [B, heads, S, head_size]
        key = heads_of("key", [0, 2, 3, 1])  # [B, heads, head_size, S]: permute and transpose
        value = heads_of("value", [0, 2, 1, 3])
        scores = self.node("MatMul", [query, key], scope=attention)
        scores = self.node("Div", [scores, self.scalar(float(np.sqrt(head_size)))], scope=attention)
        scores = self.node("Add", [scores, mask], scope=attention)
        probs = self.node("Softmax", [scores], scope=attention, axis=-1)
        context = self.node("MatMul", [probs, value], scope=attention)
        context = self.node("Transpose", [context], scope=attention, perm=[0, 2, 1, 3])
        shape = self.target_shape(context, [hidden_size], attention, computed_shapes)
        context = self.node("Reshape", [context, shape], scope=attention)

        def module(path: str) -> tuple[str, str]:
            return f"{param}.{path.replace('/', '.')}", f"{scope}/{path}"

        attended = self.linear(context, hidden_size, hidden_size, *module(names.attention_dense))
        attended = self.node(
            "Add", [attended, hidden], scope=f"{scope}/{names.attention_residual}".rstrip("/")
        )
        attended = self.layer_norm(attended, *module(names.attention_norm))

        intermediate = self.linear(
            attended, hidden_size, self.shape.intermediate, *module(names.intermediate)
        )
        intermediate = self.activation(intermediate, f"{scope}/{names.activation}")
        dense = self.linear(intermediate, self.shape.intermediate, hidden_size, *module(names.output))
        dense = self.node("Add", [dense, attended], scope=f"{scope}/{names.output_residual}".rstrip("/"))
        return self.layer_norm(dense, *module(names.output_norm), output)

    def activation(self, x: str, scope: str) -> str:
        return self.gelu(x, scope)

    def pooler(self, hidden: str) -> str:
        """BertPooler: the [CLS] token's state through Linear (a Gemm on 2-D) and Tanh."""
        first = self.node(
            "Gather", [hidden, self.constant_node(np.array(0, dtype=np.int64), "/pooler")],
            scope="/pooler", axis=1,
        )
        width = self.shape.hidden
        weight = self.initializer("pooler.dense.weight", self.weights((width, width), INIT_STD))
        bias = self.initializer("pooler.dense.bias", self.normal((width,), INIT_STD))
        dense = self.node(
            "Gemm", [first, weight, bias], scope="/pooler/dense", alpha=1.0, beta=1.0, transB=1
        )
        return self.node("Tanh", [dense], scope="/pooler/activation", output="pooler_output")


@dataclass(frozen=True)
class Vocabulary:
    """What a tokenizer emits: the id range of words and the special tokens' ids."""

    size: int
    first_word: int
    cls: int
    sep: int
    pad: int


BERT_VOCABULARY = Vocabulary(VOCAB_SIZE, FIRST_WORDPIECE, CLS, SEP, PAD)


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Tokenizer-like inputs: [CLS] words [SEP] [PAD]...; even rows are padded (when S >= 4),
    and the second half of each sentence is segment 1."""
    return token_inputs(model, seed, BERT_VOCABULARY)


def token_inputs(
    model: onnx.ModelProto, seed: int, vocabulary: Vocabulary, cls_last: bool = False
) -> dict[str, np.ndarray]:
    """input_ids / attention_mask / token_type_ids of a batch of sentence pairs, with [CLS]
    first and padding at the end (BERT) or [SEP] [CLS] last and padding at the start
    (`cls_last`: XLNet)."""
    rng = np.random.default_rng(seed)
    batch, seq_len = input_shape(next(i for i in model.graph.input if i.name == "input_ids"))
    input_ids = np.full((batch, seq_len), vocabulary.pad, dtype=np.int64)
    attention_mask = np.zeros((batch, seq_len), dtype=np.int64)
    token_type_ids = np.zeros((batch, seq_len), dtype=np.int64)
    for row in range(batch):
        padded = row % 2 == 0 and seq_len >= 4
        length = int(rng.integers(seq_len // 2, seq_len)) if padded else seq_len
        tokens = slice(seq_len - length, seq_len) if cls_last else slice(0, length)
        input_ids[row, tokens] = rng.integers(vocabulary.first_word, vocabulary.size, length)
        if cls_last:
            input_ids[row, -2:] = vocabulary.sep, vocabulary.cls
            token_type_ids[row, seq_len - length // 2 :] = 1
            token_type_ids[row, -1] = 2  # XLNet's segment of <cls>
        else:
            input_ids[row, 0] = vocabulary.cls
            input_ids[row, length - 1] = vocabulary.sep
            token_type_ids[row, length // 2 : length] = 1
        attention_mask[row, tokens] = 1
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "token_type_ids": token_type_ids,
    }
