"""A small speech model: log-mel frames, two strided conv1d + batch norm + ReLU, a bidirectional GRU, per-frame logits.

The shape of keyword spotters and small CTC acoustic models on phones.
Zoo model (docs/model_zoo.md): random weights, non-trivial batch-norm
statistics, batch 2 of 80 frames of 40 mel bins.
"""

import torch
from _zoo import randomize_norm_stats
from torch import nn

KIND = "sequence"


class SpeechModel(nn.Module):
    def __init__(self, mels=40, channels=64, hidden=48, symbols=29):
        super().__init__()
        self.frontend = nn.Sequential(
            nn.Conv1d(mels, channels, kernel_size=5, stride=2, padding=2),
            nn.BatchNorm1d(channels),
            nn.ReLU(),
            nn.Conv1d(channels, channels, kernel_size=3, stride=2, padding=1),
            nn.BatchNorm1d(channels),
            nn.ReLU(),
        )
        self.gru = nn.GRU(channels, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, symbols)

    def forward(self, mel):  # mel: N x mels x frames
        x = self.frontend(mel).transpose(1, 2)
        out, _ = self.gru(x)
        return torch.log_softmax(self.head(out), dim=-1)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return randomize_norm_stats(SpeechModel()).eval(), [(torch.randn(2, 40, 80, generator=g),)]
