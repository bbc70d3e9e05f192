"""Weight-only quantization of a model's linear layers (docs/llm.md, "Quantized weights").

    from pare.weight_only import quantize_weights
    quantize_weights(model, bits=4, group_size=32)  # in place; then export as usual

Each `nn.Linear` becomes a `WeightOnlyLinear`: its weight stored as int8
values (int4 ones in -8..7 for bits=4) with float32 scales, symmetric (no
zero points), per output channel (bits=8, group_size=None) or per group of
`group_size` consecutive inputs of a channel. Its forward dequantizes the
weight with PT2E's reference ops and runs `F.linear` on the float input,
so torch eager runs exactly the exported graph:
`quantized_decomposed::dequantize_per_channel` (per channel) or
`dequantize_per_channel_group` on a constant int8 weight feeding the linear,
the pattern ExecuTorch's LLM export writes for weight-only quantization. The
tracer's weight_only pass lowers it to `pare::weight_only_linear`, which
reads the int8 / packed int4 weights and never materialises the float ones.

The scale of a channel (or group) is max |w| / 127 (bits=8) or / 7
(bits=4), the weight rounded to nearest and clamped, as llama.cpp's Q8_0
and ExecuTorch's 8da4w schemes do.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (defines torch.ops.quantized_decomposed)
from torch import nn
from torch.nn import functional as F

RANGES = {8: (-128, 127), 4: (-8, 7)}


class WeightOnlyError(ValueError):
    """A layer or setting weight-only quantization cannot take; the message says which and what to do."""


class WeightOnlyLinear(nn.Module):
    """nn.Linear with an int8 / int4 weight: y = x W^T + b, W dequantized
    per channel or per group by PT2E's reference ops (torch eager runs the
    exported graph)."""

    def __init__(self, linear: nn.Linear, bits: int, group_size: int | None):
        super().__init__()
        w = linear.weight.detach().float()
        out_features, in_features = w.shape
        qmin, qmax = RANGES[bits]
        self.bits, self.quant_min, self.quant_max = bits, qmin, qmax
        self.group_size = group_size
        groups = w.reshape(out_features, -1, group_size or in_features)
        scales = groups.abs().amax(-1) / qmax
        scales = torch.where(scales > 0, scales, torch.ones_like(scales))  # an all-zero group: any scale
        q = torch.clamp(torch.round(groups / scales[..., None]), qmin, qmax).to(torch.int8)
        self.register_buffer("weight_int8", q.reshape(out_features, in_features))
        self.register_buffer("scales", scales.reshape(out_features) if group_size is None else scales)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().float(), requires_grad=False)

    def dequantized_weight(self) -> torch.Tensor:
        ops = torch.ops.quantized_decomposed
        if self.group_size is None:
            return ops.dequantize_per_channel(
                self.weight_int8, self.scales, None, 0, self.quant_min, self.quant_max, torch.int8
            )
        return ops.dequantize_per_channel_group(
            self.weight_int8,
            self.scales,
            None,
            self.quant_min,
            self.quant_max,
            torch.int8,
            self.group_size,
            torch.float32,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.dequantized_weight(), self.bias)

    def extra_repr(self) -> str:
        out_features, in_features = self.weight_int8.shape
        group = "per channel" if self.group_size is None else f"groups of {self.group_size}"
        return f"in_features={in_features}, out_features={out_features}, int{self.bits} {group}"


def quantize_weights(
    model: nn.Module, bits: int = 8, group_size: int | None = None, skip: Iterable[str] = ()
) -> nn.Module:
    """Replaces every nn.Linear of `model` (except the modules named in
    `skip`) by a WeightOnlyLinear, in place; returns `model`. bits=8 or 4;
    group_size None (per channel; bits=8 only) or a multiple of 32 that
    divides every layer's in_features."""
    if bits not in RANGES:
        raise WeightOnlyError(f"bits must be 8 or 4, got {bits}")
    if bits == 4 and group_size is None:
        raise WeightOnlyError("bits=4 needs a group_size (32, 64, 128 or 256): int4 per channel loses too much")
    if group_size is not None and (group_size < 32 or group_size % 32):
        raise WeightOnlyError(f"group_size must be a multiple of 32, got {group_size}")
    skipped = set(skip)
    layers = [
        (name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear) and name and name not in skipped
    ]
    for name, linear in layers:
        step = group_size or 16
        if linear.in_features % step:
            what = f"group_size {group_size}" if group_size else "16 (the kernel's step)"
            raise WeightOnlyError(
                f"{name}: in_features {linear.in_features} is not a multiple of {what}; pick another group_size "
                f"or leave the layer float (skip=[{name!r}])"
            )
    for name, linear in layers:
        parent, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, attr, WeightOnlyLinear(linear, bits, group_size))
    return model
