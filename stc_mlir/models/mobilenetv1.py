"""MobileNetV1 (Howard et al. 2017, width 1.0) in the common PyTorch port's layout, as
torch.onnx exports it.

A 3x3 stride-2 stem, then 13 depthwise-separable blocks (a 3x3 depthwise Conv+BN+ReLU6 and
a 1x1 pointwise Conv+BN+ReLU6), global average pooling and a 1000-way classifier. ReLU6 is
the paper's (TF-slim's) activation and exports as Clip with its bounds as inputs.
"""

from __future__ import annotations

import onnx

from stc_mlir.models._builder import (
    ConvNetBuilder,
    TensorProto,
    check_options,
    symbolic_or_static,
)
from stc_mlir.models.resnet import example_inputs

# (pointwise output channels, depthwise stride) of the 13 separable blocks, from the paper.
BLOCKS = [
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
]
STEM_CHANNELS = 32
NUM_CLASSES = 1000
# BN biases ~ +1 scale: no residuals, so keep the random ReLU6 stack near-linear (see
# ConvNetBuilder.batch_norm); trained MobileNets have mostly positive BN biases too.
BETA_MEAN = 1.0
OPSETS = range(11, 18)


def build(
    batch: int = 1,
    *,
    image_size: int = 224,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    check_options("mobilenetv1", opset, OPSETS, image_size)
    n = symbolic_or_static(batch, dynamic_batch)
    b = ConvNetBuilder(seed)
    image = b.add_input("input", TensorProto.FLOAT, [n, 3, image_size, image_size])
    b.calibrate_input(image, 3, image_size)

    x = b.conv_bn(
        image, STEM_CHANNELS, 3, stride=2, conv_param="model.0.0", bn_param="model.0.1",
        activation="Relu6", beta_mean=BETA_MEAN,
    )
    for index, (channels, stride) in enumerate(BLOCKS, start=1):
        in_channels = b.channels(x)
        x = b.conv_bn(
            x, in_channels, 3, stride=stride, groups=in_channels,
            conv_param=f"model.{index}.0", bn_param=f"model.{index}.1", activation="Relu6", beta_mean=BETA_MEAN,
        )
        x = b.conv_bn(
            x, channels, 1, conv_param=f"model.{index}.3", bn_param=f"model.{index}.4",
            activation="Relu6", beta_mean=BETA_MEAN,
        )
    b.classifier_head(x, NUM_CLASSES, fc_param="fc", output="output", pool_scope="/avgpool")
    b.add_output("output", TensorProto.FLOAT, [n, NUM_CLASSES])
    return b.make_model("mobilenetv1", opset, doc="MobileNetV1 (width 1.0), random weights")


__all__ = ["build", "example_inputs"]
