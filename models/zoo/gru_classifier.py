"""A sequence classifier: a 2-layer GRU over float features with an initial state, last step to a linear head.

Zoo model (docs/model_zoo.md): random weights, batch 3 of 15 steps of 24
features, and an explicit h0.
"""

import torch
from torch import nn

KIND = "sequence"


class GRUClassifier(nn.Module):
    def __init__(self, features=24, hidden=40, classes=6):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, h0):
        out, h = self.gru(x, h0)
        return self.head(out[:, -1]), h


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return GRUClassifier().eval(), [(torch.randn(3, 15, 24, generator=g), torch.randn(2, 3, 40, generator=g))]
