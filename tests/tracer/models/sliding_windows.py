"""Overlapping windows, which no slice / permute / view can express: each
row of a signal cut into windows of 4 samples every 2 through
torch.as_strided, smoothed by a small linear layer; the same signal's
frames of 3 every 2 through unfold; 2x2 patches of an image with stride 1.
The batch dim is dynamic (batch 1 and 3), so the windows' size lists carry
the batch size."""

import torch
from torch import nn


class SlidingWindows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.taps = nn.Linear(4, 2)

    def forward(self, signal: torch.Tensor, image: torch.Tensor):
        x = signal * 2 + 1  # [N, 10]
        windows = torch.as_strided(x, (x.shape[0], 4, 4), (10, 2, 1))  # [N, 4 windows, 4 samples]
        y = image - 0.5  # [3, 3]
        patches = torch.as_strided(y, (2, 2, 2, 2), (3, 1, 3, 1), 0)
        frames = x.unfold(-1, 3, 2)  # [N, 4, 3]
        return self.taps(windows), patches.sum(dim=(2, 3)), frames * frames


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(2)
    return SlidingWindows(), [
        (torch.randn(1, 10, generator=g), torch.randn(3, 3, generator=g)),
        (torch.randn(3, 10, generator=g), torch.randn(3, 3, generator=g)),
    ]
