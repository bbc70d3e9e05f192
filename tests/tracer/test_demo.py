"""apps/demo/manifest.yaml is what `trace apps/demo/model.py` writes, byte for
byte (and so is every other app's manifest), and the demo passes its
numeric check."""

from __future__ import annotations

import pytest
from tracer_testlib import REPO

from tests.conftest import bazel_build, require_tool
from tools.tracer import load_model_spec, trace_model

DEMO_MODEL = REPO / "apps" / "demo" / "model.py"
DEMO_MANIFEST = REPO / "apps" / "demo" / "manifest.yaml"
REGENERATE = "python -m tools.tracer trace apps/demo/model.py -o apps/demo/manifest.yaml"


@pytest.fixture(scope="module")
def demo_spec():
    return load_model_spec(DEMO_MODEL)


def test_demo_manifest_is_up_to_date(demo_spec, tracing_lib):
    result = trace_model(demo_spec, runtime=tracing_lib)
    assert all(c.ok for c in result.checks)
    assert DEMO_MANIFEST.is_file(), f"apps/demo/manifest.yaml is missing; run {REGENERATE}"
    assert result.manifest.dump() == DEMO_MANIFEST.read_text(), f"apps/demo/manifest.yaml is stale; run {REGENERATE}"


@pytest.mark.parametrize(
    "app",
    sorted(
        str(p.parent.relative_to(REPO))
        for p in [*(REPO / "apps").glob("*/manifest.yaml"), *(REPO / "examples").glob("*/manifest.yaml")]
        if p.parent.name != "demo"
    ),
)
def test_other_apps_manifests_are_up_to_date(app, tracing_lib):
    # Every app's checked-in manifest, like the demo's (and the example
    # workspace's): a change to the tracer or the passes that changes what a
    # model selects (or the passes recorded in debug_info) re-traces them in
    # the same change.
    manifest = REPO / app / "manifest.yaml"
    regenerate = f"python -m tools.tracer trace {app}/model.py -o {app}/manifest.yaml"
    result = trace_model(load_model_spec(REPO / app / "model.py"), runtime=tracing_lib)
    assert all(c.ok for c in result.checks)
    assert result.manifest.dump() == manifest.read_text(), f"{app}/manifest.yaml is stale; run {regenerate}"


def test_demo_has_a_dynamic_batch(demo_spec):
    from tools.tracer import group_inputs

    (group,) = group_inputs(demo_spec)
    assert group.name == "forward" and group.dynamic_dims == ((0,),)


@pytest.fixture(scope="module")
def demo_bin_dir():
    # The README's command (same flags as tests/rules, so one Bazel
    # configuration serves both); Bazel rebuilds whatever the manifest changed.
    return bazel_build(
        "//apps/demo:runtime", "//tools/android_harness:harness", flags=("--define", "ops=manifest.yaml")
    )


@pytest.mark.parametrize("platform", ["linux_x86_64", "android_arm64"])
def test_demo_selective_runtime_passes_check(demo_spec, demo_bin_dir, platform):
    """The demo's own runtime (//apps/demo:runtime, built from the checked-in
    manifest) runs the demo: natively, and under the qemu harness."""
    from tools.tracer import check_model

    lib = demo_bin_dir / "apps" / "demo" / "runtime" / platform / "libpare_runtime.so"
    if platform == "android_arm64":
        require_tool("qemu-aarch64", "qemu-aarch64-static", package="qemu-user")
    checks = check_model(demo_spec, lib)
    assert all(c.ok for c in checks)
