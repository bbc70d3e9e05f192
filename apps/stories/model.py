"""The LLM app's model: models/llm/stories15m_int8.py, a Llama of stories15M's shape with int8 weights.

Seeded random weights (models/llm/_llm.py): dim 288, 6 layers, 6 heads,
vocabulary 32,000, a 256-position KV cache in buffers updated in place;
every linear layer weight-only int8 per output channel (pare.weight_only),
the embedding, norms and cache float32. The app ships the int8 twin rather
than the fp32 model: its program is 55.9 MB instead of 101.3 MB, a decode
step reads a quarter of the linear weights' bytes, and its runtime is 896 B
larger on android_arm64 (docs/llm.md, "The LLM app").

The representative inputs are one sequence sharing the state: a prefill of
8 tokens, then 3 decode steps (ExecuTorch's LLM calling convention,
forward(tokens int64[1, S], input_pos int64[S]) -> logits [1, 32000]).
"""

from models.llm import _llm
from pare.weight_only import quantize_weights


def build():
    model, inputs = _llm.spec(_llm.STORIES15M)
    return quantize_weights(model, bits=8), inputs
