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

import numpy as np

from stc_mlir import kernels

from stc_mlir.isa.program import Command


def _epilogue(cmd: Command, acc: np.ndarray, ins: Mapping[str, np.ndarray]) -> np.ndarray:
    if "residual" in ins:
        acc = acc + np.asarray(ins["residual"], np.float32)
    match cmd.params["act"]:
        case "relu":
            return kernels.unary("relu", acc)
        case "relu6":
            return kernels.unary("clip", acc, min=0.0, max=6.0)
    return acc


def _copy(src: np.ndarray, dst: np.ndarray) -> None:
    dst[...] = src if src.shape == dst.shape else src.reshape(dst.shape)


Derived = Callable[[str, tuple, Callable[[], np.ndarray]], np.ndarray]
MOVEMENT = ("dma", "gather", "copy", "cast", "fence")
"""Ops that move stored values as they are (every other op computes in fp32)."""


def _nothing_kept(slot: str, what: tuple, make: Callable[[], np.ndarray]) -> np.ndarray:
    return make()


def _upcast(ins: Mapping[str, np.ndarray], derived: Derived) -> dict[str, np.ndarray]:
    """The inputs as fp32 (the kernels' working type), each fp16 tile converted once."""
    out = {}
    for slot, view in ins.items():
        if view.dtype == np.float16:
            out[slot] = derived(slot, ("f32",), lambda v=view: np.asarray(v, np.float32))
        else:
            out[slot] = view
    return out


def execute(cmd: Command, ins: Mapping[str, np.ndarray], outs: Mapping[str, np.ndarray],
            derived: Derived = _nothing_kept) -> None:
    """Compute `cmd` from the input views `ins` into the output views `outs` (by slot).
    Raises IndexError for a gather index out of range."""
    p = cmd.params
    if cmd.op not in MOVEMENT:
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
            outs["output"][...] = ins["input"]
            return
        case "fence":
            return
        case "conv2d":
            columns = None
            w_shape, geometry = ins["weight"].shape, (p["strides"], p["pads"], p["dilations"], p["groups"])
            if kernels.uses_columns(w_shape, p["groups"], p["strides"], p["pads"]):
                x = ins["input"]
                columns = derived("input", ("columns", w_shape[2:], *geometry),
                                  lambda: kernels.conv2d_columns(x, w_shape[2:], *geometry))
            acc = kernels.conv2d(ins["input"], ins["weight"], ins.get("bias"), *geometry,
                                 columns=columns)
            result = _epilogue(cmd, acc, ins)
        case "matmul":
            acc = kernels.matmul(ins["lhs"], ins["rhs"])
            if "bias" in ins:
                acc += np.asarray(ins["bias"], np.float32)
            result = _epilogue(cmd, acc, ins)
        case "unary":
            result = kernels.unary(p["kind"], ins["input"], min=p["min"], max=p["max"],
                                   alpha=p["alpha"], approximate=p["approximate"])
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
        case "reduce":
            result = kernels.reduce(f"reduce_{p['kind']}", ins["input"], p["axes"], p["keepdims"])
        case _:
            raise KeyError(cmd.op)
    out = outs["output"]
    out[...] = np.reshape(result, out.shape)
