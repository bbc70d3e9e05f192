"""The prepack_weights pass: linear layers (addmm / mm, bmm on a weight
expanded over the batch) and 2-d convolutions with constant float32 weights
become pare::linear_prepacked / pare::conv2d_prepacked, their weights packed
at export into the program (pare/packing.py) and used in place
(docs/tracer.md, "Graph passes" and "Prepacked weights").

It plans at lowering time (base.GraphPass): a prepacked op is no torch
operator the graph could hold, and its weight is packed once per program
method, as lowering writes it, for every layer that shares it. The plan
(plans.LinearPrepack, plans.Conv2dPrepack) is what winograd, channels_last
and the fusions refine.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pare import packing as pare_packing
from tools.tracer.passes.base import GraphPass, LoweringState, is_node
from tools.tracer.plans import Conv2dPrepack, ConvLayer, LinearPrepack, Plan

if TYPE_CHECKING:
    import torch
    from torch.fx import Node

NAME = "prepack_weights"


class PrepackWeights(GraphPass):
    name = NAME
    description = (
        "linear (addmm/mm, bmm on a weight expanded over the batch, a constant bias add after "
        "it) and conv2d with constant float32 weights -> pare::linear_prepacked / pare::conv2d_prepacked "
        "(weights packed at export, used in place)"
    )
    counters = ("conv2d", "linear")  # layers packed

    def plan(self, node: Node, lowering: LoweringState) -> Plan | None:
        import torch

        aten = torch.ops.aten
        if node.target in (aten.addmm.default, aten.mm.default, aten.bmm.default):
            return _linear_plan(node, lowering)
        if node.target is aten.convolution.default:
            return _conv2d_plan(node, lowering)
        return None


PASS = PrepackWeights()


def _linear_plan(node: Node, lowering: LoweringState) -> Plan | None:
    import torch

    from tools.tracer.nodes import is_float_tensor

    aten = torch.ops.aten
    target = node.target
    operands = linear_operands(node)
    if operands is None:
        return None
    bias, x, mat2 = operands
    if target is aten.bmm.default:
        # A linear layer on a 3-d input that is not contiguous (attention's
        # in-projection on a transposed sequence) decomposes to bmm with
        # the weight expanded over the batch: one weight, packed once.
        mat2 = _expanded_matrix(mat2)
    weight = _linear_weight(mat2, lowering)
    if weight is None or not is_float_tensor(x):
        return None
    if bias is not None and not _is_bias(bias, weight[1].shape[0], lowering):
        return None
    x, last = unflattened(x, node)
    if last is not node:
        lowering.fuse(last, node)
    if bias is None:
        bias, last = _bias_add_after(last, weight[1].shape[0], lowering)
    return LinearPrepack(deps=(x,), weight=weight, bias=bias, last=last, counts=((NAME, "linear"),))


def _conv2d_plan(node: Node, lowering: LoweringState) -> Plan | None:
    import torch

    from tools.tracer.nodes import is_float_tensor

    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = node.args[:9]
    w_tensor = lowering.constants.get(w) if is_node(w) else None
    if (
        w_tensor is None
        or w_tensor.dtype != torch.float32
        or w_tensor.dim() != 4
        or transposed
        or not is_float_tensor(x)
        or any(is_node(v) for v in (*stride, *padding, *dilation))
    ):
        return None
    if bias is not None and not _is_bias(bias, w_tensor.shape[0], lowering):
        return None
    layer = ConvLayer(w, bias, tuple(stride), tuple(padding), tuple(dilation), int(groups))
    # A convolution over few pixels is laid out for pixel rows (the
    # runtime's fastest product for it), unless a later pass (winograd)
    # chooses another layout.
    layer = dataclasses.replace(layer, pixel_rows=pare_packing.pixel_rows_pays(*conv_geometry(layer, node, lowering)))
    return Conv2dPrepack(deps=(x,), layer=layer, last=node, counts=((NAME, "conv2d"),))


def conv_geometry(layer: ConvLayer, node: Node, lowering: LoweringState) -> tuple:
    """(weight sizes, stride, padding, dilation, groups, traced output
    (height, width)) of a prepacked convolution, as pare.packing's `*_pays`
    take them; a dynamic output size counts as large."""
    from torch.fx.experimental.symbolic_shapes import is_concrete_int

    sizes = node.meta["val"].shape[-2:]
    out_hw = tuple(int(d) if is_concrete_int(d) else 1 << 30 for d in sizes)
    weight_sizes = tuple(lowering.constants[layer.weight].shape)
    return weight_sizes, layer.stride, layer.padding, layer.dilation, layer.groups, out_hw


def linear_operands(node: Node) -> tuple[Any, Any, Any] | None:
    """(bias or None, input, matrix) of an addmm (beta and alpha 1, else
    None), mm or bmm node."""
    import torch

    if node.target is torch.ops.aten.addmm.default:
        if len(node.args) < 3 or not is_one(node, 3, "beta") or not is_one(node, 4, "alpha"):
            return None
        bias, x, mat2 = node.args[:3]
        return bias, x, mat2
    x, mat2 = node.args[:2]
    return None, x, mat2


def is_one(node: Node, index: int, name: str) -> bool:
    value = node.args[index] if len(node.args) > index else node.kwargs.get(name, 1)
    return not is_node(value) and value == 1


def _is_bias(bias: Any, out_features: int, lowering: LoweringState) -> bool:
    import torch

    b = lowering.constants.get(bias) if is_node(bias) else None
    return b is not None and b.dtype == torch.float32 and b.dim() == 1 and b.shape[0] == out_features


def unflattened(x: Node, node: Node) -> tuple[Node, Node]:
    """(x0, the view after `node`) when the linear layer `node` reads x =
    x0 viewed as [-1, in_features] and its only user views its output
    back to x0's leading sizes, as F.linear on an input of 3 or more
    dims decomposes: the layer can then run on x0 itself (the prepacked
    ops take any leading dims) with that view fused into it (aliasing its
    output), so what follows the view can fuse into the layer. Else (x,
    node)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    from tools.tracer.nodes import VIEW_OPS, is_float_tensor, only_user

    user = only_user(node)
    if not (
        x.target in VIEW_OPS
        and is_node(x.args[0])
        and is_float_tensor(x.args[0])
        and user is not None
        and user.target in VIEW_OPS
    ):
        return x, node
    source, flat, out = x.args[0].meta["val"], x.meta["val"], user.meta["val"]
    if flat.dim() != 2 or source.dim() < 1 or out.dim() != source.dim():
        return x, node
    if not statically_known_true(flat.shape[1] == source.shape[-1]):
        return x, node
    if not all(statically_known_true(a == b) for a, b in zip(out.shape[:-1], source.shape[:-1])):
        return x, node
    return x.args[0], user


