"""The cycle costs of commands on a target (formulas in docs/npu.md).

Matrix unit (`k_lanes` x `n_lanes` MACs per cycle, K along input channels, N along output
channels): a conv2d takes N*Ho*Wo*kh*kw*groups*ceil(Cin_g/k)*ceil(Cout_g/n) cycles, a
depthwise conv (one input and one output channel per group) N*Ho*Wo*kh*kw*ceil(C/n) (the
channels on the N lanes), a matmul batch*M*ceil(K/k)*ceil(N/n); the fused epilogue (bias,
residual, activation) is pipelined and free.

Vector unit (`elements_per_cycle` per cycle): a command is a list of passes over elements;
a special-function pass (names in the target's `special` list) costs `special_cost` simple
passes. cycles = ceil(sum(elements * cost) * width / elements_per_cycle), width 2 for a
command on i32 tiles and 4 on i64 tiles (the unit's lanes are fp16-wide), else 1.

DMA: `latency` (the source's and destination's memory latencies, plus `hop_latency` per
NoC hop between cores) then the bytes flow at a rate shared max-min fairly over the
shared resources the transfer uses: the LLB and DDR ports (`bandwidth`) and the directed
NoC links of its X-Y route (`link_bandwidth`); no transfer goes faster than its engine
(`dma.engine_bandwidth`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from stc_mlir.target import Target

from stc_mlir.isa.program import DTYPES, FLOAT_DTYPES, LOCAL_SPACES, Buffer, Command

# (pass name, which element count): "in" input elements, "out" output elements,
# "window" output elements x window size, "row" normalised rows
_UNARY_PASSES: dict[str, list[str]] = {
    "gelu": ["mul", "erf", "add", "mul", "mul"],
    "reciprocal": ["divide"],
    "leaky_relu": ["mul"],
    "cosh": ["exp", "divide", "add", "mul"],  # (e^x + 1/e^x) / 2
    "sinh": ["exp", "divide", "sub", "mul"],
    "softplus": ["exp", "add", "log"],
    "mish": ["exp", "add", "log", "tanh", "mul"],
    "hard_sigmoid": ["mul", "add", "clip"],
    "hard_swish": ["mul", "add", "clip", "mul"],
}
_RESIZE_TAPS = {"nearest": 1, "linear": 2, "cubic": 4}


@dataclass(frozen=True)
class ComputeCost:
    cycles: int
    macs: int = 0  # useful multiply-accumulates (matrix unit)
    elements: int = 0  # element passes (vector unit)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def vector_passes(cmd: Command) -> list[tuple[str, int]]:
    """(pass name, element count) of a vector-unit command."""
    t, p = cmd.tiles, cmd.params
    n_in, n_out = t["input" if "input" in t else cmd.spec.ins[0]].numel, t["output"].numel
    match cmd.op:
        case "unary":
            kind = p["kind"]
            if kind == "gelu" and p["approximate"] == "tanh":
                names = ["mul", "mul", "mul", "add", "tanh", "add", "mul"]
            else:
                names = _UNARY_PASSES.get(kind, [kind])
            return [(name, n_out) for name in names]
        case "binary":
            return [({"div": "divide"}.get(p["kind"], p["kind"]), n_out)]
        case "softmax":
            return [("max", n_in), ("sub", n_in), ("exp", n_in), ("add", n_in), ("divide", n_in)]
        case "layer_norm":
            x = t["input"].shape
            rows = math.prod(x[: p["axis"] % len(x)])
            passes = [("add", n_in), ("sub", n_in), ("mul", n_in), ("add", n_in), ("mul", n_in),
                      ("rsqrt", rows)]
            passes += [(name, n_in) for slot, name in (("scale", "mul"), ("bias", "add")) if slot in t]
            return passes
        case "pool":
            window = n_out * math.prod(p["kernel"])
            if p["kind"] == "max":
                return [("max", window)]
            return [("add", window), ("mul", n_out)]
        case "reduce":
            passes = [("max" if p["kind"] == "max" else "add", n_in)]
            return passes + ([("mul", n_out)] if p["kind"] == "mean" else [])
        case "copy" | "cast":
            return [(cmd.op, n_out)]
        case "compare" | "select":
            return [(cmd.op, n_out)]
        case "arg_reduce":  # compare with the running best, keep its index
            return [("max", n_in), ("select", n_in)]
        case "topk":  # a bitonic sort of each row: log2(n) (log2(n) + 1) / 2 compare-exchange passes
            x = t["input"].shape
            stages = max(1, math.ceil(math.log2(max(x[p["axis"] % len(x)], 2))))
            return [("compare", n_in * stages * (stages + 1) // 2), ("select", n_out)]
        case "resize":  # taps per output element on each interpolated axis (separable)
            x, y = t["input"].shape, t["output"].shape
            axes = sum(1 for a, b in zip(x, y) if a != b) or 1
            taps = _RESIZE_TAPS.get(p["mode"], 1)
            return [("mul", n_out * taps * axes), ("add", n_out * taps * axes)]
        case "gather_elements" | "gather_nd":
            return [("gather", n_out)]
        case "one_hot":
            return [("compare", n_out), ("select", n_out)]
        case "batch_norm":
            channels = t["scale"].numel
            return [("sub", n_in), ("mul", n_in), ("add", n_in), ("rsqrt", channels)]
        case "roi_align":  # bilinear samples: 4 corners, a weight and an add each
            grid = max(p["sampling_ratio"], 2) ** 2
            return [("mul", n_out * grid * 4), ("add", n_out * grid * 4)]
        case "max_roi_pool":  # each bin reads its share of the feature map per roi
            x, rois = t["input"].shape, t["rois"].shape[0]
            return [("max", rois * x[1] * x[2] * x[3])]
        case "lrn":  # squares, a running sum over `size` channels, the power and the divide
            return [("mul", n_in), ("add", n_in * p["size"]), ("pow", n_in), ("divide", n_in)]
        case "nms":  # pairwise IoU of each class's boxes, then the greedy pass
            batches, classes, boxes = t["scores"].shape
            pairs = batches * classes * boxes * boxes
            return [("mul", pairs * 4), ("max", pairs * 4), ("divide", pairs),
                    ("compare", batches * classes * boxes * max(1, math.ceil(math.log2(boxes))))]
    raise KeyError(cmd.op)


def _einsum_macs(cmd: Command) -> int:
    """Multiply-accumulates of an einsum: the product of every index's extent."""
    inputs = cmd.params["equation"].replace(" ", "").split("->")[0].split(",")
    extent: dict[str, int] = {}
    for letters, slot in zip(inputs, ("lhs", "rhs")):
        shape = cmd.tiles[slot].shape
        for letter, d in zip(letters.replace("...", ""), shape[len(shape) - len(letters.replace("...", "")):]):
            extent[letter] = d
    return math.prod(extent.values())


