"""A model for the example backend (docs/delegates.md): elementwise ops the
backend runs (add, mul, relu, with a tensor or a number), a CPU-only op in
between (sigmoid, and a mul that broadcasts a parameter), so `--delegate
example` splits it into partitions with CPU operators between them, a
partition output that both the CPU and a later partition read, and a batch
size that varies (a dynamic dim, which the backend reads at run time)."""

import torch
from torch import nn


class DelegatedElementwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(-1, 1, 6))

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        a = torch.relu(x * y + 0.5)  # example: mul, add (scalar), relu
        b = a * self.scale + x  # CPU: mul broadcasting a parameter; example: add
        s = torch.sigmoid(b)  # CPU
        c = torch.relu(s * 2.0 + a)  # example again, reading a and the CPU's s
        return c, torch.tanh(b)  # tanh on the CPU reads the first partition's b


def build():
    g = torch.Generator().manual_seed(0)
    return DelegatedElementwise(), [
        (torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)),
        (torch.randn(2, 6, generator=g), torch.randn(2, 6, generator=g)),
    ]
