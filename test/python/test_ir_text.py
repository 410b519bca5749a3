"""The IR as text with its weights beside it (stc_mlir.isa.text, stc_mlir.weights): compiled
models print and parse back to the same program at every level, `stc-opt` reproduces a
printed npu program, `--dump-ir` writes small files that load back with their weights, and
errors in npu text name the line they are on."""

from __future__ import annotations

import io
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from stc_mlir import ir, models, reference, weights
from stc_mlir.dialects.npu import ProgramOp, program_from_module, program_to_module
from stc_mlir.emulator import run
from stc_mlir.emulator.examples import conv_by_rows
from stc_mlir.frontend import import_onnx
from stc_mlir.isa import text as npu_text
from stc_mlir.pipeline import compile_module

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module", params=["resnet50", "bert-base"])
def compiled(request, small_model):
    """A small built-in model: its proto and the module compiled with the default schedule."""
    proto = small_model(request.param)
    return request.param, proto, compile_module(import_onnx(proto))


def print_to(module, path) -> str:
    """Print `module` to `path` with its weights in the side-car file `stc-opt -o` would use."""
    with weights.writing_to(weights.weights_file_for(path)), open(path, "w") as f:
        ir.print_module(module, f)
    return path.read_text()


def test_compiled_program_round_trips_through_text(compiled, tmp_path):
    name, proto, module = compiled
    program = program_from_module(module)
    text = print_to(module, tmp_path / "m.mlir")
    assert 'dense<"0x' not in text  # no weights as hex: they are in m.weights.bin
    assert len(text) < 3_000_000
    weight_file = tmp_path / "m.weights.bin"
    stored = sum(len(b.init) for b in program.buffers.values() if b.init is not None and len(b.init) > weights.INLINE_LIMIT)
    assert 0 < weight_file.stat().st_size <= stored + 64 * len(program.buffers)
    parsed = ir.parse_file(str(tmp_path / "m.mlir"))
    parsed.verify()
    again = program_from_module(parsed)
    assert again == program
    assert again.phases == program.phases and again.phases
    assert any(b.live is not None for b in again.buffers.values())
    # the same numbers and cycles from the program that went through text
    inputs = models.example_inputs(name, proto)
    (a, ra), (b, rb) = run(program, inputs), run(again, inputs)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    assert ra.as_dict()["cycles"] == rb.as_dict()["cycles"]


def test_reprinting_a_parsed_program_names_its_weight_file(compiled, tmp_path):
    _, _, module = compiled
    print_to(module, tmp_path / "m.mlir")
    parsed = ir.parse_file(str(tmp_path / "m.mlir"))
    out = io.StringIO()
    ir.print_module(parsed, out)  # no writer: constants read from m.weights.bin keep naming it
    assert '#graph.extern<"m.weights.bin"' in out.getvalue() and 'dense<"0x' not in out.getvalue()


def test_stc_opt_reproduces_a_printed_npu_program(compiled, tmp_path):
    _, _, module = compiled
    program = program_from_module(module)
    print_to(module, tmp_path / "in.mlir")
    for extra in ([], ["--print-op-generic"]):
        out = tmp_path / f"out{len(extra)}.mlir"
        subprocess.run([sys.executable, "-m", "stc_mlir.tools.stc_opt", str(tmp_path / "in.mlir"), "-o", str(out),
                        *extra], check=True)
        assert (tmp_path / f"out{len(extra)}.weights.bin").exists()
        assert program_from_module(ir.parse_file(str(out))) == program


def test_dump_ir_files_are_small_and_load_back_with_their_weights(small_model, tmp_path):
    proto = small_model("resnet50")
    original = import_onnx(proto)
    module = compile_module(original.clone(), dump_ir=tmp_path / "dump")
    dump = tmp_path / "dump"
    sizes = {p.name: p.stat().st_size for p in dump.iterdir()}
    # level 3 (the default) cuts this ResNet-50 into more, smaller commands than level 0: ~2.4 MB of
    # npu text; with its weights inline it would be over 100 MB
    assert all(size < 4_000_000 for name, size in sizes.items() if name.endswith(".mlir")), sizes
    # every distinct constant once: the model's weights, the folded ones, the npu buffers' bytes
    assert sizes["weights.bin"] < 3 * sum(len(b.init) for b in program_from_module(module).buffers.values()
                                          if b.init is not None)
    inputs = models.example_inputs("resnet50", proto)
    expected = reference.run(original, inputs)
    for stage in ("00-input", "01-graph-canonicalize", "04-schedule-verify"):
        got = reference.run(ir.parse_file(str(dump / f"{stage}.mlir")), inputs)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e, np.float32), rtol=2e-2, atol=2e-2)
    assert program_from_module(ir.parse_file(str(dump / "06-npu-allocate.mlir"))) == program_from_module(module)


