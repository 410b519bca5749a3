"""Bad command-line usage of stc-run, stc-opt and stc-import, run in-process: each exits
non-zero with exactly one `tool: error: ...` line that names the argument or the file and
the numbers, and no traceback."""

from __future__ import annotations

import json
import re
import zipfile

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from stc_mlir import stcobj
from stc_mlir.emulator.examples import matmul_by_rows
from stc_mlir.tools import stc_import, stc_opt, stc_run

CYCLE = "func.func @main(%x: tensor<8x4xf16>) -> tensor<8x4xf16> {\n  %r = graph.relu %r : tensor<8x4xf16>\n  func.return %r : tensor<8x4xf16>\n}\n"
AXIS = ("func.func @main(%x: tensor<8x4xf16>) -> tensor<8xf16> {\n"
        "  %a = graph.reduce_sum %x {axes = array<i64: 99>, keepdims = false} : (tensor<8x4xf16>) -> tensor<8xf16>\n"
        "  func.return %a : tensor<8xf16>\n}\n")
GOOD = "func.func @main(%x: tensor<8x4xf16>) -> tensor<8x4xf16> {\n  %r = graph.relu %x : tensor<8x4xf16>\n  func.return %r : tensor<8x4xf16>\n}\n"


def _onnx(path, weight: np.ndarray) -> str:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])],
        [numpy_helper.from_array(weight.astype(np.float32), "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "cycle.mlir").write_text(CYCLE)
    (d / "axis.mlir").write_text(AXIS)
    (d / "good.mlir").write_text(GOOD)
    (d / "utf8.mlir").write_bytes(GOOD.encode().replace(b"relu %x", b"relu \xff%x"))
    (d / "cut.mlir").write_text('func.func @f() {\n  %0 = graph.constant dense<"0x' + "AB" * 5000)
    (d / "dir.mlir").mkdir()
    (d / "out").mkdir()
    (d / "file").write_text("")
    w = np.ones((4, 4))
    big = w.copy()
    big[0, 0] = 1e6
    _onnx(d / "small.onnx", w)
    _onnx(d / "big.onnx", big)
    stcobj.save(matmul_by_rows((16, 8), np.ones((8, 4)), cores=2), d / "good.stcobj")
    with zipfile.ZipFile(d / "good.stcobj") as zf:
        manifest = json.loads(zf.read("manifest.json"))
    manifest["inputs"][0][2] = [65536, 65536, 176]
    with zipfile.ZipFile(d / "huge.stcobj", "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
    (d / "junk.stcobj").write_bytes(b"junk")
    return d


# (tool, argv with {d} for the files' directory, regex the error line must match)
CASES = [
    ("stc-run", ["{d}/missing.mlir"], r"cannot open '.*missing.mlir': no such file"),
    ("stc-run", ["{d}/missing.onnx"], r"cannot open '.*missing.onnx': no such file"),
    ("stc-run", ["nosuchmodel"], r"'nosuchmodel' is neither a file .* nor a built-in model"),
    ("stc-run", ["{d}/cycle.mlir"], r"cycle.mlir:2:3: graph.relu operand #0 %r: is this op's own result \(an SSA cycle\)"),
    ("stc-run", ["{d}/axis.mlir"], r"axis.mlir:2:3: graph.reduce_sum: axis 99 is out of range for rank 2"),
    ("stc-run", ["{d}/utf8.mlir"], r"utf8.mlir:2:19: invalid UTF-8 \(byte 0xff\)"),
    ("stc-run", ["{d}/cut.mlir"], r"cut.mlir:2:29: End of file reached before closing string literal"),
    ("stc-run", ["{d}/dir.mlir"], r"dir.mlir: is a directory, not an .mlir file"),
    ("stc-run", ["{d}/good.mlir", "--batch", "4"], r"has batch 8; --batch 4 cannot change it"),
    ("stc-run", ["{d}/good.mlir", "-o", "{d}/out"], r"-o .*out: is a directory; give a file name"),
    ("stc-run", ["{d}/good.mlir", "--report-json", "{d}/out"], r"--report-json .*out: is a directory"),
    ("stc-run", ["{d}/good.mlir", "--trace", "{d}/out"], r"--trace .*out: is a directory"),
    ("stc-run", ["{d}/good.mlir", "--dump-ir", "{d}/file"], r"--dump-ir .*file: is a file, not a directory"),
    ("stc-run", ["{d}/good.mlir", "-o", "{d}/no/such/dir/x.stcobj"], r"the directory .*no/such/dir does not exist"),
    ("stc-run", ["resnet50", "--option", "image_size=big"], r"--option image_size=big: resnet50's image_size takes an integer \(default 224\)"),
    ("stc-run", ["resnet50", "--option", "image_size=0"], r"--option image_size=0: must be >= 1"),
    ("stc-run", ["resnet50", "--option", "dynamic_batch=3"], r"dynamic_batch is true or false"),
    ("stc-run", ["resnet50", "--option", "bogus=1"], r"unknown option\(s\) bogus for model 'resnet50'"),
    ("stc-run", ["resnet50", "--shape", "x=1x3"], r"--shape applies to ONNX files"),
    ("stc-run", ["resnet50", "--batch", "0"], r"batch must be a positive integer, got 0"),
    ("stc-run", ["{d}/small.onnx", "--batch", "1000000000"],
     r"@main needs at least [\d,]+ bytes of DDR \(inputs 8,000,000,000, .*\), more than the 4,294,967,296-byte DDR "
     r"of stcp920; use a batch of at most [\d,]+"),
    ("stc-run", ["{d}/big.onnx", "--batch", "2"],
     r"big.onnx: initializer 'w' has 1 of 16 values outside fp16's range \(largest magnitude 1e\+06"),
    ("stc-run", ["{d}/small.onnx", "--option", "a=1"], r"--option applies to built-in models"),
    ("stc-run", ["{d}/small.onnx", "--schedule", "no_such_module:fn"], r"no_such_module"),
    ("stc-run", ["{d}/small.onnx", "--batch", "2", "--target", "bogus"], r"bogus: no such target file"),
    ("stc-run", ["{d}/small.onnx", "--required-pass", "bogus-pass"], r"bogus-pass"),
    ("stc-run", ["{d}/junk.stcobj"], r"junk.stcobj: cannot read .stcobj: File is not a zip file"),
    ("stc-run", ["{d}/huge.stcobj"], r"inputs\[0\]\[2\] \(shape\): 65536x65536x176xf16 needs 1,511,828,488,192 bytes but buffer @a has 256"),
    ("stc-run", ["{d}/good.stcobj", "--batch", "2"], r"--batch does not apply to .*good.stcobj: it is already compiled"),
    ("stc-opt", ["{d}/missing.mlir"], r"cannot open input file '.*missing.mlir'"),
    ("stc-opt", ["{d}/cycle.mlir"], r"cycle.mlir:2:3: graph.relu operand #0 %r: is this op's own result"),
    ("stc-opt", ["{d}/utf8.mlir"], r"utf8.mlir:2:19: invalid UTF-8 \(byte 0xff\)"),
    ("stc-opt", ["{d}/axis.mlir"], r"axis.mlir: verification failed: graph.reduce_sum: axis 99 is out of range for rank 2"),
    ("stc-opt", ["{d}/good.mlir", "-p", "no-such-pass"], r"no-such-pass"),
    ("stc-import", ["{d}/missing.onnx"], r"missing.onnx"),
    ("stc-import", ["nosuchmodel"], r"'nosuchmodel' is neither an ONNX file nor a built-in model"),
    ("stc-import", ["{d}/big.onnx"], r"initializer 'w' has 1 of 16 values outside fp16's range"),
    ("stc-import", ["resnet50", "--batch", "0"], r"--batch must be >= 1, got 0"),
    ("stc-import", ["{d}/small.onnx", "-o", "{d}/out"], r"-o .*out: is a directory; give a file name"),
    ("stc-import", ["{d}/small.onnx", "-o", "{d}/x.mlir", "--weights", "{d}/out"], r"--weights .*out: is a directory"),
    ("stc-import", ["resnet50", "--option", "image_size=big"], r"--option image_size=big: resnet50's image_size takes an integer"),
]

MAINS = {"stc-run": stc_run.main, "stc-opt": stc_opt.main, "stc-import": stc_import.main}


@pytest.mark.parametrize("tool, argv, message", CASES, ids=[f"{t} {' '.join(a)}" for t, a, _ in CASES])
def test_misuse_is_one_line_and_non_zero(files, capsys, tool, argv, message):
    args = [a.format(d=files) for a in argv]
    code = MAINS[tool](args)
    out, err = capsys.readouterr()
    assert code != 0
    assert "Traceback" not in err + out
    errors = [line for line in err.splitlines() if line.startswith(f"{tool}: error:")]
    assert len(errors) == 1, err
    assert re.search(message, errors[0]), errors[0]


@pytest.mark.parametrize("argv", [["--batch", "abc"], ["--level"], ["--no-such-flag"], ["a", "b"]])
def test_argparse_errors_are_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        stc_run.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stc-run: error:"), err


def test_allow_fp16_overflow_goes_on_with_a_warning(files, capsys):
    code = stc_run.main([str(files / "big.onnx"), "--batch", "8", "--allow-fp16-overflow"])
    err = capsys.readouterr().err
    assert code == 0
    assert re.search(r"stc-run: warning: .*big.onnx: initializer 'w' has 1 of 16 values outside fp16's range "
                     r".*\(allowed by --allow-fp16-overflow\)", err), err
