"""The example workspace's model: a small MLP scorer (float inputs).

Its manifest (manifest.yaml) is traced from Pare's checkout with
`.venv/bin/python -m tools.tracer trace examples/external_workspace/model.py
-o examples/external_workspace/manifest.yaml`, and checked in, as an app
would check in its own.
"""

import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(8, 16)
        self.out = nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.out(torch.relu(self.hidden(x))), dim=-1)


def build():
    torch.manual_seed(0)
    model = Scorer().eval()
    generator = torch.Generator().manual_seed(1)
    inputs = [(torch.randn(2, 8, generator=generator),)]
    return model, inputs
