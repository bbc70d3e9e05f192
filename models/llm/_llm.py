"""Decoder-only language models for Pare's LLM specs (models/llm/*.py; docs/llm.md).

Seeded random weights, no downloads. Every model follows ExecuTorch's LLM
calling convention: `forward(tokens: int64[1, S], input_pos: int64[S])`
returns the logits of the last position, float32 [1, vocab]; the KV cache
lives in buffers that `forward` updates with `index_copy_` at `input_pos`,
so a prefill of S tokens and then decode steps of one share the cache.

A spec imports this module by name (the tracer puts the spec's directory on
sys.path) and calls `spec(...)` with its config; tests build small variants
of the same architectures with `small(arch)`.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn
from torch.nn import functional as F


@dataclasses.dataclass(frozen=True)
class Config:
    arch: str  # "llama" (RMSNorm, RoPE, SwiGLU) or "gpt2" (learned positions, LayerNorm, GELU)
    dim: int
    layers: int
    heads: int
    kv_heads: int  # < heads: grouped-query attention (llama only)
    vocab: int
    hidden: int  # the MLP's width
    max_seq: int


# stories15M (llama2.c's TinyStories model): dim 288, 6 layers, 6 heads, vocabulary 32,000.
STORIES15M = Config("llama", dim=288, layers=6, heads=6, kv_heads=6, vocab=32000, hidden=768, max_seq=256)
# gpt2.py: GPT-2's layers (learned positions, LayerNorm, GELU MLP, biases) at stories15M's size.
GPT2 = Config("gpt2", dim=288, layers=6, heads=6, kv_heads=6, vocab=32000, hidden=1152, max_seq=256)
# llama_gqa.py: stories15M's shape with 2 key/value heads for the 6 query heads.
LLAMA_GQA = Config("llama", dim=288, layers=6, heads=6, kv_heads=2, vocab=32000, hidden=768, max_seq=256)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rope(x, cos, sin):
    """Rotary embedding on interleaved pairs (Llama's layout); x [1, S, H, D], cos/sin [S, D/2]."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    real, imag = pairs[..., 0], pairs[..., 1]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    out = torch.stack((real * cos - imag * sin, real * sin + imag * cos), dim=-1)
    return out.flatten(3)


class Attention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c.heads, c.kv_heads, c.dim // c.heads
        bias = c.arch == "gpt2"
        self.wq = nn.Linear(c.dim, c.heads * self.head_dim, bias=bias)
        self.wk = nn.Linear(c.dim, c.kv_heads * self.head_dim, bias=bias)
        self.wv = nn.Linear(c.dim, c.kv_heads * self.head_dim, bias=bias)
        self.wo = nn.Linear(c.heads * self.head_dim, c.dim, bias=bias)
        shape = (1, c.kv_heads, c.max_seq, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def forward(self, x, input_pos, mask, rope=None):
        s = x.shape[1]
        q = self.wq(x).view(1, s, self.heads, self.head_dim)
        k = self.wk(x).view(1, s, self.kv_heads, self.head_dim)
        v = self.wv(x).view(1, s, self.kv_heads, self.head_dim)
        if rope is not None:
            q, k = _rope(q, *rope), _rope(k, *rope)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        self.k_cache.index_copy_(2, input_pos, k)
        self.v_cache.index_copy_(2, input_pos, v)
        keys, values = self.k_cache, self.v_cache
        if self.kv_heads != self.heads:
            group = self.heads // self.kv_heads
            keys = keys.repeat_interleave(group, dim=1)
            values = values.repeat_interleave(group, dim=1)
        scores = torch.matmul(q, keys.transpose(2, 3)) * (1.0 / math.sqrt(self.head_dim))
        out = torch.matmul((scores + mask).softmax(-1), values)
        return self.wo(out.transpose(1, 2).reshape(1, s, -1))


class SwiGLU(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.w1 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w3 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w2 = nn.Linear(c.hidden, c.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class GeluMLP(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.fc = nn.Linear(c.dim, c.hidden)
        self.proj = nn.Linear(c.hidden, c.dim)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        llama = c.arch == "llama"
        self.norm1 = RMSNorm(c.dim) if llama else nn.LayerNorm(c.dim)
        self.attention = Attention(c)
        self.norm2 = RMSNorm(c.dim) if llama else nn.LayerNorm(c.dim)
        self.mlp = SwiGLU(c) if llama else GeluMLP(c)

    def forward(self, x, input_pos, mask, rope=None):
        x = x + self.attention(self.norm1(x), input_pos, mask, rope)
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """forward(tokens [1, S] int64, input_pos [S] int64) -> logits [1, vocab] of the last position."""

    def __init__(self, c: Config):
        super().__init__()
        if c.heads % c.kv_heads or c.dim % c.heads:
            raise ValueError(f"heads {c.heads} must be a multiple of kv_heads {c.kv_heads}, dim {c.dim} of heads")
        self.config = c
        self.embedding = nn.Embedding(c.vocab, c.dim)
        llama = c.arch == "llama"
        if llama:
            half = c.dim // c.heads // 2
            freqs = 1.0 / (10000.0 ** (torch.arange(half, dtype=torch.float64) / half))
            angles = torch.outer(torch.arange(c.max_seq, dtype=torch.float64), freqs)
            self.register_buffer("rope_cos", angles.cos().float(), persistent=False)
            self.register_buffer("rope_sin", angles.sin().float(), persistent=False)
        else:
            self.positions = nn.Embedding(c.max_seq, c.dim)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.norm = RMSNorm(c.dim) if llama else nn.LayerNorm(c.dim)
        self.output = nn.Linear(c.dim, c.vocab, bias=False)
        self.register_buffer("cache_positions", torch.arange(c.max_seq), persistent=False)

    def forward(self, tokens, input_pos):
        x = self.embedding(tokens)
        rope = None
        if self.config.arch == "llama":
            rope = (self.rope_cos[input_pos], self.rope_sin[input_pos])
        else:
            x = x + self.positions(input_pos)[None]
        # Causal over the cache: position p sees the cache rows 0..p.
        visible = self.cache_positions[None, :] <= input_pos[:, None]
        mask = torch.zeros(visible.shape).masked_fill(~visible, float("-inf"))
        for block in self.blocks:
            x = block(x, input_pos, mask, rope)
        return self.output(self.norm(x[:, -1, :]))


def randomize(model: Decoder, seed: int = 0) -> Decoder:
    """Seeded weights at a trained model's scale: N(0, 0.02) linears and
    embeddings (GPT-2's initialisation), norm gains near 1 and non-zero biases."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
    return model.eval()


def sequence(c: Config, prompt: int, steps: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One generation's calls: a prefill of `prompt` tokens, then `steps` decode
    steps of one token each (seeded tokens), positions counting on."""
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, c.vocab, (prompt + steps,), generator=gen)
    calls = [(tokens[None, :prompt], torch.arange(prompt))]
    for pos in range(prompt, prompt + steps):
        calls.append((tokens[None, pos : pos + 1], torch.tensor([pos])))
    return calls


def spec(c: Config, prompt: int = 8, steps: int = 3):
    """A model spec's build(): the model and one sequence (prefill, then decode steps)."""
    torch.manual_seed(0)
    return randomize(Decoder(c)), sequence(c, prompt, steps)


# Small variants of each architecture, for tests: 2 layers, dim 64, vocabulary 512.
SMALL = {
    "llama": Config("llama", dim=64, layers=2, heads=4, kv_heads=4, vocab=512, hidden=128, max_seq=96),
    "gpt2": Config("gpt2", dim=64, layers=2, heads=4, kv_heads=4, vocab=512, hidden=256, max_seq=96),
    "gqa": Config("llama", dim=64, layers=2, heads=4, kv_heads=2, vocab=512, hidden=128, max_seq=96),
}
