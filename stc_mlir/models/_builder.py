"""Shared helpers for the built-in model builders.

`GraphBuilder` accumulates the nodes and initializers of one ONNX graph under unique names
in torch.onnx's style (`/layer1/layer1.0/conv1/Conv`, `..._output_0`), so the builders read
like the module they export. `ConvNetBuilder` adds Conv+BatchNormalization blocks and runs
each layer in numpy on a calibration image as it is added, so every BatchNorm gets the
running statistics its convolution really produces and the random network stays at unit
scale from the first layer to the last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper, numpy_helper

# onnx 1.23 defaults to IR 14, which onnxruntime 1.31 refuses; IR 8 covers opsets <= 17.
IR_VERSION = 8

Dim = int | str


def module_scope(param_prefix: str) -> str:
    """The torch.onnx scope of a module: `layer1.0.conv1` -> `/layer1/layer1.0/conv1`.

    Numeric segments (children of a Sequential) are qualified by their parent, as torch does.
    """
    levels: list[str] = []
    for segment in param_prefix.split("."):
        if segment.isdigit() and levels:
            levels.append(f"{levels[-1]}.{segment}")
        else:
            levels.append(segment)
    return "/" + "/".join(levels)


class GraphBuilder:
    """Accumulates one ONNX graph; every node, tensor and initializer gets a unique name."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        # Built in place: copying a finished 440 MB graph into a model costs a second each.
        self.model = onnx.ModelProto()
        self.graph = self.model.graph
        self._taken: set[str] = set()

    def unique(self, name: str) -> str:
        if name not in self._taken:
            self._taken.add(name)
            return name
        index = 1
        while f"{name}_{index}" in self._taken:
            index += 1
        self._taken.add(f"{name}_{index}")
        return f"{name}_{index}"

    # -- values -------------------------------------------------------------------------

    def normal(self, shape: Sequence[int], std: float, mean: float = 0.0) -> np.ndarray:
        values = self.rng.standard_normal(tuple(shape), dtype=np.float32)
        values *= np.float32(std)
        if mean:
            values += np.float32(mean)
        return values

    def weights(self, shape: Sequence[int], std: float) -> np.ndarray:
        """Zero-mean weights with standard deviation `std`, uniformly distributed as torch's
        kaiming/xavier_uniform init gives them (and 6x faster to draw than normals, which
        matters for 100M-parameter models)."""
        values = self.rng.random(tuple(shape), dtype=np.float32)
        values -= np.float32(0.5)
        values *= np.float32(std * math.sqrt(12.0))
        return values

    def uniform(self, shape: Sequence[int], low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, tuple(shape)).astype(np.float32)

    def initializer(self, name: str, array: np.ndarray) -> str:
        tensor = self.graph.initializer.add()
        tensor.name = name = self.unique(name)
        tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        tensor.raw_data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
        return name

    def scalar(self, value: float, name: str = "onnx::Const") -> str:
        """A float32 scalar initializer, as torch.onnx leaves a folded Python constant."""
        return self.initializer(name, np.array(value, dtype=np.float32))

    def ints(self, values: Sequence[int], name: str = "onnx::Const") -> str:
        """An int64 1-D initializer (shapes, axes)."""
        return self.initializer(name, np.array(values, dtype=np.int64))

    def constant_node(self, array: np.ndarray, scope: str) -> str:
        """A value carried by a Constant node rather than an initializer (torch does both)."""
        return self.node(
            "Constant", [], scope=scope, value=numpy_helper.from_array(np.asarray(array))
        )

    # -- graph --------------------------------------------------------------------------

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        *,
        scope: str = "",
        output: str | None = None,
        **attributes,
    ) -> str:
        """Appends a single-result node and returns the name of its result."""
        node_name = self.unique(f"{scope}/{op_type}")
        result = self.unique(output if output is not None else f"{node_name}_output_0")
        self.graph.node.append(
            helper.make_node(op_type, list(inputs), [result], name=node_name, **attributes)
        )
        return result

    def add_input(self, name: str, elem_type: int, shape: Sequence[Dim]) -> str:
        self.graph.input.append(helper.make_tensor_value_info(self.unique(name), elem_type, shape))
        return name

    def add_output(self, name: str, elem_type: int, shape: Sequence[Dim]) -> None:
        self.graph.output.append(helper.make_tensor_value_info(name, elem_type, shape))

    def make_model(self, graph_name: str, opset: int, doc: str = "") -> onnx.ModelProto:
        self.graph.name = graph_name
        self.graph.doc_string = doc
        self.model.ir_version = IR_VERSION
        self.model.opset_import.append(helper.make_opsetid("", opset))
        self.model.producer_name = "stc_mlir.models"
        self.model.producer_version = "1.0"
        return self.model


