"""A 3x super-resolution net: ESPCN's conv layers and PixelShuffle, added to a bicubic up-sampling of the input.

The network predicts the residual over bicubic interpolation (as VDSR and
most mobile SR models do), in sub-pixel layout, rearranged by PixelShuffle.
Zoo model (docs/model_zoo.md): random weights, 32x32 RGB images up to
96x96, batch 1 and 2 (dynamic batch).
"""

import torch
from _zoo import images
from torch import nn
from torch.nn import functional as F

KIND = "image-to-image"


class SuperResolution(nn.Module):
    def __init__(self, scale=3, channels=3, width=32):
        super().__init__()
        self.scale = scale
        self.body = nn.Sequential(
            nn.Conv2d(channels, 2 * width, 5, padding=2),
            nn.Tanh(),
            nn.Conv2d(2 * width, width, 3, padding=1),
            nn.Tanh(),
            nn.Conv2d(width, channels * scale**2, 3, padding=1),
            nn.PixelShuffle(scale),
        )

    def forward(self, x):
        upsampled = F.interpolate(x, scale_factor=self.scale, mode="bicubic", align_corners=False)
        return upsampled + self.body(x)


def build():
    torch.manual_seed(0)
    return SuperResolution().eval(), images(1, 2, size=32)
