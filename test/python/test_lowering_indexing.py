"""Index ops cut per batch part (docs/lowering.md, "Seventh session"): OneHot, GatherND
and Einsum, like GatherElements, read for an output region only the region of their
operands it needs, so a core bind of several batch parts (and a part's cores) may split
them. Each case runs on two parts of four cores, in DDR (streamed) and in an L1 group,
and must match the reference interpreter bit for bit (integer/exact ops) or within the
matrix unit's fp32 accumulation, with no hazards and a program the chip accepts."""

from __future__ import annotations

import numpy as np
import pytest

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import Group, GroupOps, ListItems, NPUMemScope, Schedule, ScheduleInfo
from stc_mlir.isa.check import check_program

from lowering_helpers import RNG, f16, function, lower_and_run

F, I64 = np.float16, np.int64
PARTS = [[0, 1, 2, 3], [4, 5, 6, 7]]


def one_hot():
    inputs = {"i": ((8, 6), I64), "v": ((2,), F)}
    data = {"i": RNG.integers(-7, 7, (8, 6)).astype(I64), "v": np.array([-1.5, 2.0], F)}
    return inputs, data, lambda b, i, v: b(g.OneHotOp.make(i, v, depth=7, axis=1))


def gather_nd(batch_dims):
    def build(b, x, i):
        y = b(g.GatherNDOp.make(x, i, batch_dims=batch_dims))
        return b(g.ReluOp.make(y)) if batch_dims else y
    if batch_dims:
        inputs = {"x": ((8, 5, 6, 4), F), "i": ((8, 3, 2), I64)}
        data = {"x": f16(8, 5, 6, 4), "i": RNG.integers(0, 5, (8, 3, 2)).astype(I64)}
    else:
        inputs = {"i": ((8, 3, 1), I64), "x": ((9, 16), F)}
        data = {"i": RNG.integers(-9, 9, (8, 3, 1)).astype(I64), "x": f16(9, 16)}
        return inputs, data, lambda b, i, x: b(g.GatherNDOp.make(x, i))
    return inputs, data, build


def einsum(equation, *shapes):
    names = "xy"[: len(shapes)]
    inputs = {n: (s, F) for n, s in zip(names, shapes)}
    data = {n: f16(*s, scale=0.5) for n, s in zip(names, shapes)}
    return inputs, data, lambda b, *xs: b(g.EinsumOp.make(list(xs), equation=equation))


CASES = {
    "one_hot": one_hot,
    "gather_nd": lambda: gather_nd(0),
    "gather_nd_batch_dims": lambda: gather_nd(1),
    "einsum_batched_matmul": lambda: einsum("bij,bjk->bik", (8, 12, 32), (8, 32, 20)),
    "einsum_transpose": lambda: einsum("bij->jbi", (8, 6, 10)),
    "einsum_broadcast_one": lambda: einsum("bij,bjk->bik", (8, 12, 32), (1, 32, 20)),
    "einsum_contract_two": lambda: einsum("bhid,bhjd->bhij", (8, 2, 6, 16), (8, 2, 10, 16)),
}


def schedule(module, scope, grouped):
    f = module.body.block.first_op
    ret = f.body.block.last_op
    if grouped:
        grp = Group(list(f.args), ret.operands[0])
        GroupOps([grp])(module)
        Schedule([ScheduleInfo(grp, scope, PARTS)], verify=False)(module)
    else:
        Schedule([ScheduleInfo(op, scope, PARTS) for op in ListItems(f)], verify=False)(module)
    return module


@pytest.mark.parametrize("grouped", [False, True], ids=["ddr", "l1-group"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_index_op_cut_over_two_batch_parts_matches_the_reference(name, grouped):
    inputs, data, body = CASES[name]()
    module = schedule(function(inputs, body), NPUMemScope.L1 if grouped else NPUMemScope.DDR, grouped)
    _, _, program = lower_and_run(module, data, max_ulps=1)
    check_program(program, targets.load("stcp920"), require_offsets=True)
    command = {"o": "one_hot", "g": "gather_nd", "e": "einsum"}[name[0]]
    cores = {core for core, stream in program.cores.items() for c in stream if c.op == command}
    assert {0, 4} <= cores  # both batch parts compute their own samples
    assert len(cores) > 2  # and a part's cores share them


def test_einsum_with_an_ellipsis_stays_one_tile_per_part():
    """Subscripts under `...` are not cut: each part's first core computes it whole
    (the batch is the ellipsis' first axis here, so the parts still cut it)."""
    inputs, data, _ = einsum("...ij,...jk->...ik", (8, 12, 32), (8, 32, 20))
    module = function(inputs, lambda b, x, y: b(g.EinsumOp.make([x, y], equation="...ij,...jk->...ik")))
    f = module.body.block.first_op
    op = next(iter(f.body.block.ops))
    Schedule([ScheduleInfo(op, NPUMemScope.DDR, [list(range(8))])], verify=False)(module)
    _, _, program = lower_and_run(module, data, max_ulps=1)
    assert {core for core, s in program.cores.items() for c in s if c.op == "einsum"} == {0}


def table_gather(rows, width, batch, fields):
    inputs = {"i": ((batch, fields), I64)}
    table = f16(rows, width)
    data = {"i": RNG.integers(0, rows, (batch, fields)).astype(I64)}

    def body(b, i):
        return b(g.ReluOp.make(b(g.GatherOp.make(b.const(table), i, axis=0))))
    return inputs, data, body, table.nbytes


def table_reads(program, nbytes):
    """(op, destination space) of every command reading the table's DDR buffer."""
    table = next(n for n, b in program.buffers.items() if b.init is not None and b.size >= nbytes
                 and b.size - nbytes < 64)
    return [(c.op, program.buffers[c.tiles[c.spec.outs[0]].buffer].space)
            for s in program.cores.values() for c in s
            if any(t.buffer == table for slot, t in c.tiles.items() if slot in c.spec.reads)]


@pytest.mark.parametrize("grouped", [False, True], ids=["ddr", "l1-group"])
def test_a_small_table_is_copied_to_each_cores_l1_before_the_gather(grouped):
    """DeepFM's embeddings, smaller: a 640-byte table gathered into 4 KB of rows per core is read from
    DDR once per core (one DMA), then gathered in L1: every row no longer crosses DDR."""
    inputs, data, body, nbytes = table_gather(40, 8, 128, 16)
    module = schedule(function(inputs, body), NPUMemScope.L1 if grouped else NPUMemScope.DDR, grouped)
    _, _, program = lower_and_run(module, data)
    reads = table_reads(program, nbytes)
    assert reads and all(r == ("dma", "l1") for r in reads)
    gathers = [c for s in program.cores.values() for c in s if c.op == "gather"]
    assert len(gathers) == 8 and all(program.buffers[c.tiles["data"].buffer].space == "l1" for c in gathers)


def test_a_table_large_against_its_rows_is_gathered_from_ddr():
    """Two samples of a 512-row table (a recommender at batch 2): copying the table would
    move more than the rows, so the gather picks its rows from DDR as before."""
    inputs, data, body, nbytes = table_gather(512, 16, 2, 4)
    module = schedule(function(inputs, body), NPUMemScope.DDR, False)
    _, _, program = lower_and_run(module, data)
    assert {op for op, _ in table_reads(program, nbytes)} == {"gather"}
