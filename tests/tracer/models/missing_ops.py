"""Uses operators no Pare runtime implements (determinant, Bessel J0)."""

import torch
from torch import nn


class Exotic(nn.Module):
    def forward(self, x: torch.Tensor):
        d = torch.linalg.det(x)
        j = torch.special.bessel_j0(x)
        return d, j, torch.special.bessel_j0(x + 1)


def build():
    return Exotic(), [(torch.randn(2, 3, 3),)]
