"""DenseNet-121 (Huang et al. 2017) as torchvision defines it and torch.onnx exports it.

Pre-activation dense layers (BN -> ReLU -> Conv1x1 -> BN -> ReLU -> Conv3x3) whose input is
the channel concatenation of every earlier feature map of the block (one Concat per layer, as
`torch.cat(prev_features, 1)` exports), transitions BN -> ReLU -> Conv1x1 -> AvgPool 2x2
halving the channels, and a final BN -> ReLU before global pooling and the classifier. So
most BatchNormalizations follow a Concat or a pooling, not a convolution.
"""

from __future__ import annotations

import onnx

from stc_mlir.models._builder import (
    ConvNetBuilder,
    TensorProto,
    check_options,
    int_tuple,
    module_scope,
    symbolic_or_static,
)
from stc_mlir.models.resnet import example_inputs

GROWTH_RATE = 32
BLOCK_CONFIG = (6, 12, 24, 16)
INIT_FEATURES = 64
BN_SIZE = 4  # the bottleneck 1x1 conv has BN_SIZE * GROWTH_RATE channels
NUM_CLASSES = 1000
OPSETS = range(11, 18)


def build(
    batch: int = 1,
    *,
    image_size: int = 224,
    block_config: tuple[int, ...] | str = BLOCK_CONFIG,
    growth_rate: int = GROWTH_RATE,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    """`block_config` (layers per dense block) and `growth_rate` shrink it for tests."""
    check_options("densenet121", opset, OPSETS, image_size)
    blocks = int_tuple("densenet121", "block_config", block_config, 4)
    if growth_rate < 1:
        raise ValueError(f"densenet121: growth_rate must be positive, got {growth_rate}")
    n = symbolic_or_static(batch, dynamic_batch)
    b = ConvNetBuilder(seed)
    image = b.add_input("data_0", TensorProto.FLOAT, [n, 3, image_size, image_size])
    b.calibrate_input(image, 3, image_size)

    x = b.conv_bn(
        image, INIT_FEATURES, 7, stride=2, conv_param="features.conv0",
        bn_param="features.norm0", activation=None,
    )
    x = b.relu(x, scope="/features/relu0")
    x = b.max_pool(x, 3, 2, 1, scope="/features/pool0")
    for block, layers in enumerate(blocks, start=1):
        features = [x]
        for layer in range(1, layers + 1):
            prefix = f"features.denseblock{block}.denselayer{layer}"
            features.append(_dense_layer(b, features, growth_rate, prefix))
        x = b.concat(features, scope=module_scope(f"features.denseblock{block}"))
        if block != len(blocks):
            x = _transition(b, x, f"features.transition{block}")
    x = b.batch_norm(x, "features.norm5")
    x = b.relu(x, scope="/Relu")  # F.relu in DenseNet.forward: a top-level node
    b.classifier_head(x, NUM_CLASSES, fc_param="classifier", output="fc6_1")
    b.add_output("fc6_1", TensorProto.FLOAT, [n, NUM_CLASSES])
    return b.make_model("densenet121", opset, doc="torchvision DenseNet-121, random weights")


def _norm_relu_conv(
    b: ConvNetBuilder, x: str, out_channels: int, kernel: int, prefix: str, index: str
) -> str:
    y = b.batch_norm(x, f"{prefix}.norm{index}")
    y = b.relu(y, scope=module_scope(f"{prefix}.relu{index}"))
    return b.conv(y, out_channels, kernel, param=f"{prefix}.conv{index}")


def _dense_layer(b: ConvNetBuilder, features: list[str], growth_rate: int, prefix: str) -> str:
    """bn_function: cat(features) -> norm1/relu1/conv1 (1x1) -> norm2/relu2/conv2 (3x3);
    the first layer of a block has a single input and no Concat."""
    x = features[0] if len(features) == 1 else b.concat(features, scope=module_scope(prefix))
    y = _norm_relu_conv(b, x, BN_SIZE * growth_rate, 1, prefix, "1")
    return _norm_relu_conv(b, y, growth_rate, 3, prefix, "2")


def _transition(b: ConvNetBuilder, x: str, prefix: str) -> str:
    y = b.batch_norm(x, f"{prefix}.norm")
    y = b.relu(y, scope=module_scope(f"{prefix}.relu"))
    y = b.conv(y, b.channels(y) // 2, 1, param=f"{prefix}.conv")
    return b.average_pool(y, 2, 2, scope=module_scope(f"{prefix}.pool"))


__all__ = ["build", "example_inputs"]
