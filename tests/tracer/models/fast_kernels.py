"""The float fast paths on awkward shapes, for running on each platform's
runtime (tests/tracer/test_android.py runs it on android_arm64 under qemu):
the vectorised depthwise kernels (3x3, 5x5, 7x7 at stride 1 and 2, odd
widths), the GEMM tile through dense 3x3, 1x1 and strided convolution with
odd channel counts, Winograd F(4x4, 3x3) on an odd-sized map with odd
channel counts (17 -> 19 over 23 x 19, the edge tiles clipped) and
F(2x2, 3x3) on a smaller one (13 -> 13 over 12 x 10), a 1x1
convolution over 9 pixels as pixel rows (37 -> 21 over 3 x 3: a panel of
6 rows and the three-row kernel), the channels-last kernels (the
channels_last pass: a depthwise 3x3 over that 3 x 3 map with the shortcut
fused, 37 channels, so whole vectors and a tail, a stride-2 one down to
2 x 2 and a 1x1 layer over its 4 pixels, converted in and out), max and
average pooling over rows several vectors wide
(3x3 at stride 2 with padding, nn.MaxPool2d(2), 3x3 average at stride 1
without counting the padding), and a linear layer with odd features; batch
1 and 2."""

import torch
from torch import nn


class FastKernels(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 13, 3, stride=2, padding=1)
        self.dw3 = nn.Conv2d(13, 13, 3, padding=1, groups=13)
        self.dw5s2 = nn.Conv2d(13, 26, 5, stride=2, padding=2, groups=13)  # channel multiplier 2
        self.dw7 = nn.Conv2d(26, 26, 7, padding=3, groups=26, bias=False)
        self.dw3s2 = nn.Conv2d(26, 26, 3, stride=2, groups=26)
        self.pw = nn.Conv2d(26, 37, 1)
        self.expand = nn.Conv2d(13, 17, 1)
        self.wino = nn.Conv2d(17, 19, 3, padding=1)  # the winograd pass transforms it: F(4x4, 3x3)
        self.wino2 = nn.Conv2d(13, 13, 3, padding=1)  # 9 4x4 tiles: F(2x2, 3x3)
        self.avg = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.max3 = nn.MaxPool2d(3, stride=2, padding=1)
        self.max2 = nn.MaxPool2d(2)
        self.rows = nn.Conv2d(37, 21, 1)  # prepack_weights packs it for pixel rows
        self.max32 = nn.MaxPool2d((3, 2), stride=1)
        self.cl_dw = nn.Conv2d(37, 37, 3, padding=1, groups=37)  # 9 output pixels: channels-last
        self.cl_down = nn.Conv2d(37, 37, 3, stride=2, padding=1, groups=37)  # 3 x 3 -> 2 x 2
        self.cl_pw = nn.Conv2d(37, 23, 1)  # 1x1 over 4 pixels: channels-last
        self.fc = nn.Linear(37 + 13 + 13 + 19 + 21 + 23, 11)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = torch.relu(self.dw3(x)) + x
        x = x + self.avg(x)  # 23 x 19
        pooled = [self.wino2(self.max3(x)).amax(dim=(2, 3)), self.max2(x).mean(dim=(2, 3))]  # 12 x 10, 11 x 9
        pooled.append(torch.relu(self.wino(self.expand(x))).amax(dim=(2, 3)))
        x = self.dw3s2(self.dw7(self.dw5s2(x)))
        x = self.pw(x)  # 5 x 4
        y = self.max32(x)  # 3 x 3
        pooled.append(torch.relu(self.rows(y)).amax(dim=(2, 3)))
        y = self.cl_dw(y) + y
        pooled.append(self.cl_pw(torch.relu(self.cl_down(y))).mean(dim=(2, 3)))
        return self.fc(torch.cat([x.mean(dim=(2, 3))] + pooled, dim=1))


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return FastKernels().eval(), [(torch.randn(1, 3, 45, 37, generator=g),), (torch.randn(2, 3, 45, 37, generator=g),)]
