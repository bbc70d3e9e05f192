"""The winograd pass: a prepacked 3x3 convolution where it pays gets its
filters transformed at export for Winograd F(2x2, 3x3) or F(4x4, 3x3),
the output tile that pays best (pare.packing.winograd_tile; docs/tracer.md,
"Graph passes"). It refines prepack_weights' plan at lowering time, where
the weights are packed (base.GraphPass)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pare import packing as pare_packing
from tools.tracer.passes.base import GraphPass, LoweringState
from tools.tracer.passes.prepack_weights import NAME as PREPACK
from tools.tracer.passes.prepack_weights import conv_geometry
from tools.tracer.plans import Conv2dPrepack, Plan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "winograd"


class Winograd(GraphPass):
    name = NAME
    description = (
        "prepacked 3x3 conv2d with stride 1, no dilation, at least 8 input channels per group "
        "and 9 2x2 output tiles -> its filters transformed for Winograd F(2x2, 3x3), or "
        "F(4x4, 3x3) from 9 4x4 output tiles (fewer multiplies; needs prepack_weights)"
    )
    requires = (PREPACK,)
    counters = ("F(2x2,3x3)", "F(4x4,3x3)")  # packed weights, per output tile

    def refine(self, plan: Plan, node: Node, lowering: LoweringState) -> Plan:
        if not isinstance(plan, Conv2dPrepack):
            return plan
        sizes, stride, _, dilation, groups, out_hw = conv_geometry(plan.layer, node, lowering)
        tile = pare_packing.winograd_tile(sizes, stride, dilation, groups, out_hw)
        if not tile:
            return plan
        # Winograd's transformed filters replace any pixel-rows layout.
        layer = dataclasses.replace(plan.layer, winograd=tile, pixel_rows=False)
        return dataclasses.replace(plan, layer=layer, pack_counts=(*plan.pack_counts, (NAME, f"F({tile}x{tile},3x3)")))


PASS = Winograd()
