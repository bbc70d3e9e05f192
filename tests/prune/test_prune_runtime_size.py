"""tools.prune's selective runtime size: with -o inside the workspace, the
pruned model's runtime is built by Bazel and its bytes reported. This test
runs Bazel (tests/conftest.py, BAZEL_TESTS); tests/prune/test_prune.py holds
the others, which //tests:prune_test runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import REPO_ROOT
from tools.bundle import load_bundle
from tools.prune import __main__ as cli

SMALL_CNN = Path(__file__).absolute().parent / "models" / "small_cnn.py"


def test_runtime_size_is_built_when_out_is_in_the_workspace(full_runtime, capsys):
    out = REPO_ROOT / "tests" / "prune" / "out"  # gitignored; a fixed package, so Bazel's cache serves reruns
    shutil.rmtree(out, ignore_errors=True)
    try:
        assert cli.main([str(SMALL_CNN), "--ratio", "0.3", "--no-timing", "-o", str(out)]) == 0
        report = json.loads((out / "report.json").read_text())
        sizes = report["selective_runtime"]["bytes"]
        shipped = load_bundle(REPO_ROOT / "bazel-bin" / "tests" / "prune" / "out" / "runtime").shipped_bytes()
        assert sizes["after"] == sizes["before"] == shipped  # the same selection: one runtime, its exact bytes
        assert set(shipped) == {"android_arm64", "ios_arm64", "linux_x86_64"}
        assert "selective runtime, android_arm64 B" in capsys.readouterr().out
        assert 'name = "original_runtime"' in (out / "BUILD.bazel").read_text()
    finally:
        shutil.rmtree(out, ignore_errors=True)
