"""check on an Android arm64 runtime, run under qemu-aarch64 through the
emulator harness's `run` mode (an emulated stand-in for a device). Needs
Bazel's //runtime:full (android_arm64) and //tools/android_harness:harness,
or PARE_ANDROID_RUNTIME_LIB and PARE_HARNESS_DIR; skipped otherwise."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tracer_testlib import REPO, exported, spec_of

from tools.android_harness import run as harness
from tools.tracer import check_model
from tools.tracer.runner import library_kind


@pytest.fixture(scope="module")
def android_lib() -> Path:
    lib = Path(os.environ.get("PARE_ANDROID_RUNTIME_LIB")
               or REPO / "bazel-bin" / "runtime" / "full" / "android_arm64" / "libpare_full.so")
    harness_dir = Path(os.environ.get("PARE_HARNESS_DIR")
                       or REPO / "bazel-bin" / "tools" / "android_harness" / "harness" / "linux_arm64")
    if not lib.is_file():
        pytest.skip(f"no Android runtime at {lib}: tools/bazel build //runtime:full (or set PARE_ANDROID_RUNTIME_LIB)")
    if not (harness_dir / "harness_bin").is_file():
        pytest.skip("emulator harness not built: tools/bazel build //tools/android_harness:harness")
    if not (shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")):
        pytest.skip("qemu-aarch64 is not installed (tools/setup.sh)")
    os.environ.setdefault("PARE_HARNESS_DIR", str(harness_dir))
    return lib


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
