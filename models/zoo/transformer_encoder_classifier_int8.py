"""A text classifier on nn.TransformerEncoder, PT2E dynamic int8 linears (PareQuantizer(dynamic=True): per-channel int8 weights, inputs quantized per tensor at run time).

Zoo model (docs/model_zoo.md), the quantized twin of
transformer_encoder_classifier.py: the same random weights, exported at
batch 1 of 16 tokens, converted by convert_pt2e (docs/quantization.md).
Only the linear layers are quantized; embeddings, attention scores,
layer norms and the rest stay float.
"""

import torch
from _zoo import quantized
from transformer_encoder_classifier import EncoderClassifier

KIND = "sequence"
FLOAT_TWIN = "transformer_encoder_classifier.py"  # tools.bench times Pare on it alongside


def build():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return quantized(EncoderClassifier(), [(torch.randint(0, 1000, (1, 16), generator=g),)], dynamic=True)