def test_constants_made_by_passes_go_to_the_weight_file(small_model, tmp_path):
    module = compile_module(import_onnx(small_model("resnet50")), stop_after="graph-canonicalize")
    text = print_to(module, tmp_path / "folded.mlir")
    assert 'dense<"0x' not in text and text.count('#graph.extern<"folded.weights.bin"') > 50
    assert len(text) < 200_000
    parsed = ir.parse_file(str(tmp_path / "folded.mlir"))
    mine = [c.numpy() for c in module.walk() if c.name == "graph.constant"]
    back = [c.numpy() for c in parsed.walk() if c.name == "graph.constant"]
    assert len(mine) == len(back)
    for a, b in zip(mine, back):
        np.testing.assert_array_equal(a, b)


def test_small_and_splat_contents_stay_inline():
    w = RNG.standard_normal((8, 4, 3, 3)).astype(np.float16)
    program = conv_by_rows((1, 4, 16, 8), w, np.full(8, 0.5, np.float16), cores=2)
    text = str(program_to_module(program))
    assert "npu.buffer @b : ddr[16] at" in text and "= dense<5.000000e-01> : tensor<8xf16>" in text
    assert 'dense<"0x' in text  # the 576-byte weights, printed with no weight file to go to
    assert program_from_module(ir.parse_text(text)) == program


def test_generic_form_round_trips():
    program = conv_by_rows((1, 4, 16, 8), RNG.standard_normal((8, 4, 3, 3)).astype(np.float16),
                           RNG.standard_normal(8).astype(np.float16), cores=4, out_chunks=2)
    program = replace(program, phases=("group 'a'", "group \"b\""),
                      buffers={n: replace(b, live=(0, 1)) for n, b in program.buffers.items()})
    module = program_to_module(program)
    out = io.StringIO()
    from xdsl.printer import Printer

    Printer(stream=out, print_generic_format=True).print_op(module)
    generic = out.getvalue()
    assert '"npu.program"() <{sym_name = "conv_by_rows", target = "stcp920", body = #npu.body<phases [' in generic
    assert program_from_module(ir.parse_text(generic)) == program
    assert program_from_module(ir.parse_text(str(module))) == program


def test_odd_names_are_quoted_and_come_back():
    w = RNG.standard_normal((4, 8)).astype(np.float16)
    from stc_mlir.emulator.examples import matmul_by_rows

    program = matmul_by_rows((16, 4), w, cores=2)
    renamed = {"a": 'in:a/0"x'}
    buffers = {renamed.get(n, n): replace(b, name=renamed.get(n, n)) for n, b in program.buffers.items()}
    cores = {c: [replace(cmd, tiles={s: replace(t, buffer=renamed.get(t.buffer, t.buffer)) for s, t in cmd.tiles.items()})
                 for cmd in stream] for c, stream in program.cores.items()}
    inputs = [replace(io_, buffer=renamed.get(io_.buffer, io_.buffer)) for io_ in program.inputs]
    program = replace(program, buffers=buffers, cores=cores, inputs=inputs)
    text = str(program_to_module(program))
    assert '@"in:a/0\\"x"' in text
    assert program_from_module(ir.parse_text(text)) == program


NPU_TEXT = """\
npu.program @p target "stcp920" {
  npu.buffer @x : ddr[128] at 0
  npu.buffer @t : l1(0)[64]
  npu.core 0 {
    npu.dma @x[0] : 16xf16 -> @t[0] : 16xf16
    npu.dma @x[0] : 64xf16 -> @t[0] : 64xf16
  }
}
"""


