"""A sequence tagger: embedding, a 2-layer bidirectional LSTM, a per-token linear head, log-softmax.

Zoo model (docs/model_zoo.md): random weights, int64 token ids, batch 2 of
20 tokens.
"""

import torch
from torch import nn

KIND = "sequence"


class Tagger(nn.Module):
    def __init__(self, vocab=500, width=32, hidden=48, tags=9):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * hidden, tags)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return torch.log_softmax(self.head(out), dim=-1)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return Tagger().eval(), [(torch.randint(0, 500, (2, 20), generator=g),)]
