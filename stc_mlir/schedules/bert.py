"""The seeds' BERT-base schedule (seq_len 128, batch 8): the "diamond" S1-S2-S3-S1 model.

Per encoder layer five groups around the attention's matmuls and one "double matmul" group
for the feed-forward block, a pre-encoding group (embeddings) and, with a pooler, a
post-encoding group; one sentence per core, every result in L1 but the last in DDR:

| group (batch 8)             | split | core_bind                    | mem_scope |
| --------------------------- | ----- | ---------------------------- | --------- |
| pre_encoding                | 1     | [0, 1, ..., 7]               | L1        |
| encoder.N.group_0 .. _4     | 1     | [0, 1, ..., 7]               | L1        |
| encoder.N.double_matmul     | 2     | [[0, 1], [2, 3], [4, 5], [6, 7]] | L1    |
| post_encoding               | 1     | [0, 1, ..., 7]               | DDR       |

Two departures from the seeds' table, both forced by the numbers of our target (a 1 MiB
L1 data buffer; the seeds' chip has 1.25 MB) and both made the way the seeds' method
prescribes when one core cannot hold a sentence:
- the feed-forward block of one sentence does not fit one core (1,769,472 bytes with GELU
  decomposed as exported; still over 1 MiB with `graph-canonicalize` fusing it, as the
  block's input stays live for the residual add next to the 768 KiB 3072-wide
  intermediate), so `double_matmul` gives each sentence two cores: split 2, four
  sentences per sub-group;
- the attention groups run Q, K, scores+softmax (group_2), V (group_3), context (group_4):
  computing V after the scores keeps it from sitting in L1 next to the 384 KiB scores.
The additive attention mask every layer reads is computed once by an `attention_mask`
group (the seeds leave it out of the table). Groups are found from each layer's softmax
and LayerNorms, so the schedule fits any number of layers and any sequence length whose
footprint fits.
"""

from __future__ import annotations

from xdsl.ir import Operation

from stc_mlir.dialects import graph as g
from stc_mlir.graph_schedule import (
    GetNPUSubFunctions,
    Group,
    GroupOps,
    ListOps,
    NPUMemScope,
    Schedule,
    ScheduleError,
    ScheduleInfo,
    SplitGroups,
)
from stc_mlir.schedules._common import check_batch

ONE_CORE_PER_SENTENCE = list(range(8))
TWO_CORES_PER_SENTENCE = [[0, 1], [2, 3], [4, 5], [6, 7]]


def _matmul_before(op: Operation) -> Operation:
    """The matmul reached from `op` through the first activation operand of each op."""
    while not isinstance(op, g.MatmulOp):
        values = [v for v in op.operands if not isinstance(v.owner, g.ConstantOp)]
        if not values or not isinstance(values[0].owner, g.GraphOp):
            raise ScheduleError(f"bert_schedule: no matmul before {op.name}: is this BERT?")
        op = values[0].owner
    return op


def bert_schedule(mod, batch=8):
    """bert-base schedule"""
    func = GetNPUSubFunctions(mod["main"])[0]
    check_batch("bert_schedule", func, batch)
    ops = ListOps(func)
    input_ids, attention_mask, token_type_ids = func.params
    layers = len(ops["nn.softmax"])
    if len(ops["nn.layer_norm"]) != 1 + 2 * layers:
        raise ScheduleError(f"bert_schedule: expected 1 + 2 x {layers} LayerNorms (embeddings, two per "
                            f"layer), found {len(ops['nn.layer_norm'])}")
    pre = Group([input_ids, token_type_ids], ops["nn.layer_norm"][0], name="pre_encoding")
    groups, encoders = [pre], []
    mask, hidden = None, pre.output
    for layer in range(layers):
        softmax = ops["nn.softmax"][layer]
        scores = _matmul_before(softmax)
        mask_value = softmax.operands[0].owner.operands[1]
        if mask is None:
            mask = Group([attention_mask], mask_value, name="attention_mask")
            groups.append(mask)
        (context,) = [use.operation for use in softmax.results[0].uses]
        query, key, value = scores.operands[0], scores.operands[1], context.operands[1]
        attention, output = ops["nn.layer_norm"][1 + 2 * layer], ops["nn.layer_norm"][2 + 2 * layer]
        name = f"encoder.{layer}"
        encoder = [
            Group([hidden], query, name=f"{name}.group_0"),
            Group([hidden], key, name=f"{name}.group_1"),
            Group([query, key, mask_value], softmax, name=f"{name}.group_2"),
            Group([hidden], value, name=f"{name}.group_3"),
            Group([softmax, value, hidden], attention, name=f"{name}.group_4"),
            Group([attention], output, name=f"{name}.double_matmul"),
        ]
        groups += encoder
        encoders.append(encoder)
        hidden = output
    post = Group([hidden], func.results[-1], name="post_encoding") if func.results[-1].owner is not hidden else None
    mod = GroupOps(groups + ([post] if post is not None else []))(mod)
    mod = SplitGroups({encoder[-1]: 2 for encoder in encoders})(mod)

    ops = ListOps(GetNPUSubFunctions(mod["main"])[0])
    L1 = NPUMemScope.L1
    graph_schedule = [ScheduleInfo(pre, L1, ONE_CORE_PER_SENTENCE), ScheduleInfo(mask, L1, ONE_CORE_PER_SENTENCE)]
    for layer, encoder in enumerate(encoders):
        last = layer == layers - 1 and post is None
        graph_schedule += [ScheduleInfo(grp, L1, ONE_CORE_PER_SENTENCE) for grp in encoder[:-1]]
        graph_schedule += [
            ScheduleInfo(ops["split"][layer], L1, TWO_CORES_PER_SENTENCE),
            ScheduleInfo(encoder[-1][0], L1, TWO_CORES_PER_SENTENCE),
            ScheduleInfo(encoder[-1][1], L1, TWO_CORES_PER_SENTENCE),
            ScheduleInfo(ops["concatenate"][layer], NPUMemScope.DDR if last else L1, ONE_CORE_PER_SENTENCE),
        ]
    if post is not None:
        graph_schedule.append(ScheduleInfo(post, NPUMemScope.DDR, ONE_CORE_PER_SENTENCE))
    return Schedule(graph_schedule)(mod)
