"""Broken `.stcobj` files made in code: each is refused by `stcobj.load` with one line
naming the file, the field and the values, before anything big is allocated."""

from __future__ import annotations

import copy
import json
import zipfile

import numpy as np
import pytest

from stc_mlir import stcobj
from stc_mlir.emulator.examples import matmul_by_rows
from stc_mlir.executor import Executor


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("stcobj") / "good.stcobj"
    stcobj.save(matmul_by_rows((16, 8), np.ones((8, 4)), cores=2), path)
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        blobs = {n: zf.read(n) for n in zf.namelist() if n.startswith("data/")}
    return path, manifest, blobs


def _set(path: str, value):
    """A manifest edit: set the field at a dotted path (`buffers.0.size`)."""
    def edit(m):
        *head, last = path.split(".")
        obj = m
        for key in head:
            obj = obj[int(key)] if isinstance(obj, list) else obj[key]
        if isinstance(obj, list):
            obj[int(last)] = value
        else:
            obj[last] = value
    return edit


def _delete(path: str):
    def edit(m):
        *head, last = path.split(".")
        obj = m
        for key in head:
            obj = obj[int(key)] if isinstance(obj, list) else obj[key]
        del obj[int(last) if isinstance(obj, list) else last]
    return edit


# (case name, manifest edit, the message must match)
MANIFEST_CASES = [
    ("format", _set("format", "zip"), r"not a version 1 stcobj file \(format \"zip\"\)"),
    ("version 2", _set("version", 2), r"not a version 1 stcobj file \(version 2\)"),
    ("no name", _delete("name"), r"name: missing field 'name'"),
    ("name int", _set("name", 3), r"name: expected a non-empty string, got 3"),
    ("bogus target", _set("target", "bogus"), r"target: bogus: no such target file"),
    ("buffers not a list", _set("buffers", {}), r"buffers: expected a list, got an object"),
    ("buffer not an object", _set("buffers.0", 7), r"buffers\[0\]: expected an object, got 7"),
    ("buffer without size", _delete("buffers.0.size"), r"buffers\[0\]: missing field 'size'"),
    ("buffer size string", _set("buffers.0.size", "256"), r"buffers\[0\].size: expected an integer, got \"256\""),
    ("buffer size zero", _set("buffers.0.size", 0), r"buffers\[0\].size: 0 is below the minimum 1"),
    ("buffer beyond DDR", _set("buffers.0.size", 1 << 40),
     r"buffers\[0\].size: 1,099,511,627,776 is above the maximum 4,294,967,296"),
    ("l1 buffer beyond L1", _set("buffers.3.size", 1 << 21), r"buffers\[3\].size: 2,097,152 is above the maximum 1,048,576"),
    ("bogus space", _set("buffers.0.space", "bogus"), r"buffers\[0\].space: \"bogus\" is not one of l1, wb, llb, ddr"),
    ("negative offset", _set("buffers.0.offset", -4), r"buffers\[0\].offset: -4 is below the minimum 0"),
    ("offset past DDR", _set("buffers.0.offset", 1 << 32), r"buffers\[0\].offset: 4,294,967,296 is above the maximum"),
    ("core out of range", _set("buffers.3.core", 8), r"buffers\[3\].core: 8 is above the maximum 7"),
    ("bool size", _set("buffers.0.size", True), r"buffers\[0\].size: expected an integer, got true"),
    ("bad init dtype", _set("buffers.2.init_dtype", "f8"), r"buffers\[2\].init_dtype: \"f8\" is not one of f16"),
    ("duplicate buffer", _set("buffers.1.name", "a"), r"buffers\[1\].name: buffer @a is declared twice"),
    ("semaphore short", _set("semaphores.0", ["s", 0]), r"semaphores\[0\]: expected 3 entries, got 2"),
    ("semaphore init", _set("semaphores.0.2", -1), r"semaphores\[0\]\[2\] \(init\): -1 is below the minimum 0"),
    ("input unknown buffer", _set("inputs.0.1", "bogus"), r"inputs\[0\]\[1\] \(buffer\): unknown buffer \"bogus\""),
    ("input 1.4 TiB shape", _set("inputs.0.2", [65536, 65536, 176]),
     r"inputs\[0\]\[2\] \(shape\): 65536x65536x176xf16 needs 1,511,828,488,192 bytes but buffer @a has 256"),
    ("input int shape", _set("inputs.0.2", 16), r"inputs\[0\]\[2\] \(shape\): expected a list, got 16"),
    ("input zero dim", _set("inputs.0.2", [0, 8]), r"inputs\[0\]\[2\] \(shape\)\[0\]: 0 is below the minimum 1"),
    ("input short", _set("inputs.0", ["a", "a"]), r"inputs\[0\]: expected 4 entries, got 2"),
    ("output dtype", _set("outputs.0.3", "f64"), r"outputs\[0\]\[3\] \(dtype\): \"f64\" is not one of"),
    ("cores list", _set("cores", []), r"cores: expected an object, got a list"),
    ("core id", lambda m: m["cores"].update({"9": []}), r"cores\['9'\]: core ids are 0..7"),
    ("unknown op", _set("cores.0.0.0", "bogus"), r"cores\['0'\]\[0\]\[0\] \(op\): \"bogus\" is not one of"),
    ("short command", _set("cores.0.0", ["dma"]), r"cores\['0'\]\[0\]: expected 5 entries, got 1"),
    ("tile unknown buffer", _set("cores.0.0.1.src.0", "bogus"), r"cores\['0'\]\[0\]\[1\].src: unknown buffer \"bogus\""),
    ("tile past buffer", _set("cores.0.0.1.src.1", 250),
     r"cores\['0'\]\[0\]\[1\].src: the tile reaches byte 378 of buffer @a, which has 256"),
    ("tile strides rank", _set("cores.0.0.1.src.3", [1]), r"src strides: 1 strides for a rank-2 shape"),
    ("tile unknown slot", lambda m: m["cores"]["0"][0][1].update({"bogus": ["a", 0, [1], [1], "f16"]}),
     r"npu.dma has no operand 'bogus'"),
    ("tile missing slot", lambda m: m["cores"]["0"][0][1].pop("dst"), r"npu.dma needs a tile for 'dst'"),
    ("unknown param", _set("cores.0.2.2", {"bogus": 1}), r"npu.matmul has no parameter 'bogus'"),
    ("ints param not a list", lambda m: m["cores"]["0"].append(
        ["pool", {"input": ["a0", 0, [1, 1, 2, 2], [4, 4, 2, 1], "f16"], "output": ["c0", 0, [1, 1, 1, 1], [1, 1, 1, 1], "f16"]},
         {"kind": "max", "kernel": 2}, [], []]), r"\(params\): 'int' object is not iterable"),
    ("unknown semaphore", _set("cores.0.0.4", ["bogus"]), r"\(signals\): unknown semaphore \"bogus\""),
    ("semaphore not a string", _set("cores.0.0.4", [[1]]), r"\(signals\): unknown semaphore a list"),
    ("waits not a list", _set("cores.0.2.3", 5), r"\(waits\): expected a list, got 5"),
    ("live reversed", _set("buffers.0.live", [3, 1]), r"buffers\[0\].live\[1\]: 1 is below the minimum 3"),
    ("live not a pair", _set("buffers.0.live", [1]), r"buffers\[0\].live: expected 2 entries, got 1"),
    ("phases not strings", _set("phases", [1]), r"phases\[0\]: expected a non-empty string, got 1"),
]


