"""ONNX-level pattern rewrites done before conversion.

Exporters before opset 17 spell LayerNorm as nine primitive nodes (PyTorch's
`F.layer_norm`):

    mean = ReduceMean(x, axes=[-1]); d = Sub(x, mean)
    var  = ReduceMean(Pow(d, 2), axes=[-1]); y = Div(d, Sqrt(Add(var, eps)))
    out  = Add(Mul(y, gamma), beta)            # the affine part is optional

`fuse_decomposed_layer_norm` replaces each such chain by one internal `LayerNorm` node
(domain `DOMAIN`), imported as a single `graph.layer_norm`.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
from onnx import helper, numpy_helper

DOMAIN = "stc_mlir.internal"


def _constant_values(nodes: list[onnx.NodeProto], known: dict[str, np.ndarray]):
    values = dict(known)
    for node in nodes:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def _axes(node: onnx.NodeProto, values: dict[str, np.ndarray]) -> list[int] | None:
    for a in node.attribute:
        if a.name == "keepdims" and a.i == 0:
            return None
    for a in node.attribute:
        if a.name == "axes":
            return list(a.ints)
    if len(node.input) > 1 and node.input[1] in values:
        return [int(v) for v in values[node.input[1]].reshape(-1)]
    return None


def _scalar(name: str, values: dict[str, np.ndarray]) -> float | None:
    v = values.get(name)
    return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def fuse_decomposed_layer_norm(
    nodes: list[onnx.NodeProto], known: dict[str, np.ndarray], graph_outputs: set[str] = frozenset()  # type: ignore[assignment]
) -> list[onnx.NodeProto]:
    """The node list with every decomposed LayerNorm chain replaced by one node."""
    values = _constant_values(nodes, known)
    users: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in nodes:
        for name in node.input:
            users[name].append(node)

    def sole_user(name: str, op_type: str) -> onnx.NodeProto | None:
        u = users.get(name, [])
        if len(u) == 1 and u[0].op_type == op_type and name not in graph_outputs:
            return u[0]
        return None

    def other(node: onnx.NodeProto, name: str) -> str:
        return node.input[1] if node.input[0] == name else node.input[0]

    replaced: dict[int, onnx.NodeProto] = {}  # id(last node of a chain) -> fused node
    removed: set[int] = set()
    for mean in nodes:
        if mean.op_type != "ReduceMean" or _axes(mean, values) != [-1]:
            continue
        x = mean.input[0]
        sub = sole_user(mean.output[0], "Sub")
        if sub is None or list(sub.input) != [x, mean.output[0]]:
            continue
        d_users = users.get(sub.output[0], [])
        pow_ = next((u for u in d_users if u.op_type == "Pow"), None)
        div = next((u for u in d_users if u.op_type == "Div"), None)
        if len(d_users) != 2 or pow_ is None or div is None or _scalar(pow_.input[1], values) != 2.0:
            continue
        var = sole_user(pow_.output[0], "ReduceMean")
        if var is None or _axes(var, values) != [-1]:
            continue
        add_eps = sole_user(var.output[0], "Add")
        eps = _scalar(other(add_eps, var.output[0]), values) if add_eps else None
        sqrt = sole_user(add_eps.output[0], "Sqrt") if add_eps else None
        if eps is None or sqrt is None or sole_user(sqrt.output[0], "Div") is not div:
            continue
        if list(div.input) != [sub.output[0], sqrt.output[0]]:
            continue
        chain = [mean, sub, pow_, var, add_eps, sqrt, div]
        last, gamma, beta = div, "", ""
        mul = sole_user(div.output[0], "Mul")
        if mul is not None and other(mul, div.output[0]) in values:
            gamma, last = other(mul, div.output[0]), mul
            chain.append(mul)
            add = sole_user(mul.output[0], "Add")
            if add is not None and other(add, mul.output[0]) in values:
                beta, last = other(add, mul.output[0]), add
                chain.append(add)
        fused = helper.make_node(
            "LayerNorm", [x, gamma, beta], [last.output[0]], domain=DOMAIN,
            name=(mean.name or mean.output[0]) + "/layer_norm", axis=-1, epsilon=eps,
        )
        replaced[id(last)] = fused
        removed.update(id(n) for n in chain)
    out = []
    for node in nodes:
        if id(node) in replaced:
            out.append(replaced[id(node)])
        elif id(node) not in removed:
            out.append(node)
    return out