def _bias_add_after(node: Node, out_features: int, lowering: LoweringState) -> tuple[Node | None, Node]:
    """(bias, the add) when the only user of a linear layer without a
    bias (its output `node`), through views that keep its sizes, adds a
    constant float32 [out_features] (alpha 1): that constant is the
    layer's bias, and the views and the add alias the layer's output.
    Else (None, node)."""
    import torch

    from tools.tracer.nodes import VIEW_OPS, only_user, same_sizes

    chain: dict[Node, Node] = {}
    last = node
    user = only_user(last)
    while user is not None and user.target in VIEW_OPS and same_sizes(user, last):
        chain[user], last = last, user
        user = only_user(last)
    if (
        user is None
        or user.target is not torch.ops.aten.add.Tensor
        or len(user.args) != 2
        or user.kwargs.get("alpha", 1) != 1
    ):
        return None, node
    a, b = user.args
    bias = b if a is last else a if b is last else None
    if bias is last or not _is_bias(bias, out_features, lowering) or not same_sizes(user, last):
        return None, node
    chain[user] = last
    for fused, into in chain.items():
        lowering.fuse(fused, into)
    return bias, user


def _linear_weight(mat2: Any, lowering: LoweringState) -> tuple[tuple, torch.Tensor] | None:
    """(cache key, [out, in] weight) when mat2 is a constant weight,
    transposed as F.linear decomposes, or a constant [in, out]."""
    import torch

    source = transposed_matrix(mat2)
    if source is not None and lowering.is_constant(source):
        w = lowering.constants[source]
        key = (source, "as_is")
    elif lowering.is_constant(mat2):
        w = lowering.constants[mat2].t()
        key = (mat2, "transposed")
    else:
        return None
    if w.dim() != 2 or w.dtype != torch.float32:
        return None
    return key, w


def transposed_matrix(mat2: Any) -> Node | None:
    """The node `mat2` transposes when it is the 2-d transpose of one
    (permute, t or transpose, as F.linear decomposes its weight), else None."""
    import torch

    aten = torch.ops.aten
    if not is_node(mat2) or not mat2.args or not is_node(mat2.args[0]):
        return None
    if mat2.target is aten.t.default:
        return mat2.args[0]
    if mat2.target is aten.permute.default:
        return mat2.args[0] if list(mat2.args[1]) in ([1, 0], [-1, -2], [1, -2], [-1, 0]) else None
    if mat2.target is aten.transpose.int:
        source = mat2.args[0].meta.get("val")
        dims = {d % 2 for d in mat2.args[1:3]} if not any(is_node(d) for d in mat2.args[1:3]) else set()
        return mat2.args[0] if isinstance(source, torch.Tensor) and source.dim() == 2 and dims == {0, 1} else None
    return None


def _expanded_matrix(mat2: Any) -> Any:
    """The 2-d node a bmm's `mat2` repeats over the batch (expand, then a
    view that keeps the sizes, as matmul decomposes), else None."""
    import torch
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    from tools.tracer.nodes import VIEW_OPS, same_sizes

    if is_node(mat2) and mat2.target in VIEW_OPS and is_node(mat2.args[0]):
        if same_sizes(mat2, mat2.args[0]):
            mat2 = mat2.args[0]
    if not is_node(mat2) or mat2.target is not torch.ops.aten.expand.default or not is_node(mat2.args[0]):
        return None
    source, expanded = mat2.args[0].meta.get("val"), mat2.meta.get("val")
    if not isinstance(source, torch.Tensor) or not isinstance(expanded, torch.Tensor):
        return None
    # Only a new leading dim: an expand that also stretches a size-1 dim of
    # the matrix is not one weight matrix repeated.
    if source.dim() != 2 or expanded.dim() != 3:
        return None
    if not all(statically_known_true(a == b) for a, b in zip(source.shape, expanded.shape[1:])):
        return None
    return mat2.args[0]
