"""A generation loop over a Pare LLM method, greedy or sampled (docs/llm.md).

    from pare.generate import generate

    method = runtime.load(program_bytes).method()
    result = generate(method, prompt=[1, 15043, 29892], max_new_tokens=32)
    result.tokens, result.prefill_seconds, result.decode_tokens_per_s

The method follows ExecuTorch's LLM calling convention: forward(tokens
int64[1, S], input_pos int64[S]) returns the logits of the last position
([1, vocab] or [vocab]) and keeps its KV cache as state (build feature
state). generate() resets the state, runs the whole prompt in one call (the
prefill), then one call per new token (the decode steps), each at the next
position, reusing the method instance and its state.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import numpy as np

from pare import dtypes as _dtypes
from pare.runtime import Method, _sdk_error


@dataclasses.dataclass(frozen=True)
class Generation:
    tokens: list[int]  # the generated tokens, not the prompt
    prompt_tokens: int
    prefill_seconds: float  # the prompt's call, which yields the first new token
    decode_seconds: float  # the calls of the other new tokens
    logits: list[np.ndarray] | None  # per new token, the logits it was picked from (keep_logits=True)

    @property
    def prefill_tokens_per_s(self) -> float:
        return self.prompt_tokens / self.prefill_seconds if self.prefill_seconds > 0 else float("inf")

    @property
    def decode_tokens_per_s(self) -> float:
        steps = len(self.tokens) - 1
        if steps <= 0:
            return 0.0
        return steps / self.decode_seconds if self.decode_seconds > 0 else float("inf")


def check_llm_method(method: Method) -> None:
    """Raises PareError InvalidArgument unless `method` takes (tokens int64,
    input_pos int64) and keeps state, as ExecuTorch's LLM export does."""
    declared = [method.input_info(i).dtype for i in range(method.num_inputs)]
    if declared != [_dtypes.Long.name] * 2 or method.num_outputs != 1:
        raise _sdk_error(
            f"not an LLM method: it takes {method.num_inputs} inputs ({', '.join(map(str, declared))}) and returns "
            f"{method.num_outputs} outputs; generate needs forward(tokens int64[1, S], input_pos int64[S]) -> logits "
            "(docs/llm.md)",
            "InvalidArgument",
        )
    if not method.state_names:
        raise _sdk_error(
            "not an LLM method: it keeps no state (a KV cache in buffers the model updates in place), or the "
            "runtime does not select build feature state; see docs/llm.md",
            "InvalidArgument",
        )


def next_token(logits: np.ndarray) -> int:
    """Greedy: the index of the largest logit (the first of equals, as torch.argmax)."""
    return int(np.argmax(logits.reshape(-1)))


class Sampler:
    """Picks each new token from its logits: greedy at temperature 0 (the
    default), else a draw from softmax(logits / temperature) over the top_k
    largest logits (all of them when top_k is None), in float64, with numpy's
    PCG64 generator seeded by `seed`: the same seed and logits give the same
    tokens. A Sampler is used for one generation (its draws go on)."""

    def __init__(self, temperature: float = 0.0, top_k: int | None = None, seed: int | None = None):
        if not (np.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"temperature must be a finite number >= 0 (0: greedy), got {temperature}")
        if top_k is not None and (isinstance(top_k, bool) or int(top_k) != top_k or top_k < 1):
            raise ValueError(f"top_k must be a whole number >= 1 (or None: every token), got {top_k}")
        if temperature == 0 and top_k is not None:
            raise ValueError("top_k needs a temperature > 0: at temperature 0 generation is greedy")
        self.temperature = float(temperature)
        self.top_k = None if top_k is None else int(top_k)
        self._rng = np.random.default_rng(seed)

    def __call__(self, logits: np.ndarray) -> int:
        x = np.asarray(logits, dtype=np.float64).reshape(-1)
        if self.temperature == 0:
            return int(np.argmax(x))
        if self.top_k is not None and self.top_k < x.size:
            kept = np.argsort(-x, kind="stable")[: self.top_k]  # ties: the lower index first, as torch.topk
            scaled = np.full_like(x, -np.inf)
            scaled[kept] = x[kept] / self.temperature
        else:
            scaled = x / self.temperature
        weights = np.exp(scaled - scaled.max())
        cumulative = np.cumsum(weights)
        return int(min(np.searchsorted(cumulative, self._rng.random() * cumulative[-1], side="right"), x.size - 1))


def generate(
    method: Method,
    prompt: Sequence[int],
    max_new_tokens: int,
    *,
    keep_logits: bool = False,
    on_token: Callable[[int], None] | None = None,
    temperature: float = 0.0,
    top_k: int | None = None,
    seed: int | None = None,
) -> Generation:
    """Generation: resets the method's state, prefills `prompt` in one call
    and decodes one token per call until `max_new_tokens` are generated.
    Greedy by default; `temperature` > 0 samples (Sampler: `top_k`, and
    `seed` for reproducible tokens). `on_token` is called with each new
    token as it is picked."""
    check_llm_method(method)
    sampler = Sampler(temperature, top_k, seed)
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    prompt_ids = np.asarray(prompt, dtype=np.int64).reshape(1, -1)
    if prompt_ids.shape[1] == 0:
        raise ValueError("the prompt is empty: give at least one token")
    count = prompt_ids.shape[1]
    method.reset_state()
    kept: list[np.ndarray] | None = [] if keep_logits else None
    tokens: list[int] = []

    def pick(logits: np.ndarray) -> int:
        token = sampler(logits)
        tokens.append(token)
        if kept is not None:
            kept.append(np.array(logits, copy=True).reshape(-1))
        if on_token is not None:
            on_token(token)
        return token

    start = time.perf_counter()
    (logits,) = method.run(prompt_ids, np.arange(count, dtype=np.int64))
    token = pick(logits)
    prefill = time.perf_counter() - start
    step_token = np.zeros((1, 1), np.int64)
    step_pos = np.zeros(1, np.int64)
    start = time.perf_counter()
    for pos in range(count, count + max_new_tokens - 1):
        step_token[0, 0], step_pos[0] = token, pos
        (logits,) = method.run(step_token, step_pos)
        token = pick(logits)
    decode = time.perf_counter() - start
    return Generation(tokens, count, prefill, decode if max_new_tokens > 1 else 0.0, kept)
