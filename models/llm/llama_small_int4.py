"""llama_small.py with int4 weights in groups of 32 (pare.weight_only), for tests.

Every linear layer, the output projection included, holds int4 weights with
a float32 scale per 32 inputs; activations stay float32 (docs/llm.md,
"Quantized weights"). Torch eager runs the same quantized module.
"""

import _llm

from pare.weight_only import quantize_weights


def build():
    model, inputs = _llm.spec(_llm.SMALL["llama"])
    return quantize_weights(model, bits=4, group_size=32), inputs
