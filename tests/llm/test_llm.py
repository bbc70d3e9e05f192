"""The LLM models (models/llm), pare.generate and python -m tools.generate
(docs/llm.md): the small variant of each architecture matches torch eager
step by step over a prefill and 64 decode steps, generation reuses the
method's plans and state, and the CLI's output and errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from pare.generate import Sampler, generate
from pare.runtime import PareError
from tests.conftest import REPO_ROOT
from tools.generate import TorchDecoder, compare, tolerance
from tools.generate.__main__ import main
from tools.tracer import export_model
from tools.tracer.model_spec import ModelSpec, load_model_spec

LLM = REPO_ROOT / "models" / "llm"
SMALL = ["llama_small", "gpt2_small", "gqa_small"]


@pytest.fixture(scope="module")
def exported():
    """Each small spec and its program, exported once for the module."""
    out = {}
    for name in SMALL:
        spec = load_model_spec(LLM / f"{name}.py")
        out[name] = (spec, export_model(spec).program)
    return out


def _compared(runtime, exported, name, steps):
    """A method of the small spec `name`, its prompt, its tolerance and its
    lockstep comparison with torch eager over `steps` tokens."""
    spec, program = exported[name]
    method = runtime.load(program).method()
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    rtol, atol = tolerance(spec)
    return method, prompt, atol, compare(method, TorchDecoder(spec.module), prompt, steps, rtol, atol)


@pytest.mark.parametrize("name", SMALL)
def test_64_steps_match_torch_eager(runtime, exported, name):
    _, _, atol, check = _compared(runtime, exported, name, 64)
    assert check.ok, check.failure
    assert check.steps == 64 and check.max_abs_err < atol


@pytest.mark.parametrize("name", SMALL)
def test_generate_gives_torch_eagers_tokens_and_reuses_its_plans(runtime, exported, name):
    method, prompt, _, check = _compared(runtime, exported, name, 40)
    assert check.ok, check.failure
    result = generate(method, prompt, 40, keep_logits=True)
    # Greedy tokens agree up to the first near-tie, where either token is right within rounding.
    agree = check.near_ties[0] + 1 if check.near_ties else 40
    assert result.tokens[:agree] == check.tokens[:agree]
    assert len(result.tokens) == 40 and len(result.logits) == 40
    assert result.prompt_tokens == len(prompt) and result.decode_tokens_per_s > 0
    stats = method.memory_stats()
    # One plan for the prompt's length and one for a single token, planned by
    # the comparison: the generation's 40 calls planned nothing and allocated nothing.
    assert stats.num_plans == 2 and stats.temporary_blocks == 0
    # A second generation starts from the initial cache and repeats the first.
    again = generate(method, prompt, 40)
    assert again.tokens == result.tokens


def test_generating_past_the_cache_fails_naming_the_position(runtime, exported):
    spec, program = exported["llama_small"]
    method = runtime.load(program).method()
    # 96 cache positions: a prompt of 8 and 88 fed-back tokens fill them (89 new tokens,
    # the last one picked but not fed); one more token does not fit.
    assert len(generate(method, list(range(8)), 89).tokens) == 89
    with pytest.raises(PareError, match="index 96 is out of bounds for dim 0 with size 96") as e:
        generate(method, list(range(8)), 90)
    assert e.value.status_name == "IndexOutOfRange"


def test_generate_refuses_a_method_without_the_llm_convention(runtime):
    spec = ModelSpec(Path("linear.py"), nn.Linear(4, 2).eval(), ((torch.randn(1, 4),),))
    method = runtime.load(export_model(spec).program).method()
    with pytest.raises(PareError, match="not an LLM method: it takes 1 inputs") as e:
        generate(method, [1, 2], 4)
    assert e.value.status_name == "InvalidArgument"


def test_the_full_size_specs_follow_the_convention():
    shapes = {}
    for name in ("stories15m", "gpt2", "llama_gqa"):
        spec = load_model_spec(LLM / f"{name}.py")
        tokens, positions = spec.inputs[0]
        assert tokens.dtype == positions.dtype == torch.int64 and tokens.shape == (1, len(positions))
        assert all(t.shape == (1, 1) for t, _ in spec.inputs[1:])
        c = spec.module.config
        shapes[name] = (c.arch, c.dim, c.layers, c.heads, c.kv_heads, c.vocab)
    assert shapes["stories15m"] == ("llama", 288, 6, 6, 6, 32000)
    assert shapes["gpt2"][0] == "gpt2" and shapes["llama_gqa"][4] == 2


def test_cli_compares_with_torch_and_writes_json(full_runtime, tmp_path, capsys):
    out = tmp_path / "gen.json"
    args = ["--runtime", str(full_runtime), "--prompt-tokens", "5", "--steps", "12", "--rounds", "2", "-q"]
    assert main([str(LLM / "gqa_small.py"), *args, "--compare", "torch", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "check: 12 steps match torch eager" in printed and "pare / torch: decode tokens/s" in printed
    report = json.loads(out.read_text())
    assert len(report["tokens"]) == 12 and report["prompt_tokens"] == 5 and report["threads"] == 1
    assert report["check"]["ok"] and report["runtime"] == str(full_runtime)
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s"):
        assert report[key] > 0 and report["torch"][key] > 0
    agree = 1 + min(report["check"]["near_ties"], default=11)  # the tokens agree up to a near-tie
    assert report["torch"]["tokens"][:agree] == report["tokens"][:agree]


@pytest.mark.parametrize(
    "argv, env, message",
    [
        (["apps/demo/model.py"], {}, "not an LLM spec: inputs[0] is (torch.float32 [1, 3, 32, 32])"),
        (["models/llm/gqa_small.py"], {"PARE_RUNTIME_LIB": ""}, "no Pare runtime: pass --runtime LIB"),
        (["models/llm/gqa_small.py", "--runtime", "/nonexistent.so"], {}, "/nonexistent.so: no such runtime"),
        (["models/llm/gqa_small.py", "--steps", "0"], {}, "--steps must be at least 1, got 0"),
        (["models/llm/gqa_small.py", "--compare", "onnx"], {}, "argument --compare: invalid choice"),
        (["models/llm/gqa_small.py", "--compare", "torch,onnx"], {}, "invalid choice 'onnx' (choose from torch, "),
        (
            ["models/llm/gpt2_small.py", "--compare", "llama.cpp-F32"],
            {},
            "--compare llama.cpp-F32: llama.cpp's peer takes the llama architecture, not 'gpt2'",
        ),
        (["models/llm/gqa_small.py", "--top-k", "5"], {}, "--top-k needs --temperature > 0"),
        (["models/llm/gqa_small.py", "--temperature", "-1"], {}, "--temperature must be a finite number >= 0"),
        (["models/llm/gqa_small.py", "--temperature", "1", "--top-k", "0"], {}, "--top-k must be at least 1, got 0"),
    ],
)
def test_cli_errors_are_one_line(full_runtime, monkeypatch, capsys, argv, env, message):
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setenv("PARE_RUNTIME_LIB", str(full_runtime))
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main([*argv, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err


def test_near_ties_are_compared_by_logits_not_tokens():
    from tools.generate import near_tie

    assert near_tie(np.array([0.5, 1.0, 1.00005], np.float32), 1e-4, 1e-4)
    assert not near_tie(np.array([0.5, 1.0, 1.01], np.float32), 1e-4, 1e-4)


def test_seeded_sampling_is_reproducible_and_top_k_1_is_greedy(runtime, exported):
    spec, program = exported["llama_small"]
    method = runtime.load(program).method()
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    greedy = generate(method, prompt, 24).tokens
    sampled = {seed: generate(method, prompt, 24, temperature=1.5, top_k=50, seed=seed).tokens for seed in (1, 2)}
    assert generate(method, prompt, 24, temperature=1.5, top_k=50, seed=1).tokens == sampled[1]
    assert sampled[1] != sampled[2] and sampled[1] != greedy
    assert generate(method, prompt, 24, temperature=0.7, top_k=1, seed=5).tokens == greedy
    # torch eager with the same sampler and seed draws the same tokens (its logits within rounding of Pare's).
    assert TorchDecoder(spec.module).generate(prompt, 6, temperature=1.5, top_k=50, seed=1).tokens == sampled[1][:6]


def test_the_sampler_draws_from_the_softmax_of_the_top_k():
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)) * 2.0  # temperature 2 undoes the * 2
    sampler = Sampler(temperature=2.0, seed=0)
    counts = np.bincount([sampler(logits) for _ in range(20000)], minlength=4) / 20000
    # 20,000 draws: a frequency's standard deviation is below 0.0035; 0.015 is over 4 of them.
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.3, 0.4], atol=0.015)
    top2 = Sampler(temperature=2.0, top_k=2, seed=0)
    counts = np.bincount([top2(logits) for _ in range(20000)], minlength=4) / 20000
    np.testing.assert_allclose(counts, [0.0, 0.0, 3 / 7, 4 / 7], atol=0.015)
    assert Sampler()(logits) == 3  # greedy by default
    for kwargs, message in (
        ({"temperature": -0.5}, "temperature must be a finite number >= 0"),
        ({"temperature": float("nan")}, "temperature must be a finite number >= 0"),
        ({"temperature": 1.0, "top_k": 0}, "top_k must be a whole number >= 1"),
        ({"top_k": 3}, "top_k needs a temperature > 0"),
    ):
        with pytest.raises(ValueError, match=message):
            Sampler(**kwargs)


def test_cli_samples_reproducibly(full_runtime, tmp_path, capsys):
    args = ["--runtime", str(full_runtime), "--steps", "10", "--rounds", "1", "-q", "--temperature", "1.2"]
    reports = []
    for seed in ("3", "3", "4"):
        out = tmp_path / f"gen{len(reports)}.json"
        assert main([str(LLM / "gpt2_small.py"), *args, "--top-k", "20", "--seed", seed, "--json", str(out)]) == 0
        reports.append(json.loads(out.read_text()))
    capsys.readouterr()
    assert reports[0]["tokens"] == reports[1]["tokens"] != reports[2]["tokens"]
    assert reports[0]["sampling"] == {"temperature": 1.2, "top_k": 20, "seed": 3}
