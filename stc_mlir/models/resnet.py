"""The ResNet family (He et al. 2015) as torchvision defines it and model zoos export it:
ResNet-34 (basic blocks), ResNet-50 v1.5 and ResNet-101 (bottlenecks).

Bias-free convolutions each followed by an unfolded BatchNormalization, the stride of a
downsampling block on its 3x3 conv (v1.5 for the bottlenecks), and a Conv1x1+BN projection
shortcut on the first block of every stage whose shape changes.
"""

from __future__ import annotations

import numpy as np
import onnx

from stc_mlir.models._builder import (
    check_options,
    ConvNetBuilder,
    TensorProto,
    input_shape,
    int_tuple,
    module_scope,
    symbolic_or_static,
)

# depth -> (block kind, blocks per stage); the stage widths are 64, 128, 256, 512.
DEPTHS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
    101: ("bottleneck", (3, 4, 23, 3)),
    152: ("bottleneck", (3, 8, 36, 3)),
}
WIDTHS = (64, 128, 256, 512)
EXPANSION = {"basic": 1, "bottleneck": 4}
NUM_CLASSES = 1000
OPSETS = range(11, 18)


def build(
    batch: int = 1,
    *,
    depth: int = 50,
    image_size: int = 224,
    stages: tuple[int, ...] | str | None = None,
    dynamic_batch: bool = False,
    seed: int = 0,
    opset: int = 13,
) -> onnx.ModelProto:
    """ResNet-`depth`; `stages` overrides the blocks per stage (for small test networks)."""
    if depth not in DEPTHS:
        raise ValueError(f"resnet: depth must be one of {', '.join(map(str, DEPTHS))}, got {depth}")
    name = f"resnet{depth}"
    check_options(name, opset, OPSETS, image_size)
    kind, blocks_per_stage = DEPTHS[depth]
    if stages is not None:
        blocks_per_stage = int_tuple(name, "stages", stages, 4)
    n = symbolic_or_static(batch, dynamic_batch)
    b = ConvNetBuilder(seed)
    image = b.add_input("data", TensorProto.FLOAT, [n, 3, image_size, image_size])
    b.calibrate_input(image, 3, image_size)

    x = b.conv_bn(image, 64, 7, stride=2, conv_param="conv1", bn_param="bn1")
    x = b.max_pool(x, 3, 2, 1, scope="/maxpool")
    block = _bottleneck if kind == "bottleneck" else _basic_block
    for stage, (blocks, width) in enumerate(zip(blocks_per_stage, WIDTHS), start=1):
        for index in range(blocks):
            stride = 2 if stage > 1 and index == 0 else 1
            x = block(b, x, width, stride, f"layer{stage}.{index}")
    b.classifier_head(x, NUM_CLASSES, fc_param="fc", output="output", pool_scope="/avgpool")
    b.add_output("output", TensorProto.FLOAT, [n, NUM_CLASSES])
    version = " v1.5" if kind == "bottleneck" else ""
    return b.make_model(name, opset, doc=f"torchvision ResNet-{depth}{version}, random weights")


def _shortcut(b: ConvNetBuilder, x: str, out_channels: int, stride: int, prefix: str) -> str:
    """Identity, or the Conv1x1+BN projection when the block changes the shape."""
    if stride == 1 and b.channels(x) == out_channels:
        return x
    return b.conv_bn(
        x, out_channels, 1, stride=stride,
        conv_param=f"{prefix}.downsample.0", bn_param=f"{prefix}.downsample.1", activation=None,
    )


def _basic_block(b: ConvNetBuilder, x: str, width: int, stride: int, prefix: str) -> str:
    """Two 3x3 convs (the first strided); the last BN has a small gamma, as in
    zero-init-residual training, so the residual stream grows slowly with depth."""
    y = b.conv_bn(x, width, 3, stride=stride, conv_param=f"{prefix}.conv1", bn_param=f"{prefix}.bn1")
    y = b.conv_bn(
        y, width, 3, conv_param=f"{prefix}.conv2", bn_param=f"{prefix}.bn2",
        gamma=(0.1, 0.2), activation=None,
    )
    added = b.add(y, _shortcut(b, x, width, stride, prefix), scope=module_scope(prefix))
    return b.relu(added, scope=module_scope(f"{prefix}.relu"))


def _bottleneck(b: ConvNetBuilder, x: str, width: int, stride: int, prefix: str) -> str:
    """1x1 reduce, 3x3 (strided), 1x1 expand; small gamma on the last BN as above."""
    out_channels = width * EXPANSION["bottleneck"]
    y = b.conv_bn(x, width, 1, conv_param=f"{prefix}.conv1", bn_param=f"{prefix}.bn1")
    y = b.conv_bn(
        y, width, 3, stride=stride, conv_param=f"{prefix}.conv2", bn_param=f"{prefix}.bn2"
    )
    y = b.conv_bn(
        y, out_channels, 1, conv_param=f"{prefix}.conv3", bn_param=f"{prefix}.bn3",
        gamma=(0.1, 0.2), activation=None,
    )
    added = b.add(y, _shortcut(b, x, out_channels, stride, prefix), scope=module_scope(prefix))
    return b.relu(added, scope=module_scope(f"{prefix}.relu"))


def example_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """N(0, 1) images, as a normalised ImageNet batch is."""
    rng = np.random.default_rng(seed)
    (graph_input,) = model.graph.input
    return {
        graph_input.name: rng.standard_normal(input_shape(graph_input), dtype=np.float32)
    }
