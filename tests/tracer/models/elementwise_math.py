"""Every elementwise core operator added for issue 49's first batch: the
inverse and hyperbolic trigonometric functions, expm1, log1p, log2, log10,
trunc, isnan, isinf, atan2 and bitwise_xor, in one float method (and one
Long input for bitwise_xor)."""

import torch
from torch import nn


class ElementwiseMath(nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor):
        t = torch.tanh(x)
        angles = torch.acos(t) + torch.asin(torch.sigmoid(x)) + torch.atan(x) + torch.atan2(x, x.flip(0) + 0.5)
        hyperbolic = torch.sinh(x) - torch.cosh(x) + torch.asinh(x) + torch.acosh(x.abs() + 1) + torch.atanh(t * 0.9)
        logs = torch.expm1(x) + torch.log1p(x.abs()) + torch.log2(x.abs() + 1) + torch.log10(x.abs() + 1)
        y = angles + hyperbolic + logs + torch.tan(x * 0.3) + torch.trunc(x * 3)
        # log of a negative is NaN and 1 / 0 is inf: both predicates see true elements.
        special = torch.isnan(torch.log(x)) | torch.isinf(1 / (x - x.round()))
        return y, special, torch.bitwise_xor(i, i.flip(0))


def build():
    g = torch.Generator().manual_seed(0)
    return ElementwiseMath(), [(torch.randn(4, 6, generator=g), torch.randint(-50, 50, (4, 6), generator=g))]
