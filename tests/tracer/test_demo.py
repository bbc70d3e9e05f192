"""apps/demo/manifest.yaml is what `trace apps/demo/model.py` writes, byte for
byte, and the demo passes its numeric check."""

from __future__ import annotations

import pytest
from tracer_testlib import REPO

from tools.tracer import MissingOpsError, export_model, load_model_spec, trace_model

DEMO_MODEL = REPO / "apps" / "demo" / "model.py"
DEMO_MANIFEST = REPO / "apps" / "demo" / "manifest.yaml"
REGENERATE = "python -m tools.tracer trace apps/demo/model.py -o apps/demo/manifest.yaml"


@pytest.fixture(scope="module")
def demo_spec():
    return load_model_spec(DEMO_MODEL)


def test_demo_manifest_is_up_to_date(demo_spec, tracing_lib):
    try:
        export_model(demo_spec)
    except MissingOpsError as e:
        pytest.skip(f"the runtime does not implement every op the demo needs yet ({', '.join(sorted(e.missing))}); "
                    f"once it does, run {REGENERATE}")
    result = trace_model(demo_spec, runtime=tracing_lib)
    assert all(c.ok for c in result.checks)
    assert DEMO_MANIFEST.is_file(), f"apps/demo/manifest.yaml is missing; run {REGENERATE}"
    assert result.manifest.dump() == DEMO_MANIFEST.read_text(), f"apps/demo/manifest.yaml is stale; run {REGENERATE}"


def test_demo_has_a_dynamic_batch(demo_spec):
    from tools.tracer import group_inputs

    (group,) = group_inputs(demo_spec)
    assert group.name == "forward" and group.dynamic_dims == ((0,),)


@pytest.mark.parametrize("platform", ["linux_x86_64", "android_arm64"])
def test_demo_selective_runtime_passes_check(demo_spec, platform):
    """The demo's own runtime (//apps/demo:runtime, built from the checked-in
    manifest) runs the demo: natively, and under the qemu harness."""
    from tools.tracer import check_model

    lib = REPO / "bazel-bin" / "apps" / "demo" / "runtime" / platform / "libpare_runtime.so"
    if not lib.is_file() or lib.stat().st_mtime < DEMO_MANIFEST.stat().st_mtime:
        pytest.skip(f"{lib.relative_to(REPO)} is missing or older than the manifest: "
                    "tools/bazel build //apps/demo:runtime")
    harness = REPO / "bazel-bin" / "tools" / "android_harness" / "harness" / "linux_arm64" / "harness_bin"
    if platform == "android_arm64" and not harness.is_file():
        pytest.skip("emulator harness not built: tools/bazel build //tools/android_harness:harness")
    checks = check_model(demo_spec, lib)
    assert all(c.ok for c in checks)
