"""llama_small.py with int8 weights per output channel (pare.weight_only), for tests.

Every linear layer, the output projection included, holds int8 weights with
a float32 scale per output channel; activations stay float32 (docs/llm.md,
"Quantized weights"). Torch eager runs the same quantized module.
"""

import _llm

from pare.weight_only import quantize_weights


def build():
    model, inputs = _llm.spec(_llm.SMALL["llama"])
    return quantize_weights(model, bits=8), inputs
