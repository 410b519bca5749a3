"""Comparing results with a golden reference (onnxruntime)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

MIN_COSINE = 0.999


def cosine(golden: np.ndarray, actual: np.ndarray) -> float:
    a = np.asarray(golden, dtype=np.float64).ravel()
    b = np.asarray(actual, dtype=np.float64).ravel()
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(a @ b / (na * nb))


def max_relative_error(golden: np.ndarray, actual: np.ndarray) -> float:
    """max |a - g| / max |g|: relative to the output's scale, so near-zero elements do not dominate."""
    g = np.asarray(golden, dtype=np.float64)
    a = np.asarray(actual, dtype=np.float64)
    scale = np.abs(g).max() if g.size else 0.0
    return float(np.abs(a - g).max() / scale) if scale > 0 else float(np.abs(a - g).max())


def random_inputs(types: Mapping[str, object], seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal float inputs and zero integer inputs for the given tensor types."""
    from stc_mlir.dialects import graph as g

    return random_arrays({name: (g.shape_of(t), g.numpy_dtype(t.element_type))  # type: ignore[attr-defined]
                          for name, t in types.items()}, seed)


def random_arrays(specs: Mapping[str, tuple[Sequence[int], np.dtype]], seed: int = 0) -> dict[str, np.ndarray]:
    """Standard-normal float32 arrays and zero int64 arrays for `{name: (shape, dtype)}`."""
    from stc_mlir.limits import check_host_bytes

    check_host_bytes(sum(math.prod(shape) * 8 for shape, _ in specs.values()), "the random inputs")
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype) in specs.items():
        if np.issubdtype(dtype, np.floating):
            out[name] = rng.standard_normal(shape).astype(np.float32)
        else:
            out[name] = np.zeros(shape, dtype=np.int64)
    return out


_ORT_TYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
    "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
}


def onnxruntime_outputs(model, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's fp32 results for `model` on `inputs`, or None if it is not installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        value = np.asarray(inputs[i.name])
        feeds[i.name] = value.astype(_ORT_TYPES.get(i.type, value.dtype), copy=False)
    return session.run(None, feeds)
