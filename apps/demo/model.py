"""The demo app's model: a compact image classifier (CNN trunk + MLP head).

A MobileNet-style trunk (a strided stem conv, a depthwise-separable block, a
max pool) and an MLP head, float32, in eval mode. Weights are seeded so every
run exports the same program. The representative inputs use two batch sizes,
so the batch dimension is exported dynamic.

Model spec (docs/model_spec.md): `build()` returns (module, inputs), where
inputs is a list of input tuples.
"""

import torch
from torch import nn

NUM_CLASSES = 10


class DemoClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.block = nn.Sequential(
            nn.Conv2d(16, 16, kernel_size=3, padding=1, groups=16, bias=False),  # depthwise
            nn.BatchNorm2d(16),
            nn.Hardswish(),
            nn.Conv2d(16, 32, kernel_size=1),  # pointwise
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Sequential(
            nn.Linear(32, 64),
            nn.GELU(),
            nn.Dropout(0.1),
            nn.Linear(64, NUM_CLASSES),
        )

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        features = self.pool(self.block(self.stem(image))).flatten(1)
        return torch.softmax(self.head(features), dim=-1)


def build():
    torch.manual_seed(0)
    model = DemoClassifier().eval()
    # Non-trivial batch-norm statistics, as a trained model would have.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    generator = torch.Generator().manual_seed(1)
    inputs = [
        (torch.rand(1, 3, 32, 32, generator=generator),),
        (torch.rand(4, 3, 32, 32, generator=generator),),
    ]
    return model, inputs
