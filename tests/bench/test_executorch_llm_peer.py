"""ExecuTorch + XNNPACK as the LLM peer (tools/bench/executorch_llm.py): the
worker in .venv-executorch lowers a small Llama twice (a dynamic-S program
whose prompt is one call, and the static one-token program), on two threads,
and generates greedily (never how fast anything is).

Greedy tokens from two float paths can part at a near-tie, so each token the
peer picks is checked against torch eager fed the peer's own sequence: it must
be torch's argmax, or within the spec's float tolerance of torch's largest
logit (tools.generate.tolerance, as `tools.generate --compare` allows).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tools.bench.executorch_llm import VENV, ExecuTorchLlmPeer
from tools.generate import tolerance
from tools.tracer.model_spec import load_model_spec

SPEC = Path(__file__).parents[2] / "models" / "llm" / "llama_small.py"


@pytest.fixture(scope="module")
def peer():
    if not (VENV / "bin" / "python3").exists():  # setup installs it: a missing venv is a broken setup
        pytest.fail(f"{VENV}: no ExecuTorch venv (make setup makes it)", pytrace=False)
    p = ExecuTorchLlmPeer(SPEC, threads=2)
    yield p
    p.close()


def test_the_prefill_is_one_call_and_the_tokens_are_torch_greedy(peer):
    prompt = [5, 17, 300, 2, 99, 41, 8, 250]
    steps = 6
    r = peer.generate(prompt, steps)
    assert len(r["tokens"]) == steps
    assert r["static_tokens"] == r["tokens"]  # the two programs agree
    assert r["prefill_seconds"] > 0 and r["decode_seconds"] > 0
    assert r["decode_seconds"] == min(r["static_decode_seconds"], r["decode_seconds"])
    assert peer.program_bytes > 0

    spec = load_model_spec(SPEC)
    module, (rtol, atol) = spec.module, tolerance(spec)
    calls = [(prompt, 0)] + [([t], len(prompt) + i) for i, t in enumerate(r["tokens"][:-1])]
    with torch.inference_mode():
        for (tokens, start), picked in zip(calls, r["tokens"]):
            logits = module(torch.tensor([tokens]), torch.arange(start, start + len(tokens))).reshape(-1)
            top = float(logits.max())
            assert top - float(logits[picked]) <= atol + rtol * abs(top), (start, picked, int(logits.argmax()))


def test_a_second_request_rewrites_the_cache(peer):
    # Each round starts at position 0 over the cache the previous round left.
    prompt = [1, 2, 3, 4]
    assert peer.generate(prompt, 4)["tokens"] == peer.generate(prompt, 4)["tokens"]
