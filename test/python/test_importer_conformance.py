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
    # ONNX leaves a float's cast to an integer out of its range undefined; these cases cast
    # -9..15 (-3..3) to 4-bit (2-bit) integers, and their expected values are what the
    # ml_dtypes of the generating machine gives out of range (wrapped before 0.7, 0 since):
    # test_in_range_casts_to_narrow_integers checks the values in range
    **{f"test_cast_{src}_to_{dst}": "out-of-range values are undefined (in range: tested below)"
       for src in ("FLOAT", "FLOAT16") for dst in ("INT4", "UINT4", "INT2", "UINT2")},
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


def test_in_range_casts_to_narrow_integers():
    """Casts of floats to 4- and 2-bit integers (stored in 8 bits) are exact in range and
    come back as the ONNX type the graph declares."""
    import ml_dtypes
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    for to, dtype, lo, hi in ((TensorProto.INT4, ml_dtypes.int4, -8, 7), (TensorProto.UINT4, ml_dtypes.uint4, 0, 15),
                              (TensorProto.INT2, ml_dtypes.int2, -2, 1), (TensorProto.UINT2, ml_dtypes.uint2, 0, 3)):
        for src, np_src in ((TensorProto.FLOAT, np.float32), (TensorProto.FLOAT16, np.float16)):
            x = np.arange(lo, hi + 1, dtype=np_src).reshape(1, -1)
            graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=to)], "cast",
                                      [helper.make_tensor_value_info("x", src, x.shape)],
                                      [helper.make_tensor_value_info("y", to, x.shape)])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
            (y,) = onnx_backend.Backend.run_model(model, [x])
            assert y.dtype == np.dtype(dtype), (to, src)
            assert y.astype(np.int64).tolist() == x.astype(np.int64).tolist(), (to, src)
