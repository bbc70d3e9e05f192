"""A small decoder of the GPT-2 style (learned positions, LayerNorm, GELU) for tests: 2 layers, dim 64, vocabulary 512, 96 cache positions.

models/llm/_llm.py's SMALL["gpt2"]; seeded random weights, ExecuTorch's LLM
calling convention (docs/llm.md). The representative inputs are one
sequence: a prefill of 8 tokens, then 3 decode steps.
"""

import _llm


def build():
    return _llm.spec(_llm.SMALL["gpt2"])
