"""Winograd layers large enough that each of a block's stages splits over
two threads (runtime/kernels/prepacked/winograd.h, Scratch): F(4x4, 3x3)
64 -> 128 over 24 x 24 (36 tiles, one block) and F(2x2, 3x3) 128 -> 128
over 8 x 8 (16 tiles), the planes and the input transform by input
channel, the products by output rows, the output transform by output
channel. tests/runtime/test_concurrency.py runs it on four instances with
a pool of two threads each, under ThreadSanitizer too."""

import torch
from torch import nn


class WinogradStages(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.f4 = nn.Conv2d(64, 128, 3, padding=1)
        self.pool = nn.MaxPool2d(3)
        self.f2 = nn.Conv2d(128, 128, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.f4(x))
        return self.f2(self.pool(y)).mean(dim=(2, 3))


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return WinogradStages().eval(), [(torch.randn(1, 64, 24, 24, generator=g),)]
