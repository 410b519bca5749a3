"""What each command computes, with the shared kernels of `stc_mlir.kernels`.

Tiles are numpy views of the memories (fp16 storage); kernels accumulate in fp32 and the
result is rounded once to the output tile's type when stored. A fused conv/matmul
epilogue is applied in fp32: act(acc + bias + residual).

`derived(slot, what, make)` (from the simulator) returns `make()` for the input tile in
`slot`, reusing the value while the tile's bytes are unchanged: fp16 tiles are converted
to fp32 once, and a conv's im2col columns are built once, however many commands read them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
import functools

import numpy as np

from stc_mlir import kernels

from stc_mlir.isa.program import Command

from . import halves, tile_cache


def _epilogue(cmd: Command, acc: np.ndarray, ins: Mapping[str, np.ndarray]) -> np.ndarray:
    """act(acc + residual), overwriting `acc` (the kernel's fresh float32 result)."""
    return kernels.epilogue(acc, ins.get("residual"), cmd.params["act"], in_place=True)


def _copy(src: np.ndarray, dst: np.ndarray) -> None:
    dst[...] = src if src.shape == dst.shape else src.reshape(dst.shape)


Derived = Callable[[str, tuple, Callable[[], np.ndarray]], np.ndarray]
MOVEMENT = ("dma", "gather", "copy", "cast", "fence")
"""Ops that move stored values as they are (every other op computes in fp32)."""


def _nms_bound(ins: Mapping[str, np.ndarray]) -> int:
    """Rows of the selection an `nms` count command works through: every box of every class."""
    batches, classes, boxes = ins["scores"].shape
    return batches * classes * boxes


def _nothing_kept(slot: str, what: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
    return make()


def _upcast(ins: Mapping[str, np.ndarray], derived: Derived, keep: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """The inputs as fp32 (the kernels' working type), each fp16 tile converted once (but
    those in the slots `keep`, left as they are; in C by a run's `derived`, `_values.computer`'s)."""
    upcast = getattr(derived, "upcast", None)
    if upcast is not None:
        return upcast(ins, keep)
    out = {}
    for slot, view in ins.items():
        if view.dtype == np.float16 and slot not in keep:
            out[slot] = derived(slot, ("f32",), lambda v=view: halves.to_f32(v))
        else:
            out[slot] = view
    return out


def _erf(x: np.ndarray, gelu: bool) -> np.ndarray | None:
    """`kernels.erf(x)` (with `gelu`: `kernels.gelu(x)`, exact) of float32 `x`, the same bits,
    in two C passes around numpy's exp on one float64 array (`_values.erf_start`, instead of
    ~20 numpy passes on four); None when it is left to `kernels` (no C module or
    `STC_VALUES_NATIVE=0`, another type or layout, a NaN or an infinity in `x`)."""
    if not tile_cache.NATIVE or x.dtype != np.float32 or not x.flags.c_contiguous:
        return None
    e = np.empty(x.shape, np.float64)
    if not tile_cache._values.erf_start(x, e, gelu):
        return None
    np.exp(e, out=e)
    out = np.empty(x.shape, np.float32)
    tile_cache._values.erf_finish(x, e, out, gelu)
    return out


@functools.lru_cache(maxsize=4096)
def _conv_plan(key: tuple) -> tuple:
    """(the input slots left in fp16, the key of its columns or None, whether it works on
    depthwise windows, the shape of its product) of a conv of geometry `key` (input and
    weight shapes, strides, pads, dilations, groups, whether `halves` has its C path): the
    same for every command of that geometry (cached)."""
    x_shape, w_shape, strides, pads, dilations, groups, _ = key
    geometry = (strides, pads, dilations, groups)
    columns = kernels.uses_columns(w_shape, groups, strides, pads)
    windows = kernels.uses_windows(x_shape, w_shape, *geometry)
    # a conv's fp16 input whose columns are built straight from its halves stays fp16, so
    # does a depthwise conv's that `halves.depthwise` reads as it lies, and so does the
    # residual (read once: the epilogue converts it, C or numpy)
    keep = (("input", "residual") if (columns and halves.columns_of_halves(w_shape[2:], strides, pads))
            or (windows and halves.DEPTHWISE_GEMV) else ("residual",))
    shape = (x_shape[0], w_shape[0],
             *(kernels.window_output_size(x_shape[2 + i], w_shape[2 + i], strides[i], pads[i],
                                          pads[2 + i], dilations[i]) for i in range(2)))
    return keep, ("columns", w_shape[2:], *geometry) if columns else None, windows, shape


def _conv2d(p: Mapping, ins: Mapping[str, np.ndarray], outs: Mapping[str, np.ndarray],
            derived: Derived) -> None:
    strides, pads, dilations, groups = geometry = p["strides"], p["pads"], p["dilations"], p["groups"]
    key = (ins["input"].shape, ins["weight"].shape, *geometry, halves.NATIVE)
    keep, columns_key, uses_windows, shape = _conv_plan(key)
    residual, out, act = ins.get("residual"), outs["output"], p["act"]
    columns = windows = None
    if columns_key is not None:
        # (the whole command in one C call, the GIL released: the usual case) the weights and
        # bias as they lie, converted inside the product; else their fp32 copies
        given = ins
        ins = _upcast(ins, derived, (*keep, "weight", "bias"))
        x, kernel = ins["input"], columns_key[1]
        columns = derived("input", columns_key,
                          lambda: halves.conv2d_columns(x, kernel, *geometry))
        if halves.conv(out, ins["weight"], columns, ins.get("bias"), residual, act, shape):
            return
        ins = _upcast(given, derived, keep)
        if halves.conv(out, ins["weight"], columns, ins.get("bias"), residual, act, shape):
            return
    else:
        ins = _upcast(ins, derived, keep)
    x, w, bias = ins["input"], ins["weight"], ins.get("bias")
    if uses_windows and columns_key is None:
        if halves.depthwise(out, x, w, bias, residual, act, strides, pads, dilations, shape):
            return
        windows = halves.depthwise_windows(x, w.shape[2:], strides, pads, dilations)
    acc = kernels.conv2d(x, w, None, *geometry, columns=columns, windows=windows)
    if halves.store_epilogue(out, acc, bias, residual, act):
        return
    result = kernels.epilogue(kernels.add_channel_bias(acc, bias), residual, act, in_place=True)
    halves.store(out, result)


def execute(cmd: Command, ins: Mapping[str, np.ndarray], outs: Mapping[str, np.ndarray],
            derived: Derived = _nothing_kept) -> None:
    """Compute `cmd` from the input views `ins` into the output views `outs` (by slot).
    Raises IndexError for a gather (gather, gather_elements, gather_nd) index out of range."""
    p = cmd.params
    if cmd.op == "conv2d":
        _conv2d(p, ins, outs, derived)
        return
    if cmd.op == "matmul":  # (the whole command in one C call, the GIL released: the usual case)
        # the lhs's fp32 copy (one tile of activations meets every chunk of weights: BERT's
        # 64 x 768 lhs 24-96 times), the rhs and bias as they lie, converted inside the
        # product (on the pool's thread when handed over); else fp32 copies of all (the
        # residual converted in the epilogue, C or numpy)
        out, bias, residual = outs["output"], ins.get("bias"), ins.get("residual")
        lhs = _upcast(ins, derived, ("rhs", "bias", "residual"))["lhs"]
        if halves.matmul(out, lhs, ins["rhs"], bias, residual, p["act"]):
            return
        ins = _upcast(ins, derived, ("residual",))
        if halves.matmul(out, ins["lhs"], ins["rhs"], ins.get("bias"), residual, p["act"]):
            return
    elif cmd.op == "binary" and halves.binary(p["kind"], ins["lhs"], ins["rhs"], outs["output"]):
        return  # (fp16 operands converted as they are read: one C pass)
    elif cmd.op not in MOVEMENT:
        ins = _upcast(ins, derived)
    match cmd.op:
        case "dma":
            _copy(ins["src"], outs["dst"])
            return
        case "gather":
            data, idx = ins["data"], ins["indices"]
            size = data.shape[p["axis"] % data.ndim]
            if idx.size and (idx.min() < -size or idx.max() >= size):
                bad = idx[(idx < -size) | (idx >= size)].flat[0]
                raise IndexError(f"gather index {bad} is out of range for axis size {size}")
            outs["output"][...] = kernels.gather(data, idx, p["axis"])
            return
        case "copy":
            _copy(ins["input"], outs["output"])
            return
        case "cast":  # converts to the output tile's element type (numpy astype)
            out = outs["output"]
            out[...] = kernels.cast(ins["input"], out.dtype, p["saturate"])
            return
        case "fence":
            return
        case "matmul":
            acc = kernels.matmul(ins["lhs"], ins["rhs"])
            if "bias" in ins:
                acc += np.asarray(ins["bias"], np.float32)
            result = _epilogue(cmd, acc, ins)
        case "unary" if (p["kind"] == "erf" or p["kind"] == "gelu" and p["approximate"] == "none") and (
                result := _erf(ins["input"], p["kind"] == "gelu")) is not None:
            pass
        case "unary" if kernels.is_exact(ins["input"]):
            result = kernels.unary_extra(p["kind"], ins["input"])
        case "unary":
            result = kernels.unary(p["kind"], ins["input"], min=p["min"], max=p["max"],
                                   alpha=p["alpha"], beta=p["beta"], approximate=p["approximate"])
        case "binary" if kernels.is_exact(ins["lhs"], ins["rhs"]):
            result = kernels.binary_exact(p["kind"], ins["lhs"], ins["rhs"])
        case "binary":
            result = kernels.binary(p["kind"], ins["lhs"], ins["rhs"])
        case "softmax":
            result = kernels.softmax(ins["input"], p["axis"])
        case "layer_norm":
            result = kernels.layer_norm(ins["input"], ins.get("scale"), ins.get("bias"),
                                        p["axis"], p["epsilon"])
        case "pool" if p["kind"] == "max":
            result = kernels.max_pool(ins["input"], p["kernel"], p["strides"], p["pads"],
                                      p["dilations"], p["ceil_mode"])
        case "pool":
            result = kernels.avg_pool(ins["input"], p["kernel"], p["strides"], p["pads"],
                                      p["ceil_mode"], p["count_include_pad"])
        case "reduce" if kernels.is_exact(ins["input"]):
            result = kernels.reduce_any(f"reduce_{p['kind']}", ins["input"], p["axes"], p["keepdims"])
        case "reduce":
            result = kernels.reduce(f"reduce_{p['kind']}", ins["input"], p["axes"], p["keepdims"])
        case "compare":
            result = kernels.compare(p["kind"], ins["lhs"], ins["rhs"])
        case "select":
            result = np.where(ins["cond"], ins["lhs"], ins["rhs"])
        case "arg_reduce":
            result = kernels.arg_reduce(p["kind"], ins["input"], p["axis"], p["keepdims"],
                                        p["select_last_index"])
        case "topk":
            values, indices = kernels.topk(ins["input"], p["k"], p["axis"] % ins["input"].ndim,
                                           p["largest"])
            result = values if p["kind"] == "values" else indices
        case "resize":
            result = kernels.resize(ins["input"], outs["output"].shape, p["scales"], p)
        case "gather_elements":
            result = kernels.gather_elements(ins["data"], ins["indices"], p["axis"])
        case "gather_nd":
            result = kernels.gather_nd(ins["data"], ins["indices"], p["batch_dims"])
        case "one_hot":
            result = kernels.one_hot(ins["indices"], ins["values"], p["depth"], p["axis"])
        case "batch_norm":
            result = kernels.batch_norm(ins["input"], ins["scale"], ins["bias"], ins["mean"],
                                        ins["var"], p["epsilon"])
        case "roi_align":
            result = kernels.roi_align(ins["input"], ins["rois"], ins["batch_indices"],
                                       p["output_height"], p["output_width"], p["sampling_ratio"],
                                       p["spatial_scale"], p["kind"], p["half_pixel"])
        case "max_roi_pool":
            result = kernels.max_roi_pool(ins["input"], ins["rois"], p["pooled_shape"],
                                          p["spatial_scale"])
        case "nms":
            bound = outs["output"].shape[0] if p["kind"] == "indices" else _nms_bound(ins)
            selected, count = kernels.non_max_suppression(
                ins["boxes"], ins["scores"], p["max_output_boxes_per_class"], p["iou_threshold"],
                p["score_threshold"], p["center_point_box"], bound)
            result = selected if p["kind"] == "indices" else count
        case "lrn":
            result = kernels.lrn(ins["input"], p["size"], p["alpha"], p["beta"], p["bias"])
        case "einsum":
            result = kernels.einsum(p["equation"], *(ins[s] for s in ("lhs", "rhs") if s in ins))
        case _:
            raise KeyError(cmd.op)
    halves.store(outs["output"], result)
