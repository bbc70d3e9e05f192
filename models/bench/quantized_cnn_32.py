"""A small CNN block at 1x3x32x32 (random weights): a conv + batch norm +
relu stem, a residual pair of 3x3 convolutions, a max pool, global average
pooling and a linear head. The float twin of quantized_cnn_32_int8.py, the
"small quantized CNN block at 32x32" of issue 44's speed target."""

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, width=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.conv1 = nn.Conv2d(width, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        y = self.stem(x)
        y = F.relu(self.conv2(F.relu(self.conv1(y))) + y)
        return self.head(self.pool(y).mean((2, 3)))


def build():
    torch.manual_seed(0)
    model = Block().eval()
    with torch.no_grad():
        model.stem[1].running_mean.uniform_(-0.5, 0.5)
        model.stem[1].running_var.uniform_(0.5, 2.0)
    return model, [(torch.randn(1, 3, 32, 32),)]
