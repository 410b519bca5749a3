"""`check_program` checks a program once: a program that passed is not checked again (so
`stcobj.load` and the emulator running it do not both pay), unless anything it holds was
replaced, added or removed since, or offsets are now required where they were not."""

import dataclasses

import numpy as np
import pytest

from stc_mlir.emulator import run
from stc_mlir.isa import check
from stc_mlir.isa.check import ProgramError, check_program
from stc_mlir.target import load
from test_emulator_hazards import _load_then

T = load("stcp920")


def relu_program(offsets: bool = True):
    """DMA in, relu in place, DMA out on core 0, properly synchronised."""
    program = _load_then(consumer_waits=True)
    if not offsets:
        program.buffers["t"] = dataclasses.replace(program.buffers["t"], offset=None)
    return program


@pytest.fixture
def calls(monkeypatch):
    """How many times the whole program was really checked."""
    count = [0]
    real = check._check_program

    def counting(*args):
        count[0] += 1
        return real(*args)

    monkeypatch.setattr(check, "_check_program", counting)
    return count


def test_a_checked_program_is_not_checked_again(calls):
    program = relu_program()
    check_program(program, T, require_offsets=True)
    check_program(program, T, require_offsets=True)
    check_program(program, T)  # weaker than what it passed
    x = np.arange(-128, 128, dtype=np.float16)
    outputs, _ = run(program, {"x": x})
    run(program, {"x": x}, numerics=False)
    assert calls[0] == 1
    assert np.array_equal(outputs["y"], np.maximum(x, 0))


def test_a_replaced_command_is_checked(calls):
    program = relu_program()
    check_program(program, T, require_offsets=True)
    relu = program.cores[0][1]
    narrow = dataclasses.replace(relu.tiles["output"], shape=(32,), strides=(1,))
    program.cores[0][1] = dataclasses.replace(relu, tiles={**relu.tiles, "output": narrow})
    with pytest.raises(ProgramError, match=r"output tile has shape \[32\], expected \[256\]"):
        check_program(program, T, require_offsets=True)
    assert calls[0] == 2


def test_a_tile_changed_in_place_is_checked(calls):
    program = relu_program()
    check_program(program, T)
    tiles = program.cores[0][2].tiles
    assert isinstance(tiles, dict)
    tiles["src"] = dataclasses.replace(tiles["src"], offset=400)  # beyond the 512-byte buffer
    with pytest.raises(ProgramError, match="outside buffer @t"):
        check_program(program, T)
    assert calls[0] == 2


def test_added_buffers_commands_and_semaphores_are_checked(calls):
    program = relu_program()
    check_program(program, T)
    program.semaphores["s"] = dataclasses.replace(program.semaphores["loaded"], name="s", init=-1)
    with pytest.raises(ProgramError, match="negative init"):
        check_program(program, T)
    del program.semaphores["s"]
    check_program(program, T)
    program.cores[0].append(dataclasses.replace(program.cores[0][0], signals=("nowhere",)))
    with pytest.raises(ProgramError, match="unknown semaphore @nowhere"):
        check_program(program, T)
    assert calls[0] == 4


def test_offsets_required_later_are_checked(calls):
    program = relu_program(offsets=False)
    check_program(program, T)
    with pytest.raises(ProgramError, match="has no offset"):
        check_program(program, T, require_offsets=True)
    with pytest.raises(Exception, match="has no offset"):
        run(program, {"x": np.zeros(256, dtype=np.float16)})
    assert calls[0] == 3
