"""What the two batch-norm folds (fold_conv_bn, fold_linear_bn) share: a
foldable eval batch norm as a per-channel scale and shift, and its removal
once folded.

Eval batch norm is y = (x - mean) / sqrt(var + eps) * gamma + beta per
channel: an affine map per output channel of the conv or linear before it,
which moves into that layer's weight (scale) and bias (scale and shift).
The folded weights are computed in float64 and cast back once to the
weight's dtype: eager rounds the layer's output and then each step of the
normalisation, the folded layer rounds only its scaled weights, and doing
that scaling in float32 would add roundings of its own; in float64 the
folded model stays within the float32 tolerance of torch eager.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.tracer.passes.base import PassContext, argument, is_node

if TYPE_CHECKING:
    import torch
    from torch.fx import Node


@dataclass(frozen=True)
class Affine:
    """A batch norm as a per-channel scale and shift (float64)."""

    scale: torch.Tensor
    shift: torch.Tensor
    users: tuple[Node, ...]  # the getitems of its output 0: what reads the normalised tensor


def batch_norms(context: PassContext):
    """(batch norm, the node it normalises) for every eval batch norm."""
    import torch

    target = torch.ops.aten._native_batch_norm_legit_no_training.default
    for bn in list(context.graph.nodes):
        if bn.op == "call_function" and bn.target is target and is_node(bn.args[0]):
            yield bn, bn.args[0]


def foldable_affine(context: PassContext, bn: Node, layer: Node) -> Affine | None:
    """The scale and shift of a batch norm that can fold into `layer`, the
    node before it: nothing else reads the layer's output (it needs it
    unnormalised), only the batch norm's output 0 is read, its statistics
    and affine parameters are constants, and it keeps the layer's dtype."""
    import torch

    if len(layer.users) != 1:
        return None
    weight, bias = argument(bn, 1, "weight"), argument(bn, 2, "bias")
    mean, var = context.constant(argument(bn, 3, "running_mean")), context.constant(argument(bn, 4, "running_var"))
    eps = argument(bn, 6, "eps")
    gamma = context.constant(weight) if weight is not None else None
    beta = context.constant(bias) if bias is not None else None
    if (
        mean is None
        or var is None
        or (weight is not None and gamma is None)
        or (bias is not None and beta is None)
        or not isinstance(eps, (int, float))
    ):
        return None
    tensors = [t for t in (mean, var, gamma, beta) if t is not None]
    if not all(t.is_floating_point() and t.dim() == 1 and t.numel() == mean.numel() for t in tensors):
        return None
    users = tuple(bn.users)
    if not users or not all(u.target is operator.getitem and u.args[1] == 0 for u in users):
        return None
    dtypes = {getattr(n.meta.get("val"), "dtype", None) for n in (layer, *users)}
    if len(dtypes) != 1 or None in dtypes:
        return None
    scale = torch.rsqrt(var.double() + float(eps))
    if gamma is not None:
        scale = scale * gamma.double()
    shift = -mean.double() * scale
    if beta is not None:
        shift = shift + beta.double()
    return Affine(scale, shift, users)


def replace_batch_norm(context: PassContext, bn: Node, affine: Affine, result: Node) -> None:
    for getitem in affine.users:
        getitem.replace_all_uses_with(result)
        context.rename_output(getitem.name, result.name)
        context.graph.erase_node(getitem)
    context.graph.erase_node(bn)
    context.changed = True
