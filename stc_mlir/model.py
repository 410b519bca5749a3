"""TensorTurbo's model API: import an ONNX model, look at and fix its inputs, compile it.

    model = from_onnx("resnet50.onnx")                # or a ModelProto; shape={"data": [16, 3, 224, 224]}
    model.get_input_info()                            # {"data": {"shape": [1, 3, 224, 224], "dtype": "float16"}}
    model.set_input_shape({"data": [16, 3, 224, 224]})
    path = model.compile("resnet50.stcobj", schedule=resnet50_schedule, batch=16)
    executor = Executor.load_from_stcobj(path)        # stc_mlir.executor

`compile(output_file=None, schedule=None, **config)` runs `stc_mlir.pipeline` and writes
the `.stcobj`; `compare_all(inputs=None, schedule=None, **config)` compiles the same way and
compares every graph op's result, emulator against reference (docs/compare.md). Config keys
(TensorTurbo's `tb.` prefix is accepted and ignored):

| key | default | meaning |
| --- | --- | --- |
| `graph_schedule_level` | 3 | without a schedule function: 0 the default schedule (every result in DDR), 1 results in LLB where they fit, 2 in L1 where they fit, 3 the automatic search (docs/auto-schedule.md; its decision is cached on disk). Not given, level 3 gives way to 2, 1, 0 if it refuses the graph, with a `ScheduleFallbackWarning`; given, it is honoured or refused |
| `required_pass` | [] | extra passes by kebab-case name (TensorTurbo's `FuseConvAddBnRelu` too) |
| `disabled_pass` | [] | pipeline passes to leave out (not the lowering) |
| `batch` | the model's | compile at this batch (every input's axis 0), handed to the schedule function |
| `target` | "stcp920" | a built-in target name or a target file |
| `dump_ir` | None | a directory for each stage's IR (`00-input.mlir`, `01-graph-canonicalize.mlir`, ...) |
| `progress` | None | `progress(stage, seconds or None)` around each stage |

Dtypes are the compiled program's: float tensors are stored as float16 (an Executor takes
float32 inputs and converts them), integer inputs as int64.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx

from stc_mlir.errors import StcError

CONFIG_KEYS = ("graph_schedule_level", "required_pass", "disabled_pass", "batch", "target", "dump_ir", "progress")


class ModelError(StcError):
    """Bad use of a Model: an unknown input or config key, a malformed shape."""


class ScheduleFallbackWarning(UserWarning):
    """The default graph_schedule_level refused the graph; a lower level scheduled it."""


def _run(pipeline, module):
    """`pipeline.run(module)`, each note of a fallback to a lower level as a warning."""
    module = pipeline.run(module)
    for note in pipeline.notes:
        warnings.warn(note, ScheduleFallbackWarning, stacklevel=3)
    return module


def from_onnx(path_or_model: str | os.PathLike[str] | onnx.ModelProto,
              shape: Mapping[str, Sequence[int]] | None = None, *, allow_fp16_overflow: bool = False) -> Model:
    """A Model from an ONNX file or ModelProto; `shape` fixes input shapes by name. Weights
    beyond fp16's range are an error unless `allow_fp16_overflow` (then a warning)."""
    from stc_mlir import fp16_range
    from stc_mlir.frontend.onnx_importer import load_model

    proto, source = load_model(path_or_model)
    fp16_range.check_model(proto, source, allow=allow_fp16_overflow)
    path = None if isinstance(path_or_model, onnx.ModelProto) else source
    model = Model(proto, path)
    if shape:
        model.set_input_shape(shape)
    return model


def _onnx_dims(info: onnx.ValueInfoProto) -> list[int]:
    """An ONNX input's dimensions, -1 where it has none fixed."""
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else -1
            for d in info.type.tensor_type.shape.dim]


def _storage_dtype(elem_type: int) -> str:
    """The dtype an ONNX input has in the compiled program (the importer's mapping)."""
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)) if elem_type else np.dtype(np.float32)
    if np.issubdtype(dtype, np.floating):
        return "float16"
    return dtype.name


