"""A Llama decoder of stories15M's shape (dim 288, 6 layers, 6 heads, vocabulary 32,000), float32.

Zoo model (docs/model_zoo.md, docs/llm.md): models/llm/stories15m.py itself, run
by the zoo (seeded random weights; one sequence sharing the KV cache: a
prefill of 8 tokens, then 3 decode steps).
"""

import _zoo

KIND = "language model"

build = _zoo.llm_spec("stories15m")
