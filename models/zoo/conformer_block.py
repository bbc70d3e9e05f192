"""A Conformer encoder (two blocks): half-step feed-forwards, multi-head self-attention, and the conv module (pointwise conv, GLU, depthwise conv1d, batch norm, SiLU).

Gulati et al.'s Conformer, the encoder of on-device speech recognisers,
written as torchaudio's `ConformerLayer` is; an input projection of
log-mel frames and per-frame log-probabilities around it.
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, batch 2 of 24 frames and batch 1 of 16 (dynamic batch and
length) of 40 mel bins.
"""

import torch
from _zoo import randomize_norm_stats
from torch import nn

KIND = "sequence"


def feed_forward(d, expand=4):
    return nn.Sequential(
        nn.LayerNorm(d), nn.Linear(d, expand * d), nn.SiLU(), nn.Dropout(0.1), nn.Linear(expand * d, d)
    )


class ConvModule(nn.Module):
    def __init__(self, d, kernel=7):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.body = nn.Sequential(
            nn.Conv1d(d, 2 * d, 1),
            nn.GLU(dim=1),
            nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d),
            nn.BatchNorm1d(d),
            nn.SiLU(),
            nn.Conv1d(d, d, 1),
            nn.Dropout(0.1),
        )

    def forward(self, x):  # N x T x d
        return self.body(self.norm(x).transpose(1, 2)).transpose(1, 2)


class ConformerBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ff1 = feed_forward(d)
        self.attention_norm = nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.conv = ConvModule(d)
        self.ff2 = feed_forward(d)
        self.final_norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        y = self.attention_norm(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.final_norm(x)


class Conformer(nn.Module):
    def __init__(self, mels=40, d=64, heads=4, blocks=2, symbols=29):
        super().__init__()
        self.input = nn.Linear(mels, d)
        self.blocks = nn.Sequential(*(ConformerBlock(d, heads) for _ in range(blocks)))
        self.head = nn.Linear(d, symbols)

    def forward(self, frames):  # N x T x mels
        return torch.log_softmax(self.head(self.blocks(self.input(frames))), dim=-1)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    inputs = [(torch.randn(2, 24, 40, generator=g),), (torch.randn(1, 16, 40, generator=g),)]
    return randomize_norm_stats(Conformer()).eval(), inputs
