#!/usr/bin/env python
"""Export the corpus of test/corpus/exports: torchvision classifiers and transformers models
as users export them (`torch.onnx.export(model, args, path)`, default settings, random
weights, no download), with their large float weights stripped (test/corpus/exports/corpus.py
regenerates them).

Runs in a separate venv that has torch (never a dependency of the project):

    python -m venv /work/torchvenv
    /work/torchvenv/bin/pip install torch==2.14.1 torchvision==0.29.1 transformers onnx onnxscript
    /work/torchvenv/bin/python tools/export_corpus.py [--models resnet18,bert] [--out DIR] [--list]

Each model is exported at a small size (64 x 64 or 96 x 96 images, batch 2; transformers
with 2 layers, hidden size 64, 16 tokens); a model that fails to export is reported with
the exporter's one-line error and the others go on (non-zero exit at the end).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS_DIR = os.path.join(HERE, os.pardir, "test", "corpus", "exports")
sys.path.insert(0, CORPUS_DIR)

import json  # noqa: E402

import onnx  # noqa: E402

import corpus  # noqa: E402

SEED = 0
BATCH = 2
SEQ = 16
VOCAB = 1000

# torchvision classifier -> image size (the smallest each architecture takes comfortably)
VISION = {
    "resnet18": 64, "mobilenet_v2": 64, "mobilenet_v3_small": 64, "efficientnet_b0": 64,
    "densenet121": 64, "squeezenet1_0": 64, "shufflenet_v2_x1_0": 64, "regnet_y_400mf": 64,
    "vgg11": 64, "alexnet": 96, "googlenet": 64, "convnext_tiny": 64, "vit_b_16": 64,
}


def vision(name: str, size: int):
    import torch
    import torchvision

    kwargs = {"image_size": size} if name.startswith("vit_") else {}
    if name == "googlenet":
        kwargs = {"aux_logits": False, "init_weights": True}
    model = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    image = torch.randn(BATCH, 3, size, size)
    return model, (image,), {"x": {"kind": "normal"}}, \
        f"torchvision.models.{name}(weights=None{', ' + repr(kwargs) if kwargs else ''}), input {BATCH}x3x{size}x{size}"


def _ids(vocab: int = VOCAB):
    import torch

    return torch.randint(0, vocab, (BATCH, SEQ))


def _mask():
    import torch

    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, SEQ - SEQ // 4:] = 0
    return mask


def _wrap(model, keys: tuple[str, ...], outputs: tuple[str, ...]):
    """The transformers `model` called with keyword arguments, its `outputs` returned as a
    tuple (what users write to export a model whose forward takes keywords)."""
    import torch

    class Export(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            result = self.model(**dict(zip(keys, args)))
            return tuple(getattr(result, o) for o in outputs)

    return Export().eval()


def text(name: str):
    import torch
    import transformers as tf

    torch.manual_seed(SEED)
    small = {"hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": VOCAB}
    ids, mask = _ids(), _mask()
    enc_specs = {"input_ids": {"kind": "randint", "high": VOCAB}, "attention_mask": {"kind": "mask"}}
    if name in ("bert", "roberta", "albert", "distilbert", "xlnet"):
        config = {
            "bert": lambda: tf.BertConfig(num_hidden_layers=2, max_position_embeddings=64, **small),
            "roberta": lambda: tf.RobertaConfig(num_hidden_layers=2, max_position_embeddings=64, **small),
            "albert": lambda: tf.AlbertConfig(num_hidden_layers=2, embedding_size=32, max_position_embeddings=64,
                                              **small),
            "distilbert": lambda: tf.DistilBertConfig(n_layers=2, dim=64, n_heads=4, hidden_dim=128,
                                                      vocab_size=VOCAB, max_position_embeddings=64),
            "xlnet": lambda: tf.XLNetConfig(n_layer=2, d_model=64, n_head=4, d_inner=128, vocab_size=VOCAB),
        }[name]()
        cls = {"bert": tf.BertModel, "roberta": tf.RobertaModel, "albert": tf.AlbertModel,
               "distilbert": tf.DistilBertModel, "xlnet": tf.XLNetModel}[name]
        model = _wrap(cls(config).eval(), ("input_ids", "attention_mask"), ("last_hidden_state",))
        return model, (ids, mask), enc_specs, f"transformers.{cls.__name__}({type(config).__name__}: " \
            f"{_describe(config)}), input_ids + attention_mask {BATCH}x{SEQ}"
    if name in ("gpt2", "llama"):
        if name == "gpt2":
            config = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=VOCAB, use_cache=False)
            cls = tf.GPT2LMHeadModel
        else:
            config = tf.LlamaConfig(num_hidden_layers=2, num_key_value_heads=2, max_position_embeddings=64,
                                    use_cache=False, **small)
            cls = tf.LlamaForCausalLM
        model = _wrap(cls(config).eval(), ("input_ids", "attention_mask"), ("logits",))
        return model, (ids, mask), enc_specs, f"transformers.{cls.__name__}({type(config).__name__}: " \
            f"{_describe(config)}), input_ids + attention_mask {BATCH}x{SEQ}"
    if name in ("t5-encoder", "t5", "bart"):
        if name == "bart":
            config = tf.BartConfig(encoder_layers=2, decoder_layers=2, d_model=64, encoder_attention_heads=4,
                                   decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                   max_position_embeddings=64, vocab_size=VOCAB, use_cache=False)
            cls = tf.BartModel
        else:
            config = tf.T5Config(num_layers=2, num_decoder_layers=2, d_model=64, d_kv=16, num_heads=4, d_ff=128,
                                 vocab_size=VOCAB, use_cache=False)
            cls = tf.T5EncoderModel if name == "t5-encoder" else tf.T5Model
        if name == "t5-encoder":
            model = _wrap(cls(config).eval(), ("input_ids", "attention_mask"), ("last_hidden_state",))
            return model, (ids, mask), enc_specs, f"transformers.{cls.__name__}({type(config).__name__}: " \
                f"{_describe(config)}), input_ids + attention_mask {BATCH}x{SEQ}"
        model = _wrap(cls(config).eval(), ("input_ids", "attention_mask", "decoder_input_ids"),
                      ("last_hidden_state",))
        specs = {**enc_specs, "decoder_input_ids": {"kind": "randint", "high": VOCAB}}
        return model, (ids, mask, _ids()), specs, f"transformers.{cls.__name__}({type(config).__name__}: " \
            f"{_describe(config)}), input_ids + attention_mask + decoder_input_ids {BATCH}x{SEQ}"
    if name == "vit":
        config = tf.ViTConfig(num_hidden_layers=2, image_size=32, patch_size=8, hidden_size=64,
                              num_attention_heads=4, intermediate_size=128)
        model = _wrap(tf.ViTModel(config).eval(), ("pixel_values",), ("last_hidden_state",))
        return model, (torch.randn(BATCH, 3, 32, 32),), {"pixel_values": {"kind": "normal"}}, \
            f"transformers.ViTModel(ViTConfig: {_describe(config)}), pixel_values {BATCH}x3x32x32"
    raise KeyError(name)


def _describe(config) -> str:
    keys = ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers", "encoder_layers",
            "decoder_layers", "hidden_size", "d_model", "n_embd", "dim", "num_attention_heads", "n_head",
            "num_heads", "intermediate_size", "d_ff", "d_inner", "vocab_size")
    d = config.to_dict()
    return ", ".join(f"{k}={d[k]}" for k in keys if k in d)


TEXT = ("bert", "distilbert", "roberta", "albert", "xlnet", "gpt2", "t5-encoder", "t5", "bart", "vit", "llama")
# models torch.onnx.export (2.14, defaults) does not export: left out unless named in --models
EXPORT_FAILS = {
    "xlnet": "ConversionError: Failed to decompose the FX graph for ONNX compatibility (step 2/3)",
}


def build(name: str):
    if name in VISION:
        return vision(name, VISION[name])
    return text(name)


def export(name: str, out: str) -> str:
    import torch

    torch.manual_seed(SEED)
    model, args, specs, description = build(name)
    names = list(specs)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, args, raw)  # default settings, as users write it
        proto = onnx.load(raw)
    # the exporter names inputs after forward's parameters ("args_0", ...): the spec follows them
    graph_inputs = [i.name for i in proto.graph.input if i.name not in {t.name for t in proto.graph.initializer}]
    specs = {g: specs[n] for g, n in zip(graph_inputs, names)}
    count = corpus.strip(proto, SEED)
    # the exporter's per-node source locations (stack traces) are not part of the model
    for node in proto.graph.node:
        del node.metadata_props[:]
    proto.metadata_props.add(key=corpus.INPUTS_KEY, value=json.dumps(specs))
    proto.metadata_props.add(key=corpus.SOURCE_KEY,
                             value=f"{description}; torch {torch.__version__}, torch.onnx.export defaults")
    path = os.path.join(out, name + ".onnx")
    onnx.save(proto, path)
    print(f"{name:20} {os.path.getsize(path) / 1024:8.1f} KiB  {count} tensors stripped", flush=True)
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(m for m in [*VISION, *TEXT] if m not in EXPORT_FAILS),
                   help=f"comma-separated (default: all but {', '.join(EXPORT_FAILS)}, which do not export)")
    p.add_argument("--out", default=os.path.normpath(CORPUS_DIR))
    p.add_argument("--list", action="store_true", help="list the models and exit")
    args = p.parse_args()
    if args.list:
        print("\n".join([*VISION, *TEXT]))
        return 0
    wanted = [m for m in args.models.split(",") if m]
    unknown = [m for m in wanted if m not in VISION and m not in TEXT]
    if unknown:
        print(f"export_corpus: unknown model(s) {', '.join(unknown)}; models: {', '.join([*VISION, *TEXT])}",
              file=sys.stderr)
        return 2
    if not os.path.isdir(args.out):
        print(f"export_corpus: --out '{args.out}' is not a directory", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("export_corpus: needs torch, torchvision and transformers (run it with the torch venv's python; "
              "see this file's docstring)", file=sys.stderr)
        return 2
    failed = []
    for name in wanted:
        start = time.perf_counter()
        try:
            export(name, args.out)
        except Exception as e:  # one model failing to export must not stop the others
            message = (str(e).strip().splitlines() or [""])[0][:300]
            print(f"{name:20} FAILED to export: {type(e).__name__}: {message}", flush=True)
            if os.environ.get("EXPORT_CORPUS_TRACEBACK"):
                traceback.print_exc()
            failed.append(name)
        else:
            print(f"{'':20} {time.perf_counter() - start:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
