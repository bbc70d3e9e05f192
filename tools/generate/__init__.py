"""python -m tools.generate: greedy generation with an LLM model spec on Pare,
beside torch eager (docs/llm.md).

The spec follows ExecuTorch's LLM calling convention (forward(tokens
int64[1, S], input_pos int64[S]) -> logits of the last position, the KV
cache in buffers). Pare runs the exported program through pare.generate;
torch eager runs the spec's module the same way (a prefill call, then one
call per token). `compare` runs the two in lockstep and checks them step by
step; `timed_rounds` times both, interleaved.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence

import numpy as np
import torch

from pare.generate import Generation, Sampler, next_token
from pare.runtime import Method
from tools.tracer.model_spec import ModelSpec
from tools.tracer.numerics import DEFAULT_TOLERANCES


class GenerateError(Exception):
    """A user error: printed as one `error:` line, exit status 2."""


def check_llm_spec(spec: ModelSpec) -> None:
    """Raises GenerateError unless the spec's first input is (tokens int64[1, P], input_pos int64[P])
    and its module keeps buffers (the KV cache)."""
    first = spec.inputs[0]
    shapes = ", ".join(f"{t.dtype} {list(t.shape)}" for t in first)
    convention = (
        len(first) == 2
        and all(t.dtype == torch.int64 for t in first)
        and first[0].dim() == 2
        and first[0].shape[0] == 1
        and first[1].dim() == 1
        and first[1].shape[0] == first[0].shape[1]
    )
    if not convention:
        raise GenerateError(
            f"{spec.path}: not an LLM spec: inputs[0] is ({shapes}); generate needs forward(tokens int64[1, S], "
            "input_pos int64[S]) -> logits with the KV cache in buffers (docs/llm.md)"
        )
    if not any(True for _ in spec.module.buffers()):
        raise GenerateError(
            f"{spec.path}: not an LLM spec: the module has no buffers, so no KV cache to keep between calls "
            "(docs/llm.md)"
        )


def tolerance(spec: ModelSpec, rtol: float | None = None, atol: float | None = None) -> tuple[float, float]:
    """The float32 logits' (rtol, atol): the command line's, else the spec's TOLERANCE, else float32's default."""
    default_rtol, default_atol = DEFAULT_TOLERANCES["Float"]
    own = spec.tolerance_override() or {}
    return (
        rtol if rtol is not None else own.get("rtol", default_rtol),
        atol if atol is not None else own.get("atol", default_atol),
    )


class TorchDecoder:
    """The spec's module as torch eager runs it: a private copy whose buffers
    (the KV cache) are restored to their initial values by reset()."""

    def __init__(self, module: torch.nn.Module):
        self.module = copy.deepcopy(module).eval()
        self._initial = [b.detach().clone() for b in self.module.buffers()]

    def reset(self) -> None:
        with torch.no_grad():
            for b, v in zip(self.module.buffers(), self._initial):
                b.copy_(v)

    def step(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            out = self.module(torch.from_numpy(tokens), torch.from_numpy(positions))
        return out.numpy().reshape(-1)

    def generate(
        self,
        prompt: Sequence[int],
        max_new_tokens: int,
        temperature: float = 0.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> Generation:
        """As pare.generate.generate (greedy, or sampled by the same Sampler):
        the same calls on torch eager."""
        sampler = Sampler(temperature, top_k, seed)
        ids = np.asarray(prompt, dtype=np.int64).reshape(1, -1)
        count = ids.shape[1]
        self.reset()
        start = time.perf_counter()
        token = sampler(self.step(ids, np.arange(count, dtype=np.int64)))
        prefill = time.perf_counter() - start
        tokens = [token]
        start = time.perf_counter()
        for pos in range(count, count + max_new_tokens - 1):
            token = sampler(self.step(np.array([[token]], np.int64), np.array([pos], np.int64)))
            tokens.append(token)
        decode = time.perf_counter() - start
        return Generation(tokens, count, prefill, decode if max_new_tokens > 1 else 0.0, None)


@dataclasses.dataclass(frozen=True)
class Comparison:
    tokens: list[int]  # torch's greedy tokens, which both sides were fed
    steps: int
    near_ties: list[int]  # steps whose top-two logits (torch's) were within the tolerance
    max_abs_err: float
    failure: str | None  # the first mismatch, or None

    @property
    def ok(self) -> bool:
        return self.failure is None


def near_tie(logits: np.ndarray, rtol: float, atol: float) -> bool:
    """The two largest logits are within the float tolerance of each other:
    either may be the argmax within rounding, so the token is not checked."""
    top2 = np.partition(logits, -2)[-2:]
    return bool(abs(top2[1] - top2[0]) <= 2 * (atol + rtol * abs(top2[1])))


def compare(
    method: Method, torch_decoder: TorchDecoder, prompt: Sequence[int], steps: int, rtol: float, atol: float
) -> Comparison:
    """Pare and torch eager in lockstep for `steps` new tokens, both fed
    torch's greedy token at each step: every step's logits within the
    tolerance, and Pare's greedy token equal to torch's unless the step is a
    near-tie (then only the logits are compared)."""
    ids = np.asarray(prompt, dtype=np.int64).reshape(1, -1)
    count = ids.shape[1]
    method.reset_state()
    torch_decoder.reset()
    tokens: list[int] = []
    ties: list[int] = []
    worst = 0.0
    failure = None
    feed, positions = ids, np.arange(count, dtype=np.int64)
    for step in range(steps):
        (got,) = method.run(feed, positions)
        got = np.asarray(got).reshape(-1)
        want = torch_decoder.step(feed, positions)
        if got.shape != want.shape:
            failure = f"step {step}: Pare's logits have shape {got.shape}, torch's {want.shape}"
            break
        err = np.abs(got.astype(np.float64) - want)
        worst = max(worst, float(err.max()))
        bad = err > atol + rtol * np.abs(want)
        if bad.any():
            i = int(np.argmax(err))
            failure = (
                f"step {step}: {int(bad.sum())} logits outside rtol {rtol:g} atol {atol:g}, "
                f"worst at {i}: Pare {got[i]:.7g}, torch {want[i]:.7g}"
            )
            break
        token = next_token(want)
        if near_tie(want, rtol, atol):
            ties.append(step)
        elif next_token(got) != token:
            failure = f"step {step}: Pare's greedy token {next_token(got)} differs from torch's {token}"
            break
        tokens.append(token)
        feed, positions = np.array([[token]], np.int64), np.array([count + step], np.int64)
    return Comparison(tokens, len(tokens), ties, worst, failure)


def prompt_of(spec: ModelSpec, prompt_tokens: int | None, vocab: int) -> list[int]:
    """The spec's first representative tokens, or `prompt_tokens` seeded tokens below `vocab`."""
    if prompt_tokens is None:
        return [int(t) for t in spec.inputs[0][0].reshape(-1)]
    if prompt_tokens < 1:
        raise GenerateError(f"--prompt-tokens must be at least 1, got {prompt_tokens}")
    gen = torch.Generator().manual_seed(0)
    return torch.randint(0, vocab, (prompt_tokens,), generator=gen).tolist()
