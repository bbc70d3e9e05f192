"""The fuse_activation pass: hardswish, hardsigmoid, sigmoid, silu or gelu
after a prepacked layer (or after its fused add) becomes that layer's
`activation` argument (docs/tracer.md, "Graph passes"). Like every fusion
it refines prepack_weights' plan at lowering time (base.GraphPass)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import LoweringState
from tools.tracer.passes.epilogue import EpilogueFusion
from tools.tracer.plans import PrepackedPlan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "fuse_activation"


class FuseActivation(EpilogueFusion):
    name = NAME
    description = (
        "hardswish, hardsigmoid, sigmoid, silu or gelu, the only user of a prepacked linear "
        "or conv2d (or of its fused add) -> that op's activation (needs prepack_weights)"
    )

    def fuses(self, op: Node, plan: PrepackedPlan, layer: Node, lowering: LoweringState) -> dict[str, Any] | None:
        # One op after the layer (or its fused add) fuses: a clamp
        # (fuse_clamp, which runs first) or an activation, not both.
        activation = _activation_of(op, plan.last) if plan.clamp is None else None
        return None if activation is None else {"activation": activation}


PASS = FuseActivation()


def _activation_of(user: Node, source: Node) -> str | None:
    """The runtime's name for `user` when it is a fusable activation of
    `source` (the names of the prepacked ops' epilogue,
    runtime/kernels/prepacked/)."""
    import torch

    aten = torch.ops.aten
    if not user.args or user.args[0] is not source or len(user.args) > 1 and user.target is not aten.gelu.default:
        return None
    if user.target is aten.gelu.default:
        approximate = user.kwargs.get("approximate", user.args[1] if len(user.args) > 1 else "none")
        return {"none": "gelu", "tanh": "gelu_tanh"}.get(approximate)
    activations = {
        aten.hardswish.default: "hardswish",
        aten.hardsigmoid.default: "hardsigmoid",
        aten.sigmoid.default: "sigmoid",
        aten.silu.default: "silu",
    }
    return activations.get(user.target)
