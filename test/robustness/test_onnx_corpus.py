"""The second ONNX corpus (onnx_corpus.py) through stc-import and stc-run: every broken file,
graph or node is refused with one line that names the file, the node and the numbers, a
non-zero exit and no traceback."""

from __future__ import annotations

import pytest

from stc_mlir.tools import stc_import, stc_run

from .onnx_corpus import CORPUS


def _write(name: str, tmp_path):
    what = CORPUS[name][0]
    path = tmp_path / f"{name}.onnx"
    if what == "truncate":  # a valid model cut in half
        data = CORPUS["matmul-inner-dims"][0].SerializeToString()
        path.write_bytes(data[: len(data) // 2])
    elif isinstance(what, bytes):
        path.write_bytes(what)
    else:
        path.write_bytes(what.SerializeToString())
    return path


def _one_line_refusal(capsys, tool: str, path, expected: list[str]) -> None:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{tool}: error: ") and str(path) in lines[0], lines[0]
    assert "Traceback" not in captured.err + captured.out
    for part in expected:
        assert part in lines[0], (part, lines[0])


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_stc_import_refuses(name, tmp_path, capsys):
    path = _write(name, tmp_path)
    assert stc_import.main([str(path), "-q", "-o", str(tmp_path / "out.mlir")]) != 0
    _one_line_refusal(capsys, "stc-import", path, CORPUS[name][1])
    assert not (tmp_path / "out.mlir").exists()  # nothing half-written


@pytest.mark.parametrize("name", ["truncated", "undefined-input", "gather-index-range", "conv-channels",
                                  "cast-to-unknown", "external-data-missing"])
def test_stc_run_refuses(name, tmp_path, capsys):
    path = _write(name, tmp_path)
    assert stc_run.main([str(path), "-q"]) != 0
    _one_line_refusal(capsys, "stc-run", path, CORPUS[name][1])


def test_the_corpus_is_large_enough():
    """Issue 13 asks >= 50 malformed ONNX files: this corpus plus test_onnx_validation.py's."""
    from .test_onnx_validation import CASES

    assert len(CORPUS) + len(CASES) >= 50
