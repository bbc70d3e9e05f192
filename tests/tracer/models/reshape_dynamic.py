"""reshape(b * t, d) -> matmul -> view(b, t, -1) with a dynamic batch: the
computed size b * t becomes -1, the batch size comes from sym_size.int. Also
casts (_to_copy) through float16 and back."""

import torch
from torch import nn


class Tokens(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Parameter(torch.randn(8, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        y = torch.mm(x.reshape(b * t, d), self.proj)
        y = y.to(torch.float16).to(torch.float32)
        return torch.softmax(y.view(b, t, 6), dim=1)


def build():
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(4)
    return Tokens(), [(torch.randn(2, 5, 8, generator=g),), (torch.randn(4, 5, 8, generator=g),)]
