"""Mutation testing of compiled programs: inject the bugs a lowering, an allocator or a
synchronisation pass could make into a correct program, and check that the emulator
reports each one (a provenance error, a race, an uninitialised read, a deadlock, a
checker error) or that the outputs stay bit-identical (the change did not matter).

Mutant kinds (`KINDS`), each applied at sites drawn with a seeded `random.Random`:

- `drop_dma`, `drop_compute`: a command's data effect is lost; its waits move to the next
  command of the same unit and its signals to the previous one, so the synchronisation
  protocol stays balanced and nothing deadlocks for that reason alone.
- `truncate_dma`: a DMA moves only the first half of its elements.
- `drop_wait`, `drop_signal`: one wait (one count) or one signal of a command is removed.
- `drop_sync_pair`: a wait and the signal it consumes are both removed (still balanced).
- `drop_barrier`: one core's waiting fence of a cluster barrier is removed.
- `swap_commands`: two consecutive commands of one unit of a core trade places.
- `move_across_sync`: the same two commands trade their work but not their waits and
  signals, so one of them runs on the other side of a synchronisation.
- `shift_buffer`: a buffer is moved to overlap another one of the same memory whose live
  range overlaps its own (an allocator bug).

The expected writers (`Command.expects`) are renumbered with the commands, and an
expectation of a dropped command is removed (it can no longer be the writer): the
expectations stay what the lowering intended. `run_mutants` emulates each mutant and
says what caught it; bench/mutation.py runs it over the built-in models.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from stc_mlir.isa.program import HOST, LOCAL_SPACES, Command, Program, Tile, Writer
from stc_mlir.target import Target

KINDS = ("drop_dma", "drop_compute", "truncate_dma", "drop_wait", "drop_signal",
         "drop_sync_pair", "drop_barrier", "swap_commands", "move_across_sync", "shift_buffer")


@dataclass(frozen=True)
class Mutant:
    kind: str
    where: str  # what was changed, in words
    program: Program


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    verdict: str  # "caught", "identical" or "missed" (or "crashed": not an emulator error)
    by: str = ""  # what caught it: a hazard kind ("provenance", "race", ...) or "checker:<kind>"
    message: str = ""
    changes: bool = False  # an unchecked run gives other outputs or cannot finish
    without_provenance: str = ""  # the verdict with the expectations removed, when asked


# ----------------------------------------------------------------------------- helpers


def unit(program: Program, core: int, cmd: Command) -> str:
    """The unit queue a command runs on (DMAs: "dma_in" into the core's own memories)."""
    if cmd.spec.unit != "dma":
        return cmd.spec.unit
    dst = program.buffers[cmd.tiles[cmd.spec.outs[0]].buffer]
    return "dma_in" if dst.space in LOCAL_SPACES and dst.core == core else "dma_out"


def _renumber(program: Program, core: int, stream: list[Command],
              moved: Mapping[int, int | None]) -> Program:
    """`program` with core `core`'s stream replaced by `stream`, whose commands were at the
    old indices `moved` maps to new ones (None: dropped; absent: unchanged)."""
    def fix(w: Writer) -> Writer | None:
        if w == HOST or w[0] != core or w[1] not in moved:
            return w
        new = moved[w[1]]
        return None if new is None else (core, new)

    cores = dict(program.cores)
    cores[core] = stream
    for c, cmds in cores.items():
        if any(cmd.expects for cmd in cmds):
            cores[c] = [cmd if not cmd.expects else dataclasses.replace(cmd, expects={
                slot: tuple(sorted(w for w in map(fix, ws) if w is not None))
                for slot, ws in cmd.expects.items()}) for cmd in cmds]
    return dataclasses.replace(program, cores=cores)


def _next_same_unit(program: Program, core: int, index: int, step: int) -> int | None:
    stream = program.cores[core]
    u = unit(program, core, stream[index])
    i = index + step
    while 0 <= i < len(stream):
        if stream[i].spec.unit != "sync" and unit(program, core, stream[i]) == u:
            return i
        i += step
    return None


# ----------------------------------------------------------------------------- mutations


def _drop(program: Program, core: int, index: int) -> Program:
    stream = list(program.cores[core])
    cmd = stream[index]
    before = _next_same_unit(program, core, index, -1)
    after = _next_same_unit(program, core, index, +1)
    if cmd.signals and before is not None:
        stream[before] = dataclasses.replace(stream[before], signals=stream[before].signals + cmd.signals)
    if cmd.waits and after is not None:
        stream[after] = dataclasses.replace(stream[after], waits=cmd.waits + stream[after].waits)
    del stream[index]
    moved: dict[int, int | None] = {i: i - 1 for i in range(index + 1, len(stream) + 1)}
    moved[index] = None
    return _renumber(program, core, stream, moved)


def _half(t: Tile) -> Tile | None:
    """The first half of a tile's elements in row-major order, if its leading dimension
    above 1 is even and all before it are 1."""
    for d, n in enumerate(t.shape):
        if n > 1:
            return None if n % 2 else dataclasses.replace(t, shape=t.shape[:d] + (n // 2,) + t.shape[d + 1:])
    return None


def _truncate(program: Program, core: int, index: int) -> Program | None:
    cmd = program.cores[core][index]
    src, dst = _half(cmd.tiles["src"]), _half(cmd.tiles["dst"])
    if src is None or dst is None:
        return None
    stream = list(program.cores[core])
    stream[index] = dataclasses.replace(cmd, tiles={**cmd.tiles, "src": src, "dst": dst})
    return dataclasses.replace(program, cores={**program.cores, core: stream})


def _without(names: tuple[str, ...], k: int) -> tuple[str, ...]:
    return names[:k] + names[k + 1:]


def _set_sync(program: Program, edits: Mapping[tuple[int, int], dict[str, Any]]) -> Program:
    cores = dict(program.cores)
    for (core, index), change in edits.items():
        stream = cores[core] = list(cores[core])
        stream[index] = dataclasses.replace(stream[index], **change)
    return dataclasses.replace(program, cores=cores)


def _sync_pair(program: Program, core: int, index: int, k: int) -> Program | None:
    """Remove wait `k` of the command and the signal it consumes: the n-th wait on a
    semaphore (in the waiting core's order) takes the n-th signal (one producing unit)."""
    cmd = program.cores[core][index]
    name = cmd.waits[k]
    n = sum(c.waits.count(name) for c in program.cores[core][:index]) + cmd.waits[:k].count(name)
    signallers = [(c, i, j) for c, i, s in program.commands()
                  for j, x in enumerate(s.signals) if x == name]
    if len({c for c, _, _ in signallers}) != 1 or n >= len(signallers):
        return None  # not a channel with one producer: no single matching signal
    sc, si, sj = signallers[n]
    edits = {(core, index): {"waits": _without(cmd.waits, k)}}
    if (sc, si) == (core, index):
        edits[(core, index)]["signals"] = _without(cmd.signals, sj)
    else:
        edits[(sc, si)] = {"signals": _without(program.cores[sc][si].signals, sj)}
    return _set_sync(program, edits)


def _swap(program: Program, core: int, i: int, keep_sync: bool) -> Program | None:
    j = _next_same_unit(program, core, i, +1)
    if j is None:
        return None
    stream = list(program.cores[core])
    a, b = stream[i], stream[j]
    if keep_sync:
        if (a.waits, a.signals) == (b.waits, b.signals):
            return None
        a, b = (dataclasses.replace(a, waits=b.waits, signals=b.signals),
                dataclasses.replace(b, waits=a.waits, signals=a.signals))
    stream[i], stream[j] = b, a
    return _renumber(program, core, stream, {i: j, j: i})


def _live_overlap(a, b) -> bool:
    if a.live is None or b.live is None:
        return True
    return a.live[0] <= b.live[1] and b.live[0] <= a.live[1]


def _shift(program: Program, name: str, other: str, rng: random.Random,
           capacity: int) -> Program | None:
    b, o = program.buffers[name], program.buffers[other]
    assert b.offset is not None and o.offset is not None
    start = o.offset + rng.randrange(0, o.size, 64) if o.size > 64 else o.offset
    start = min(start, capacity - b.size)
    if start < 0 or start == b.offset:
        return None
    buffers = {**program.buffers, name: dataclasses.replace(b, offset=start)}
    return dataclasses.replace(program, buffers=buffers)


def _sites(program: Program, kind: str) -> list[tuple]:
    cmds = [(c, i, cmd) for c, i, cmd in program.commands()]
    match kind:
        case "drop_dma" | "truncate_dma":
            return [(c, i) for c, i, cmd in cmds if cmd.op == "dma"]
        case "drop_compute":
            return [(c, i) for c, i, cmd in cmds if cmd.spec.unit in ("matrix", "vector")]
        case "drop_wait" | "drop_sync_pair":
            return [(c, i, k) for c, i, cmd in cmds for k in range(len(cmd.waits))
                    if kind == "drop_wait" or cmd.spec.unit != "sync"]
        case "drop_signal":
            return [(c, i, k) for c, i, cmd in cmds for k in range(len(cmd.signals))]
        case "drop_barrier":
            return [(c, i) for c, i, cmd in cmds if cmd.spec.unit == "sync" and cmd.waits]
        case "swap_commands" | "move_across_sync":
            return [(c, i) for c, i, cmd in cmds if cmd.spec.unit != "sync"]
        case "shift_buffer":
            return [(b.name, o.name) for b in program.buffers.values()
                    for o in program.buffers.values()
                    if b.name != o.name and b.memory == o.memory and b.init is None
                    and _live_overlap(b, o)]
    raise ValueError(f"unknown mutant kind {kind!r}; kinds: {', '.join(KINDS)}")


def mutate(program: Program, kind: str, site: tuple, rng: random.Random,
           target: Target) -> Mutant | None:
    """The mutant of `kind` at `site` (one of `_sites`), or None if it does not apply there."""
    where = ""
    if kind != "shift_buffer":
        core, index = site[0], site[1]
        where = program.where(core, index)
    match kind:
        case "drop_dma" | "drop_compute" | "drop_barrier":
            mutated: Program | None = _drop(program, core, index)
        case "truncate_dma":
            mutated = _truncate(program, core, index)
        case "drop_wait":
            cmd = program.cores[core][index]
            mutated = _set_sync(program, {(core, index): {"waits": _without(cmd.waits, site[2])}})
            where += f": wait @{cmd.waits[site[2]]}"
        case "drop_signal":
            cmd = program.cores[core][index]
            mutated = _set_sync(program, {(core, index): {"signals": _without(cmd.signals, site[2])}})
            where += f": signal @{cmd.signals[site[2]]}"
        case "drop_sync_pair":
            mutated = _sync_pair(program, core, index, site[2])
            where += f": wait @{program.cores[core][index].waits[site[2]]} and its signal"
        case "swap_commands" | "move_across_sync":
            mutated = _swap(program, core, index, kind == "move_across_sync")
            where += " with the next command of its unit"
        case "shift_buffer":
            b = program.buffers[site[0]]
            mutated = _shift(program, site[0], site[1], rng, target.memory[b.space].size)
            if mutated is not None:
                where = f"@{site[0]} moved to offset {mutated.buffers[site[0]].offset} over @{site[1]}"
        case _:
            raise ValueError(f"unknown mutant kind {kind!r}")
    return None if mutated is None else Mutant(kind, where, mutated)


def mutants(program: Program, target: Target, kinds: Iterable[str] = KINDS, per_kind: int = 10,
            seed: int = 0) -> list[Mutant]:
    """Up to `per_kind` mutants of each kind at distinct sites drawn with `seed`."""
    rng = random.Random(seed)
    out = []
    for kind in kinds:
        sites = _sites(program, kind)
        rng.shuffle(sites)
        made = 0
        for site in sites:
            if made == per_kind:
                break
            m = mutate(program, kind, site, rng, target)
            if m is not None:
                out.append(m)
                made += 1
    return out


# ----------------------------------------------------------------------------- running


def _verdict(program: Program, inputs: Mapping[str, np.ndarray],
             expected: Mapping[str, np.ndarray], target: Target,
             check_hazards: bool = True) -> tuple[str, str, str]:
    """(verdict, caught by, message) of one emulation."""
    from stc_mlir.emulator import run
    from stc_mlir.emulator.memory import EmulatorError, HazardError

    try:
        outputs, _ = run(program, dict(inputs), target, check_hazards=check_hazards)
    except HazardError as err:
        return "caught", err.kind if err.kind in _RUNTIME else f"checker:{err.kind}", str(err)
    except EmulatorError as err:
        return "caught", "emulator", str(err)
    except Exception as err:  # noqa: BLE001 - a mutant must never crash the emulator
        return "crashed", type(err).__name__, str(err)
    same = all(outputs[k].tobytes() == np.asarray(v).tobytes() for k, v in expected.items())
    return ("identical" if same else "missed"), "", ""


def run_mutant(mutant: Mutant, inputs: Mapping[str, np.ndarray],
               expected: Mapping[str, np.ndarray], target: Target,
               without_provenance: bool = False) -> Outcome:
    """Emulate a mutant with every check: caught (by what), bit-identical outputs, or
    missed; a caught one is run again unchecked (no hazard tracking, no expectations) to
    tell whether it changes the results.
    `without_provenance` also runs it with the expectations removed (what the emulator
    reported before the provenance check)."""
    verdict, by, message = _verdict(mutant.program, inputs, expected, target)
    changes = verdict in ("missed", "crashed")
    if verdict == "caught":
        unchecked = without_expectations(mutant.program)
        changes = _verdict(unchecked, inputs, expected, target, check_hazards=False)[0] != "identical"
    before = ""
    if without_provenance:
        before, was_by, _ = _verdict(without_expectations(mutant.program), inputs, expected, target)
        before = f"caught:{was_by}" if before == "caught" else before
    return Outcome(mutant, verdict, by, message, changes, before)


_RUNTIME = ("provenance", "race", "uninitialized_read", "deadlock", "out_of_bounds")


def without_expectations(program: Program) -> Program:
    """`program` as the emulator saw it before provenance checks (for comparison)."""
    return dataclasses.replace(program, cores={
        c: [dataclasses.replace(cmd, expects=None) for cmd in s] for c, s in program.cores.items()})


def tally(outcomes: Iterable[Outcome]) -> dict[str, Counter[str]]:
    """Per kind: counts of "caught:<by>", "identical", "missed", "crashed"."""
    table: dict[str, Counter[str]] = {}
    for o in outcomes:
        key = f"caught:{o.by}" if o.verdict == "caught" else o.verdict
        table.setdefault(o.mutant.kind, Counter())[key] += 1
    return table


__all__ = ["KINDS", "Mutant", "Outcome", "mutants", "mutate", "run_mutant", "tally",
           "unit", "without_expectations"]
