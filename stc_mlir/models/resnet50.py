"""ResNet-50 v1.5 as torchvision defines it and model zoos export it.

Bias-free convolutions each followed by an unfolded BatchNormalization, the stride of a
downsampling bottleneck on its 3x3 conv (v1.5), and a Conv1x1+BN projection shortcut on the
first block of every stage.
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

# (blocks, width) per stage; a bottleneck's output has width * EXPANSION channels.
STAGES = [(3, 64), (4, 128), (6, 256), (3, 512)]
EXPANSION = 4
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
    check_options("resnet50", opset, OPSETS, image_size)
    n = symbolic_or_static(batch, dynamic_batch)
    b = ConvNetBuilder(seed)
    image = b.add_input("data", TensorProto.FLOAT, [n, 3, image_size, image_size])
    b.calibrate_input(image, 3, image_size)

    x = b.conv_bn(image, 64, 7, stride=2, conv_param="conv1", bn_param="bn1")
    x = b.max_pool(x, 3, 2, 1, scope="/maxpool")
    for stage, (blocks, width) in enumerate(STAGES, start=1):
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _bottleneck(b, x, width, stride, f"layer{stage}.{block}")
    b.classifier_head(x, NUM_CLASSES, fc_param="fc", output="output", pool_scope="/avgpool")
    b.add_output("output", TensorProto.FLOAT, [n, NUM_CLASSES])
    return b.make_model("resnet50", opset, doc="torchvision ResNet-50 v1.5, random weights")


def _bottleneck(b: ConvNetBuilder, x: str, width: int, stride: int, prefix: str) -> str:
    """1x1 reduce, 3x3 (strided), 1x1 expand; the last BN has a small gamma, as in
    zero-init-residual training, so the residual stream grows slowly with depth."""
    out_channels = width * EXPANSION
    y = b.conv_bn(x, width, 1, conv_param=f"{prefix}.conv1", bn_param=f"{prefix}.bn1")
    y = b.conv_bn(
        y, width, 3, stride=stride, conv_param=f"{prefix}.conv2", bn_param=f"{prefix}.bn2"
    )
    y = b.conv_bn(
        y, out_channels, 1, conv_param=f"{prefix}.conv3", bn_param=f"{prefix}.bn3",
        gamma=(0.1, 0.2), activation=None,
    )
    if stride != 1 or b.channels(x) != out_channels:
        x = b.conv_bn(
            x, out_channels, 1, stride=stride,
            conv_param=f"{prefix}.downsample.0", bn_param=f"{prefix}.downsample.1",
            activation=None,
        )
    added = b.add(y, x, scope=module_scope(prefix))
    return b.relu(added, scope=module_scope(f"{prefix}.relu"))


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    (graph_input,) = model.graph.input
    return {
        graph_input.name: rng.standard_normal(input_shape(graph_input), dtype=np.float32)
    }
