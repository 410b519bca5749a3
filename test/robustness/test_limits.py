"""Resource limits up front and fp16 range checks, through the Python API."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import compare, fp16_range, ir, limits
from stc_mlir.emulator.examples import matmul_by_rows
from stc_mlir.executor import Executor
from stc_mlir.model import from_onnx
from stc_mlir.pipeline import compile_module


def relu_net(batch: int, width: int = 1) -> str:
    t = f"tensor<{batch}x{width}xf16>"
    return f"func.func @main(%x: {t}) -> {t} {{\n  %r = graph.relu %x : {t}\n  %e = graph.exp %r : {t}\n  func.return %e : {t}\n}}\n"


def test_model_beyond_ddr_is_refused_with_the_numbers_before_any_work():
    module = ir.parse_ir(relu_net(10**9, 4))
    with pytest.raises(limits.ResourceError, match=(
            r"^@main needs at least 24,000,000,000 bytes of DDR \(inputs 8,000,000,000, outputs 8,000,000,000, "
            r"weights 0, largest intermediate 8,000,000,000 \(graph.relu\)\), more than the 4,294,967,296-byte "
            r"DDR of stcp920; use a batch of at most 178,956,970$")):
        compile_module(module)
    assert "graph.relu" in str(module)  # nothing was compiled


def test_a_huge_batch_that_fits_is_scheduled_without_looping_over_every_divisor():
    """The default schedule cut a group by trying every factor 2..batch; a batch of 1e9 looped."""
    code = ("import sys; from stc_mlir import ir; from stc_mlir.pipeline import compile_module;"
            "compile_module(ir.parse_ir(sys.stdin.read()), stop_after='schedule-verify')")
    done = subprocess.run([sys.executable, "-c", code], input=relu_net(5 * 10**8), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_host_limit(monkeypatch):
    monkeypatch.setenv("STC_HOST_MEMORY_LIMIT", "1000")
    with pytest.raises(limits.ResourceError, match=r"the random inputs need 8,192 bytes of host memory, more "
                                                   r"than the 1,000 allowed"):
        compare.random_arrays({"x": ((32, 32), np.dtype(np.float16))})
    with pytest.raises(limits.ResourceError, match=r"the reference interpreter's tensors need 128 bytes"):
        monkeypatch.setenv("STC_HOST_MEMORY_LIMIT", "100")
        limits.check_reference_fits(ir.parse_ir(relu_net(8, 2)))
    monkeypatch.setenv("STC_HOST_MEMORY_LIMIT", "lots")
    with pytest.raises(limits.ResourceError, match=r"STC_HOST_MEMORY_LIMIT='lots': expected a number of bytes"):
        limits.host_limit()


def _onnx_with(weight: np.ndarray, path) -> str:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
            np.array([1e9], np.float32)))],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [numpy_helper.from_array(weight, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return str(path)


def test_fp16_overflow_in_weights_is_an_error_unless_allowed(tmp_path):
    w = np.ones((4, 4), np.float32)
    w[0, :3] = [7e4, -1e5, np.inf]  # inf was inf already: not an overflow
    path = _onnx_with(w, tmp_path / "m.onnx")
    with pytest.raises(fp16_range.Fp16RangeError, match=(
            r"m.onnx: initializer 'w' has 2 of 16 values outside fp16's range \(largest magnitude 100000; fp16 holds "
            r"up to 65504\): they become inf \(and 1 more tensor\(s\)\); pass --allow-fp16-overflow")):
        from_onnx(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from_onnx(path, allow_fp16_overflow=True)
    found = [str(w.message) for w in caught if w.category is fp16_range.Fp16OverflowWarning]
    assert len(found) == 2 and "constant 'c' has 1 of 1 values" in found[1], found


def test_fp16_overflow_in_inputs():
    executor = Executor(matmul_by_rows((16, 8), np.ones((8, 4)), cores=2))
    x = np.ones((16, 8), np.float32)
    x[3, 3] = -65520.0  # the first value that rounds to -inf
    with pytest.raises(fp16_range.Fp16RangeError, match=r"set_input: input 'a' has 1 of 128 values outside fp16's range "
                                                        r"\(largest magnitude 65520"):
        executor.set_input({"a": x})
    x[3, 3] = 65504.0
    executor.set_input({"a": x})  # the largest fp16 is fine


@pytest.mark.parametrize("value", ["abc", None, np.array(["1"]), [{"a": 1}]])
def test_set_input_refuses_what_is_not_numbers(value):
    from stc_mlir.executor import ExecutorError

    executor = Executor(matmul_by_rows((16, 8), np.ones((8, 4)), cores=2))
    with pytest.raises(ExecutorError, match=r"set_input: input 'a' must hold numbers, got an array of"):
        executor.set_input({"a": value})
