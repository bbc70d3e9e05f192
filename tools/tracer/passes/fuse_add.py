"""The fuse_add pass: an add of a prepacked layer's output and an earlier
tensor of the same sizes (a ResNet or MobileNetV2 shortcut) becomes that
layer's `residual` argument (docs/tracer.md, "Graph passes"). Like every
fusion it refines prepack_weights' plan at lowering time (base.GraphPass):
the prepacked op it fuses into exists only there."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import LoweringState, is_node
from tools.tracer.passes.epilogue import EpilogueFusion
from tools.tracer.plans import PrepackedPlan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "fuse_add"


class FuseAdd(EpilogueFusion):
    name = NAME
    description = (
        "add of a prepacked linear or conv2d's output (its only user) and an earlier tensor of "
        "the same sizes -> that op's residual (needs prepack_weights)"
    )

    def fuses(self, op: Node, plan: PrepackedPlan, layer: Node, lowering: LoweringState) -> dict[str, Any] | None:
        residual = _residual_of(op, plan.last, layer, lowering)
        return None if residual is None else {"residual": residual, "deps": (*plan.deps, residual)}


PASS = FuseAdd()


def _residual_of(add: Node, source: Node, layer: Node, lowering: LoweringState) -> Node | None:
    """The other operand of `add` when it is `source + other` (either
    order, alpha 1) with other a float32 tensor of the same sizes,
    computed before `layer` (so the layer can read it)."""
    import torch

    from tools.tracer.nodes import is_float_tensor, same_sizes

    if add.target is not torch.ops.aten.add.Tensor or len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
        return None
    a, b = add.args
    other = b if a is source else a if b is source else None
    if not is_node(other) or other is source or lowering.is_constant(other) or not is_float_tensor(other):
        return None
    if not lowering.comes_before(other, layer):
        return None
    return other if same_sizes(source, other) else None
