"""selective_runtime end to end (issue 5): the headline command, two apps in
one build, --define ops= candidates, per-app runtimes side by side in one
process, outputs equal to the full runtime's and torch's on x86_64 and on the
Android .so under the qemu harness, and load-time errors for ops a manifest
left out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from pare.program import ProgramBuilder
from pare.runtime import PareError, Runtime
from tests.conftest import REPO_ROOT, VULKAN_MANIFEST, bazel, bazel_build, bazel_output_files, export_program
from tools.tracer.model_spec import load_model_spec

APPS = {
    "demo": REPO_ROOT / "apps/demo/model.py",
    "text_classifier": REPO_ROOT / "apps/text_classifier/model.py",
}
HEADLINE = ("//apps/demo:runtime", "//apps/text_classifier:runtime", "//runtime:full")


@pytest.fixture(scope="module")
def bin_dir():
    return bazel_build(*HEADLINE, flags=("--define", "ops=manifest.yaml"))


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Each app's model exported to a program file by the tracer CLI."""
    out = tmp_path_factory.mktemp("programs")
    paths = {}
    for app, model in APPS.items():
        paths[app] = export_program(model, out / f"{app}.pare")
    return paths


def _lib(bin_dir, target: str, platform: str = "linux_x86_64") -> str:
    pkg, name = target.lstrip("/").split(":")
    ext = ".dylib" if platform == "ios_arm64" else ".so"
    return str(bin_dir / pkg / name / platform / f"libpare_{name}{ext}")


def test_headline_command_builds_every_platform(bin_dir):
    for target in HEADLINE[:2]:
        pkg, name = target.lstrip("/").split(":")
        root = bin_dir / pkg / name
        for platform in ("android_arm64", "ios_arm64", "linux_x86_64"):
            assert (root / platform).is_dir(), platform
        assert (root / "ios_arm64" / f"libpare_{name}.a").exists()
        report = json.loads((root / "report.json").read_text())
        assert sorted(report["platforms"]) == ["android_arm64", "ios_arm64", "linux_x86_64"]


def test_two_apps_get_different_selections(bin_dir):
    inventories = {}
    for app in APPS:
        rt = Runtime(_lib(bin_dir, f"//apps/{app}:runtime"))
        inventories[app] = set(rt.inventory().ops)
    conv = "pare::conv2d_prepacked"  # the demo's convolutions, on prepacked weights (the default passes)
    assert conv in inventories["demo"] and conv not in inventories["text_classifier"]
    assert "aten::embedding" in inventories["text_classifier"] and "aten::embedding" not in inventories["demo"]


def test_apps_and_full_runtime_in_one_process_match_torch(bin_dir, programs):
    full = Runtime(_lib(bin_dir, "//runtime:full"))
    for app, model in APPS.items():
        spec = load_model_spec(model)
        selective = Runtime(_lib(bin_dir, f"//apps/{app}:runtime"))
        for example in spec.inputs:
            with torch.no_grad():
                want = spec.module(*example).numpy()
            args = [t.numpy() for t in example]
            (got,) = selective.load(programs[app].read_bytes()).method().run(*args)
            (got_full,) = full.load(programs[app].read_bytes()).method().run(*args)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            np.testing.assert_array_equal(got, got_full)


def test_program_needing_an_unselected_op_fails_at_load(bin_dir, programs):
    demo = Runtime(_lib(bin_dir, "//apps/demo:runtime"))
    with pytest.raises(PareError) as e:
        demo.load(programs["text_classifier"].read_bytes()).method()
    message = str(e.value)
    assert "aten::" in message and "manifest" in message
    assert e.value.status_name == "OperatorNotSelected"


