"""A GPT-2-style decoder (learned positions, LayerNorm, GELU MLP, biases) of stories15M's size (dim 288, 6 layers, 6 heads, vocabulary 32,000).

Seeded random weights (models/llm/_llm.py; docs/llm.md): ExecuTorch's LLM
calling convention, forward(tokens int64[1, S], input_pos int64[S]) ->
logits [1, 32000], the KV cache (256 positions) in buffers updated in place.
The representative inputs are one sequence: a prefill of 8 tokens, then 3
decode steps.
"""

import _llm

CONFIG = _llm.GPT2


def build():
    return _llm.spec(CONFIG)
