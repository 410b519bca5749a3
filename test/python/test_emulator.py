"""The emulator's numbers: hand-written multi-core programs against numpy, and every
command kind against the shared kernels of `stc_mlir.kernels`."""

import json

import numpy as np
import pytest

from stc_mlir import kernels
from stc_mlir.emulator import EmulatorError, run, tile
from stc_mlir.emulator.builder import ProgramBuilder
from stc_mlir.emulator.examples import conv_by_rows, matmul_by_rows

RNG = np.random.default_rng(1234)


def f16(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def assert_f16_close(got, want, max_ulps=1, min_exact=0.99):
    """fp16 results equal up to fp32 summation order: at most `max_ulps` apart and almost
    all bit-identical (a wrong row, halo or channel is many ulps off)."""
    assert got.dtype == np.float16 and got.shape == want.shape
    a = got.view(np.int16).astype(np.int32)
    b = np.asarray(want, np.float16).view(np.int16).astype(np.int32)
    a = np.where(a < 0, -32768 - a, a)  # sign-magnitude -> monotonic integers
    b = np.where(b < 0, -32768 - b, b)
    diff = np.abs(a - b)
    assert diff.max() <= max_ulps, f"{diff.max()} ulps apart at {np.unravel_index(diff.argmax(), diff.shape)}"
    assert (diff == 0).mean() >= min_exact


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_conv_split_over_8_cores_with_noc_halos_equals_numpy(chunks):
    x = f16(1, 8, 32, 16)
    w = f16(16, 8, 3, 3, scale=0.2)
    b = f16(16)
    program = conv_by_rows(x.shape, w, b, cores=8, out_chunks=chunks, act="relu")
    halo_dmas = [c for core in program.cores.values() for c in core
                 if c.op == "dma" and c.tiles["src"].buffer.startswith("xin")]
    assert len(halo_dmas) == 14  # 7 core boundaries, one row each way
    out, report = run(program, {"x": x})
    want = kernels.unary("relu", kernels.conv2d(x, w, b, pads=(1, 1, 1, 1)))
    assert_f16_close(out["y"], want)
    assert report.bytes_written["l1"] > 0 and not report.hazards
    assert {s.core for s in report.timeline} == set(range(8))


def test_conv_5x5_halo_of_two_rows():
    x = f16(2, 4, 16, 8)
    w = f16(6, 4, 5, 5, scale=0.2)
    out, _ = run(conv_by_rows(x.shape, w, cores=4), {"x": x})
    assert_f16_close(out["y"], kernels.conv2d(x, w, pads=(2, 2, 2, 2)))


def test_matmul_over_8_cores_equals_numpy():
    a, w = f16(256, 96), f16(96, 80, scale=0.3)
    out, report = run(matmul_by_rows(a.shape, w), {"a": a})
    assert_f16_close(out["c"], kernels.matmul(a, w))
    assert report.macs == 256 * 96 * 80


def _single_core(op, in_shapes, out_shape, **params):
    """DDR inputs -> L1 -> `op` -> L1 -> DDR output, on core 0."""
    b = ProgramBuilder(op)
    ins = {}
    s_in, s_out = b.semaphore("in"), b.semaphore("out")
    for slot, shape in in_shapes.items():
        ddr = b.input(slot, shape)
        space = "wb" if slot == "weight" else "l1"
        buf = b.buffer(f"{slot}_t", space, ddr.span, core=0)
        ins[slot] = tile(buf, shape)
        b.add(0, "dma", src=ddr, dst=ins[slot], signals=[s_in])
    y = b.output("y", out_shape)
    out = tile(b.buffer("y_t", "l1", y.span, core=0), out_shape)
    b.add(0, op, waits=[s_in] * len(in_shapes), signals=[s_out], output=out, **ins, **params)
    b.add(0, "dma", waits=[s_out], src=out, dst=y)
    return b.build()


VECTOR_CASES = [
    ("unary", {"input": (4, 33)}, (4, 33), {"kind": "gelu"},
     lambda i: kernels.unary("gelu", i["input"])),
    ("unary", {"input": (4, 33)}, (4, 33), {"kind": "clip", "min": -0.5, "max": 0.25},
     lambda i: kernels.unary("clip", i["input"], min=-0.5, max=0.25)),
    ("unary", {"input": (2, 8)}, (2, 8), {"kind": "leaky_relu", "alpha": 0.2},
     lambda i: kernels.unary("leaky_relu", i["input"], alpha=0.2)),
    ("binary", {"lhs": (3, 5, 8), "rhs": (8,)}, (3, 5, 8), {"kind": "mul"},
     lambda i: kernels.binary("mul", i["lhs"], i["rhs"])),
    ("binary", {"lhs": (4, 8), "rhs": (4, 1)}, (4, 8), {"kind": "div"},
     lambda i: kernels.binary("div", i["lhs"], i["rhs"])),
    ("softmax", {"input": (6, 40)}, (6, 40), {"axis": -1},
     lambda i: kernels.softmax(i["input"], -1)),
    ("softmax", {"input": (6, 40)}, (6, 40), {"axis": 0},
     lambda i: kernels.softmax(i["input"], 0)),
    ("layer_norm", {"input": (5, 64), "scale": (64,), "bias": (64,)}, (5, 64), {"epsilon": 1e-6},
     lambda i: kernels.layer_norm(i["input"], i["scale"], i["bias"], -1, 1e-6)),
    ("pool", {"input": (1, 3, 9, 9)}, (1, 3, 5, 5),
     {"kind": "max", "kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)},
     lambda i: kernels.max_pool(i["input"], (3, 3), (2, 2), (1, 1, 1, 1))),
    ("pool", {"input": (1, 3, 9, 9)}, (1, 3, 5, 5),
     {"kind": "avg", "kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)},
     lambda i: kernels.avg_pool(i["input"], (3, 3), (2, 2), (1, 1, 1, 1))),
    ("reduce", {"input": (4, 6, 8)}, (4, 8), {"kind": "mean", "axes": (1,), "keepdims": False},
     lambda i: kernels.reduce("reduce_mean", i["input"], (1,), False)),
    ("reduce", {"input": (4, 6, 8)}, (1, 6, 1), {"kind": "max", "axes": (0, 2)},
     lambda i: kernels.reduce("reduce_max", i["input"], (0, 2), True)),
    ("conv2d", {"input": (1, 32, 6, 6), "weight": (32, 1, 3, 3)}, (1, 32, 4, 4), {"groups": 32},
     lambda i: kernels.conv2d(i["input"], i["weight"], groups=32)),
    ("conv2d", {"input": (1, 4, 7, 7), "weight": (8, 4, 3, 3), "residual": (1, 8, 3, 3)},
     (1, 8, 3, 3), {"strides": (2, 2), "act": "relu6"},
     lambda i: kernels.unary("clip", kernels.conv2d(i["input"], i["weight"], strides=(2, 2))
                             + i["residual"].astype(np.float32), min=0.0, max=6.0)),
    ("matmul", {"lhs": (2, 5, 16), "rhs": (16, 8), "bias": (8,)}, (2, 5, 8), {"act": "relu"},
     lambda i: kernels.unary("relu", kernels.matmul(i["lhs"], i["rhs"]) + i["bias"].astype(np.float32))),
]


@pytest.mark.parametrize("op, in_shapes, out_shape, params, ref", VECTOR_CASES,
                         ids=[f"{c[0]}-{c[3].get('kind', c[3].get('act', ''))}-{i}" for i, c in enumerate(VECTOR_CASES)])
def test_command_matches_shared_kernel_exactly(op, in_shapes, out_shape, params, ref):
    inputs = {slot: f16(*shape, scale=0.5) for slot, shape in in_shapes.items()}
    if params.get("kind") == "div":
        inputs["rhs"] = (np.abs(inputs["rhs"]) + np.float16(0.5)).astype(np.float16)
    out, _ = run(_single_core(op, in_shapes, out_shape, **params), inputs)
    want = np.asarray(ref(inputs), np.float32).reshape(out_shape).astype(np.float16)
    np.testing.assert_array_equal(out["y"], want)


def test_copy_transposes_through_strides_and_dma_reshapes():
    b = ProgramBuilder("transpose")
    x = b.input("x", (6, 10))
    y = b.output("y", (10, 6))
    t, u = b.buffer("t", "l1", 120, core=2), b.buffer("u", "llb", 120)
    s = [b.semaphore(f"s{i}", core=2) for i in range(3)]
    b.add(2, "dma", src=x, dst=tile(t, (60,)), signals=[s[0]])
    b.add(2, "copy", waits=[s[0]], signals=[s[1]], input=tile(t, (10, 6), strides=(1, 10)),
          output=tile(t, (10, 6)))
    b.add(2, "dma", waits=[s[1]], signals=[s[2]], src=tile(t, (10, 6)), dst=tile(u, (2, 30)))
    b.add(2, "dma", waits=[s[2]], src=tile(u, (60,)), dst=y)
    # core 2 reads the x tile for the copy while writing the transpose in place: the copy
    # reads its whole input before writing, like the hardware's in-L1 layout copy
    x_val = f16(6, 10)
    out, _ = run(b.build(), {"x": x_val})
    np.testing.assert_array_equal(out["y"], x_val.T)


def test_program_from_ir_runs(tmp_path):
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser

    from stc_mlir.dialects.npu import Npu
    from stc_mlir.emulator import program_from_module

    text = """
    npu.program @relu target "stcp920" {
      npu.buffer @x : ddr[1024] at 0
      npu.buffer @y : ddr[1024] at 1024
      npu.buffer @t : l1(4)[1024] at 0
      npu.input "x" @x : 2x256xf16
      npu.output "y" @y : 2x256xf16
      npu.semaphore @loaded core 4
      npu.semaphore @done core 4
      npu.core 4 {
        npu.dma @x[0] : 512xf16 -> @t[0] : 512xf16 {signals = [@loaded]}
        npu.unary relu @t[0] : 512xf16 -> @t[0] : 512xf16 {waits = [@loaded], signals = [@done]}
        npu.dma @t[0] : 512xf16 -> @y[0] : 512xf16 {waits = [@done]}
      }
    }"""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Npu)
    module = Parser(ctx, text).parse_module()
    module.verify()
    x = f16(2, 256)
    trace = tmp_path / "trace.json"
    out, report = run(program_from_module(module), {"x": x}, trace=str(trace))
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert [(e["pid"], e["name"]) for e in slices if e["cat"] != "wait"] == [
        (4, "dma"), (4, "unary"), (4, "dma")]
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads == {"dma_in", "dma_out", "matrix", "vector"}
    assert all(e["dur"] >= 0 for e in slices)
    assert slices[-1]["args"]["text"] == "core 4, command #2 (npu.dma @t[0] : 512xf16 -> @y[0] : 512xf16)"


def test_report_fields_and_table():
    a, w = f16(64, 32), f16(32, 64)
    _, report = run(matmul_by_rows(a.shape, w), {"a": a})
    d = report.as_dict()
    for key in ("cycles", "roofline_cycles", "ddr_bytes", "min_ddr_bytes", "peak_l1_bytes",
                "peak_llb_bytes", "mac_utilization", "hazards"):
        assert key in d
    assert d["hazards"] == []
    # every core reads all of A's rows once and the weights once; writes its rows of C
    assert d["bytes_read"]["ddr"] == a.nbytes + 8 * w.nbytes
    assert d["bytes_written"]["ddr"] == 64 * 64 * 2
    assert d["min_ddr_bytes"] == a.nbytes + w.nbytes + 64 * 64 * 2
    assert d["ddr_bytes"] == a.nbytes + 8 * w.nbytes + 64 * 64 * 2
    assert d["peak_l1_bytes"] == 8 * 32 * 2 + 8 * 64 * 2  # its rows of a, then of c
    assert d["peak_llb_bytes"] == 0
    assert 0 < d["mac_utilization"] < 1
    assert d["roofline_ratio"] == pytest.approx(d["cycles"] / d["roofline_cycles"])
    for core in d["cores"]:
        assert core["busy"] + core["idle"] == pytest.approx(d["cycles"])
        assert core["units"]["matrix"]["commands"] == 1
    text = report.table()
    assert "roofline" in text and "dma_in" in text and "matrix" in text
    assert text.count("(core)") == 8


def test_bad_inputs_are_reported():
    program = matmul_by_rows((64, 32), f16(32, 64))
    with pytest.raises(EmulatorError, match=r"takes inputs \['a'\], got \['b'\]"):
        run(program, {"b": f16(64, 32)})
    with pytest.raises(EmulatorError, match=r"input 'a' has shape \[32, 64\], expected \[64, 32\]"):
        run(program, {"a": f16(32, 64)})


def test_rank0_input_and_output():
    b = ProgramBuilder("scalar")
    b.input("s", ())
    b.output("y", ())
    loaded = b.semaphore("loaded")
    staged = tile(b.buffer("s_t", "l1", 2, core=0), (1,))
    b.add(0, "dma", src=tile("s", (1,)), dst=staged, signals=[loaded])
    b.add(0, "dma", waits=[loaded], src=staged, dst=tile("y", (1,)))
    out, _ = run(b.build(), {"s": np.float16(3.5)})
    assert out["y"].shape == () and out["y"] == np.float16(3.5)
    with pytest.raises(EmulatorError, match=r"input 's' has shape \[1\], expected \[\]"):
        run(b.build(), {"s": np.ones(1, np.float16)})


def _embedding_program(vocab=50, dim=24, n=10):
    b = ProgramBuilder("embedding")
    table = b.constant("table", f16(vocab, dim))
    ids = b.input("ids", (n,), dtype="i64")
    y = b.output("y", (n, dim))
    ids_l1 = tile(b.buffer("ids_l1", "l1", n * 8, core=1), (n,), dtype="i64")
    rows = tile(b.buffer("rows", "l1", n * dim * 2, core=1), (n, dim))
    b.add(1, "dma", src=ids, dst=ids_l1, signals=[b.semaphore("ids", core=1)])
    b.add(1, "gather", waits=["ids"], signals=[b.semaphore("rows", core=1)],
          data=table, indices=ids_l1, output=rows)
    b.add(1, "dma", waits=["rows"], src=rows, dst=y)
    return b.build(), np.frombuffer(b.program.buffers["table"].init, np.float16).reshape(vocab, dim)


def test_gather_rows_of_a_ddr_table():
    program, table = _embedding_program()
    ids = np.array([3, 0, 49, -1, 7, 7, 12, 30, 2, 1], np.int64)
    out, report = run(program, {"ids": ids})
    np.testing.assert_array_equal(out["y"], kernels.gather(table, ids, 0))
    (g,) = [s for s in report.timeline if s.label == "gather"]
    assert g.unit == "dma_in"
    assert g.end - g.start == 200 + 10 * 24 * 2 / 64  # DDR latency + the selected rows


def test_gather_index_out_of_range():
    from stc_mlir.emulator import HazardError

    program, _ = _embedding_program()
    with pytest.raises(HazardError, match=r"out of bounds: core 1, command #1 \(npu\.gather "
                       r"@table\[0\] : 50x24xf16, @ids_l1\[0\] : 10xi64 -> @rows\[0\] : 10x24xf16\): "
                       r"gather index 50 is out of range for axis size 50"):
        run(program, {"ids": np.array([0] * 9 + [50], np.int64)})
