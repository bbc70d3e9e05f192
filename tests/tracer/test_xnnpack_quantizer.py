"""ExecuTorch's XNNPACKQuantizer's output runs on Pare (issue 44, item 1).

tests/tracer/xnnpack_fixture.py quantizes tests/tracer/models/quantized_cnn.py's CNN with
XNNPACKQuantizer in .venv-executorch and hands it over with torch.export.save;
here it is loaded, traced on the instrumentation runtime and checked against
torch eager on the full runtime, and PareQuantizer(int32_bias=False) is shown
to convert the same CNN to the same program. Stays under pytest, out of
//tests:tracer_test: .venv-executorch is no Bazel input (docs/testing.md).
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest
import torch
from tracer_testlib import HERE, MODELS, counts_of

from pare.quantizer import PareQuantizer
from tools.bench.executorch_peer import VENV, available, child_env, python_of
from tools.tracer import check_model, export_model, trace_model
from tools.tracer import passes as graph_passes
from tools.tracer.model_spec import ModelSpec, load_model_spec

REFERENCE = ",".join(graph_passes.resolve("default", skip="quantize"))

# A model spec as a user would write one around torch.export.save's file.
SPEC = '''"""tests/tracer/xnnpack_fixture.py's program, XNNPACKQuantizer's quantized_cnn."""
from pathlib import Path

import torch

HERE = Path(__file__).parent


def build():
    return torch.export.load(HERE / "program.pt2").module(), torch.load(HERE / "inputs.pt")
'''


@pytest.fixture(scope="module")
def xnnpack_dir(tmp_path_factory) -> Path:
    ready = available()
    if not ready:  # setup installs it: a missing venv is a broken setup, not a skip
        pytest.fail(f"{ready.detail} (tools/setup.sh runs it)", pytrace=False)
    out = tmp_path_factory.mktemp("xnnpack")
    proc = subprocess.run(
        [str(python_of(VENV)), str(HERE / "xnnpack_fixture.py"), str(out / "program.pt2"), str(out / "inputs.pt")],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"xnnpack_fixture.py failed in {VENV}:\n{proc.stderr[-4000:]}", pytrace=False)
    (out / "xnnpack_quantized_cnn.py").write_text(SPEC)
    return out


@pytest.fixture(scope="module")
def xnnpack_spec(xnnpack_dir) -> ModelSpec:
    return load_model_spec(xnnpack_dir / "xnnpack_quantized_cnn.py")


def test_an_xnnpack_quantized_cnn_is_traced_and_matches_torch(xnnpack_spec, tracing_lib, full_lib):
    # The reference path (quantize blocklisted); test_xnnpack_quantized_cnn_runs_int8_layers: the int8 layers.
    result = trace_model(xnnpack_spec, runtime=tracing_lib, passes=REFERENCE)
    m = result.manifest
    assert {
        "quantized_decomposed::quantize_per_tensor",
        "quantized_decomposed::dequantize_per_tensor",
        "quantized_decomposed::dequantize_per_channel",
        "aten::convolution",
        "aten::add.Tensor",
    } <= set(m.operators)
    assert m.kernel_metadata["quantize_per_tensor_kernel"] == ("Char",)
    # int8 weights; XNNPACKQuantizer leaves biases float, so no Int here
    assert m.kernel_metadata["dequantize_per_channel_kernel"] == ("Char",)
    assert all(c.ok for c in result.checks)
    checks = check_model(xnnpack_spec, full_lib, passes=REFERENCE)
    line = checks[0].outputs[0].line()
    assert line.startswith("output 0 Float[2, 10]: ok, quantized (step ") and "within 3 steps" in line
    assert all(c.ok for c in checks)


def test_xnnpack_quantized_cnn_runs_int8_layers(xnnpack_spec, full_lib):
    # The quantize pass (on by default) takes XNNPACKQuantizer's float biases too.
    exported = export_model(xnnpack_spec)
    counts = counts_of(exported)["quantize"]
    # The residual add (+ relu) and the mean run on int8 too (pare::qadd, pare::qmean).
    assert counts == {"conv2d": 2, "linear": 1, "add": 1, "mul": 0, "mean": 1, "pool": 0, "cat": 0, "view": 0, "lut": 0}
    checks = check_model(xnnpack_spec, full_lib, program=exported.program)
    line = checks[0].outputs[0].line()
    assert line.startswith("output 0 Float[2, 10]: ok, quantized (step ") and "within 3 steps" in line
    assert all(c.ok for c in checks)


def test_pare_quantizer_without_int32_bias_converts_as_xnnpack_quantizer(xnnpack_dir):
    # docs/quantization.md: the two configure identically. Same calibration,
    # so the same program: every op, scale and zero point, every constant.
    xnnpack = torch.export.load(xnnpack_dir / "program.pt2")
    spec = importlib.util.spec_from_file_location("quantized_cnn_for_xnnpack", MODELS / "quantized_cnn.py")
    quantized_cnn = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(quantized_cnn)
    converted, inputs = quantized_cnn.quantized(PareQuantizer(int32_bias=False))
    pare = torch.export.export(converted, inputs[0])
    assert pare.graph_module.code == xnnpack.graph_module.code
    assert pare.state_dict.keys() == xnnpack.state_dict.keys()
    for name, value in xnnpack.state_dict.items():
        assert torch.equal(pare.state_dict[name], value), name
