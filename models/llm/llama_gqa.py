"""A Llama-architecture decoder with grouped-query attention: 6 query heads share 2 key/value heads (dim 288, 6 layers, vocabulary 32,000).

Seeded random weights (models/llm/_llm.py; docs/llm.md): ExecuTorch's LLM
calling convention, forward(tokens int64[1, S], input_pos int64[S]) ->
logits [1, 32000], a KV cache of 2 heads (256 positions) in buffers updated
in place. The representative inputs are one sequence: a prefill of 8
tokens, then 3 decode steps.
"""

import _llm

CONFIG = _llm.LLAMA_GQA


def build():
    return _llm.spec(CONFIG)
