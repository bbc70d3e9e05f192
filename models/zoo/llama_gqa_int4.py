"""stories15m with grouped-query attention (2 key/value heads for 6 query heads) with int4 weights in groups of 32 (weight-only), float32 activations.

Zoo model (docs/model_zoo.md, docs/llm.md): models/llm/llama_gqa_int4.py itself, run
by the zoo (seeded random weights; one sequence sharing the KV cache: a
prefill of 8 tokens, then 3 decode steps).
"""

import _zoo

KIND = "language model"

build = _zoo.llm_spec("llama_gqa_int4")
