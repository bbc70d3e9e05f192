"""The zoo's Transformer encoder classifier (models/zoo/transformer_encoder_classifier.py:
2 post-norm layers of width 64, feed-forward 256) on 1 x 16 tokens, the
float twin of transformer_encoder_16_int8.py."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).absolute().parents[1] / "zoo"))
from transformer_encoder_classifier import EncoderClassifier  # noqa: E402


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return EncoderClassifier().eval(), [(torch.randint(0, 1000, (1, 16), generator=g),)]
