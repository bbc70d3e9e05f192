"""llama_gqa.py with int4 weights in groups of 32 (pare.weight_only): float32 activations.

Every linear layer, the output projection included, is weight-only
quantized; the embedding, norms and KV cache (2 key/value heads) stay
float32 (docs/llm.md, "Quantized weights"). Torch eager runs the same
quantized module.
"""

import _llm

from pare.weight_only import quantize_weights


def build():
    model, inputs = _llm.spec(_llm.LLAMA_GQA)
    return quantize_weights(model, bits=4, group_size=32), inputs
