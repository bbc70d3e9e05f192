"""A small CNN for tools.prune's tests: conv-BN-ReLU stages, a residual block
and a classifier with a hidden linear layer (tests/prune/test_prune.py)."""

import torch
from torch import nn


def stage(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(stage(3, 24), stage(24, 36, 2), stage(36, 48, 2))
        self.block = nn.Sequential(stage(48, 48), nn.Conv2d(48, 48, 3, 1, 1, bias=False), nn.BatchNorm2d(48))
        self.classifier = nn.Sequential(nn.Linear(48, 32), nn.ReLU(), nn.Linear(32, 10))

    def forward(self, x):
        x = self.features(x)
        x = torch.relu(x + self.block(x))
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def build():
    torch.manual_seed(0)
    model = SmallCNN()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.8, 1.2)
    return model, [(torch.rand(2, 3, 16, 16),), (torch.rand(2, 3, 16, 16),)]