def test_verifier_errors_name_the_line_of_the_command():
    module = ir.parse_text(NPU_TEXT, "bad.mlir")
    with pytest.raises(VerifyException, match=r"^bad.mlir:6:5: core 0, command #1 \(npu.dma @x\[0\] : 64xf16 -> "):
        module.verify()


def test_parse_errors_name_line_and_column():
    broken = NPU_TEXT.replace("-> @t[0] : 64xf16", "-> @t[0] : 64xq16")
    with pytest.raises(ir.IRError) as err:  # the one-line form of xDSL's ParseError
        ir.parse_text(broken, "bad.mlir")
    assert "bad.mlir:6:42" in str(err.value) and "unsupported npu element type q16" in str(err.value)


def test_text_parser_accepts_any_spacing_and_comments():
    program = program_from_module(ir.parse_text(NPU_TEXT))
    loose = NPU_TEXT.replace("npu.dma @x[0] : 16xf16 -> @t[0] : 16xf16",
                             "npu.dma   @x [ 0 ]:16xf16   // a comment\n      ->  @t[0] : 16 x f16 {  }")
    assert program_from_module(ir.parse_text(loose)) == program


def test_a_program_op_holds_its_program_without_copies():
    program, _, _ = npu_text.parse_body(NPU_TEXT[NPU_TEXT.index("{"):], "p", "stcp920")
    op = ProgramOp(program)
    assert op.program is program


def test_infinite_parameters_print_as_bits_and_come_back():
    t = "@t[0] : 16xf16"
    text = NPU_TEXT.replace(f"npu.dma @x[0] : 16xf16 -> {t}",
                            f"npu.unary clip {t} -> {t} {{min = -1.0 : f64, max = 0x7FF0000000000000 : f64}}")
    program = program_from_module(ir.parse_text(text))
    assert program.cores[0][0].params["max"] == float("inf")
    printed = str(program_to_module(program))
    assert "max = 0x7FF0000000000000 : f64" in printed
    assert program_from_module(ir.parse_text(printed)) == program


def test_the_older_spellings_read_as_the_denser_ones():
    """Commands with or without `npu.` in a core, parameters as `array<i64: ...>` or `[...]`,
    expects as a list or a stepped range: the same program, printed in the denser form."""
    body = """\
npu.program @p target "stcp920" {
  npu.buffer @x : l1(0)[8192]
  npu.core 0 {
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    npu.dma @x[0] : 16xf16 -> @x[32] : 16xf16
    POOL
  }
}
"""
    old = body.replace("POOL", 'npu.pool max @x : 1x4x8x8xf16 -> @x[512] : 1x4x4x4xf16 '
                       '{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, expects = "-8, -6, -4, -2"}')
    new = body.replace("npu.dma", "dma").replace(
        "POOL", 'pool max @x : 1x4x8x8xf16 -> @x[512] : 1x4x4x4xf16 '
        '{kernel = [2, 2], strides = [2, 2], expects = "-8..-2 by 2"}')
    program = program_from_module(ir.parse_text(old))
    assert program_from_module(ir.parse_text(new)) == program
    assert program.cores[0][8].expects == {"input": ((0, 0), (0, 2), (0, 4), (0, 6))}
    assert str(program_to_module(program)) == str(ir.parse_text(new))
    assert "\n      pool max @x : 1x4x8x8xf16 -> @x[512] : 1x4x4x4xf16 {kernel = [2, 2], strides = [2, 2], " \
           'expects = "-8..-2 by 2"}\n' in str(ir.parse_text(new))


def test_writers_at_a_step_print_as_a_stepped_range_from_four_on():
    four = {"input": tuple((0, i) for i in (1, 4, 7, 10)), "weight": tuple((2, i) for i in range(3, 20, 4))}
    printed = npu_text.format_expects(four, 0, 12, ("input", "weight"))
    assert printed == "-11..-2 by 3; c2#3..19 by 4"
    assert npu_text.parse_expects(printed, 0, 12, ("input", "weight")) == four
    three = {"input": ((0, 1), (0, 4), (0, 7), (0, 8), (0, 9))}
    assert npu_text.format_expects(three, 0, 12, ("input",)) == "-11, -8, -5..-3"
