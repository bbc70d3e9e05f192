"""Pare's own memory while an LLM generates (issue 48; docs/llm.md, "Memory
while generating"): counted by the recording PAL of //runtime:full_test_double,
a prefill and decode steps hold at most the weights plus the KV cache plus
10%, and a second instance of the program adds its own cache and slots but
no copy of the weights."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from pare.runtime import Runtime
from pare.weight_only import quantize_weights
from tests.conftest import REPO_ROOT, bazel_build
from tools.bench.llm_memory import BOUND, measure, pal_stats
from tools.tracer import export_model
from tools.tracer.model_spec import ModelSpec

LLM = REPO_ROOT / "models" / "llm"


@pytest.fixture(scope="module")
def test_double_runtime() -> Runtime:
    """The full runtime linked with the recording PAL: $PARE_TEST_DOUBLE_RUNTIME_LIB,
    else Bazel's //runtime:full_test_double."""
    value = os.environ.get("PARE_TEST_DOUBLE_RUNTIME_LIB")
    if value:
        return Runtime(value)
    out = bazel_build("//runtime:full_test_double")
    return Runtime(out / "runtime" / "full_test_double" / "linux_x86_64" / "libpare_full_test_double.so")


def _llm_module():
    spec = importlib.util.spec_from_file_location("_llm_for_memory", LLM / "_llm.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass resolves annotations through it
    spec.loader.exec_module(module)
    return module


def mid_model(bits: int | None):
    """A Llama of the models' architecture whose weights (19 MB in float32, 11 MB int8)
    outweigh the runtime's fixed cost per program and instance (value
    slots, plans, the prefill's arena: about 0.6 MB), as stories15M's 98 MB do;
    the small test specs' 0.6 MB do not."""
    llm = _llm_module()
    config = llm.Config("llama", dim=128, layers=2, heads=4, kv_heads=4, vocab=16384, hidden=384, max_seq=64)
    model, inputs = llm.spec(config)
    if bits is not None:
        model = quantize_weights(model, bits=bits)
    return ModelSpec(Path("llama_mid.py"), model, inputs)


@pytest.mark.parametrize("bits", [None, 8], ids=["fp32", "int8"])
def test_generation_holds_the_weights_once_plus_the_kv_cache_within_10_percent(test_double_runtime, bits):
    rt = test_double_runtime
    spec = mid_model(bits)
    program = export_model(spec).program
    prompt = list(range(1, 49))  # a 48-token prefill: its planning run's blocks were 20% of the weights
    base = pal_stats(rt).live_bytes
    one, two = measure(rt, program, spec.module, prompt, 12, 2)
    assert pal_stats(rt).live_bytes == base  # all freed with the program and its instances
    weights, kv = one["weights_bytes"], one["kv_cache_bytes"]
    assert kv == 2 * 2 * 64 * 128 * 4  # the method's state: k and v caches of both layers
    for row in (one, two):
        n = row["instances"]
        assert row["peak_bytes"] <= BOUND * (weights + n * kv), (row, weights, kv)
    # The second instance holds its own cache and slots, no weights.
    growth = two["held_bytes"] - one["held_bytes"]
    assert kv <= growth < kv + weights / 20, (growth, weights, kv)


def test_a_planning_run_holds_no_more_than_its_plans_arena(test_double_runtime):
    # A planning run serves each block outside the arena and frees it after
    # its last reader: it peaks at the plan's live blocks, about the arena
    # the plan's replays hold, not at the sum of every block (1.2 MB here,
    # 16 MB for stories15M's 64-token prefill).
    rt = test_double_runtime
    program = rt.load(export_model(mid_model(None)).program)
    method = program.method()
    tokens, positions = np.arange(1, 49, dtype=np.int64)[None], np.arange(48, dtype=np.int64)
    peaks = []
    for _ in range(2):  # plans, then replays its plan in the arena
        rt._lib.pare_test_pal_reset()
        base = pal_stats(rt).live_bytes
        method.run(tokens, positions)
        peaks.append(pal_stats(rt).peak_bytes - base)
    stats = method.memory_stats()
    assert stats.num_plans == 1 and stats.arena_bytes == stats.planned_arena_bytes
    planning = peaks[0]
    # Within 10% of the arena: the PAL's block headers and alignment.
    assert planning <= 1.1 * stats.arena_bytes, (planning, stats)
    method.close()
    program.close()
