"""A small CNN for the Vulkan backend (docs/delegates.md, "The Vulkan
backend"): standard, depthwise and 1x1 convolutions with relu6, hardswish
and relu fused, max and adaptive average pooling, a linear layer and
softmax, at a fixed batch of 2 (the backend takes static shapes only), so
`--delegate vulkan` delegates every operator but the weights' transpose."""

import torch
import torch.nn.functional as F
from torch import nn


class VulkanCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16)
        self.pw = nn.Conv2d(16, 32, 1)
        self.conv = nn.Conv2d(32, 32, 3, 1, 1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu6(self.stem(x))
        x = F.hardswish(self.dw(x))
        x = F.max_pool2d(F.relu(self.pw(x)), 2)
        x = F.relu(self.conv(x)) + x
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return VulkanCnn(), [(torch.randn(2, 3, 64, 64, generator=g),)]
