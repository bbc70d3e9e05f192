"""One forward() over float32, int64 and float64 inputs: three methods."""

import torch
from torch import nn


class Affine(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        return torch.relu(x * y + 3), x + 1


def build():
    g = torch.Generator().manual_seed(2)
    return Affine(), [
        (torch.randn(2, 4, generator=g), torch.randn(2, 4, generator=g)),
        (torch.randint(-5, 5, (2, 4), generator=g), torch.randint(-5, 5, (2, 4), generator=g)),
        (torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)),
        (torch.randn(2, 4, generator=g, dtype=torch.float64), torch.randn(2, 4, generator=g, dtype=torch.float64)),
    ]