class Model:
    """An imported ONNX model with its input shapes (see the module doc)."""

    def __init__(self, proto: onnx.ModelProto, path: str | None = None):
        self.proto = proto
        self.path = path
        initializers = {init.name for init in proto.graph.initializer}
        self._inputs = [i for i in proto.graph.input if i.name not in initializers]
        self.shapes: dict[str, list[int]] = {i.name: _onnx_dims(i) for i in self._inputs}
        self._graph_cache: tuple[tuple, Any] | None = None

    @property
    def name(self) -> str:
        if self.path:
            return os.path.splitext(os.path.basename(self.path))[0]
        return self.proto.graph.name or "model"

    # -- inputs and outputs

    def get_input_info(self) -> dict[str, dict[str, object]]:
        """`{name: {"shape": [...], "dtype": ...}}`; -1 marks a dimension not fixed yet."""
        return {i.name: {"shape": list(self.shapes[i.name]), "dtype": _storage_dtype(i.type.tensor_type.elem_type)}
                for i in self._inputs}

    def get_output_info(self) -> dict[str, dict[str, object]]:
        """`{name: {"shape": [...], "dtype": ...}}` (the model is imported to infer them)."""
        from stc_mlir import reference
        from stc_mlir.dialects import graph as g

        f = reference.find_function(self._graph(self.shapes))
        return {name: {"shape": list(g.shape_of(t)), "dtype": g.numpy_dtype(t.element_type).name}
                for name, t in zip(reference.output_names(f), f.function_type.outputs)}

    def set_input_shape(self, input_shape: Mapping[str, Sequence[int]] | str,
                        shape: Sequence[int] | None = None) -> None:
        """Fix input shapes: `{"data": [16, 3, 224, 224]}`, or `("data", [16, 3, 224, 224])`."""
        if isinstance(input_shape, str):
            if shape is None:
                raise ModelError(f"set_input_shape('{input_shape}', shape): the shape is missing")
            input_shape = {input_shape: shape}
        elif shape is not None:
            raise ModelError("set_input_shape takes a {name: shape} dict, or a name and a shape")
        updates = {}
        for name, dims in input_shape.items():
            if name not in self.shapes:
                raise ModelError(f"set_input_shape: unknown input '{name}'; the model's inputs are "
                                 f"{', '.join(map(repr, self.shapes))}")
            try:
                new = [int(d) for d in dims]
                if any(d < 1 or d != orig for d, orig in zip(new, dims)):
                    raise ValueError
            except (TypeError, ValueError):
                raise ModelError(f"set_input_shape: the shape of '{name}' must be a list of positive "
                                 f"integers, got {dims!r}") from None
            rank = len(self.shapes[name])
            if rank and len(new) != rank:
                raise ModelError(f"set_input_shape: '{name}' has rank {rank}, got shape {new}")
            updates[name] = new
        self.shapes.update(updates)

    # -- compiling

    def _graph(self, shapes: Mapping[str, list[int]]):
        """The graph-level module at `shapes` (imported once per set of shapes; do not change it)."""
        from stc_mlir.frontend import import_onnx

        key = tuple((name, tuple(dims)) for name, dims in shapes.items())
        if self._graph_cache is None or self._graph_cache[0] != key:
            given = {name: dims for name, dims in shapes.items() if -1 not in dims}
            self._graph_cache = (key, import_onnx(self.proto, shape=given or None, source=self.path))
        return self._graph_cache[1]

    def _shapes(self, batch: int | None) -> dict[str, list[int]]:
        if batch is None:
            return dict(self.shapes)
        return {name: [batch, *dims[1:]] if dims else dims for name, dims in self.shapes.items()}

    def graph_module(self, batch: int | None = None):
        """A fresh graph-level module (a copy: the caller may change it), at `batch` if given
        (axis 0 of every input)."""
        return self._graph(self._shapes(batch)).clone()

    def onnx_model(self, batch: int | None = None) -> onnx.ModelProto:
        """A copy of the ONNX model with the input shapes it is compiled at (for onnxruntime:
        the original may fix another batch)."""
        proto = onnx.ModelProto()
        proto.CopyFrom(self.proto)
        shapes = self._shapes(batch)
        for info in proto.graph.input:
            if -1 not in shapes.get(info.name, [-1]):
                dims = info.type.tensor_type.shape.dim
                del dims[:]
                for d in shapes[info.name]:
                    dims.add().dim_value = d
        for info in proto.graph.output:
            info.type.tensor_type.ClearField("shape")
        del proto.graph.value_info[:]
        return proto

    def compile(self, output_file: str | os.PathLike[str] | None = None, schedule=None, **config) -> str:
        """Compile to an `.stcobj` (default: next to the ONNX file, else in the working
        directory, named after the model); returns its path. See the module doc for config."""
        from stc_mlir import stcobj

        pipeline, batch = self._pipeline(schedule, config, "compile")
        module = _run(pipeline, self.graph_module(batch))
        path = os.fspath(output_file) if output_file is not None else self.default_output()
        stcobj.save(module, path)
        return path

    def compare_all(self, inputs: Mapping[str, object] | None = None, schedule=None, *,
                    min_cosine: float | None = None, min_euclidean: float | None = None, **config):
        """Compile as `compile` does (no file written), run the program on the emulator and
        the scheduled graph on the reference interpreter, and compare every graph op's
        result: a `stc_mlir.compare_all.Comparison` (`.table()`, `.first_divergence`,
        `.save_npz(dir)`). `inputs` default to random ones (standard normal, seed 0); the
        tolerance defaults to `compare_all.MIN_COSINE` and `MIN_EUCLIDEAN`."""
        from stc_mlir.compare import random_arrays
        from stc_mlir.compare_all import MIN_COSINE, MIN_EUCLIDEAN, compare_program, keep_scheduled
        from stc_mlir.emulator import program_from_module
        from stc_mlir.isa.program import DTYPES

        pipeline, batch = self._pipeline(schedule, config, "compare_all")
        kept = keep_scheduled().into(pipeline)
        program = program_from_module(_run(pipeline, self.graph_module(batch)))
        if inputs is None:
            inputs = random_arrays({io.name: (io.shape, DTYPES[io.dtype]) for io in program.inputs})
        return compare_program(kept.module, program, {k: np.asarray(v) for k, v in inputs.items()},
                               min_cosine=MIN_COSINE if min_cosine is None else min_cosine,
                               min_euclidean=MIN_EUCLIDEAN if min_euclidean is None else min_euclidean)

    def _pipeline(self, schedule, config: Mapping[str, Any], what: str):
        """(the Pipeline for `config`, the batch); every option is checked first."""
        from stc_mlir.pipeline import Pipeline

        options = {}
        for key, value in config.items():
            name = key.removeprefix("tb.")
            if name not in CONFIG_KEYS:
                raise ModelError(f"{what}: unknown config key '{key}'; valid keys: {', '.join(CONFIG_KEYS)}")
            options[name] = value
        batch = options.pop("batch", None)
        level = options.pop("graph_schedule_level", None)
        return Pipeline(schedule, batch=batch, level=level, **options), batch

    def default_output(self) -> str:
        directory = os.path.dirname(self.path) if self.path else os.getcwd()
        return os.path.join(directory, self.name + ".stcobj")

    def __repr__(self) -> str:
        return f"Model('{self.name}', inputs {self.shapes})"
