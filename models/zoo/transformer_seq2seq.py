"""An encoder-decoder on nn.Transformer: pre-norm layers, causal mask on the decoder, GELU feed-forward.

Zoo model (docs/model_zoo.md): random weights, float32 source and target
embeddings (batch 2, 10 source and 6 target steps).
"""

import warnings

import torch
from torch import nn

KIND = "sequence"


class Seq2Seq(nn.Module):
    def __init__(self, width=64, heads=4, classes=50):
        super().__init__()
        with warnings.catch_warnings():  # "enable_nested_tensor is True, but ...": a training fast path
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(
                width,
                heads,
                num_encoder_layers=2,
                num_decoder_layers=2,
                dim_feedforward=128,
                dropout=0.1,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
        self.head = nn.Linear(width, classes)

    def forward(self, source, target):
        steps = target.shape[1]
        causal = torch.triu(torch.full((steps, steps), float("-inf")), diagonal=1)
        # tgt_is_causal: without it nn.Transformer compares the mask with a
        # causal one at run time (torch.equal), which torch.export cannot trace.
        return self.head(self.transformer(source, target, tgt_mask=causal, tgt_is_causal=True))


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return Seq2Seq().eval(), [(torch.randn(2, 10, 64, generator=g), torch.randn(2, 6, 64, generator=g))]
