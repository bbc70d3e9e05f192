"""torchao's `quantize_` on the small Llama (docs/llm.md, "Quantized
weights"): IntxWeightOnlyConfig (int8 per channel, int8 and int4 per group)
and Int8DynamicActivationIntxWeightConfig export to pare::weight_only_linear
on int8 (packed int4) weights, run on Pare step by step against torch eager
running the same quantized module, and a scheme the kernel does not run is
a one-line export error (tools/tracer/torchao_weights.py)."""

from __future__ import annotations

import math
import re

import pytest
import torch
from torch import nn
from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    IntxWeightOnlyConfig,
    MappingType,
    quantize_,
)
from torchao.quantization.granularity import PerAxis, PerGroup

from pare import program_reader
from pare._format_table import TENSOR
from pare.weight_only import quantize_weights
from tests.conftest import REPO_ROOT
from tools.generate import TorchDecoder, compare, tolerance
from tools.tracer import TracerError, export_model
from tools.tracer.model_spec import ModelSpec, load_model_spec

LLM = REPO_ROOT / "models" / "llm"
LINEARS = 15  # the small Llama's linear layers, the output projection included

CONFIGS = {
    # name: (torchao config, pare.weight_only's (bits, group_size) for the same weights)
    "int8_per_channel": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)), (8, None)),
    "int8_groups_of_64": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerGroup(64)), (8, 64)),
    "int4_groups_of_32": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)), (4, 32)),
    "int4_groups_of_64": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(64)), (4, 64)),
}
# Int8DynamicActivationIntxWeightConfig also quantizes each linear's input
# per token (asymmetric int8), a rounding a one-ulp difference upstream can
# flip (e.g. torch's scalar RMSNorm under ATEN_CPU_CAPABILITY=default): its
# exact check is the single layer's below, on the same input; the model runs
# the spec's sequence and 8 greedy steps.
DYNAMIC = {
    "int8_activations_int4_groups_of_32": (
        lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(32)),
        (4, 32),
    ),
    "int8_activations_int8_per_channel": (
        lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0)),
        (8, None),
    ),
}


def _llama() -> ModelSpec:
    """models/llm/llama_small.py: SMALL["llama"], seeded (a fresh copy a call)."""
    return load_model_spec(LLM / "llama_small.py")


def _quantized_spec(config) -> ModelSpec:
    spec = _llama()
    quantize_(spec.module, config)
    return spec


def _weight_only_weights(program: bytes) -> list[tuple[str, tuple[int, ...]]]:
    """(dtype, shape) of every pare::weight_only_linear's weight constant."""
    method = program_reader.read(program).methods[0]
    return sorted(
        (method.values[i.inputs[1]].dtype, tuple(method.values[i.inputs[1]].sizes))
        for i in method.instructions
        if i.op == "pare::weight_only_linear"
    )


def _float_constant_bytes(program: bytes) -> int:
    method = program_reader.read(program).methods[0]
    return sum(4 * math.prod(v.sizes) for v in method.values if v.constant and v.kind == TENSOR and v.dtype == "Float")


@pytest.mark.parametrize("name", sorted(CONFIGS) + sorted(DYNAMIC))
def test_torchao_quantized_llama_matches_torch_eager_step_by_step(runtime, name):
    config, (bits, group_size) = {**CONFIGS, **DYNAMIC}[name]
    steps = 64 if name in CONFIGS else 8
    spec = _quantized_spec(config())
    result = export_model(spec)
    # Every linear runs on its int8 (packed int4) weight: none is a float one.
    assert result.op_counts["pare::weight_only_linear"] == LINEARS
    assert "pare::linear_prepacked" not in result.op_counts and "aten::mm" not in result.op_counts
    # The program holds int8 (packed int4) weights, the float constants of
    # pare.weight_only's export of the same scheme (embedding, norms, rope
    # tables, scales) and nothing more that is float.
    own = _llama()
    quantize_weights(own.module, bits, group_size)
    own = export_model(own)
    weights = _weight_only_weights(result.program)
    assert len(weights) == LINEARS and weights == _weight_only_weights(own.program)
    assert {dtype for dtype, _ in weights} == {"Char" if bits == 8 else "Byte"}
    assert _float_constant_bytes(result.program) <= _float_constant_bytes(own.program) + 1024
    method = runtime.load(result.program).method()
    prompt = [int(t) for t in spec.inputs[0][0].reshape(-1)]
    rtol, atol = tolerance(spec)
    check = compare(method, TorchDecoder(spec.module), prompt, steps, rtol, atol)
    assert check.ok, check.failure
    assert check.steps == steps and check.max_abs_err < atol


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_dynamic_activations_round_as_torch_and_the_linear_is_within_a_dot_product_bound(runtime, name):
    # The input's per-token int8 fake quantization runs as its decomposed
    # ops on Pare: on the same input it gives torch's values exactly, so
    # Pare's and torch's outputs are each within the dot product's float32
    # bound of a float64 reference on torch's quantized input and weight.
    torch.manual_seed(11)
    layer = nn.Sequential(nn.Linear(128, 40))
    quantize_(layer, DYNAMIC[name][0]())
    x = torch.randn(1, 5, 128, generator=torch.Generator().manual_seed(12))
    result = export_model(ModelSpec(LLM / "linear_torchao.py", layer.eval(), ((x,),)))
    assert result.op_counts["pare::weight_only_linear"] == 1
    got = torch.from_numpy(runtime.load(result.program).method().run(x.numpy())[0]).double()
    block = [1, 1, 128]
    scale, zero = torch.ops.torchao.choose_qparams_affine(
        x, "ASYMMETRIC", block, torch.int8, -128, 127, None, None, torch.int8
    )
    q = torch.ops.torchao.quantize_affine(x, block, scale, zero, torch.int8, -128, 127)
    a = torch.ops.torchao.dequantize_affine(q, block, scale, zero, torch.int8, -128, 127).double()
    w = layer[0].weight.dequantize().double()
    expected = a @ w.T + layer[0].bias.double()
    bound = 4 * 128 * 2**-24 * (a.abs() @ w.abs().T + layer[0].bias.double().abs()) + 1e-30
    assert ((got - expected).abs() <= bound).all()
    assert ((layer(x).detach().double() - expected).abs() <= bound).all()


@pytest.mark.parametrize(
    "config, message",
    [
        (
            lambda: IntxWeightOnlyConfig(
                weight_dtype=torch.int4, granularity=PerGroup(32), mapping_type=MappingType.ASYMMETRIC
            ),
            r"has non-zero zero points \(an asymmetric mapping_type\), which pare::weight_only_linear does not run; "
            r"quantize with mapping_type=MappingType.SYMMETRIC",
        ),
        (
            lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(16)),
            r"in groups of 16 \(4-bit values\), which pare::weight_only_linear does not run; "
            r"use a group size that is a multiple of 32",
        ),
        (
            lambda: IntxWeightOnlyConfig(weight_dtype=torch.int2, granularity=PerGroup(32)),
            r"from torch.int8 in \[-2, 1\], which pare::weight_only_linear does not run; quantize it with "
            r"IntxWeightOnlyConfig",
        ),
    ],
)
def test_a_scheme_the_kernel_does_not_run_is_a_one_line_export_error(config, message):
    spec = _quantized_spec(config())
    with pytest.raises(TracerError, match=r"blocks\.0\.attention\.wq\.weight \(dequantize_affine\w*\): ") as e:
        export_model(spec)
    assert "\n" not in str(e.value)
    assert e.value.args[0].startswith(str(spec.path))
    assert re.search(message, str(e.value)), str(e.value)
