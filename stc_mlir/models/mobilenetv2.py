"""MobileNetV2 (width 1.0) as torchvision defines it and torch.onnx exports it.

Conv+BN+ReLU6 blocks, with ReLU6 exported as Clip whose bounds are inputs (opset >= 11),
depthwise 3x3 convolutions (group = channels) and linear-bottleneck inverted residuals.
"""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir.models._builder import (
    check_options,
    ConvNetBuilder,
    TensorProto,
    input_shape,
    module_scope,
    symbolic_or_static,
)

# (expansion t, output channels c, repeats n, first stride s), from the paper and torchvision.
INVERTED_RESIDUAL_SETTING = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
]
STEM_CHANNELS = 32
LAST_CHANNELS = 1280
NUM_CLASSES = 1000
OPSETS = range(11, 18)


def build(
    batch: int = 1,
    *,
    image_size: int = 224,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    check_options("mobilenetv2", opset, OPSETS, image_size)
    n = symbolic_or_static(batch, dynamic_batch)
    b = ConvNetBuilder(seed)
    image = b.add_input("input", TensorProto.FLOAT, [n, 3, image_size, image_size])
    b.calibrate_input(image, 3, image_size)

    x = b.conv_bn(
        image, STEM_CHANNELS, 3, stride=2, conv_param="features.0.0",
        bn_param="features.0.1", activation="Relu6",
    )
    index = 1
    for expansion, channels, repeats, first_stride in INVERTED_RESIDUAL_SETTING:
        for repeat in range(repeats):
            stride = first_stride if repeat == 0 else 1
            x = _inverted_residual(b, x, channels, stride, expansion, f"features.{index}")
            index += 1
    x = b.conv_bn(
        x, LAST_CHANNELS, 1, conv_param=f"features.{index}.0",
        bn_param=f"features.{index}.1", activation="Relu6",
    )
    b.classifier_head(x, NUM_CLASSES, fc_param="classifier.1", output="output")
    b.add_output("output", TensorProto.FLOAT, [n, NUM_CLASSES])
    return b.make_model("mobilenetv2", opset, doc="torchvision MobileNetV2, random weights")


def _inverted_residual(
    b: ConvNetBuilder, x: str, out_channels: int, stride: int, expansion: int, prefix: str
) -> str:
    """Expand 1x1 (unless t = 1), depthwise 3x3, linear project 1x1; residual when shapes
    agree, with a small gamma on the projection's BN so the residual stream stays tame."""
    in_channels = b.channels(x)
    hidden = in_channels * expansion
    residual = stride == 1 and in_channels == out_channels
    child = 0
    y = x
    if expansion != 1:
        y = b.conv_bn(
            y, hidden, 1, conv_param=f"{prefix}.conv.0.0", bn_param=f"{prefix}.conv.0.1",
            activation="Relu6",
        )
        child = 1
    y = b.conv_bn(
        y, hidden, 3, stride=stride, groups=hidden, conv_param=f"{prefix}.conv.{child}.0",
        bn_param=f"{prefix}.conv.{child}.1", activation="Relu6",
    )
    y = b.conv_bn(
        y, out_channels, 1, conv_param=f"{prefix}.conv.{child + 1}",
        bn_param=f"{prefix}.conv.{child + 2}", gamma=(0.1, 0.2) if residual else (0.5, 1.0),
        activation=None,
    )
    return b.add(x, y, scope=module_scope(prefix)) if residual else y


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (graph_input,) = model.graph.input
    return {
        graph_input.name: rng.standard_normal(input_shape(graph_input), dtype=np.float32)
    }