def compute_cost(cmd: Command, target: Target) -> ComputeCost:
    """Cycles (and useful work) of a matrix- or vector-unit command."""
    k, n = target.k_lanes, target.n_lanes
    t = cmd.tiles
    if cmd.op == "conv2d":
        batch, cin = t["input"].shape[:2]
        cout, cin_g, kh, kw = t["weight"].shape
        ho, wo = t["output"].shape[2:]
        g = cmd.params["groups"]
        windows = batch * ho * wo * kh * kw
        macs = windows * cout * cin_g
        if cin_g == 1 and cout == g:  # depthwise: channels on the N lanes
            return ComputeCost(windows * _ceil(cin, n), macs)
        return ComputeCost(windows * g * _ceil(cin_g, k) * _ceil(cout // g, n), macs)
    if cmd.op == "matmul":
        out = t["output"].shape
        rows = math.prod(out[:-1])
        kdim, ndim = t["lhs"].shape[-1], out[-1]
        return ComputeCost(rows * _ceil(kdim, k) * _ceil(ndim, n), rows * kdim * ndim)
    if cmd.op == "einsum":  # a contraction as a matmul at full lane use (its best case)
        macs = _einsum_macs(cmd)
        return ComputeCost(max(1, _ceil(macs, k * n)), macs)
    work = sum(count * (target.special_cost if name in target.special else 1)
               for name, count in vector_passes(cmd))
    return ComputeCost(_ceil(work * _integer_width(cmd), target.vector_elements), elements=work)


def _integer_width(cmd: Command) -> int:
    """How many fp16 lanes an element of the widest integer tile takes: the vector unit
    moves `vector_elements` fp16 values (2 bytes each) per cycle, so i32 passes run at half
    and i64 passes at a quarter of that rate; 1- and 2-byte integers at the full rate."""
    widest = max((DTYPES[t.dtype].itemsize for t in cmd.tiles.values()
                  if t.dtype not in FLOAT_DTYPES and DTYPES[t.dtype].kind in "biu"), default=2)
    return max(1, widest // 2)


@dataclass(frozen=True)
class DmaPlan:
    unit: str  # "dma_in" or "dma_out"
    latency: int
    nbytes: int
    cap: float  # the engine's bandwidth: no transfer moves faster
    shared: tuple[tuple[object, int], ...]  # (shared resource, bytes through it per byte)


_ROUTES: dict[tuple, tuple[str, int, tuple]] = {}


def dma_plan(cmd: Command, core: int, src: Buffer, dst: Buffer, target: Target) -> DmaPlan:
    """Engine, latency and shared bandwidth resources of a DMA (or gather) issued by `core`,
    moving from buffer `src` to buffer `dst`."""
    out = cmd.tiles[cmd.spec.outs[0]]
    nbytes = out.numel * out.itemsize  # a gather moves the rows it selects
    key = (target.path, core, src.space, src.core, dst.space, dst.core)
    route = _ROUTES.get(key)
    if route is None:
        route = _ROUTES[key] = _route(core, src, dst, target)
    unit, latency, shared = route
    return DmaPlan(unit, latency, nbytes, target.dma_bandwidth, shared)


def _route(core: int, src: Buffer, dst: Buffer, target: Target) -> tuple[str, int, tuple]:
    """(engine, latency, shared resources) of a transfer: the same for every DMA between
    the same memories issued by the same core (memoised by `dma_plan`)."""
    local_dst = dst.space in LOCAL_SPACES and dst.core == core
    shared: dict[object, int] = {}
    for b in (src, dst):
        if b.space in ("llb", "ddr"):
            shared[b.space] = shared.get(b.space, 0) + 1
    latency = target.memory[src.space].latency + target.memory[dst.space].latency
    if src.space in LOCAL_SPACES and dst.space in LOCAL_SPACES and src.core != dst.core:
        assert src.core is not None and dst.core is not None
        for link in target.route(src.core, dst.core):
            shared[("link",) + link] = 1
        latency += target.hops(src.core, dst.core) * target.hop_latency
    return "dma_in" if local_dst else "dma_out", latency, tuple(shared.items())


def capacity(resource: object, target: Target) -> float:
    """Bytes per cycle a shared resource (LLB or DDR port, NoC link) carries."""
    if resource in ("llb", "ddr"):
        bw = target.memory[resource].bandwidth  # type: ignore[index]
        assert bw is not None
        return bw
    return target.link_bandwidth


_SHARES: dict[tuple[str, frozenset[Any]], dict[Any, float]] = {}


def shares(kinds: frozenset[tuple[Any, int]], target: Target) -> dict[Any, float]:
    """Rate of each kind of transfer, a kind being (shared resources, engine cap), given
    how many transfers of each kind run (`kinds`: {(kind, count)}); memoised."""
    key = (target.path, kinds)
    if key not in _SHARES:
        plans = [DmaPlan("", 0, 0, cap, shared) for (shared, cap), n in kinds for _ in range(n)]
        _SHARES[key] = {(p.shared, p.cap): r for p, r in zip(plans, fair_rates(plans, target))}
    return _SHARES[key]


def fair_rates(flows: list[DmaPlan], target: Target) -> list[float]:
    """Max-min fair rates (bytes/cycle) of concurrent transfers (progressive filling):
    all unfixed transfers speed up together until a shared resource or a transfer's own
    engine cap saturates; the transfers it limits are fixed at that rate."""
    rates = [0.0] * len(flows)
    free = set(range(len(flows)))
    left = {r: capacity(r, target) for f in flows for r, _ in f.shared}
    while free:
        weight: dict[object, int] = {}
        for i in free:
            for r, w in flows[i].shared:
                weight[r] = weight.get(r, 0) + w
        bottleneck = min(weight, key=lambda r: left[r] / weight[r]) if weight else None
        level = left[bottleneck] / weight[bottleneck] if weight else math.inf
        capped = min(free, key=lambda i: flows[i].cap)
        if flows[capped].cap <= level:
            fixed, level = [capped], flows[capped].cap
        else:
            fixed = [i for i in free if any(r == bottleneck for r, _ in flows[i].shared)]
        for i in fixed:
            rates[i] = level
            free.discard(i)
            for r, w in flows[i].shared:
                left[r] -= level * w
    return rates