# -- conv nets calibrated on a forward pass ---------------------------------------------


def conv2d(x: np.ndarray, weight: np.ndarray, stride: int, pad: int, groups: int) -> np.ndarray:
    """NCHW convolution in numpy (dense or depthwise), for calibration only."""
    out_channels, _, kernel, _ = weight.shape
    if kernel == 1 and groups == 1:  # a plain matmul per image, no window copies
        x = np.ascontiguousarray(x[:, :, ::stride, ::stride])
        n, c, h, w = x.shape
        return np.matmul(weight.reshape(out_channels, c), x.reshape(n, c, h * w)).reshape(
            n, out_channels, h, w
        )
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(x, (kernel, kernel), axis=(2, 3))[:, :, ::stride, ::stride]
    if groups == 1:
        out = np.tensordot(windows, weight, axes=([1, 4, 5], [1, 2, 3]))
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    if groups == x.shape[1] == out_channels:
        return np.einsum("nchwij,cij->nchw", windows, weight[:, 0])
    raise ValueError(f"calibration supports dense and depthwise convolutions, not groups={groups}")


class ConvNetBuilder(GraphBuilder):
    """A GraphBuilder for NCHW conv nets that runs each layer on a calibration image as it
    is added.

    Random weights only give a well-scaled network if every BatchNormalization's running
    statistics match what its convolution really produces; analytic estimates drift by ~10%
    per layer (neighbouring activations are correlated), which compounds over 50 layers. So
    the running statistics are measured, as training would, on N(0, 1) calibration images.
    """

    BN_EPSILON = 1e-5

    def __init__(self, seed: int):
        super().__init__(seed)
        self.values: dict[str, np.ndarray] = {}

    # Pixels per calibration batch: one 224x224 image, or more smaller ones, so that even
    # the last, smallest feature maps give each channel enough samples for its statistics.
    CALIBRATION_PIXELS = 224 * 224

    def calibrate_input(self, name: str, channels: int, image_size: int) -> None:
        """Starts the calibration pass with N(0, 1) images, like `example_inputs`."""
        images = max(1, -(-self.CALIBRATION_PIXELS // (image_size * image_size)))
        self.values[name] = self.normal((images, channels, image_size, image_size), 1.0)

    def channels(self, x: str) -> int:
        return self.values[x].shape[1]

    def conv_bn(
        self,
        x: str,
        out_channels: int,
        kernel: int,
        *,
        conv_param: str,
        bn_param: str,
        stride: int = 1,
        groups: int = 1,
        gamma: tuple[float, float] = (0.5, 1.0),
        beta_mean: float = 0.0,
        activation: str | None = "Relu",
    ) -> str:
        """Conv (no bias, He init) + BatchNormalization (+ Relu or ReLU6-as-Clip).

        gamma ~ U(*gamma) sets the scale of the BatchNorm output, beta_mean * gamma its mean.
        """
        conv = self.conv(x, out_channels, kernel, param=conv_param, stride=stride, groups=groups)
        bn = self.batch_norm(conv, bn_param, gamma=gamma, beta_mean=beta_mean)
        parent = bn_param.rpartition(".")[0]
        if activation == "Relu":  # torchvision's `relu` module of the parent block
            return self.relu(bn, scope=module_scope(f"{parent}.relu" if parent else "relu"))
        if activation == "Relu6":  # ConvBNReLU = Sequential(conv, bn, ReLU6): child 2
            return self.relu6(bn, scope=module_scope(f"{parent}.2"))
        assert activation is None, activation
        return bn

    def conv(
        self, x: str, out_channels: int, kernel: int, *, param: str, stride: int = 1,
        groups: int = 1,
    ) -> str:
        """A bias-free Conv with He init, padded to keep the size (divided by the stride)."""
        in_channels = self.channels(x)
        fan_in = in_channels // groups * kernel * kernel
        weight = self.weights(
            (out_channels, in_channels // groups, kernel, kernel), math.sqrt(2.0 / fan_in)
        )
        conv = self.node(
            "Conv",
            [x, self.initializer(f"{param}.weight", weight)],
            scope=module_scope(param),
            dilations=[1, 1],
            group=groups,
            kernel_shape=[kernel, kernel],
            pads=[kernel // 2] * 4,
            strides=[stride, stride],
        )
        self.values[conv] = conv2d(self.values[x], weight, stride, kernel // 2, groups)
        return conv

    def batch_norm(
        self, x: str, param: str, gamma: tuple[float, float] = (0.5, 1.0), beta_mean: float = 0.0
    ) -> str:
        """Inference BatchNormalization whose running statistics are measured on the
        calibration value of `x` (as a finite-sample estimate: close, not exact).

        A positive `beta_mean` (the BN bias's mean, in units of its scale) keeps most units of
        a following ReLU active, as trained networks do: without residual connections a
        random ReLU+BN stack is chaotic (each layer amplifies a perturbation ~1.2x, so fp16
        rounding would grow 100x over 27 layers); mostly-linear units keep it critical."""
        value = self.values[x]
        channels = value.shape[1]
        channel_mean = value.mean(axis=(0, 2, 3))
        channel_var = value.var(axis=(0, 2, 3)) + 1e-6
        running_mean = channel_mean + self.normal([channels], 0.05) * np.sqrt(channel_var)
        running_var = channel_var * self.uniform([channels], 0.9, 1.1)
        scale = self.uniform([channels], *gamma)
        bias = self.normal([channels], 0.1 * gamma[1])
        if beta_mean:
            bias += np.float32(beta_mean) * scale
        params = {
            "weight": scale,
            "bias": bias,
            "running_mean": running_mean.astype(np.float32),
            "running_var": running_var.astype(np.float32),
        }
        bn = self.node(
            "BatchNormalization",
            [x] + [self.initializer(f"{param}.{k}", v) for k, v in params.items()],
            scope=module_scope(param),
            epsilon=self.BN_EPSILON,
            momentum=0.9,
        )
        multiplier = scale / np.sqrt(params["running_var"] + self.BN_EPSILON)
        shift = bias - params["running_mean"] * multiplier
        self.values[bn] = value * multiplier[:, None, None] + shift[:, None, None]
        return bn

    def concat(self, inputs: Sequence[str], scope: str) -> str:
        """torch.cat(inputs, 1): channel concatenation."""
        out = self.node("Concat", list(inputs), scope=scope, axis=1)
        self.values[out] = np.concatenate([self.values[x] for x in inputs], axis=1)
        return out

    def average_pool(self, x: str, kernel: int, stride: int, scope: str) -> str:
        """AvgPool2d(kernel, stride) without padding, as torch exports it."""
        out = self.node(
            "AveragePool", [x], scope=scope, ceil_mode=0, kernel_shape=[kernel, kernel],
            pads=[0] * 4, strides=[stride, stride],
        )
        windows = sliding_window_view(self.values[x], (kernel, kernel), axis=(2, 3))
        self.values[out] = windows[:, :, ::stride, ::stride].mean(axis=(4, 5))
        return out

    def relu(self, x: str, scope: str) -> str:
        out = self.node("Relu", [x], scope=scope)
        self.values[out] = np.maximum(self.values[x], 0.0)
        return out

    def relu6(self, x: str, scope: str) -> str:
        """ReLU6 the way torch exports it from opset 11: Clip with min/max as inputs."""
        low, high = self.scalar(0.0, "onnx::Clip_min"), self.scalar(6.0, "onnx::Clip_max")
        out = self.node("Clip", [x, low, high], scope=scope)
        self.values[out] = np.clip(self.values[x], 0.0, 6.0)
        return out

    def add(self, a: str, b: str, scope: str) -> str:
        out = self.node("Add", [a, b], scope=scope)
        self.values[out] = self.values[a] + self.values[b]
        return out

    def max_pool(self, x: str, kernel: int, stride: int, pad: int, scope: str) -> str:
        out = self.node(
            "MaxPool", [x], scope=scope, ceil_mode=0, dilations=[1, 1],
            kernel_shape=[kernel, kernel], pads=[pad] * 4, strides=[stride, stride],
        )
        padded = np.pad(
            self.values[x], ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf
        )
        windows = sliding_window_view(padded, (kernel, kernel), axis=(2, 3))
        self.values[out] = windows[:, :, ::stride, ::stride].max(axis=(4, 5))
        return out

    def classifier_head(
        self, x: str, num_classes: int, *, fc_param: str, output: str, pool_scope: str = ""
    ) -> str:
        """GlobalAveragePool + Flatten + Gemm(transB=1), the torchvision classifier tail,
        with the fc weights scaled so the logits have ~unit scale."""
        pooled = self.node("GlobalAveragePool", [x], scope=pool_scope)
        flat = self.node("Flatten", [pooled], axis=1)
        features = self.values[x].mean(axis=(2, 3))
        rms = float(np.sqrt(np.mean(np.square(features))))
        fan_in = features.shape[1]
        weight = self.weights((num_classes, fan_in), 1.0 / (rms * math.sqrt(fan_in)))
        bias = self.normal((num_classes,), 0.1)
        return self.node(
            "Gemm",
            [
                flat,
                self.initializer(f"{fc_param}.weight", weight),
                self.initializer(f"{fc_param}.bias", bias),
            ],
            scope=module_scope(fc_param),
            output=output,
            alpha=1.0,
            beta=1.0,
            transB=1,
        )


MIN_IMAGE_SIZE = 32
"""The total stride of the CNNs: a smaller image would vanish before the classifier."""


def check_options(model: str, opset: int, opsets: range, image_size: int | None = None) -> None:
    """ValueError naming the model and the valid range for a bad opset or image size."""
    if opset not in opsets:
        raise ValueError(f"{model}: opset must be in {opsets.start}..{opsets.stop - 1}")
    if image_size is not None and image_size < MIN_IMAGE_SIZE:
        raise ValueError(f"{model}: image_size must be at least {MIN_IMAGE_SIZE}")


def int_tuple(model: str, option: str, value: object, length: int | None = None) -> tuple[int, ...]:
    """A tuple of positive ints from a sequence or a comma-separated string (as
    `stc-run --option stages=1,1,1,1` passes it); ValueError naming the option otherwise."""
    items = value.split(",") if isinstance(value, str) else value
    try:
        result = tuple(int(v) for v in items)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        result = ()
    if not result or min(result) < 1 or (length is not None and len(result) != length):
        count = f"{length} " if length is not None else ""
        raise ValueError(f"{model}: {option} must be {count}positive integers, got {value!r}")
    return result


def symbolic_or_static(batch: int, dynamic_batch: bool) -> Dim:
    """The batch dimension of a graph input/output: `batch` (symbolic) or the static size."""
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    return "batch" if dynamic_batch else batch


def input_shape(value_info: onnx.ValueInfoProto, symbolic_size: int = 2) -> tuple[int, ...]:
    """A concrete shape for a graph input; a symbolic dimension (the batch) gets
    `symbolic_size`, more than one so per-row variation is exercised."""
    dims = value_info.type.tensor_type.shape.dim
    return tuple(d.dim_value if d.HasField("dim_value") else symbolic_size for d in dims)


__all__ = [
    "IR_VERSION",
    "ConvNetBuilder",
    "GraphBuilder",
    "TensorProto",
    "input_shape",
    "int_tuple",
    "module_scope",
    "conv2d",
    "symbolic_or_static",
]
