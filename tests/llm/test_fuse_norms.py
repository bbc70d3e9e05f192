"""The fuse_norms pass, pare::rms_norm and pare::rope (docs/llm.md, "Fused
norms and rotary embeddings"; docs/tracer.md, "Graph passes"): the Llama
specs' RMSNorms and rotary embeddings become one op each and follow torch
eager step by step; the kernels match a float64 reference on awkward shapes
(odd sizes, no gain, broadcast cos / sin, non-contiguous inputs); what the
pass cannot prove stays on the unfused ops; the kernels' errors name the
argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from pare.runtime import PareError
from tests.conftest import REPO_ROOT
from tests.runtime.runtime_testing import run_op
from tools.generate import TorchDecoder, compare, tolerance
from tools.tracer import export_model, passes
from tools.tracer.model_spec import ModelSpec, load_model_spec

LLM = REPO_ROOT / "models" / "llm"

# Float32 against float64: a row's sum of squares (up to 300 terms) and one
# product or two a value round by a few ulps of values below 10.
BOUND = {"rtol": 2e-5, "atol": 2e-6}


def counts(exported) -> dict[str, int]:
    return {run.name: dict(run.changes) for run in exported.passes}["fuse_norms"]


@pytest.mark.parametrize(
    "name,norms,ropes",
    [
        ("llama_small", 5, 4),  # 2 layers: two norms each and the final one; q and k rotated per layer
        ("gqa_small", 5, 4),
        ("llama_small_int8", 5, 4),  # the weight-only twins quantize the linears only
        ("gpt2_small", 0, 0),  # LayerNorm and learned positions: nothing to fuse
    ],
)
def test_each_norm_and_rotation_is_one_op_and_follows_torch(runtime, name, norms, ropes):
    spec = load_model_spec(LLM / f"{name}.py")
    fused = export_model(spec)
    assert counts(fused) == {"rms_norm": norms, "rope": ropes}
    assert fused.op_counts.get("pare::rms_norm", 0) == norms and fused.op_counts.get("pare::rope", 0) == ropes
    if norms:
        assert not any(op in fused.op_counts for op in ("aten::rsqrt", "aten::pow.Tensor_Scalar", "aten::stack"))
    skipped = export_model(spec, passes=[n for n in passes.names() if n != "fuse_norms"])
    assert "pare::rms_norm" not in skipped.op_counts and "pare::rope" not in skipped.op_counts
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    rtol, atol = tolerance(spec)
    for program in (fused.program, skipped.program):
        check = compare(runtime.load(program).method(), TorchDecoder(spec.module), prompt, 24, rtol, atol)
        assert check.ok, check.failure


class Norm(nn.Module):
    """RMSNorm as the LLM models write it; `gain`: with its weight mul."""

    def __init__(self, d: int, gain: bool = True, eps: float = 1e-5):
        super().__init__()
        self.eps, self.gain = eps, gain
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(d, generator=torch.Generator().manual_seed(3)))

    def forward(self, x):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return y * self.weight if self.gain else y


class Rotate(nn.Module):
    """The rotary embedding of models/llm/_llm.py on x [B, S, H, D]; cos / sin [S, D / 2]."""

    def __init__(self, swapped: bool = False):
        super().__init__()
        self.swapped = swapped

    def forward(self, x, cos, sin):
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        real, imag = pairs[..., 0], pairs[..., 1]
        cos, sin = cos[None, :, None, :], sin[None, :, None, :]
        if self.swapped:  # the operands of each mul and of the add the other way round
            out = torch.stack((cos * real - sin * imag, cos * imag + sin * real), dim=-1)
        else:
            out = torch.stack((real * cos - imag * sin, real * sin + imag * cos), dim=-1)
        return out.flatten(3)


def spec_from(module: nn.Module, inputs) -> ModelSpec:
    return ModelSpec(LLM / "norms_inline.py", module.eval(), tuple(tuple(i) for i in inputs))


def _run(runtime, exported, inputs) -> torch.Tensor:
    method = runtime.load(exported.program).method()
    (out,) = method.run(*[x.numpy() for x in inputs])
    return torch.from_numpy(np.array(out))


def rms_reference(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    x = x.double()
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * weight.double() if weight is not None else y


def rope_reference(pairs: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x0, x1, c, s = pairs[..., 0].double(), pairs[..., 1].double(), cos.double(), sin.double()
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1)


@pytest.mark.parametrize("shape,gain", [((3, 7), True), ((1, 5, 288), True), ((2, 4, 33), False), ((1,), True)])
def test_a_norm_module_fuses_and_matches_float64(runtime, shape, gain):
    x = 3.0 * torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    module = Norm(shape[-1], gain)
    exported = export_model(spec_from(module, [(x,)]))
    assert counts(exported)["rms_norm"] == 1 and exported.op_counts["pare::rms_norm"] == 1
    got = _run(runtime, exported, (x,))
    torch.testing.assert_close(got.double(), rms_reference(x, module.weight.detach() if gain else None, 1e-5), **BOUND)


@pytest.mark.parametrize("swapped", [False, True])
def test_a_rotation_fuses_either_operand_order_and_matches_float64(runtime, swapped):
    gen = torch.Generator().manual_seed(2)
    x, angles = torch.randn(1, 5, 3, 10, generator=gen), torch.rand(5, 5, generator=gen) * 6
    exported = export_model(spec_from(Rotate(swapped), [(x, angles.cos(), angles.sin())]))
    assert counts(exported)["rope"] == 1 and exported.op_counts["pare::rope"] == 1
    got = _run(runtime, exported, (x, angles.cos(), angles.sin()))
    want = rope_reference(x.reshape(1, 5, 3, 5, 2), angles.cos()[None, :, None], angles.sin()[None, :, None])
    torch.testing.assert_close(got.double(), want.flatten(3), **BOUND)


def test_the_kernels_take_non_contiguous_and_broadcast_operands(runtime):
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(6, 9, generator=gen).t()  # [9, 6], transposed
    w = torch.randn(6, generator=gen)
    got = run_op(runtime, "pare::rms_norm", x, w, 1e-6)
    torch.testing.assert_close(got.double(), rms_reference(x, w, 1e-6), **BOUND)
    pairs = torch.randn(2, 3, 4, 7, 2, generator=gen).transpose(1, 2)  # [2, 4, 3, 7, 2]
    for cos_shape in [(1, 4, 1, 7), (2, 4, 3, 7), (1, 1, 1, 1), (2, 1, 3, 1)]:
        cos, sin = torch.randn(*cos_shape, generator=gen), torch.randn(*cos_shape, generator=gen)
        got = run_op(runtime, "pare::rope", pairs, cos, sin)
        torch.testing.assert_close(got.double(), rope_reference(pairs, cos, sin), **BOUND)


def test_what_the_pass_cannot_prove_stays_on_the_unfused_ops(runtime):
    class OverDim1(nn.Module):  # a norm over another dim than the last
        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + 1e-5)

    class Cubed(nn.Module):  # not a square
        def forward(self, x):
            return x * torch.rsqrt(x.pow(3).abs().mean(-1, keepdim=True) + 1e-5)

    x = torch.randn(2, 6, 5, generator=torch.Generator().manual_seed(5))
    for module, want in ((OverDim1(), OverDim1()(x)), (Cubed(), Cubed()(x))):
        exported = export_model(spec_from(module, [(x,)]))
        assert counts(exported) == {"rms_norm": 0, "rope": 0} and "pare::rms_norm" not in exported.op_counts
        torch.testing.assert_close(_run(runtime, exported, (x,)), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "op,args,message",
    [
        ("pare::rms_norm", (torch.randn(2, 4), torch.randn(5), 1e-5), "argument 'weight' must be Float [4]"),
        ("pare::rope", (torch.randn(2, 3, 3), torch.randn(2, 3), torch.randn(2, 3)), "argument 'pairs' must be"),
        (
            "pare::rope",
            (torch.randn(2, 3, 2), torch.randn(3), torch.randn(3)),
            "arguments 'cos' and 'sin' must be Float of 2 dims",
        ),
    ],
)
def test_the_kernels_errors_name_the_argument(runtime, op, args, message):
    with pytest.raises(PareError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
        run_op(runtime, op, *args)
    assert e.value.status_name == "InvalidShape"
    assert "\n" not in str(e.value)
