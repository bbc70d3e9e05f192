"""stories15m with grouped-query attention (2 key/value heads for 6 query heads), float32.

Zoo model (docs/model_zoo.md, docs/llm.md): models/llm/llama_gqa.py itself, run
by the zoo (seeded random weights; one sequence sharing the KV cache: a
prefill of 8 tokens, then 3 decode steps).
"""

import _zoo

KIND = "language model"

build = _zoo.llm_spec("llama_gqa")