def test_demo_on_android_under_qemu_matches_torch(bin_dir):
    # The tracer's check runs the Android .so through the emulator harness.
    lib = _lib(bin_dir, "//apps/demo:runtime", "android_arm64")
    proc = subprocess.run(
        [sys.executable, "-m", "tools.tracer", "check", str(APPS["demo"]), "--runtime", lib],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "check passed" in proc.stdout + proc.stderr


def test_define_picks_among_candidates_and_rejects_others():
    ok = bazel("build", "--nobuild", "--define", "ops=manifest.yaml", "//apps/demo:runtime", check=False)
    assert ok.returncode == 0, ok.stderr[-2000:]
    bad = bazel("build", "--nobuild", "--define", "ops=other.yaml", "//apps/demo:runtime", check=False)
    assert bad.returncode != 0
    assert "--define ops=other.yaml is not one of this target's manifests; candidates: manifest.yaml" in bad.stderr


def _fixture_runtime(tmp_path, define: str | None) -> Runtime:
    """//rules/tests:fixture (manifest a.yaml, candidates a.yaml and b.yaml)
    built for linux_x86_64 only, with `--define ops=<define>` when given.

    Its _library target on the command line's platform is the bundle's
    linux_x86_64 half: the same selection, compile and link, a third of the
    actions. (Bazel 4 cannot transition on --define, so the define must come
    from the command line.)
    """
    flags = ("--platforms=//platforms:linux_x86_64",) + (("--define", f"ops={define}") if define else ())
    bin_dir = bazel_build("//rules/tests:fixture_library", flags=flags)
    lib = bin_dir / "rules" / "tests" / "fixture_library_stripped" / "libpare_fixture.so"
    # Every define writes the same output path: keep this variant's library.
    copy = tmp_path / (define or "default") / lib.name
    copy.parent.mkdir()
    shutil.copyfile(lib, copy)
    return Runtime(copy)


def _add_long_program() -> bytes:
    pb = ProgramBuilder()
    m = pb.method()
    x = m.input("Long", [3])
    m.output(m.op("aten::add.Tensor", x, x))
    return pb.to_bytes()


def test_define_ops_chooses_among_candidate_manifests(tmp_path):
    # a.yaml and b.yaml select aten::add.Tensor; b.yaml adds the Long dtype.
    # Built b first: a.yaml and the default (also a.yaml) then share outputs.
    runtimes = {define: _fixture_runtime(tmp_path, define) for define in ("b.yaml", "a.yaml", None)}
    for runtime in runtimes.values():
        assert runtime.inventory().ops == ("aten::add.Tensor",)
    # (in the runtime's own dtype order, not the manifest's)
    assert runtimes["b.yaml"].inventory().kernel_dtypes == {"add_kernel": ("Long", "Float")}
    assert runtimes["a.yaml"].inventory().kernel_dtypes == {"add_kernel": ("Float",)}
    assert runtimes[None].inventory().kernel_dtypes == {"add_kernel": ("Float",)}

    (y,) = runtimes["b.yaml"].load(_add_long_program()).method().run(np.array([1, 2, 3], np.int64))
    assert y.tolist() == [2, 4, 6]
    with pytest.raises(PareError, match="add_kernel") as e:
        runtimes["a.yaml"].load(_add_long_program()).method().run(np.array([1, 2, 3], np.int64))
    assert "(manifest //rules/tests:a.yaml)" in str(e.value)  # names the manifest that left Long out


def test_build_features_attribute_selects_features_on_top_of_the_manifest():
    # a.yaml selects no build feature; the attribute adds output_buffers.
    (header,) = [
        f for f in bazel_output_files("//rules/tests:output_buffers_selection") if f.name == "selected_classes.h"
    ]
    assert '#define TORCH_BUILD_FEATURE_ALLOWLIST "output_buffers;"' in header.read_text()
    bad = bazel("build", "//rules/tests:unknown_feature_selection", check=False)
    assert bad.returncode != 0
    assert "--build-feature threadz: not a build feature of the runtime" in bad.stderr


def test_unknown_platform_fails_naming_it():
    # A package that fails to load cannot live in the tree (it would break
    # `bazel build //...`), so the test writes it, builds it, removes it.
    pkg = REPO_ROOT / "rules" / "tests" / "_generated_bad_platform"
    pkg.mkdir(exist_ok=True)
    try:
        (pkg / "BUILD.bazel").write_text(
            'load("//rules:defs.bzl", "selective_runtime")\n'
            'selective_runtime(name = "runtime", manifest = "//rules/tests:a.yaml",\n'
            '                  platforms = ["android_arm64", "windows_x86_64"])\n'
        )
        bad = bazel("build", "--nobuild", "//rules/tests/_generated_bad_platform:runtime", check=False)
    finally:
        (pkg / "BUILD.bazel").unlink()
        pkg.rmdir()
    assert bad.returncode != 0
    assert 'platforms contains unknown platform "windows_x86_64"' in bad.stderr


def test_a_runtime_selecting_vulkan_is_built_only_for_platforms_that_have_it():
    # platforms/table.bzl: ios_arm64 lacks_backends vulkan. A runtime that
    # declares the backend (backends = ["vulkan"]) builds, by default, for
    # the shipped platforms that have it: android_arm64 and linux_x86_64.
    # Undeclared, a manifest selecting it fails codegen in one line naming
    # both attributes, as does one naming ios_arm64 in its platforms; a
    # declared backend with ios_arm64 asked for fails analysis in one line.
    # The package is written, built and removed, as above.
    pkg = REPO_ROOT / "rules" / "tests" / "_generated_vulkan"
    pkg.mkdir(exist_ok=True)
    label = "//rules/tests/_generated_vulkan"
    load = 'load("//rules:defs.bzl", "selective_runtime")\n'
    try:
        (pkg / "vulkan.yaml").write_text(VULKAN_MANIFEST)
        (pkg / "BUILD.bazel").write_text(
            load + 'selective_runtime(name = "everywhere", manifest = "vulkan.yaml")\n'
            'selective_runtime(name = "explicit", manifest = "vulkan.yaml", platforms = ["ios_arm64"])\n'
            'selective_runtime(name = "declared", manifest = "vulkan.yaml", backends = ["vulkan"])\n'
        )
        failed = {name: bazel("build", f"{label}:{name}", check=False) for name in ("everywhere", "explicit")}
        built = bazel("build", f"{label}:declared", check=False)
        outputs = sorted(p.name for p in (REPO_ROOT / "bazel-bin" / pkg.relative_to(REPO_ROOT) / "declared").iterdir())
        (pkg / "BUILD.bazel").write_text(
            load + 'selective_runtime(name = "asked", manifest = "vulkan.yaml", backends = ["vulkan"],\n'
            '                  platforms = ["android_arm64", "ios_arm64"])\n'
        )
        asked = bazel("build", f"{label}:asked", check=False)
    finally:
        for f in ("BUILD.bazel", "vulkan.yaml"):
            (pkg / f).unlink()
        pkg.rmdir()
    for name, bad in failed.items():
        assert bad.returncode != 0, name
        message = (
            f"error: {label}:{name}: the manifest selects backend 'vulkan', which ios_arm64 has no driver for: "
            'declare backends = ["vulkan"] on the runtime (its default platforms then leave ios_arm64 out) or '
            "leave ios_arm64 out of its platforms attribute"
        )
        assert message in bad.stderr.splitlines(), bad.stderr[-3000:]
    assert built.returncode == 0, built.stderr[-3000:]
    assert "android_arm64" in outputs and "linux_x86_64" in outputs and "ios_arm64" not in outputs
    assert asked.returncode != 0
    assert (
        f"{label}:asked: platforms contains ios_arm64, which has no driver for backend 'vulkan' (the backends "
        "attribute): leave ios_arm64 out of the platforms attribute"
    ) in asked.stderr, asked.stderr[-3000:]
