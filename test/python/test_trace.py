"""The linked trace (`stc-run --trace`): every slice names its schedule item, sub-group,
graph op, phase and core; flow arrows go from each semaphore signal to the wait that took
it; counter tracks show the L1, weight-buffer and LLB bytes reserved over time. The JSON
is checked against the Chrome trace format's rules as Perfetto applies them (a flow event
binds to the slice enclosing it on its thread), and loaded into Perfetto's trace processor
when its binary can be had."""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict

import numpy as np
import pytest

from stc_mlir.emulator import run
from stc_mlir.emulator.report import UNITS
from stc_mlir.passes.lowering import lower
from stc_mlir.passes.npu_allocate import allocate

from lowering_helpers import f16
from test_report_origins import split_module


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    lowered = lower(split_module())
    program = allocate(lowered.program, lowered.live, lowered.phase_items)
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    _, report = run(program, {"x": f16(4, 8, 16, 16)}, trace=str(path))
    return program, report, path, json.loads(path.read_text())


def slices_of(events):
    return [e for e in events if e["ph"] == "X"]


def bound_slice(events, flow):
    """The slice a flow event binds to, as Perfetto binds it: the slice open on its thread
    when it comes (events in time order): the last slice of the thread before it, which must
    contain its time strictly inside, or start at it if it lasts no time (a zero-cycle fence)."""
    at = events.index(flow)
    last = next(e for e in reversed(events[:at]) if e["ph"] == "X"
                and (e["pid"], e["tid"]) == (flow["pid"], flow["tid"]))
    assert (last["ts"] < flow["ts"] < last["ts"] + last["dur"]
            or last["dur"] == 0 and last["ts"] == flow["ts"]), (flow, last)
    assert last["cat"] != "wait"
    return last


def test_every_slice_names_its_item_sub_group_op_and_core(traced):
    program, report, _, trace = traced
    events = trace["traceEvents"]
    slices = slices_of(events)
    assert len(slices) == len(report.timeline)
    for e in slices:
        args = e["args"]
        command = program.cores[e["pid"]][args["command"]]
        origin = program.origins[command.origin]
        assert (args["item"], args["subgroup"], args["op"], args["phase"]) == (
            origin.item, origin.subgroup, origin.op, origin.phase)
        assert args["core"] == e["pid"]
        assert e["cat"] == "wait" or e["tid"] == UNITS.index(e["cat"])
    # sub-group 1's commands run on cores 4-7 (its barriers' fences on every core)
    subgroups = Counter((e["args"]["subgroup"], e["pid"] >= 4) for e in slices
                        if e["tid"] != UNITS.index("sync"))
    assert subgroups[("1", True)] and not subgroups[("1", False)]
    assert {e["args"]["op"].split(" ")[0] for e in slices} >= {"graph.relu", "graph.conv2d"}


def test_flows_go_from_each_signal_to_the_wait_that_takes_it(traced):
    program, _, _, trace = traced
    events = trace["traceEvents"]
    flows = defaultdict(dict)
    for e in events:
        if e["ph"] in "sf":
            assert e["cat"] == "semaphore" and e["id"] not in flows or e["ph"] not in flows[e["id"]]
            flows[e["id"]][e["ph"]] = e
    assert flows and all(set(pair) == {"s", "f"} for pair in flows.values())
    taken = Counter()
    for pair in flows.values():
        start, end = pair["s"], pair["f"]
        assert start["name"] == end["name"] and end["bp"] == "e"
        name = start["name"][1:]
        source, sink = bound_slice(events, start), bound_slice(events, end)
        assert name in program.cores[start["pid"]][source["args"]["command"]].signals
        assert name in program.cores[end["pid"]][sink["args"]["command"]].waits
        assert source["args"]["end_cycle"] <= sink["args"]["start_cycle"]  # the wait starts after the signal
        taken[name] += 1
    # the events are in time order, as a trace processor reads them
    times = [e["ts"] for e in events if e["ph"] in "Xsf"]
    assert times == sorted(times)
    # every wait beyond a semaphore's initial count has its arrow
    waits = Counter(n for stream in program.cores.values() for c in stream for n in c.waits)
    assert taken == Counter({n: k - program.semaphores[n].init for n, k in waits.items()
                             if k > program.semaphores[n].init})
    # cluster barriers: each core's second fence takes one signal from every other core
    barrier = [p for p in flows.values() if p["s"]["name"].startswith("@bar")]
    assert {p["s"]["pid"] for p in barrier} == set(range(8))


