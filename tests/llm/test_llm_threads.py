"""An LLM on the method's threads (build feature threads; docs/llm.md): at
threads=2 the prefill's and decode steps' linears (float and weight-only
int8), attention and output projection split their outputs over the
threads, and every step's logits are torch eager's within the float
tolerance and bitwise those of one thread."""

from __future__ import annotations

import numpy as np
import pytest

from pare.generate import generate
from tests.llm.test_memory import mid_model
from tools.generate import TorchDecoder, compare, tolerance
from tools.tracer import export_model


@pytest.mark.parametrize("bits", [None, 8], ids=["fp32", "int8"])
def test_two_threads_match_torch_eager_and_one_thread_bit_for_bit(runtime, bits):
    # dim 128, MLP 384, vocabulary 16,384: a 48-token prefill's linears and
    # attention, and each decode step's output projection (2.1M
    # multiply-adds), are large enough to split (KernelContext::chunks_for).
    spec = mid_model(bits)
    program = runtime.load(export_model(spec).program)
    prompt = list(range(1, 49))
    one, two = program.method(), program.method()
    two.set_num_threads(2)
    assert two.num_threads == 2
    rtol, atol = tolerance(spec)
    check = compare(two, TorchDecoder(spec.module), prompt, 16, rtol, atol)
    assert check.ok, check.failure
    assert check.steps == 16 and check.max_abs_err < atol
    a = generate(one, prompt, 16, keep_logits=True)
    b = generate(two, prompt, 16, keep_logits=True)
    assert a.tokens == b.tokens
    for x, y in zip(a.logits, b.logits):
        np.testing.assert_array_equal(x, y)
