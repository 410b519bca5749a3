"""Small ops on many cores (docs/lowering.md, "Small ops"): batch-2 matmuls spread over
cores along N, and the tree weight chunks are passed down."""

from __future__ import annotations

import numpy as np

from stc_mlir import target as targets
from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import ListItems, NPUMemScope, Schedule, ScheduleInfo
from stc_mlir.passes.lowering.stage import tree

from lowering_helpers import f16, function, lower_and_run

F = np.float16
K, N = 256, 1024


def test_weight_tree_is_one_hop_links_four_deep_on_the_mesh():
    t = targets.load("stcp920")
    order, parent = tree(t, range(8))
    assert order[0] == 0 and sorted(order) == list(range(8))
    for core, p in parent.items():
        assert t.hops(core, p) == 1 and order.index(p) < order.index(core)

    def depth(c):
        return 0 if c not in parent else 1 + depth(parent[c])
    assert max(map(depth, range(8))) == 4
    assert tree(t, [4, 5, 6, 7])[1] == {6: 7, 5: 6, 4: 5}  # the snake's first core is the root


def batch2_matmul(parts):
    module = function({"x": ((2, K), F)},
                      lambda b, x: b(g.MatmulOp.make(x, b.const(f16(K, N, scale=1 / 16)))))
    f = module.body.block.first_op
    Schedule([ScheduleInfo(op, NPUMemScope.DDR, parts) for op in ListItems(f)], verify=False)(module)
    return module


def weight_loads(program):
    weight = next(n for n, b in program.buffers.items() if b.init is not None and b.size == K * N * 2)
    return [(core, c) for core, stream in program.cores.items() for c in stream
            if c.op == "dma" and c.tiles["src"].buffer == weight]


def test_two_rows_on_one_part_of_eight_cores_each_core_streams_its_own_columns():
    _, report, program = lower_and_run(batch2_matmul([list(range(8))]), {"x": f16(2, K)}, max_ulps=2)
    loads = weight_loads(program)
    assert {core for core, _ in loads} == set(range(8))
    columns = {core: {c.tiles["src"].offset // 2 % N for _, c in loads if _ == core} for core in range(8)}
    assert all(len({c // (N // 8) for c in cols}) == 1 for cols in columns.values())  # own eighth
    assert sum(int(np.prod(c.tiles["src"].shape)) for _, c in loads) == K * N  # every element once
    # no core copies weights from another
    assert not [c for s in program.cores.values() for c in s
                if c.op == "dma" and program.buffers[c.tiles["src"].buffer].space == "wb"]


def test_two_batch_parts_read_the_weight_from_ddr_once():
    _, _, program = lower_and_run(batch2_matmul([[0, 1, 2, 3], [4, 5, 6, 7]]), {"x": f16(2, K)},
                                  max_ulps=2)
    loaded = sum(int(np.prod(c.tiles["src"].shape)) * 2 for _, c in weight_loads(program))
    assert loaded == K * N * 2  # f16, once: the second part copies its columns from the first


def test_independent_lookups_on_two_rows_take_turns_over_the_cores():
    """Four batch-2 embedding lookups, each its own item on all 8 cores (a recommender at
    level 3): a lookup picks whole rows (two cores, one row each), the next lookup starts
    on the next two cores, and its tiny LLB result is pinned, so the narrowed barriers let
    the lookups run side by side; the concat reads them all."""
    tables = [f16(64, 4) for _ in range(4)]

    def body(b, *ids):
        rows = [b(g.GatherOp.make(b.const(t), i, axis=0)) for t, i in zip(tables, ids)]
        return b(g.ConcatOp.make(rows, axis=1))
    module = function({f"i{k}": ((2,), np.int64) for k in range(4)}, body)
    f = module.body.block.first_op
    Schedule([ScheduleInfo(op, NPUMemScope.LLB if isinstance(op, g.GatherOp) else NPUMemScope.DDR,
                           [list(range(8))]) for op in ListItems(f)], verify=False)(module)
    inputs = {f"i{k}": np.random.default_rng(k).integers(0, 64, 2).astype(np.int64) for k in range(4)}
    _, _, program = lower_and_run(module, inputs)
    cores = {}
    for core, stream in program.cores.items():
        for c in stream:
            if c.op == "gather":
                cores.setdefault(c.tiles["output"].buffer, set()).add(core)
    assert sorted(map(sorted, cores.values())) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert all(c.tiles["output"].shape == (1, 4) for s in program.cores.values() for c in s if c.op == "gather")
    assert all(n in program.buffers and program.buffers[n].space == "llb" for n in cores)


def test_small_constants_of_small_ops_are_read_from_one_llb_copy():
    """A batch-2 MLP's four biases (64 down to 16 bytes, added to 2-row results) and its last
    16 x 8 weight (256 bytes) leave DDR once, in one DMA of all of them into LLB at the
    start of the program; each op loads them from LLB (40 cycles of latency, not DDR's
    200). The larger weights stay where they were."""
    widths = [64, 32, 16, 16, 8]
    layers = [(f16(k, n, scale=1 / 8), f16(n)) for k, n in zip(widths, widths[1:])]

    def body(b, x):
        for k, (w, bias) in enumerate(layers):
            x = b(g.AddOp.make(b(g.MatmulOp.make(x, b.const(w))), b.const(bias)))
            if k < len(layers) - 1:
                x = b(g.ReluOp.make(x))
        return x
    module = function({"x": ((2, 64), F)}, body)
    f = module.body.block.first_op
    Schedule([ScheduleInfo(op, NPUMemScope.LLB, [list(range(8))]) for op in ListItems(f)], verify=False)(module)
    _, _, program = lower_and_run(module, {"x": f16(2, 64)}, max_ulps=2)
    ddr_consts = {n for n, b in program.buffers.items() if b.init is not None}
    small = [n for n in ddr_consts if n.startswith("small_")]
    assert len(small) == 1 and program.buffers[small[0]].size == 4 * 64 + 256  # 64-byte aligned
    assert len(ddr_consts) == 4  # the three larger weights, and the small ones together
    reads = [(core, c) for core, s in program.cores.items() for c in s
             if any(t.buffer in ddr_consts for slot, t in c.tiles.items() if slot in c.spec.reads)]
    from_small = [c for _, c in reads if c.tiles["src"].buffer == small[0]]
    assert len(from_small) == 1 and program.buffers[from_small[0].tiles["dst"].buffer].space == "llb"
    copy = from_small[0].tiles["dst"].buffer
    loads = [c for s in program.cores.values() for c in s if c.op == "dma" and c.tiles["src"].buffer == copy]
    assert loads and {program.buffers[c.tiles["dst"].buffer].space for c in loads} <= {"l1", "wb"}
    assert {c.tiles["src"].buffer for _, c in reads} - {small[0]}  # the weights: from DDR as before
