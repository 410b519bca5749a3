"""stc-mlir as a standard ONNX backend (`onnx.backend.base`), so ONNX's own test runner
(`onnx.backend.test.BackendTest`) measures our conformance.

    from stc_mlir import onnx_backend
    rep = onnx_backend.prepare(model)              # graph level: import + reference, float32
    outputs = rep.run([x, y])                      # tuple of numpy arrays, ONNX dtypes
    rep = onnx_backend.EmulatorBackend.prepare(model)   # whole pipeline on the NPU emulator, float16

Two levels, two classes:

- `Backend` (the module-level `prepare`/`run_model`/`run_node`): import with float tensors
  as float32 and run the graph-level reference interpreter. This is what the conformance
  tests in CI run: it checks the importer, the graph dialect and the reference kernels.
- `EmulatorBackend`: import with float tensors as float16 (the chip's storage type),
  compile with the default schedule and run the program on the emulator. Cases whose
  operators the npu lowering cannot take fail in `prepare` with the lowering's diagnostic.

Float precision is the backend's choice, not the model's: float16 and float64 model tensors
are computed at the backend's float type and the outputs are cast back to the dtypes the
ONNX graph declares, so ONNX's runner compares like with like. Inputs with dynamic
dimensions are imported at the first `run`, at the shapes given (one import per shape set).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import onnx
from onnx.backend import base

from stc_mlir.errors import StcError


class BackendError(StcError):
    """Bad use of the backend: wrong number of inputs, an unsupported device."""


def _onnx_dtype(info: onnx.ValueInfoProto) -> np.dtype | None:
    elem = info.type.tensor_type.elem_type
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)) if elem else None


class BackendRep(base.BackendRep):
    """A prepared model: imported (and compiled) once per set of input shapes.

    Inputs that determine shapes (Reshape's shape, TopK's k, Resize's sizes...) but are
    model inputs rather than initializers are specialised: the model is imported again
    with their run-time values fixed (one import per distinct value), as runtimes
    specialise on shape tensors; `specialized` lists them."""

    def __init__(self, backend: type[Backend], model: onnx.ModelProto):
        from stc_mlir.frontend import RuntimeValueError

        self.backend = backend
        self.model = model
        initializers = {i.name for i in model.graph.initializer}
        self.inputs = [i for i in model.graph.input if i.name not in initializers]
        self.output_dtypes = [_onnx_dtype(o) for o in model.graph.output]
        self.specialized: set[str] = set()
        self._compiled: dict[tuple, Any] = {}
        if all(_static_shape(i) is not None for i in self.inputs):
            try:
                self._compiled[()] = self.backend.compile(self.model, None, {})
            except RuntimeValueError as e:
                if e.input is None:
                    raise
                self.specialized.add(e.input)  # imported at run time, with its value

    def _compile(self, feeds: Mapping[str, np.ndarray], dynamic: bool):
        from stc_mlir.frontend import RuntimeValueError

        while True:
            values = {n: feeds[n] for n in sorted(self.specialized) if n in feeds}
            key = tuple((n, tuple(v.shape), str(v.dtype), v.tobytes()) for n, v in values.items())
            if dynamic:
                key += tuple(sorted((n, tuple(v.shape)) for n, v in feeds.items()))
            if key in self._compiled:
                return self._compiled[key], values
            shapes = {n: tuple(v.shape) for n, v in feeds.items() if n not in values} if dynamic else None
            try:
                self._compiled[key] = self.backend.compile(self.model, shapes, values)
            except RuntimeValueError as e:
                if e.input is None or e.input not in feeds or e.input in self.specialized:
                    raise
                self.specialized.add(e.input)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Run on inputs given as a list (graph input order), a dict by name or one array."""
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, Mapping):
            feeds = {k: np.asarray(v) for k, v in inputs.items()}
        else:
            inputs = list(inputs)
            if len(inputs) != len(self.inputs):
                raise BackendError(f"the model has {len(self.inputs)} input(s) "
                                   f"({', '.join(i.name for i in self.inputs)}), got {len(inputs)}")
            feeds = {i.name: np.asarray(v) for i, v in zip(self.inputs, inputs)}
        dynamic = any(_static_shape(i) is None for i in self.inputs)
        compiled, fixed = self._compile(feeds, dynamic)
        outputs = self.backend.execute(compiled, {k: v for k, v in feeds.items() if k not in fixed})
        return tuple(
            np.asarray(out).astype(dtype, copy=False) if dtype is not None else np.asarray(out)
            for out, dtype in zip(outputs, self.output_dtypes)
        )


