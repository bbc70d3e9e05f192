"""The fuse_attention pass and pare::sdpa (docs/llm.md, "Fused attention";
docs/tracer.md, "Graph passes"): the LLM specs' attention becomes one op
per layer, causal over input_pos; explicit masks and grouped-query heads
are fused and match a float64 reference; what the pass cannot prove (a mask
per head) stays on the unfused ops and still matches; the kernel's errors
name the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from pare.runtime import PareError
from pare.weight_only import quantize_weights
from tests.conftest import REPO_ROOT
from tests.runtime.runtime_testing import run_op
from tools.generate import TorchDecoder, compare, tolerance
from tools.tracer import export_model
from tools.tracer.model_spec import ModelSpec, load_model_spec

LLM = REPO_ROOT / "models" / "llm"
UNFUSED = ("aten::bmm", "aten::_softmax", "aten::where")

# Float32 attention against float64: the dot products (16 terms) and the
# softmax's sums (at most 40) each round by a few ulps of values below 10.
BOUND = {"rtol": 1e-5, "atol": 1e-5}


def counts(exported) -> dict[str, int]:
    return {run.name: dict(run.changes) for run in exported.passes}["fuse_attention"]


@pytest.mark.parametrize("name", ["llama_small", "gpt2_small", "gqa_small"])
def test_each_layers_attention_is_one_causal_op(runtime, name):
    spec = load_model_spec(LLM / f"{name}.py")
    fused = export_model(spec)
    assert counts(fused) == {"fused": 2, "causal": 2}  # 2 layers
    assert fused.op_counts["pare::sdpa"] == 2
    assert not any(op in fused.op_counts for op in UNFUSED)
    skipped = export_model(spec, passes=[n for n in _all_passes() if n != "fuse_attention"])
    assert "pare::sdpa" not in skipped.op_counts and skipped.op_counts["aten::bmm"] == 4
    # Both programs follow torch eager over a prefill and 24 decode steps.
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    rtol, atol = tolerance(spec)
    for program in (fused.program, skipped.program):
        check = compare(runtime.load(program).method(), TorchDecoder(spec.module), prompt, 24, rtol, atol)
        assert check.ok, check.failure


def test_a_quantized_spec_fuses_its_attention(runtime):
    spec = load_model_spec(LLM / "llama_small_int8.py")
    fused = export_model(spec)
    assert counts(fused) == {"fused": 2, "causal": 2}
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    rtol, atol = tolerance(spec)
    check = compare(runtime.load(fused.program).method(), TorchDecoder(spec.module), prompt, 16, rtol, atol)
    assert check.ok, check.failure


def spec_from(module: nn.Module, inputs) -> ModelSpec:
    return ModelSpec(LLM / "attention_inline.py", module.eval(), tuple(tuple(i) for i in inputs))


def _all_passes() -> tuple[str, ...]:
    from tools.tracer import passes

    return passes.names()


class Attend(nn.Module):
    """softmax(q K^T * scale + mask) V as the LLM models write it, keys and
    values repeated for grouped-query heads; `causal`: the mask made from
    positions as models/llm/_llm.py makes it."""

    def __init__(self, heads: int, kv_heads: int, length: int, causal: bool = False, scale: float | None = None):
        super().__init__()
        self.group = heads // kv_heads
        self.causal = causal
        self.scale = scale
        self.register_buffer("cache_positions", torch.arange(length), persistent=False)

    def forward(self, q, k, v, mask_or_pos):
        if self.group > 1:
            k = k.repeat_interleave(self.group, dim=1)
            v = v.repeat_interleave(self.group, dim=1)
        scores = torch.matmul(q, k.transpose(2, 3))
        if self.scale is not None:
            scores = scores * self.scale
        if self.causal:
            visible = self.cache_positions[None, :] <= mask_or_pos[:, None]
            mask = torch.zeros(visible.shape).masked_fill(~visible, float("-inf"))
        else:
            mask = mask_or_pos
        return torch.matmul((scores + mask).softmax(-1), v)


def reference(q, k, v, mask, heads, kv_heads, scale):
    """The attention in float64 on the same float32 values."""
    q, k, v, mask = q.double(), k.double(), v.double(), mask.double()
    k = k.repeat_interleave(heads // kv_heads, dim=1)
    v = v.repeat_interleave(heads // kv_heads, dim=1)
    scores = torch.matmul(q, k.transpose(2, 3)) * (1.0 if scale is None else scale) + mask
    return torch.matmul(scores.softmax(-1), v)


def _run(runtime, exported, inputs) -> torch.Tensor:
    method = runtime.load(exported.program).method()
    (out,) = method.run(*[x.numpy() for x in inputs])
    return torch.from_numpy(np.array(out))


def _inputs(heads, kv_heads, s, length, d, seed):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, heads, s, d, generator=gen)
    k = torch.randn(1, kv_heads, length, d, generator=gen)
    v = torch.randn(1, kv_heads, length, d, generator=gen)
    return q, k, v, gen


@pytest.mark.parametrize(
    "heads,kv_heads,s,length,d,scale",
    [(4, 4, 5, 40, 16, 0.25), (6, 2, 3, 70, 24, 1 / math.sqrt(24)), (2, 1, 1, 130, 48, None)],
)
def test_an_explicit_mask_is_added_as_it_is(runtime, heads, kv_heads, s, length, d, scale):
    q, k, v, gen = _inputs(heads, kv_heads, s, length, d, 7)
    mask = torch.randn(s, length, generator=gen)
    mask[torch.rand(s, length, generator=gen) < 0.3] = -math.inf
    mask[:, 0] = 0.0  # every row sees something
    module = Attend(heads, kv_heads, length, scale=scale)
    exported = export_model(spec_from(module, [(q, k, v, mask)]))
    assert counts(exported) == {"fused": 1, "causal": 0}
    assert not any(op in exported.op_counts for op in UNFUSED)
    got = _run(runtime, exported, (q, k, v, mask))
    torch.testing.assert_close(got.double(), reference(q, k, v, mask, heads, kv_heads, scale), **BOUND)


@pytest.mark.parametrize("heads,kv_heads,offset", [(4, 4, 0), (6, 3, 37), (2, 2, 120)])
def test_a_causal_mask_reads_each_rows_positions(runtime, heads, kv_heads, offset):
    # Rows at positions offset..offset+s-1 of a 128-position cache (130 past
    # the end: the row sees the whole cache); the kernel stops at each row's.
    s, length, d = 6, 128, 16
    q, k, v, _ = _inputs(heads, kv_heads, s, length, d, 11)
    pos = torch.arange(offset, offset + s)
    module = Attend(heads, kv_heads, length, causal=True, scale=0.25)
    exported = export_model(spec_from(module, [(q, k, v, pos)]))
    assert counts(exported) == {"fused": 1, "causal": 1}
    assert not any(op in exported.op_counts for op in (*UNFUSED, "aten::le.Tensor", "aten::bitwise_not"))
    got = _run(runtime, exported, (q, k, v, pos))
    mask = torch.where(torch.arange(length)[None, :] <= pos[:, None], 0.0, -math.inf)
    torch.testing.assert_close(got.double(), reference(q, k, v, mask, heads, kv_heads, 0.25), **BOUND)


def test_a_mask_broadcast_over_the_rows_stays_on_the_unfused_ops(runtime):
    # p of one element for 4 query rows: a [1, L] mask, causal in form, but
    # the kernel takes one position (or one mask row) a query row.
    q, k, v, _ = _inputs(2, 2, 4, 30, 8, 13)
    pos = torch.tensor([17])
    exported = export_model(spec_from(Attend(2, 2, 30, causal=True, scale=0.5), [(q, k, v, pos)]))
    assert counts(exported) == {"fused": 0, "causal": 0}
    got = _run(runtime, exported, (q, k, v, pos))
    mask = torch.where(torch.arange(30)[None, :] <= pos[:, None], 0.0, -math.inf).expand(4, 30)
    torch.testing.assert_close(got.double(), reference(q, k, v, mask, 2, 2, 0.5), **BOUND)


def test_a_row_with_nothing_visible_is_nan_as_in_torch(runtime):
    q, k, v, _ = _inputs(2, 2, 3, 20, 8, 3)
    mask = torch.zeros(3, 20)
    mask[1] = -math.inf
    exported = export_model(spec_from(Attend(2, 2, 20), [(q, k, v, mask)]))
    assert counts(exported)["fused"] == 1
    got = _run(runtime, exported, (q, k, v, mask))
    want = Attend(2, 2, 20)(q, k, v, mask)
    assert torch.isnan(got[:, :, 1]).all() and torch.isnan(want[:, :, 1]).all()
    torch.testing.assert_close(got.double(), reference(q, k, v, mask, 2, 2, None), equal_nan=True, **BOUND)


def test_a_mask_per_head_stays_on_the_unfused_ops(runtime):
    # [1, heads, S, L]: the kernel adds one [S, L] mask to every head; the
    # pass cannot prove this one is that, so torch's ops run it.
    q, k, v, gen = _inputs(4, 4, 5, 24, 16, 5)
    mask = torch.randn(1, 4, 5, 24, generator=gen)
    exported = export_model(spec_from(Attend(4, 4, 24, scale=0.25), [(q, k, v, mask)]))
    assert counts(exported) == {"fused": 0, "causal": 0}
    assert exported.op_counts["aten::bmm"] == 2 and "pare::sdpa" not in exported.op_counts
    got = _run(runtime, exported, (q, k, v, mask))
    torch.testing.assert_close(got.double(), reference(q, k, v, mask, 4, 4, 0.25), **BOUND)


def test_a_scale_that_is_a_tensor_stays_on_the_unfused_ops(runtime):
    class TensorScale(nn.Module):
        def forward(self, q, k, v, scale):
            return torch.matmul((torch.matmul(q, k.transpose(2, 3)) * scale).softmax(-1), v)

    q, k, v, _ = _inputs(2, 2, 3, 10, 8, 9)
    scale = torch.tensor(0.3)
    exported = export_model(spec_from(TensorScale(), [(q, k, v, scale)]))
    assert counts(exported)["fused"] == 0
    got = _run(runtime, exported, (q, k, v, scale))
    want = reference(q, k, v, torch.zeros(3, 10), 2, 2, 0.3)
    torch.testing.assert_close(got.double(), want, **BOUND)


@pytest.mark.parametrize(
    "k_shape,mask,pos,message",
    [
        ((1, 3, 10, 8), None, None, "arguments 'key' and 'value' must both be [1, kv_heads, positions, 8]"),
        ((1, 2, 10, 8), torch.zeros(3, 9), None, "argument 'mask' must be an additive Float [3, 10] mask"),
        ((1, 2, 10, 8), None, torch.arange(4), "argument 'input_pos' must be int64 [3]"),
    ],
)
def test_the_kernels_errors_name_the_argument(runtime, k_shape, mask, pos, message):
    q = torch.randn(1, 4, 3, 8)
    k = torch.randn(*k_shape)
    with pytest.raises(PareError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        run_op(runtime, "pare::sdpa", q, k, k.clone(), mask, pos, 0.5)
    assert e.value.status_name == "InvalidShape"
    assert "\n" not in str(e.value)


def test_quantize_weights_keeps_the_attention_fusable():
    # The weight-only twins quantize the linears only: the attention is the same graph.
    spec = load_model_spec(LLM / "gqa_small.py")
    model = quantize_weights(spec.module, bits=8)
    exported = export_model(ModelSpec(spec.path, model, spec.inputs))
    assert counts(exported) == {"fused": 2, "causal": 2}
