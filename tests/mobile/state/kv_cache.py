"""A decoder layer's KV-cache update for the Java API's state test
(tests/mobile/test_java_api.py) and tests/runtime/test_state.py: k and v
written at input_pos with index_copy_ (ExecuTorch's LLM calling convention:
tokens [1, S], input_pos [S]), then attention over the whole cache. Its manifest
(manifest.yaml beside it, `python -m tools.tracer trace
tests/mobile/state/kv_cache.py -o tests/mobile/state/manifest.yaml`)
selects build feature state."""

import torch
from torch import nn


class KVCache(nn.Module):
    def __init__(self, dim: int = 8, heads: int = 2, max_seq: int = 16, v_fill: float = 0.0):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("k_cache", torch.zeros(1, heads, max_seq, dim // heads))
        self.register_buffer("v_cache", torch.full((1, heads, max_seq, dim // heads), v_fill))

    def forward(self, x, input_pos):
        k = self.proj(x).view(1, -1, self.heads, self.head_dim).transpose(1, 2)
        self.k_cache.index_copy_(2, input_pos, k)
        self.v_cache.index_copy_(2, input_pos, k * 2)
        scores = torch.matmul(k, self.k_cache.transpose(2, 3))
        return torch.matmul(scores.softmax(-1), self.v_cache)


def build():
    torch.manual_seed(0)
    prefill = (torch.randn(1, 3, 8), torch.arange(3))
    decode = (torch.randn(1, 1, 8), torch.tensor([3]))
    return KVCache().eval(), [prefill, decode]