def output_bounds(module) -> list[tuple[str, str | None, int]]:
    """(name, name of its valid count or None, counted axis) of each result of the
    graph-level function: which outputs are a static upper bound (`graph.valid_count`)."""
    from xdsl.dialects.builtin import IntegerAttr, StringAttr

    from stc_mlir import reference

    f = reference.find_function(module)
    bounds = []
    for i, name in enumerate(reference.output_names(f)):
        attrs = f.res_attrs.data[i].data if f.res_attrs is not None else {}
        count = attrs.get(reference.VALID_COUNT_ATTR)
        axis = attrs.get(reference.VALID_AXIS_ATTR)
        bounds.append((name, count.data if isinstance(count, StringAttr) else None,
                       axis.value.data if isinstance(axis, IntegerAttr) else 0))
    return bounds


def cut_to_counts(bounds: list[tuple[str, str | None, int]], results: list[np.ndarray]) -> list[np.ndarray]:
    """The model outputs: bounded results cut to their count, the count results dropped."""
    by_name = {name: value for (name, _, _), value in zip(bounds, results)}
    counts = {count for _, count, _ in bounds if count is not None}
    out = []
    for (name, count, axis), value in zip(bounds, results):
        if name in counts:
            continue
        if count is not None:
            value = np.take(value, np.arange(int(np.asarray(by_name[count]).reshape(-1)[0])), axis=axis)
        out.append(value)
    return out


def bounded_outputs(module, results: list[np.ndarray]) -> list[np.ndarray]:
    """The model outputs of a graph-level function's results (`cut_to_counts`)."""
    return cut_to_counts(output_bounds(module), results)


