"""A GPT-2 decoder (learned positions, LayerNorm, tanh GELU) of stories15M's size with int8 weights per output channel (weight-only; biases float32), float32 activations.

Zoo model (docs/model_zoo.md, docs/llm.md): models/llm/gpt2_int8.py itself, run
by the zoo (seeded random weights; one sequence sharing the KV cache: a
prefill of 8 tokens, then 3 decode steps).
"""

import _zoo

KIND = "language model"

build = _zoo.llm_spec("gpt2_int8")
