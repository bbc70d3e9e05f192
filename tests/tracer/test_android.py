"""check on an Android arm64 runtime, run under qemu-aarch64 through the
emulator harness's `run` mode (an emulated stand-in for a device). Uses
PARE_ANDROID_RUNTIME_LIB and PARE_HARNESS_DIR when set; otherwise builds
Bazel's //runtime:full (android_arm64) and //tools/android_harness:harness."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from tracer_testlib import exported, spec_of

from tests.conftest import bazel_build, require_tool
from tests.runtime.runtime_testing import half_rounding_cases, single_op_program
from tools.android_harness import run as harness
from tools.tracer import check_model
from tools.tracer.runner import library_kind


@pytest.fixture(scope="module")
def android_lib() -> Path:
    require_tool("qemu-aarch64", "qemu-aarch64-static", package="qemu-user")
    if not os.environ.get("PARE_HARNESS_DIR"):  # unset: the harness runner uses Bazel's output
        bazel_build("//tools/android_harness:harness")
    if os.environ.get("PARE_ANDROID_RUNTIME_LIB"):
        return Path(os.environ["PARE_ANDROID_RUNTIME_LIB"])
    return bazel_build("//runtime:full") / "runtime" / "full" / "android_arm64" / "libpare_full.so"


def test_check_runs_the_android_runtime_under_the_harness(android_lib):
    assert library_kind(android_lib) == "android_arm64"
    checks = check_model(spec_of("multi_dtype"), android_lib)
    assert [c.method for c in checks] == ["forward", "forward_int64_int64", "forward", "forward_float64_float64"]
    assert all(c.ok for c in checks)


def test_harness_run_mode_outputs_and_errors(android_lib):
    program = exported("tiny_mlp").program
    x = harness.TensorData(6, (2, 12), bytes(2 * 12 * 4))  # zeros
    probs, batch = harness.run_program(android_lib, program, "forward", [x])
    assert batch == 2
    assert probs.dtype == 6 and probs.sizes == (2, 5) and len(probs.data) == 2 * 5 * 4
    with pytest.raises(harness.HarnessError, match="pare_method_create failed: .*nope"):
        harness.run_program(android_lib, program, "nope", [x])
    with pytest.raises(harness.HarnessError, match="pare_method_set_input failed"):
        harness.run_program(android_lib, program, "forward", [harness.TensorData(6, (2, 7), bytes(2 * 7 * 4))])


def test_fast_kernels_match_torch_on_android_arm64(android_lib):
    # The NEON builds of the vectorised depthwise kernels and the GEMM tile,
    # on odd shapes (tests/tracer/models/fast_kernels.py).
    checks = check_model(spec_of("fast_kernels"), android_lib)
    assert checks and all(c.ok for c in checks), [c.line() for c in checks if not c.ok]


def test_float_to_half_is_bit_for_bit_with_arm64_fcvt(android_lib):
    # arm64 converts Float to Half in hardware (runtime/core/scalar_type.h):
    # c10::Half's bits at every rounding boundary, NaN canonicalised.
    x, want = half_rounding_cases()
    program, _ = single_op_program("aten::_to_copy", [x, torch.float16])
    (out,) = harness.run_program(
        android_lib, program, "forward", [harness.TensorData(6, tuple(x.shape), x.numpy().tobytes())]
    )
    got = np.frombuffer(out.data, dtype=np.uint16)
    assert out.dtype == 5 and got.shape == want.shape
    assert np.array_equal(got, want), np.flatnonzero(got != want)[:5]
