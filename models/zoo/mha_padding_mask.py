"""Multi-head self-attention with a key padding mask, then masked mean pooling (variable-length batches).

Zoo model (docs/model_zoo.md): random weights; inputs are float32 features
(batch 3 of 12 steps of 32) and a bool mask, True at padded steps.
"""

import torch
from torch import nn

KIND = "sequence"


class MaskedAttentionPool(nn.Module):
    def __init__(self, width=32, heads=4, classes=4):
        super().__init__()
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x, padding):
        attended, _ = self.attention(x, x, x, key_padding_mask=padding, need_weights=False)
        x = self.norm(x + attended)
        keep = (~padding).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return self.head(pooled)


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    lengths = torch.tensor([12, 7, 3])
    padding = torch.arange(12).unsqueeze(0) >= lengths.unsqueeze(1)
    return MaskedAttentionPool().eval(), [(torch.randn(3, 12, 32, generator=g), padding)]
