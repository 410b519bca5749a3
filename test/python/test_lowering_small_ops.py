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