def _flip(data: bytes, member: str) -> bytes:
    """`data` (a zip archive) with bytes of `member`'s compressed contents flipped."""
    import io

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        start = zf.getinfo(member).header_offset + 60
    return data[:start] + bytes(b ^ 0x5A for b in data[start:start + 60]) + data[start + 60:]


def _write(path, manifest, blobs, drop=()):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", manifest if isinstance(manifest, (str, bytes)) else json.dumps(manifest))
        for name, data in blobs.items():
            if name not in drop:
                zf.writestr(name, data)


@pytest.mark.parametrize("name, edit, message", MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
def test_broken_manifest(good, tmp_path, name, edit, message):
    _, manifest, blobs = good
    broken = copy.deepcopy(manifest)
    edit(broken)
    path = tmp_path / "broken.stcobj"
    _write(path, broken, blobs)
    with pytest.raises(stcobj.StcobjError) as err:
        stcobj.load(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path}: "), text
    assert __import__("re").search(message, text), text


def test_broken_archives(good, tmp_path):
    path, manifest, blobs = good
    cases = {
        "not a zip": (lambda p: p.write_bytes(b"not a zip"), r"cannot read .stcobj: File is not a zip file"),
        "empty zip": (lambda p: zipfile.ZipFile(p, "w").close(), r"not an .stcobj file: it has no manifest.json"),
        "manifest not JSON": (lambda p: _write(p, "{", blobs), r"manifest.json is not valid JSON"),
        "manifest a list": (lambda p: _write(p, "[]", blobs), r"manifest.json must hold a JSON object, got a list"),
        "missing weights": (lambda p: _write(p, manifest, blobs, drop=("data/w.bin",)),
                            r"buffers\[2\] \(@w\) has constant data but the archive has no data/w.bin"),
        "oversized weights": (lambda p: _write(p, manifest, {**blobs, "data/w.bin": bytes(4096)}),
                              r"data/w.bin holds 4,096 bytes but buffer @w has 64"),
        "truncated file": (lambda p: p.write_bytes(path.read_bytes()[:100]), r"cannot read .stcobj"),
        "corrupt manifest": (lambda p: p.write_bytes(_flip(path.read_bytes(), "manifest.json")), r"cannot read .stcobj"),
    }
    for name, (make, message) in cases.items():
        broken = tmp_path / f"{name.replace(' ', '_')}.stcobj"
        make(broken)
        with pytest.raises(stcobj.StcobjError, match=message):
            stcobj.load(broken)
    with pytest.raises(stcobj.StcobjError, match="is a directory"):
        stcobj.load(tmp_path)
    assert len(MANIFEST_CASES) + len(cases) >= 20


def test_check_program_runs_on_load(good, tmp_path):
    """A well-typed manifest that breaks a program rule (an output tile of a DMA into a
    constant buffer's neighbour...) is refused by the same checks the emulator makes."""
    _, manifest, blobs = good
    broken = copy.deepcopy(manifest)
    broken["cores"]["0"][0][1]["dst"] = ["a0", 0, [8, 8], [8, 1], "f32"]  # 256 bytes into a 128-byte buffer
    path = tmp_path / "rule.stcobj"
    _write(path, broken, blobs)
    with pytest.raises(stcobj.StcobjError, match=r"rule.stcobj: .*dst.*"):
        stcobj.load(path)


def test_save_refuses_a_directory(tmp_path):
    with pytest.raises(stcobj.StcobjError, match="is a directory"):
        stcobj.save(matmul_by_rows((16, 8), np.ones((8, 4)), cores=2), tmp_path)


def test_good_file_still_loads_and_runs(good):
    path, _, _ = good
    executor = Executor.load_from_stcobj(path)
    executor.set_input({"a": np.ones((16, 8), np.float32)})
    (c,) = executor()
    assert np.allclose(c, 8.0)