def test_counters_show_memory_reserved_per_phase(traced):
    _, report, _, trace = traced
    events = trace["traceEvents"]
    counters = defaultdict(list)
    for e in events:
        if e["ph"] == "C":
            assert list(e["args"]) == ["bytes"]
            counters[(e["pid"], e["name"])].append((e["ts"], e["args"]["bytes"]))
    names = {e["args"]["name"]: e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    cluster = names["cluster"]
    assert {name for pid, name in counters if pid == cluster} == {"LLB"}
    assert {pid for pid, name in counters if name == "L1"} == set(range(8))
    for series in counters.values():
        times = [ts for ts, _ in series]
        assert times == sorted(times) and series[-1][1] == 0  # freed at the end
    top = {name: max(v for (pid, n), series in counters.items() if n == name for _, v in series)
           for name in ("L1", "LLB", "weight buffer")}
    items = report.items()
    assert top["L1"] == max(r["peak_l1_bytes"] for r in items) <= report.target.memory["l1"].size
    assert top["LLB"] == max(r["peak_llb_bytes"] for r in items) == 2 * 8 * 16 * 16 * 2
    assert top["weight buffer"] == max(r["peak_wb_bytes"] for r in items) > 0
    # the LLB holds sub-group 0's result from its conv until the concat's phase ends
    llb = counters[(cluster, "LLB")]
    assert [v for _, v in llb] == [0, 8192, 0] or [v for _, v in llb] == [8192, 0]


def trace_processor():
    """Perfetto's trace processor, or a skip saying why it cannot run here."""
    tp = pytest.importorskip("perfetto.trace_processor", reason="the perfetto package is not installed")
    binary = os.environ.get("STC_TRACE_PROCESSOR")  # a trace_processor_shell already on the machine
    config = tp.TraceProcessorConfig(bin_path=binary) if binary else tp.TraceProcessorConfig()
    return tp, config


def test_the_trace_loads_in_perfettos_trace_processor(traced):
    program, report, path, trace = traced
    tp, config = trace_processor()
    try:
        processor = tp.TraceProcessor(trace=str(path), config=config)
    except Exception as err:  # noqa: BLE001 - the binary is downloaded on first use
        pytest.skip(f"Perfetto's trace_processor_shell is not available on this machine ({type(err).__name__}: "
                    "the perfetto package downloads it on first use; set STC_TRACE_PROCESSOR to a local "
                    "binary). The JSON structure is checked by the other tests of this file.")
    try:
        def rows(sql):
            return list(processor.query(sql))

        (count,) = rows("select count(*) as n from slice")
        assert count.n == len(slices_of(trace["traceEvents"]))
        # slices joined to their items through their args
        joined = rows("""
            select s.id, item.string_value as item, op.string_value as op
            from slice s
            join args item on item.arg_set_id = s.arg_set_id and item.key = 'args.item'
            join args op on op.arg_set_id = s.arg_set_id and op.key = 'args.op'""")
        assert len(joined) == count.n
        assert {r.item for r in joined} == {o.item for o in program.origins}
        (flows,) = rows("select count(*) as n from flow")
        assert flows.n == sum(1 for e in trace["traceEvents"] if e["ph"] == "s")
        tracks = {r.name for r in rows("select distinct name from counter_track")}
        assert {"L1 bytes", "LLB bytes", "weight buffer bytes"} <= tracks
        (peak,) = rows("select max(c.value) as v from counter c join counter_track t on c.track_id = t.id "
                       "where t.name = 'LLB bytes'")
        assert peak.v == max(r["peak_llb_bytes"] for r in report.items())
    finally:
        processor.close()


def test_an_untagged_program_still_traces(tmp_path):
    from stc_mlir.emulator import examples

    program = examples.matmul_by_rows((64, 32), np.eye(32, 64, dtype=np.float16))
    path = tmp_path / "t.json"
    run(program, {program.inputs[0].name: np.ones((64, 32), np.float16)}, trace=str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert all(e["args"]["item"] == "(no origin)" for e in slices_of(events))
    assert any(e["ph"] == "s" for e in events)  # its semaphores still have arrows
