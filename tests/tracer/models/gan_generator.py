"""A style-transfer / GAN-style generator, one of issue 49's models that
failed at trace time: reflection padding, InstanceNorm2d (with and without
affine parameters; exported as _native_batch_norm_legit.no_stats),
PixelShuffle, replication padding and tanh."""

import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(3),
            nn.Conv2d(3, 8, 7),
            nn.InstanceNorm2d(8, affine=True),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.InstanceNorm2d(16),
            nn.ReLU(),
            nn.PixelShuffle(2),
            nn.ReplicationPad2d(1),
            nn.Conv2d(4, 3, 3),
            nn.Tanh(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return Generator().eval(), [(torch.randn(1, 3, 16, 16, generator=g),)]
