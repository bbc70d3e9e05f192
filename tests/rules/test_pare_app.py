"""pare_app (rules/private/app.bzl): the demo's BUILD file is one call, and
what it declares works: the runtime and packages build (tests/rules,
tests/mobile), the verify and size-budget tests pass under `bazel test
//...`, and `bazel run :update_manifest` writes exactly the checked-in
manifest."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import PARE_APP_TARGETS, REPO_ROOT, bazel, bazel_build

DEMO = "//apps/demo"
TARGETS = {*PARE_APP_TARGETS, "demo"}


def test_demo_build_file_is_one_pare_app_call():
    text = (REPO_ROOT / "apps" / "demo" / "BUILD.bazel").read_text()
    calls = [line for line in text.splitlines() if line and not line.startswith(("#", " ", ")", "load(", "package("))]
    assert calls == ["pare_app("], calls


def test_pare_app_declares_the_app_targets():
    out = bazel("query", f"{DEMO}:all", "--output=label").stdout.split()
    names = {label.split(":", 1)[1] for label in out}
    assert TARGETS <= names, sorted(TARGETS - names)
    tests = bazel("query", f"tests({DEMO}:all)", "--output=label").stdout.split()
    assert f"{DEMO}:size_budget_test" in tests
    assert {f"{DEMO}:runtime_verify_{p}_test" for p in ("android_arm64", "ios_arm64", "linux_x86_64")} <= set(tests)


def test_budget_and_verify_tests_pass():
    proc = bazel("test", f"{DEMO}:size_budget_test", f"{DEMO}:runtime_verify_android_arm64_test")
    assert proc.returncode == 0
    log = (REPO_ROOT / "bazel-testlogs" / "apps" / "demo" / "size_budget_test" / "test.log").read_text()
    assert "ok   //apps/demo:runtime android_arm64:" in log


@pytest.fixture(scope="module")
def update_manifest():
    bin_dir = bazel_build(f"{DEMO}:update_manifest")
    return bin_dir / "apps" / "demo" / "update_manifest.sh"


def test_update_manifest_writes_the_checked_in_manifest(update_manifest, tmp_path):
    # A workspace of symlinks to this one, except that apps/demo holds only
    # the model: what the run target writes lands in tmp_path, and must be
    # the checked-in manifest byte for byte.
    for entry in REPO_ROOT.iterdir():
        if entry.name not in ("apps",) and not entry.name.startswith("bazel-"):
            (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / "apps" / "demo").mkdir(parents=True)
    # A copy: the tracer names the model by its resolved path in the workspace.
    shutil.copyfile(REPO_ROOT / "apps" / "demo" / "model.py", tmp_path / "apps" / "demo" / "model.py")
    runfiles = update_manifest.parent / (update_manifest.name + ".runfiles") / "pare"
    env = {**os.environ, "BUILD_WORKSPACE_DIRECTORY": str(tmp_path), "BUILD_WORKING_DIRECTORY": str(tmp_path)}
    env.pop("PARE_INSTRUMENTATION_LIB", None)  # the run target passes its own
    proc = subprocess.run(
        [str(update_manifest), "-q"], cwd=runfiles, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    written = tmp_path / "apps" / "demo" / "manifest.yaml"
    assert written.read_text() == (REPO_ROOT / "apps" / "demo" / "manifest.yaml").read_text()


def test_update_manifest_outside_bazel_run_says_how(update_manifest):
    env = {k: v for k, v in os.environ.items() if k != "BUILD_WORKSPACE_DIRECTORY"}
    proc = subprocess.run([str(update_manifest)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "run it with bazel run" in proc.stderr and "apps/demo/manifest.yaml" in proc.stderr
