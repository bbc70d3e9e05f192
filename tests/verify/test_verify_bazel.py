"""pare_verify_test (//rules/private:verify.bzl) under `bazel test`: the per-platform
verification tests pass on a clean runtime and fail, naming the op, on a leaky one."""

from __future__ import annotations

from tests.conftest import bazel
from tests.verify.conftest import FIXTURE_PKG, PLATFORM_LIBS


def test_clean_runtime_verification_tests_pass_on_every_platform():
    targets = [f"//{FIXTURE_PKG}:clean_verify_{p}_test" for p in sorted(PLATFORM_LIBS)]
    proc = bazel("test", *targets)
    assert "3 tests pass" in proc.stderr + proc.stdout


def test_leaky_runtime_verification_test_fails_naming_the_op(repo_root):
    target = f"//{FIXTURE_PKG}:leaky_kernel_verify_android_arm64_test"
    proc = bazel("test", target, check=False)
    assert proc.returncode == 3, proc.stderr[-3000:]  # 3: built, but a test failed
    log = (
        repo_root / "bazel-testlogs" / FIXTURE_PKG / "leaky_kernel_verify_android_arm64_test" / "test.log"
    ).read_text()
    assert "pare verify: FAIL  android_arm64" in log
    assert "op aten::mm  (expect absent" in log and "pare::kernels::aten_mm(" in log


def test_verify_rule_rejects_a_platform_the_runtime_lacks(repo_root, tmp_path):
    # Analysis failure names the attribute, the value and the fix.
    proc = bazel("build", "--nobuild", f"//{FIXTURE_PKG}/bad_platform:bad_verify_test", check=False)
    assert proc.returncode != 0
    assert 'is not built for platform = "linux_arm64" (it has android_arm64, ios_arm64, linux_x86_64)' in proc.stderr
    assert "add the platform to its `platforms`" in proc.stderr
