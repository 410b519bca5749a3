"""npu programs as IR, as plain Python data and as `.stcobj` files: every form converts to
the others without loss, and a loaded `.stcobj` runs without the compiler."""

import json
import math
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

from stc_mlir import stcobj
from stc_mlir.dialects.npu import Npu
from stc_mlir.emulator import program_from_module, program_to_module, run
from stc_mlir.emulator.examples import conv_by_rows, matmul_by_rows
from stc_mlir.isa.program import to_manifest
from stc_mlir.stcobj import StcobjError

RNG = np.random.default_rng(5)


def conv_program():
    w = RNG.standard_normal((8, 4, 3, 3)).astype(np.float16)
    b = RNG.standard_normal(8).astype(np.float16)
    return conv_by_rows((1, 4, 16, 8), w, b, cores=4, out_chunks=2, act="relu6")


def parse(text):
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Npu)
    return Parser(ctx, text).parse_module()


def test_program_to_ir_and_back_through_text():
    program = conv_program()
    module = program_to_module(program)
    module.verify()
    text = str(module)
    assert 'npu.program @conv_by_rows target "stcp920"' in text
    assert "npu.buffer @w : ddr[576] at " in text and "= dense<" in text
    assert "      conv2d @xin1 : 1x4x6x8xf16, @w1_0 : #l0 bias @bias1 : 4xf16 -> @out1 : #l1 " in text
    assert "\n    #l0 = 4x4x3x3xf16\n    #l1 = 1x4x4x8xf16 strides [256, 32, 8, 1]\n" in text  # most used first
    reparsed = parse(text)
    reparsed.verify()
    assert program_from_module(reparsed) == program
    assert str(reparsed) == text


def test_stcobj_round_trips_exactly(tmp_path):
    program = conv_program()
    path = tmp_path / "conv.stcobj"
    stcobj.save(program, path)
    loaded = stcobj.load(path)
    assert loaded == program
    assert loaded.buffers["w"].init == program.buffers["w"].init
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
    assert names == {"manifest.json", "data/w.bin", "data/b.bin"}
    assert manifest["format"] == "stcobj" and manifest["target"] == "stcp920"
    assert manifest["inputs"] == [["x", "x", [1, 4, 16, 8], "f16"]]
    x = RNG.standard_normal((1, 4, 16, 8)).astype(np.float16)
    (a, ra), (b, rb) = run(program, {"x": x}), run(loaded, {"x": x})
    np.testing.assert_array_equal(a["y"], b["y"])
    assert ra.as_dict() == rb.as_dict()


def test_stcobj_of_one_program_is_the_same_bytes_whenever_saved(tmp_path):
    """Members carry a fixed date, not the time of the save: a build is reproducible."""
    program = conv_program()
    stcobj.save(program, tmp_path / "a.stcobj")
    with zipfile.ZipFile(tmp_path / "a.stcobj") as zf:
        assert {info.date_time for info in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    stcobj.save(program, tmp_path / "b.stcobj")
    assert (tmp_path / "a.stcobj").read_bytes() == (tmp_path / "b.stcobj").read_bytes()


def test_stcobj_keeps_non_finite_parameters():
    """The fast JSON writer (orjson) would write -inf as null: a manifest with a non-finite
    parameter (an nms score threshold) takes the standard library's writer."""
    manifest, _ = to_manifest(conv_program())
    assert json.loads(stcobj._dumps(manifest)) == json.loads(json.dumps(manifest))
    manifest["cores"]["0"][0][2] = {"score_threshold": -math.inf, "scales": [1.0, math.nan]}
    params = json.loads(stcobj._dumps(manifest))["cores"]["0"][0][2]
    assert params["score_threshold"] == -math.inf and math.isnan(params["scales"][1])


def test_stcobj_saves_a_module_too(tmp_path):
    program = matmul_by_rows((16, 8), RNG.standard_normal((8, 4)).astype(np.float16), cores=2)
    stcobj.save(program_to_module(program), tmp_path / "mm.stcobj")
    assert stcobj.load(tmp_path / "mm.stcobj") == program


def test_loading_and_running_needs_no_compiler(tmp_path):
    path = tmp_path / "mm.stcobj"
    stcobj.save(matmul_by_rows((16, 8), np.eye(8, 4, dtype=np.float16), cores=2), path)
    code = (
        "import sys, numpy as np\n"
        "from stc_mlir import stcobj\n"
        "from stc_mlir.emulator import run\n"
        f"out, _ = run(stcobj.load({str(path)!r}), {{'a': np.ones((16, 8), np.float16)}})\n"
        "assert (out['c'] == 1).all()\n"
        "assert not [m for m in sys.modules if m.startswith(('xdsl', 'stc_mlir.dialects', 'stc_mlir.passes'))]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_bad_stcobj(tmp_path):
    bad = tmp_path / "bad.stcobj"
    bad.write_bytes(b"not a zip")
    with pytest.raises(StcobjError, match="bad.stcobj: cannot read .stcobj"):
        stcobj.load(bad)
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "other"}))
    with pytest.raises(StcobjError, match="not a version 1 stcobj file"):
        stcobj.load(bad)


