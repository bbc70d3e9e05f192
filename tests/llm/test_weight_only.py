"""Weight-only quantized linears (docs/llm.md, "Quantized weights"):
pare.weight_only's modules, the tracer's weight_only pass and
pare::weight_only_linear, against torch eager running the same quantized
module (lockstep over 64 decode steps) and against a float64 reference of
the dequantized weights; every ISA copy of the kernel gives the same bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from pare.program import ProgramBuilder
from pare.runtime import PareError
from pare.weight_only import WeightOnlyError, WeightOnlyLinear, quantize_weights
from tests.conftest import REPO_ROOT
from tools.generate import TorchDecoder, compare, tolerance
from tools.tracer import export_model
from tools.tracer.model_spec import ModelSpec, load_model_spec
from tools.tracer.passes.weight_only import packed_weight

LLM = REPO_ROOT / "models" / "llm"
# Their linear layers: the small specs', and the zoo's full-size twins of gpt2 (biases) and llama_gqa.
QUANTIZED = {
    "llama_small_int8": 15,
    "llama_small_int4": 15,
    "gpt2_small_int8": 13,
    "gpt2_int8": 37,
    "gpt2_int4": 37,
    "llama_gqa_int8": 43,
    "llama_gqa_int4": 43,
}
ISAS = ("x86_64_baseline", "x86_64_v3", "x86_64_v4")


@pytest.mark.parametrize("name", sorted(QUANTIZED))
def test_quantized_models_match_torch_eager_for_64_steps(runtime, name):
    spec = load_model_spec(LLM / f"{name}.py")
    result = export_model(spec)
    # Every linear runs as pare::weight_only_linear; no float weight is prepacked.
    assert result.op_counts["pare::weight_only_linear"] == QUANTIZED[name]
    assert "pare::linear_prepacked" not in result.op_counts
    method = runtime.load(result.program).method()
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    rtol, atol = tolerance(spec)
    check = compare(method, TorchDecoder(spec.module), prompt, 64, rtol, atol)
    assert check.ok, check.failure
    assert check.steps == 64 and check.max_abs_err < atol


def _program(out_features, in_features, bits, group, bias, rows_shape):
    """A program running pare::weight_only_linear on input [*rows_shape,
    in_features] with a seeded WeightOnlyLinear's weights; returns (program,
    the module)."""
    torch.manual_seed(out_features * 7 + in_features + bits)
    linear = nn.Linear(in_features, out_features, bias=bias)
    with torch.no_grad():
        linear.weight.normal_(0, 0.05)
    module = WeightOnlyLinear(linear, bits, group).eval()
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [*rows_shape, in_features])
    scales = module.scales.reshape(out_features, -1).contiguous()
    w = packed_weight(module.weight_int8, bits)
    m.output(m.op("pare::weight_only_linear", x, w, scales, module.bias, bits, group or in_features))
    return pb.to_bytes(), module


CASES = [
    # (out, in, bits, group (None: per channel), bias, input rows)
    (72, 288, 8, None, False, (1,)),
    (33, 64, 8, None, True, (5,)),
    (40, 96, 8, 32, True, (2, 3)),
    (17, 128, 4, 32, False, (1,)),
    (64, 256, 4, 64, True, (7,)),
    (130, 160, 4, 32, True, (1, 1)),
]


@pytest.mark.parametrize("out_features, in_features, bits, group, bias, rows", CASES)
def test_kernel_matches_a_float64_reference_and_every_isa_copy_gives_the_same_bits(
    runtime, out_features, in_features, bits, group, bias, rows
):
    data, module = _program(out_features, in_features, bits, group, bias, rows)
    x = torch.randn(*rows, in_features, generator=torch.Generator().manual_seed(3))
    w64 = module.dequantized_weight().double()
    expected = x.double() @ w64.T + (module.bias.double() if bias else 0)
    # Products and sums of in_features float32 terms: a dot-product bound.
    bound = 4 * in_features * 2**-24 * (x.double().abs() @ w64.abs().T) + 1e-30
    outs = {}
    try:
        for isa in ISAS:
            if isa not in _host_isas(runtime):
                continue
            runtime.set_max_isa(isa)
            got = runtime.load(data).method().run(x.numpy())[0]
            assert got.shape == (*rows, out_features)
            assert (np.abs(got - expected.numpy()) <= bound.numpy()).all(), isa
            outs[isa] = got
    finally:
        runtime.set_max_isa("x86_64_v4")
    first = next(iter(outs.values()))
    for isa, got in outs.items():
        assert np.array_equal(got.view(np.uint32), first.view(np.uint32)), f"{isa} differs from {next(iter(outs))}"
    # Torch eager's quantized module within the same bound of the reference.
    assert ((module(x).detach().double() - expected).abs() <= bound).all()


def _host_isas(runtime):
    from tests import skip_gate

    if runtime.kernel_isa not in ISAS:  # an arm64 runtime: its one copy
        return [runtime.kernel_isa]
    return skip_gate.host_isa_copies()


def test_kernel_errors_name_the_argument(runtime):
    pb = ProgramBuilder()
    m = pb.method("forward")
    x = m.input("Float", [1, 64])
    w = torch.zeros(8, 64, dtype=torch.int8)
    m.output(m.op("pare::weight_only_linear", x, w, torch.ones(8, 2), None, 8, 24))
    method = runtime.load(pb.to_bytes()).method()
    with pytest.raises(PareError, match="argument 'group_size' 24 must divide the input's 64 features") as e:
        method.run(np.zeros((1, 64), np.float32))
    assert e.value.status_name == "InvalidArgument"


def test_a_non_symmetric_weight_stays_on_the_reference_path():
    class Asymmetric(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("q", torch.randint(-128, 127, (8, 32), dtype=torch.int8))
            self.register_buffer("scales", torch.rand(8) + 0.5)
            self.register_buffer("zero_points", torch.full((8,), 3))

        def forward(self, x):
            w = torch.ops.quantized_decomposed.dequantize_per_channel(
                self.q, self.scales, self.zero_points, 0, -128, 127, torch.int8
            )
            return nn.functional.linear(x, w)

    spec = ModelSpec(LLM / "asymmetric.py", Asymmetric().eval(), ((torch.randn(2, 32),),))
    result = export_model(spec)
    assert "pare::weight_only_linear" not in result.op_counts


def test_quantize_weights_refuses_what_the_kernel_does_not_run():
    with pytest.raises(WeightOnlyError, match="bits=4 needs a group_size"):
        quantize_weights(nn.Sequential(nn.Linear(64, 8)), bits=4)
    with pytest.raises(WeightOnlyError, match="group_size must be a multiple of 32, got 48"):
        quantize_weights(nn.Sequential(nn.Linear(96, 8)), bits=4, group_size=48)
    with pytest.raises(WeightOnlyError, match=r"0: in_features 40 is not a multiple of 16.*skip=\['0'\]"):
        quantize_weights(nn.Sequential(nn.Linear(40, 8)), bits=8)
    model = quantize_weights(nn.Sequential(nn.Linear(40, 8), nn.Linear(8, 32)), bits=8, skip=["0", "1"])
    assert isinstance(model[0], nn.Linear) and isinstance(model[1], nn.Linear)


def test_int4_packing_round_trips():
    q = torch.randint(-8, 8, (3, 64), dtype=torch.int8)
    packed = packed_weight(q, 4)
    assert packed.dtype == torch.uint8 and packed.shape == (3, 32)
    blocks = packed.reshape(3, 2, 16).to(torch.int32)
    low, high = blocks & 0xF, blocks >> 4
    unpacked = torch.cat([low, high], dim=-1).reshape(3, 64)
    assert torch.equal(((unpacked ^ 8) - 8).to(torch.int8), q)


@pytest.mark.parametrize("bits, group", [(8, None), (4, 32)])
def test_a_prefill_gives_each_rows_decode_bits(runtime, bits, group):
    # Many input rows decode the weights to floats once and sum in the
    # single row's order: row i of a 9-row call equals a 1-row call on it.
    data, _ = _program(70, 96, bits, group, True, (None,))
    method = runtime.load(data).method()
    x = torch.randn(9, 96, generator=torch.Generator().manual_seed(5)).numpy()
    many = method.run(x)[0]
    for i in range(9):
        one = method.run(x[i : i + 1])[0]
        assert np.array_equal(one[0].view(np.uint32), many[i].view(np.uint32)), i
