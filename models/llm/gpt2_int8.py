"""gpt2.py with int8 weights, per output channel (pare.weight_only): float32 activations.

Every linear layer, the output projection included, is weight-only
quantized; its bias, the embeddings, norms and KV cache stay float32
(docs/llm.md, "Quantized weights"). Torch eager runs the same quantized module.
"""

import _llm

from pare.weight_only import quantize_weights


def build():
    model, inputs = _llm.spec(_llm.GPT2)
    return quantize_weights(model, bits=8), inputs
