"""tools/verify and tools/size_diff on the real runtime: //tests/verify/selective:small
(runtime/ compiled for small.yaml: aten::add.Tensor and aten::relu, float only)."""

from __future__ import annotations

import pytest

from tests.conftest import bazel_build
from tools.platforms import SHIPPED_PLATFORMS
from tools.size_diff import build_report, bundle_runs
from tools.verify import render_text, verify
from tools.verify.verify import bundle_paths

TARGET = "//tests/verify/selective:small"
PLATFORMS = SHIPPED_PLATFORMS


@pytest.fixture(scope="module")
def bundle():
    return bazel_build(TARGET) / "tests" / "verify" / "selective" / "small"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_selective_runtime_verifies(bundle, platform):
    unstripped, stripped, expected = bundle_paths(bundle, platform)
    result = verify(unstripped, expected, platform=platform, stripped=stripped)
    assert result.passed, render_text(result)
    linked = {r.entry.key for r in result.entries if r.symbols}
    assert linked == {"aten::add.Tensor", "aten::relu", "add_kernel/Float", "relu_kernel/Float"}
    assert all(e.name.startswith("pare_") for e in result.shipped.exports)


def test_selective_runtime_attribution(bundle):
    report = build_report(TARGET, bundle_runs(bundle))
    for platform in PLATFORMS:
        p = report["platforms"][platform]
        a = p["attribution"]
        assert a["residual"] == 0
        assert {k for k, v in a["op"].items() if v} == {"aten::add.Tensor", "aten::relu"}
        assert {k for k, v in a["kernel_dtype"].items() if v} == {"add_kernel/Float", "relu_kernel/Float"}
        assert not any(a["class"].values())
