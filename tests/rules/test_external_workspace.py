"""Pare used as an external repository (docs/bazel.md, "Using Pare from
another repository").

examples/external_workspace is a Bazel workspace of its own that sees this
checkout only as `local_repository(name = "pare", path = "../..")` plus the
setup call `pare_dependencies()`. Building it with `../../tools/bazel test
//...` must give a selective runtime for its own checked-in manifest on every
shipped platform, pass the verify tests its selective_runtime declares, and
run its model like torch. A label inside Pare's rules that names the main
repository (`@//...`, or a string label resolved where the rule is used)
breaks this build: it resolves into the example, which has no such target.

About a minute on 2 cores: a cold build of the runtime in the example's own
output base.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from pare.runtime import Runtime
from tests.conftest import REPO_ROOT, bazel, export_program
from tools.platforms import SHIPPED_PLATFORMS
from tools.tracer.model_spec import load_model_spec

EXAMPLE = REPO_ROOT / "examples" / "external_workspace"
PLATFORMS = SHIPPED_PLATFORMS


@pytest.fixture(scope="module")
def example_bin():
    """`../../tools/bazel test //...` in the example, as docs/bazel.md says;
    its Bazel server is shut down afterwards (it has its own output base)."""
    try:
        proc = bazel("test", "//...", cwd=EXAMPLE, check=False)
        assert proc.returncode == 0, f"bazel test //... in examples/external_workspace failed:\n{proc.stderr[-6000:]}"
        yield EXAMPLE / "bazel-bin"
    finally:
        bazel("shutdown", cwd=EXAMPLE, check=False)


def test_example_builds_a_bundle_for_every_platform(example_bin):
    bundle = example_bin / "runtime"
    report = json.loads((bundle / "report.json").read_text())
    assert report["manifest"]["label"] == "//:manifest.yaml"  # the example's own manifest
    assert sorted(report["platforms"]) == list(PLATFORMS)
    assert (bundle / "android_arm64" / "libpare_runtime.so").is_file()
    assert (bundle / "ios_arm64" / "libpare_runtime.dylib").is_file()
    assert (bundle / "ios_arm64" / "libpare_runtime.a").is_file()
    assert (bundle / "linux_x86_64" / "libpare_runtime.so").is_file()


def test_example_runtime_selects_its_manifest_and_runs_its_model(example_bin, tmp_path):
    runtime = Runtime(str(example_bin / "runtime" / "linux_x86_64" / "libpare_runtime.so"))
    inventory = runtime.inventory()
    assert "aten::_softmax" in inventory.ops
    assert "pare::conv2d_prepacked" not in inventory.ops  # only what the example's manifest selects
    program = export_program(EXAMPLE / "model.py", tmp_path / "model.pare")
    spec = load_model_spec(EXAMPLE / "model.py")
    method = runtime.load(program.read_bytes()).method()
    for example in spec.inputs:
        with torch.no_grad():
            want = spec.module(*example).double().numpy()
        (got,) = method.run(*[t.numpy() for t in example])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_rules_name_no_main_repository_label():
    """The static half of the proof: Pare's Starlark names its own targets
    through Label() (resolved in Pare's repository), never `@//`. The one
    deliberate exception reads the *user's* workspace (its .venv)."""
    allowed = {'Label("@//:WORKSPACE")'}
    offenders = []
    for path in sorted(
        [
            *REPO_ROOT.glob("rules/**/*.bzl"),
            *REPO_ROOT.glob("toolchains/**/*.bzl"),
            *REPO_ROOT.glob("platforms/**/*.bzl"),
        ]
    ):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"[\"']@//", line) and not any(a in line for a in allowed):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()}")
    assert not offenders, "labels that resolve into the user's repository when Pare is @pare:\n" + "\n".join(offenders)


def test_rules_use_no_workspace_relative_path_strings():
    # The runtime's .def files are found from the inventory label's files, not
    # a "runtime/kernels" string (which is external/pare/runtime/kernels when
    # Pare is @pare).
    text = (REPO_ROOT / "rules" / "private" / "selection.bzl").read_text()
    assert not re.search(r'"runtime/', text)
