"""A small U-Net: double 3x3 convs, max-pool down, transposed-conv and bilinear up, skip connections concatenated.

The shape of on-device segmentation, matting and denoising networks.
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, 64x64 images, batch 1 and 2 (dynamic batch).
"""

import torch
from _zoo import images, randomize_norm_stats
from torch import nn

KIND = "segmentation"


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
    )


class Up(nn.Module):
    """Upsample by 2 (a learned transposed conv, or bilinear + 1x1 conv), concat the skip, double conv."""

    def __init__(self, cin, cout, transposed):
        super().__init__()
        if transposed:
            self.up = nn.ConvTranspose2d(cin, cin // 2, kernel_size=2, stride=2)
        else:
            self.up = nn.Sequential(
                nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), nn.Conv2d(cin, cin // 2, 1)
            )
        self.conv = double_conv(cin, cout)

    def forward(self, x, skip):
        return self.conv(torch.cat((skip, self.up(x)), 1))


class UNet(nn.Module):
    def __init__(self, channels=3, classes=4, width=8):
        super().__init__()
        w = width
        self.inc = double_conv(channels, w)
        self.downs = nn.ModuleList(double_conv(w * 2**i, w * 2 ** (i + 1)) for i in range(3))
        self.pool = nn.MaxPool2d(2)
        self.ups = nn.ModuleList(Up(w * 2 ** (i + 1), w * 2**i, transposed=i > 0) for i in reversed(range(3)))
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(self.pool(skips[-1])))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.head(x)


def build():
    torch.manual_seed(0)
    return randomize_norm_stats(UNet()).eval(), images(1, 2)
