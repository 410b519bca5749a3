"""ONNX's own node test cases for the seeds' operator table, run by ONNX's backend test
runner on `stc_mlir.onnx_backend.Backend` (graph level: import at float32 + the reference
interpreter). About 600 cases in a few seconds; `bench/conformance.py` runs them end to end
on the emulator too. Every case left out is listed here with its reason (docs/conformance.md).
"""

from __future__ import annotations

import warnings

from stc_mlir import onnx_backend

EXCLUDED = {
    # strings are not tensors the graph dialect has
    "test_equal_string": "string tensors are not supported",
    "test_equal_string_broadcast": "string tensors are not supported",
    # MaxPool's second output (argmax indices) has no graph op
    "test_maxpool_with_argmax_2d_precomputed_pads": "the MaxPool Indices output is not supported",
    "test_maxpool_with_argmax_2d_precomputed_strides": "MaxPool storage_order 1 / Indices output not supported",
    # the rounding of these formats is not modelled; casts to them are refused
    "test_cast_FLOAT_to_FLOAT4E2M1": "casts to float4 are refused",
    "test_cast_FLOAT16_to_FLOAT4E2M1": "casts to float4 are refused",
    "test_cast_e8m0_FLOAT_to_FLOAT8E8M0": "casts to float8e8m0 are refused",
    "test_cast_e8m0_FLOAT16_to_FLOAT8E8M0": "casts to float8e8m0 are refused",
}

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the case generators' overflow warnings
    CASES = onnx_backend.node_cases()
    _runner = onnx_backend.backend_test(onnx_backend.Backend, list(CASES), __name__, EXCLUDED)
    OnnxBackendNodeModelTest = _runner.test_cases["OnnxBackendNodeModelTest"]
    for _name in [n for n in vars(OnnxBackendNodeModelTest) if n.startswith("test_")]:
        if not _name.endswith("_cpu") or _name.removesuffix("_cpu") not in CASES:
            delattr(OnnxBackendNodeModelTest, _name)  # other operators' cases and other devices


def test_the_selection_is_the_table():
    """The selection holds every table operator that has cases, and the exclusions are real cases."""
    ops = set(CASES.values())
    table = {op for family in onnx_backend.TABLE_OPERATORS.values() for op in family}
    assert table - ops == {"MaxRoiPool"}  # ONNX has no test case for it (tested in test_importer_ops)
    assert set(EXCLUDED) <= set(CASES)
    assert len(CASES) >= 590
