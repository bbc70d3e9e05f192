"""Weight-only quantized linears, planned by the quantize pass (its
addmm / mm nodes that are not int8 layers): a linear layer on a float input whose weight is
the dequantize of a constant int8 weight, symmetric, per output channel
(`quantized_decomposed::dequantize_per_channel`, axis 0) or per group of
inputs (`dequantize_per_channel_group`, int8 or int4 values), becomes
pare::weight_only_linear on the int8 weight (int4: two values a byte) and
its float32 scales, which dequantizes in registers and never stores the
float weight (docs/llm.md, "Quantized weights"; pare.weight_only writes
this pattern, as ExecuTorch's LLM export does).

The quantize pass plans at lowering time, before prepack_weights (which
would otherwise run the layer on the dequantized weight folded to a float
constant); this pattern is apart from its int8 layers, whose inputs are
int8. Not counted in the pass's report: its counters are the int8 layers'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tools.tracer.passes.base import LoweringState, argument, is_node
from tools.tracer.passes.prepack_weights import linear_operands, transposed_matrix, unflattened
from tools.tracer.plans import Int8OpPlan, Plan

if TYPE_CHECKING:
    import torch
    from torch.fx import Node

OP = "pare::weight_only_linear"
QUANTIZED_NAMESPACE = "quantized_decomposed"

# (quant_min, quant_max) -> bits of the weight's values.
RANGES = {(-128, 127): 8, (-127, 127): 8, (-8, 7): 4}
STEP = {8: 16, 4: 32}  # the kernel's inputs per step: a group is a multiple of it


def linear_plan(node: Node, lowering: LoweringState) -> Plan | None:
    """pare::weight_only_linear's plan for the addmm / mm `node` when its
    weight is a weight-only quantized constant and its input float32; else None."""
    import torch

    from tools.tracer.nodes import is_float_tensor

    operands = linear_operands(node)
    if operands is None:
        return None
    bias, x, mat2 = operands
    if not is_node(x) or not is_float_tensor(x) or x.meta["val"].dtype != torch.float32:
        return None
    weight = _quantized_weight(transposed_matrix(mat2), lowering)
    if weight is None:
        return None
    q, scales, bits, group_size = weight
    if bias is not None and not (
        lowering.is_constant(bias)
        and lowering.constants[bias].dtype == torch.float32
        and tuple(lowering.constants[bias].shape) == (q.shape[0],)
    ):
        return None
    x, last = unflattened(x, node)
    if last is not node:
        lowering.fuse(last, node)
    args = (x, packed_weight(q, bits), scales.float().reshape(q.shape[0], -1).contiguous(), bias, bits, group_size)
    return Int8OpPlan(deps=(x,), op=OP, args=args)


def _calls(node: Any, name: str) -> bool:
    target = getattr(node, "target", None) if is_node(node) else None
    return (
        getattr(target, "namespace", None) == QUANTIZED_NAMESPACE
        and target._schema.name == f"{QUANTIZED_NAMESPACE}::{name}"
        and target._overloadname == "default"
    )


def _quantized_weight(w: Any, lowering: LoweringState) -> tuple[torch.Tensor, torch.Tensor, int, int] | None:
    """(the int8 values [out, in], the float32 scales [out, groups], bits,
    group size) when `w` dequantizes a constant int8 [out, in] tensor
    symmetrically per channel along axis 0 or per group, to float32; else None."""
    import torch

    if not is_node(w) or not w.args or not is_node(w.args[0]) or not lowering.is_constant(w.args[0]):
        return None
    q = lowering.constants[w.args[0]]
    if q.dtype != torch.int8 or q.dim() != 2:
        return None
    if _calls(w, "dequantize_per_channel"):
        names = ("scales", "zero_points", "axis", "quant_min", "quant_max", "dtype")
        scales, zero_points, axis, qmin, qmax, dtype = (argument(w, i, n) for i, n in enumerate(names, 1))
        if is_node(axis) or axis % 2 != 0:
            return None
        group_size = q.shape[1]
    elif _calls(w, "dequantize_per_channel_group"):
        names = ("scales", "zero_points", "quant_min", "quant_max", "dtype", "group_size", "output_dtype")
        scales, zero_points, qmin, qmax, dtype, group_size, out_dtype = (
            argument(w, i, n) for i, n in enumerate(names, 1)
        )
        if out_dtype not in (None, torch.float32) or is_node(group_size) or group_size <= 0:
            return None
    else:
        return None
    if w.kwargs.get("out_dtype") not in (None, torch.float32) or dtype != torch.int8:
        return None
    if is_node(qmin) or is_node(qmax) or (qmin, qmax) not in RANGES or not lowering.is_constant(scales):
        return None
    if zero_points is not None and not (
        lowering.is_constant(zero_points) and not bool(lowering.constants[zero_points].ne(0).any())
    ):
        return None
    scales = lowering.constants[scales]
    bits = RANGES[(qmin, qmax)]
    out_features, in_features = q.shape
    if (
        in_features % group_size
        or group_size % STEP[bits]
        or scales.numel() != out_features * (in_features // group_size)
    ):
        return None
    if scales.dtype != torch.float32:
        return None
    return q, scales, bits, group_size


def packed_weight(q: torch.Tensor, bits: int) -> torch.Tensor:
    """The kernel's weight: int8 [out, in] as it is; int4 as uint8 [out,
    in / 2], each 32 inputs in 16 bytes, byte j holding input j in its low
    nibble and input j + 16 in its high one (two's complement nibbles)."""
    import torch

    if bits == 8:
        return q.contiguous()
    out_features, in_features = q.shape
    blocks = q.reshape(out_features, in_features // 32, 2, 16).to(torch.int32) & 0xF
    return (blocks[:, :, 0, :] | (blocks[:, :, 1, :] << 4)).to(torch.uint8).reshape(out_features, in_features // 2)
