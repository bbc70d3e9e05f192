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
from torchao.quantization import (
    Int8DynamicActivationIntxWeightConfig,
    IntxWeightOnlyConfig,
    MappingType,
    quantize_,
)
from torchao.quantization.granularity import PerAxis, PerGroup

from pare import program_reader
from pare._format_table import TENSOR
from pare.runtime import Runtime
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


@pytest.fixture(scope="module")
def runtime(full_runtime) -> Runtime:
    return Runtime(full_runtime)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_torchao_quantized_llama_matches_torch_eager_step_by_step(runtime, name):
    config, (bits, group_size) = CONFIGS[name]
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
    check = compare(method, TorchDecoder(spec.module), prompt, 64, rtol, atol)
    assert check.ok, check.failure
    assert check.steps == 64 and check.max_abs_err < atol


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
