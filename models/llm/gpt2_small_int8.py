"""gpt2_small.py with int8 weights in groups of 32 (pare.weight_only), for tests: linears with biases.

Every linear layer holds int8 weights with a float32 scale per 32 inputs of
an output channel; activations and biases stay float32 (docs/llm.md,
"Quantized weights"). Torch eager runs the same quantized module.
"""

import _llm

from pare.weight_only import quantize_weights


def build():
    model, inputs = _llm.spec(_llm.SMALL["gpt2"])
    return quantize_weights(model, bits=8, group_size=32), inputs
