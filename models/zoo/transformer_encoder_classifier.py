"""A text classifier on nn.TransformerEncoder: token + position embeddings, 2 post-norm layers, mean pooling.

Zoo model (docs/model_zoo.md): random weights, int64 token ids, batch 2 of
16 tokens and batch 1 of 12 (dynamic batch and sequence length).
"""

import torch
from torch import nn

KIND = "sequence"


class EncoderClassifier(nn.Module):
    def __init__(self, vocab=1000, width=64, heads=4, layers=2, classes=5, max_len=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(torch.randn(max_len, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=4 * width, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        return self.head(self.encoder(x).mean(dim=1))


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    inputs = [(torch.randint(0, 1000, (2, 16), generator=g),), (torch.randint(0, 1000, (1, 12), generator=g),)]
    return EncoderClassifier().eval(), inputs
