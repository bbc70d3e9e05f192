"""The fuse_clamp pass: relu, hardtanh (relu6) or clamp with constant
bounds after a prepacked layer (or after its fused add) becomes that
layer's output_min / output_max arguments (docs/tracer.md, "Graph
passes"). Like every fusion it refines prepack_weights' plan at lowering
time (base.GraphPass)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import LoweringState, is_node
from tools.tracer.passes.epilogue import EpilogueFusion
from tools.tracer.plans import PrepackedPlan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "fuse_clamp"


class FuseClamp(EpilogueFusion):
    name = NAME
    description = (
        "relu, relu6 / hardtanh or clamp with constant bounds, the only user of a prepacked "
        "linear or conv2d (or of its fused add) -> that op's output_min / output_max (needs "
        "prepack_weights)"
    )

    def fuses(self, op: Node, plan: PrepackedPlan, layer: Node, lowering: LoweringState) -> dict[str, Any] | None:
        bounds = clamp_bounds(op, plan.last)
        return None if bounds is None else {"clamp": bounds}


PASS = FuseClamp()


def clamp_bounds(user: Node, source: Node) -> tuple[float, float] | None:
    """(min, max) when `user` is relu, hardtanh or clamp of `source` with
    constant bounds (None: not such a clamp)."""
    import torch

    aten = torch.ops.aten
    if not user.args or user.args[0] is not source:
        return None

    def bound(index: int, name: str, default: Any, absent: float) -> float | None:
        """The bound as a float (`absent` when the argument is None), None
        when it varies at run time or is NaN (left to the clamp operator)."""
        value = user.args[index] if len(user.args) > index else user.kwargs.get(name, default)
        if is_node(value):
            return None
        value = absent if value is None else float(value)
        return None if math.isnan(value) else value

    if user.target is aten.relu.default:
        return (0.0, math.inf)
    if user.target is aten.hardtanh.default:
        lo, hi = bound(1, "min_val", -1.0, -math.inf), bound(2, "max_val", 1.0, math.inf)
    elif user.target is aten.clamp.default:
        lo, hi = bound(1, "min", None, -math.inf), bound(2, "max", None, math.inf)
    else:
        return None
    if lo is None or hi is None or (lo == -math.inf and hi == math.inf):
        return None
    return (lo, hi)
