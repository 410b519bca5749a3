"""Mutation test (quick version of bench/mutation.py): bugs injected into a compiled
program are reported by the emulator, or leave the outputs bit-identical."""

from __future__ import annotations

from collections import Counter

import pytest

from stc_mlir import models, mutate
from stc_mlir import target as targets
from stc_mlir.emulator import program_from_module, run
from stc_mlir.frontend import import_onnx
from stc_mlir.isa.program import Program
from stc_mlir.pipeline import Pipeline


@pytest.fixture(scope="module")
def deepfm():
    proto = models.build("deepfm", batch=2, **models.small_options("deepfm"))
    inputs = models.example_inputs("deepfm", proto)
    program = program_from_module(Pipeline(None).run(import_onnx(proto)))
    outputs, _ = run(program, inputs)
    return program, inputs, outputs, targets.load(program.target)


def test_every_mutant_is_reported_or_harmless(deepfm):
    program, inputs, expected, tgt = deepfm
    made = mutate.mutants(program, tgt, per_kind=3, seed=13)
    assert Counter(m.kind for m in made) == {kind: 3 for kind in mutate.KINDS}
    outcomes = [mutate.run_mutant(m, inputs, expected, tgt) for m in made]
    bad = [f"{o.mutant.kind} {o.mutant.where}: {o.verdict} {o.by} {o.message}"
           for o in outcomes if o.verdict not in ("caught", "identical")]
    assert not bad, "\n".join(bad)
    assert all(not o.changes for o in outcomes if o.verdict == "identical")
    by = Counter(o.by for o in outcomes if o.verdict == "caught")
    assert by["provenance"] >= 5, by  # lost and truncated transfers are provenance errors
    assert sum(o.changes for o in outcomes) >= 15


def test_mutants_are_deterministic_and_renumber_expectations(deepfm):
    program, _, _, tgt = deepfm
    first = mutate.mutants(program, tgt, ["drop_dma", "swap_commands"], per_kind=4, seed=5)
    again = mutate.mutants(program, tgt, ["drop_dma", "swap_commands"], per_kind=4, seed=5)
    assert [m.where for m in first] == [m.where for m in again]
    for m in first:  # the mutant's expectations still name commands that write what is read
        lengths = {c: len(s) for c, s in m.program.cores.items()}
        for _, _, cmd in m.program.commands():
            for writers in (cmd.expects or {}).values():
                assert all(w == (-1, -1) or w[1] < lengths[w[0]] for w in writers)


def test_lost_transfers_go_unnoticed_without_expectations(deepfm):
    """What the provenance check adds: the same dropped DMAs with the expectations removed
    run without a hazard and with other outputs."""
    program, inputs, expected, tgt = deepfm
    made = mutate.mutants(program, tgt, ["drop_dma"], per_kind=6, seed=2)
    outcomes = [mutate.run_mutant(m, inputs, expected, tgt, without_provenance=True) for m in made]
    assert all(o.verdict == "caught" for o in outcomes)
    silent = [o for o in outcomes if o.by == "provenance" and o.without_provenance == "missed"]
    assert silent, [(o.by, o.without_provenance) for o in outcomes]


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown mutant kind 'melt'"):
        mutate.mutants(Program(), targets.load("stcp920"), ["melt"])
