"""A model that computes something else under torch.export than in eager
mode, so the exported program disagrees with torch eager: a stand-in for a
wrong kernel in the numeric-check tests."""

import torch
from torch import nn


class Drifting(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = 2.0 if torch.compiler.is_exporting() else 3.0
        return x * scale


def build():
    return Drifting(), [(torch.ones(2, 2),)]
