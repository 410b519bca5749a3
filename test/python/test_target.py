"""The target description file and its loader."""

from pathlib import Path

import pytest

from stc_mlir import target
from stc_mlir.target import TargetError

PACKAGED = Path(target.__file__).parent / "stcp920.toml"


def test_packaged_target_has_design_figures():
    t = target.load("stcp920")
    assert t.cores == 8 and t.clusters == 4 and t.clock_ghz == 1.0
    assert t.memory["l1"].size == 1 << 20
    assert t.memory["wb"].size == 256 << 10
    assert (t.memory["llb"].size, t.memory["llb"].bandwidth, t.memory["llb"].latency) == (8 << 20, 256, 40)
    assert (t.memory["ddr"].size, t.memory["ddr"].bandwidth, t.memory["ddr"].latency) == (4 << 30, 64, 200)
    assert (t.k_lanes, t.n_lanes, t.macs_per_cycle) == (16, 32, 512)
    assert t.vector_elements == 64 and t.special_cost == 4
    assert {"exp", "erf", "tanh", "sigmoid", "rsqrt", "divide"} <= t.special
    assert (t.noc_rows, t.noc_cols, t.link_bandwidth, t.hop_latency) == (2, 4, 64, 4)
    assert t.issue_cycles == 16
    assert target.load() is t  # cached


def test_noc_geometry():
    t = target.load()
    assert t.position(5) == (1, 1)
    assert t.hops(0, 7) == 4 and t.hops(3, 3) == 0
    assert t.route(0, 6) == [(0, 1), (1, 2), (2, 6)]
    assert t.route(7, 4) == [(7, 6), (6, 5), (5, 4)]


def test_user_file_overrides_figures(tmp_path):
    text = PACKAGED.read_text().replace("size = 1_048_576", "size = 2_097_152")
    path = tmp_path / "big_l1.toml"
    path.write_text(text)
    assert target.load(path).memory["l1"].size == 2 << 20
    assert target.load(str(path)).path == str(path.resolve())


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("bandwidth = 64\nlatency = 200", "bandwidth = -1\nlatency = 200",
         "key 'memory.ddr.bandwidth': expected a positive number, got -1"),
        ("k_lanes = 16", "k_lanes = \"16\"", "key 'matrix.k_lanes': expected a positive integer"),
        ("hop_latency = 4", "", "missing key 'noc.hop_latency'"),
        ("cores = 8 ", "cores = 8\ncoers = 8 ", "unknown key 'coers'"),
        ("cores = 8 ", "cores = 9 ", "key 'cores': 9 cores do not fit the 2 x 4 NoC mesh"),
        ("[dma]", "[dma", "not valid TOML"),
    ],
)
def test_bad_file_names_file_and_key(tmp_path, old, new, message):
    text = PACKAGED.read_text()
    assert old in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(TargetError) as err:
        target.load(path)
    assert str(path.resolve()) in str(err.value)
    assert message in str(err.value)


def test_missing_file():
    with pytest.raises(TargetError, match="no such target file.*built-in targets: stcp920"):
        target.load("stcp921")
