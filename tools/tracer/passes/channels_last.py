"""The channels_last pass: a prepacked depthwise or 1x1 convolution over so
few output pixels that it runs faster on NHWC activations, conversions
included (pare.packing.channels_last_pays), runs channels-last
(docs/tracer.md, "Graph passes").

It refines prepack_weights' plan at lowering time (base.GraphPass): a
layout belongs to the program's values, so lowering keeps each activation
in the layout its producer wrote and places one conversion (an aten::clone
with a memory format) before the first reader that needs the other layout
(lowering.py, `_in_layout`), counted as this pass's "conversions".
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pare import packing as pare_packing
from pare.packing import CHANNELS_LAST_1X1_MAX_PIXELS, CHANNELS_LAST_DEPTHWISE_MAX_PIXELS
from tools.tracer.passes.base import GraphPass, LoweringState
from tools.tracer.passes.prepack_weights import NAME as PREPACK
from tools.tracer.passes.prepack_weights import conv_geometry
from tools.tracer.plans import Conv2dPrepack, Plan

if TYPE_CHECKING:
    from torch.fx import Node

NAME = "channels_last"


class ChannelsLast(GraphPass):
    name = NAME
    description = (
        "prepacked depthwise conv2d over 2 to "
        f"{CHANNELS_LAST_DEPTHWISE_MAX_PIXELS} output pixels and 1x1 conv2d over 2 to "
        f"{CHANNELS_LAST_1X1_MAX_PIXELS} -> run "
        "on channels-last (NHWC) activations, with an aten::clone layout conversion wherever NHWC and "
        "NCHW activations meet (needs prepack_weights)"
    )
    requires = (PREPACK,)
    counters = ("layers", "conversions")

    def refine(self, plan: Plan, node: Node, lowering: LoweringState) -> Plan:
        if not isinstance(plan, Conv2dPrepack) or not pare_packing.channels_last_pays(
            *conv_geometry(plan.layer, node, lowering)
        ):
            return plan
        layer = dataclasses.replace(plan.layer, channels_last=True)
        return dataclasses.replace(plan, layer=layer, counts=(*plan.counts, (NAME, "layers")))


PASS = ChannelsLast()
