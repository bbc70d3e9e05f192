"""The vectorised depthwise kernel's row loops on rows wide enough for its
multi-vector step (runtime/kernels/common/depthwise_kernels.inc: 16
outputs at a time on arm64, then one vector, then a tail): 3x3 and 5x5 at
stride 1 and 2, and 7x7 at stride 1, each straight from a 9 x 70 input,
so the output rows are 70, 35, 70, 35 and 70 wide (several steps, whole
vectors and tails on 4 and 8 lanes); with and without bias, a ReLU6 on
one (the clamp in the loop). tests/tracer/test_android.py runs it on
android_arm64 under qemu; batch 1 and 2."""

import torch
from torch import nn


class DepthwiseRows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dw3 = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.dw3s2 = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=4, bias=False)  # channel multiplier 2
        self.dw5 = nn.Conv2d(4, 4, 5, padding=2, groups=4)
        self.dw5s2 = nn.Conv2d(4, 4, 5, stride=2, padding=2, groups=4)
        self.dw7 = nn.Conv2d(4, 4, 7, padding=3, groups=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = [nn.functional.relu6(self.dw3(x)), self.dw3s2(x), self.dw5(x), self.dw5s2(x), self.dw7(x)]
        return torch.cat([r.flatten(1) for r in rows], dim=1)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return DepthwiseRows().eval(), [(torch.randn(1, 4, 9, 70, generator=g),), (torch.randn(2, 4, 9, 70, generator=g),)]
