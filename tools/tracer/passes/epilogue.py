"""What the fusion passes (fuse_add, fuse_clamp, fuse_activation) share:
each fuses the op after a prepacked layer (the only user of the layer's
last node) into the layer's epilogue (plans.PrepackedPlan), at lowering
time, where the prepacked op exists (base.GraphPass)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import GraphPass, LoweringState
from tools.tracer.passes.prepack_weights import NAME as PREPACK
from tools.tracer.plans import Plan, PrepackedPlan

if TYPE_CHECKING:
    from torch.fx import Node


class EpilogueFusion(GraphPass):
    """A fusion: `fuses` says whether the op after the layer fuses, and
    how (the plan's fields to set); `refine` does the rest once for all."""

    requires = (PREPACK,)
    counters = ("fused",)

    def fuses(self, op: Node, plan: PrepackedPlan, layer: Node, lowering: LoweringState) -> dict[str, Any] | None:
        """The plan fields that make `op` (the only user of `plan.last`)
        part of the epilogue of `layer`'s plan, or None: it does not fuse."""
        raise NotImplementedError

    def refine(self, plan: Plan, node: Node, lowering: LoweringState) -> Plan:
        from tools.tracer.nodes import only_user

        if not isinstance(plan, PrepackedPlan) or (op := only_user(plan.last)) is None:
            return plan
        fields = self.fuses(op, plan, node, lowering)
        if fields is None:
            return plan
        lowering.fuse(op, plan.last)
        return dataclasses.replace(plan, **fields, last=op, counts=(*plan.counts, (self.name, "fused")))
