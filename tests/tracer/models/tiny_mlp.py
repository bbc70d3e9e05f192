"""Two linear layers, relu, scalar arithmetic and softmax; batch 1 and 3, so
the batch dim is dynamic. Also returns the batch size (a SymInt output)."""

import torch
from torch import nn


class TinyMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 5)

    def forward(self, x: torch.Tensor):
        h = torch.relu(self.fc1(x)) * 0.5 + 1
        return torch.softmax(self.fc2(h), dim=-1), x.shape[0]


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return TinyMLP(), [(torch.randn(1, 12, generator=g),), (torch.randn(3, 12, generator=g),)]