def test_unallocated_buffers_verify_but_do_not_run():
    module = parse("""
    npu.program @p target "stcp920" {
      npu.buffer @x : ddr[64] at 0
      npu.buffer @t : l1(0)[64]
      npu.input "x" @x : 32xf16
      npu.core 0 {
        npu.dma @x[0] : 32xf16 -> @t[0] : 32xf16
      }
    }""")
    module.verify()
    from stc_mlir.emulator import HazardError

    with pytest.raises(HazardError, match=r"unallocated: buffer @t \(l1 of core 0, 64 bytes\) has no offset"):
        run(program_from_module(module), {"x": np.zeros(32, np.float16)})


def test_build_ir_in_python_then_allocate():
    """What a lowering builds and an allocator changes: the op holds the Program itself,
    a pass replaces it; buffers get offsets, tiles stay."""
    from dataclasses import replace

    from xdsl.dialects.builtin import ModuleOp

    from stc_mlir.dialects.npu import ProgramOp
    from stc_mlir.emulator import Buffer, IOSpec, Program, Semaphore, command, tile

    x, t, y = tile("x", (4, 32)), tile("t", (4, 32)), tile("y", (4, 32))
    program = Program(
        "sigmoid", "stcp920",
        buffers={"x": Buffer("x", "ddr", 256), "y": Buffer("y", "ddr", 256), "t": Buffer("t", "l1", 256, core=7)},
        semaphores={"in": Semaphore("in", 7), "out": Semaphore("out", 7)},
        cores={7: [
            command("dma", src=x, dst=t, signals=["in"]),
            command("unary", waits=["in"], signals=["out"], input=t, output=t, kind="sigmoid"),
            command("dma", waits=["out"], src=t, dst=y),
        ]},
        inputs=[IOSpec("x", "x", (4, 32))], outputs=[IOSpec("y", "y", (4, 32))],
    )
    op = ProgramOp(program)
    module = ModuleOp([op])
    module.verify()
    assert op.program is program  # no conversion: the op holds the Program
    assert "unary sigmoid @t : 4x32xf16 -> @t : 4x32xf16 {waits = [@in], signals = [@out]}" in str(module)
    offsets = {"x": 0, "y": 256, "t": 4096}
    op.program = replace(program, buffers={n: replace(b, offset=offsets[n]) for n, b in program.buffers.items()})
    module.verify()
    assert "npu.buffer @t : l1(7)[256] at 4096" in str(module)
    xv = RNG.standard_normal((4, 32)).astype(np.float16)
    out, report = run(program_from_module(module), {"x": xv})
    from stc_mlir import kernels

    np.testing.assert_array_equal(out["y"], kernels.sigmoid(xv).astype(np.float16))
    assert report.peak["l1"] == 4096 + 256
