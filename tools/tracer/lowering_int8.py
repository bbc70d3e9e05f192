"""How lowering emits the quantize pass's plans (tools/tracer/passes/quantize.py,
quantize_ops.py): an int8 layer's init op, once per weight and quantization,
and its body op; an int8 operator on int8 values. Handlers of
lowering.HANDLERS, taking the MethodLowering as their first argument."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from tools.tracer.plans import Int8LayerPlan, Int8OpPlan, Int8Requantized, QConv2dPrepack

if TYPE_CHECKING:
    from torch.fx import Node

    from tools.tracer.errors import OpUse
    from tools.tracer.lowering import MethodLowering

QLINEAR_PREPACK = "pare::qlinear_prepack"
QLINEAR_PREPACKED = "pare::qlinear_prepacked"
QCONV2D_PREPACK = "pare::qconv2d_prepack"
QCONV2D_PREPACKED = "pare::qconv2d_prepacked"
QLUT = "pare::qlut"


def lower_int8_layer(lowering: MethodLowering, node: Node, plan: Int8LayerPlan, use: OpUse) -> None:
    """pare::qconv2d_prepacked / pare::qlinear_prepacked on the int8 input,
    after its init op (shared by the layers with the same weight and
    quantization)."""
    layer = plan.layer
    conv = isinstance(plan, QConv2dPrepack)
    cache_key = ("qconv2d" if conv else "qlinear", layer)
    if cache_key not in lowering._packed:
        mb = lowering.mb
        if conv:
            conv_args = (layer.stride, layer.padding, layer.dilation, layer.groups, layer.input_quantization[1])
            packed = mb.qconv2d_prepack(layer.int8_weight, *layer.requantization, *conv_args)
        else:
            packed = mb.qlinear_prepack(layer.int8_weight, *layer.requantization)
        lowering._packed[cache_key] = packed
        lowering.report.uses[QCONV2D_PREPACK if conv else QLINEAR_PREPACK].append(use)
    body = QCONV2D_PREPACKED if conv else QLINEAR_PREPACKED
    x = lowering._value_of(plan.deps[0])
    lowering.env[node] = lowering.mb.op(body, x, lowering._packed[cache_key], *plan.output_range)
    lowering.report.uses[body].append(use)


def lower_int8_op(lowering: MethodLowering, node: Node, plan: Int8OpPlan, use: OpUse) -> None:
    """plan.op on its arguments: graph values, and tensors the pass computed
    (a lookup table) as constants."""

    def value(a: Any) -> Any:
        return lowering.mb.constant(a) if isinstance(a, torch.Tensor) else lowering._value_of(a)

    lowering.env[node] = lowering.mb.op(plan.op, *map(value, plan.args))
    lowering.report.uses[plan.op].append(use)


def lower_int8_requantized(lowering: MethodLowering, node: Node, plan: Int8Requantized, use: OpUse) -> None:
    """pare::qlut on each input with a table, then plan.inner on the
    results: the inputs' values are the mapped ones while inner is
    lowered, and their own again after (other users read those)."""
    from tools.tracer.lowering import HANDLERS

    own = {}
    try:
        for source, table in plan.tables:  # graph values (the pass maps no constant)
            own[source] = lowering.env[source]
            lowering.env[source] = lowering.mb.op(QLUT, own[source], lowering.mb.constant(table))
            lowering.report.uses[QLUT].append(use)
        HANDLERS[type(plan.inner)](lowering, node, plan.inner, use)
    finally:
        lowering.env.update(own)