def _static_shape(info: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    if not info.type.HasField("tensor_type"):
        return ()  # a sequence or optional: the import refuses it when the model is prepared
    tt = info.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
    return None if any(d < 0 for d in dims) else tuple(dims)


class Backend(base.Backend):
    """Graph level: import (float tensors as `DTYPE`) and run the reference interpreter."""

    DTYPE: ClassVar[str] = "float32"

    @classmethod
    def compile(cls, model: onnx.ModelProto, shapes: Mapping[str, Sequence[int]] | None,
                values: Mapping[str, np.ndarray]):
        """The runnable form of `model` at `shapes` (None: the model's own), with the
        inputs `values` fixed."""
        from stc_mlir.frontend import import_onnx

        return import_onnx(model, shape=shapes, dtype=cls.DTYPE, values=values)

    @classmethod
    def execute(cls, compiled, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The model's outputs; a bounded output is cut to its valid rows."""
        from stc_mlir import reference

        return bounded_outputs(compiled, reference.run(compiled, feeds))

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> BackendRep:
        if not cls.supports_device(device):
            raise BackendError(f"device '{device}' is not supported (only CPU: the reference or the emulator)")
        return BackendRep(cls, model)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple] | None = None, **kwargs: Any):
        """Run one node on concrete inputs: it is wrapped in a model of the newest opset."""
        arrays = [np.asarray(x) for x in inputs]
        graph_inputs = [onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for name, a in zip(node.input, arrays)]
        graph_outputs = [onnx.helper.make_tensor_value_info(name, onnx.TensorProto.UNDEFINED, None)
                         for name in node.output]
        model = onnx.helper.make_model(onnx.helper.make_graph([node], "node", graph_inputs, graph_outputs))
        return cls.run_model(model, arrays, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return base.Device(device).type == base.DeviceType.CPU


class EmulatorBackend(Backend):
    """End to end: import at float16, compile with the default schedule, run on the emulator."""

    DTYPE: ClassVar[str] = "float16"

    @classmethod
    def compile(cls, model, shapes, values):
        from stc_mlir.emulator import program_from_module
        from stc_mlir.pipeline import Pipeline

        module = super().compile(model, shapes, values)
        bounds = output_bounds(module)
        return program_from_module(Pipeline(None).run(module)), bounds

    @classmethod
    def execute(cls, compiled, feeds):
        """The program's outputs; a bounded output (NonMaxSuppression's rows, TopK with a
        run-time k) cut to the count the program computed."""
        from stc_mlir.emulator import run

        program, bounds = compiled
        outputs, _ = run(program, feeds)
        return cut_to_counts(bounds, [outputs[io.name] for io in program.outputs])


prepare = Backend.prepare
run_model = Backend.run_model
run_node = Backend.run_node
supports_device = Backend.supports_device


# ----------------------------------------------------------------------------- conformance

TABLE_OPERATORS: dict[str, tuple[str, ...]] = {
    # the seeds' operator table (chapter 5) by family, as ONNX operators; Square, Bias_add,
    # Magnitude, Relu6, Swish, Full and NotEqual have no ONNX operator of their own (Mul,
    # Add, Abs, Clip, Sigmoid+Mul, ConstantOfShape/Expand, Not+Equal spell them)
    "unary": ("Abs", "Cast", "Clip", "Cosh", "Erf", "Exp", "Not", "Sign", "Sinh", "Sqrt", "Tanh"),
    "binary": ("Add", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And",
               "Or", "Xor", "Max", "Min", "Mul", "Sub"),
    "reduce": ("ArgMax", "ArgMin", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceSum"),
    "data movement": ("Expand", "Unsqueeze", "Gather", "Concat", "Resize", "GatherND", "Reshape",
                      "Where", "Slice", "Split", "Squeeze", "Transpose", "OneHot"),
    "neural network": ("AveragePool", "GlobalAveragePool", "BatchNormalization", "LayerNormalization",
                       "MaxPool", "Gelu", "Relu", "LeakyRelu", "PRelu", "Mish", "Sigmoid", "Softmax",
                       "Conv", "MatMul"),
    "detection": ("RoiAlign", "MaxRoiPool", "NonMaxSuppression", "TopK"),
}
EXTRA_OPERATORS: tuple[str, ...] = (
    # beyond the table: what current exports of common models use
    "HardSwish", "HardSigmoid", "Einsum", "GatherElements", "Gemm", "Dropout", "Identity",
    "Flatten", "Pow", "Neg", "Reciprocal", "Log", "Sum", "GlobalMaxPool", "Softplus", "Swish",
    "CumSum",
)


def node_cases(op_types: Sequence[str] | None = None) -> dict[str, str]:
    """ONNX's node test cases `{case name: operator}` whose operator is in `op_types`
    (default: the table's). A case's operator is its model's first node's; an `_expanded`
    case (the operator's function body) counts for the operator it expands."""
    import warnings

    from onnx.backend.test.loader import load_model_tests

    wanted = set(op_types if op_types is not None else
                 (op for ops in TABLE_OPERATORS.values() for op in ops))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    by_name = {c.name: c for c in cases}
    out = {}
    for case in cases:
        model = by_name.get(case.name.removesuffix("_expanded"), case).model
        if model is not None and model.graph.node and model.graph.node[0].op_type in wanted:
            out[case.name] = model.graph.node[0].op_type
    return out


def backend_test(backend: type[Backend], names: Sequence[str], module_name: str | None = None,
                 exclude: Mapping[str, str] | None = None, tolerance: float | None = None):
    """ONNX's `BackendTest` for exactly the node cases `names`, minus `exclude` (case ->
    reason); `tolerance` replaces every case's rtol and atol (float16 end to end)."""
    import re

    from onnx.backend.test import BackendTest

    kwargs = {name: {"rtol": tolerance, "atol": tolerance} for name in names} if tolerance else None
    runner = BackendTest(backend, module_name, test_kwargs=kwargs)
    runner.include("^(" + "|".join(re.escape(n) for n in sorted(names)) + ")_cpu$")
    for name in exclude or {}:
        runner.exclude("^" + re.escape(name) + "_cpu$")
    return runner
