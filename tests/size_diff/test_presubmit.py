"""tools/size_diff/presubmit.sh on the fixture runtime.

Fast: base reports given (--base-reports), head built in this checkout.
End to end: a throwaway git repository copied from this working tree, whose
second commit makes //tests/verify/fixture:clean's selection gain aten::mm;
presubmit builds HEAD~1 in a git worktree and the working tree, and fails
naming aten::mm; against HEAD (an unchanged tree) it passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.verify.conftest import REPO_ROOT
from tools.size_diff import build_report, bundle_runs

PRESUBMIT = REPO_ROOT / "tools" / "size_diff" / "presubmit.sh"
FIXTURE_BUDGETS = REPO_ROOT / "tests" / "size_diff" / "fixture_budgets.json"


def presubmit(*args: str, cwd: Path = REPO_ROOT, env: dict | None = None, script: Path = PRESUBMIT):
    return subprocess.run(["bash", str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, **(env or {})})


def _budgets_for(tmp_path: Path, target: str) -> Path:
    data = json.loads(FIXTURE_BUDGETS.read_text())
    data["targets"] = {target: data["targets"]["//tests/verify/fixture:clean"]}
    f = tmp_path / "budgets.json"
    f.write_text(json.dumps(data))
    return f


def test_unchanged_target_passes(fixture_build, tmp_path):
    base = tmp_path / "base"
    base.mkdir()
    report = build_report("//tests/verify/fixture:clean", bundle_runs(fixture_build.bundle("clean")))
    (base / "tests_verify_fixture_clean.json").write_text(json.dumps(report))
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "--base-reports", str(base), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "presubmit: PASS" in p.stdout and p.stdout.count("ok   //tests/verify/fixture:clean") == 3
    assert "+0 B" in p.stdout
    for ext in ("json", "md", "png"):
        assert (tmp_path / "out" / "head" / f"tests_verify_fixture_clean.{ext}").is_file()
    assert (tmp_path / "out" / "diff" / "tests_verify_fixture_clean.md").is_file()


def test_target_whose_selection_gained_an_op_fails_naming_it(fixture_build, tmp_path):
    # Head is :grown (clean.yaml + aten::mm); its base report is the clean build.
    target = "//tests/verify/fixture:grown"
    base = tmp_path / "base"
    base.mkdir()
    report = build_report(target, bundle_runs(fixture_build.bundle("clean")))
    (base / "tests_verify_fixture_grown.json").write_text(json.dumps(report))
    p = presubmit("--budgets", str(_budgets_for(tmp_path, target)), "--base-reports", str(base),
                  "--out", str(tmp_path / "out"))
    assert p.returncode == 1, p.stdout + p.stderr[-3000:]
    assert "presubmit: FAIL" in p.stdout
    assert p.stdout.count(f"FAIL {target}") == 3
    assert "op aten::mm" in p.stdout and "fix: the selection gained aten::mm" in p.stdout
    assert "| op aten::mm |" in p.stdout  # the diff table


def test_usage_errors(tmp_path):
    p = presubmit("--budgets", str(tmp_path / "none.json"))
    assert p.returncode == 2 and "no such budgets file" in p.stderr
    p = presubmit("--bogus")
    assert p.returncode == 2 and "unknown option --bogus" in p.stderr
    p = presubmit("--help")
    assert p.returncode == 0 and "BASE_REV" in p.stdout
    missing = tmp_path / "b.json"
    missing.write_text(json.dumps({"schema": "pare.size_budgets", "version": 1, "targets": {
        "//tests/verify/fixture:no_such_target": {"platforms": {"android_arm64": {}}}}}))
    p = presubmit("--budgets", str(missing), "--base-reports", str(tmp_path))
    assert p.returncode == 2 and "head does not build" in p.stderr


# --- end to end, with git worktrees ---

# Fixed paths (not tmp_path): each Bazel workspace path gets its own output
# base, so reusing the paths keeps reruns warm and leaves no new caches behind.
_E2E = Path(tempfile.gettempdir()) / "pare-presubmit-test"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=presubmit test", "-c", "user.email=test@pare.invalid", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def e2e_repo():
    repo = _E2E / "repo"
    for stale in (repo, _E2E / "base"):  # a worktree of the previous run's repository
        if stale.exists():
            shutil.rmtree(stale)
    repo.mkdir(parents=True)
    ignore = shutil.ignore_patterns(".git", "bazel-*", ".venv", "node_modules", ".pytest_cache", "__pycache__")
    for item in REPO_ROOT.iterdir():
        if item.name in (".git", ".venv", "node_modules", ".pytest_cache") or item.name.startswith("bazel-"):
            continue
        if item.is_dir():
            shutil.copytree(item, repo / item.name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(item, repo / item.name)
    (repo / "node_modules").symlink_to(REPO_ROOT / "node_modules")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base: the clean fixture")
    build = repo / "tests" / "verify" / "fixture" / "BUILD.bazel"
    text = build.read_text()
    grown = text.replace('"clean": ([], [], "clean"),', '"clean": ([], ["FIXTURE_SELECT_MM=1"], "grown"),')
    assert grown != text
    build.write_text(grown)
    _git(repo, "commit", "-q", "-am", "head: the clean fixture's selection gains aten::mm")
    yield repo
    for workspace in (repo, _E2E / "base"):  # the Bazel servers these tests started
        if (workspace / "tools" / "bazel").exists():
            subprocess.run([str(workspace / "tools" / "bazel"), "shutdown"], cwd=workspace, capture_output=True)


def test_end_to_end_growth_fails_then_unchanged_passes(e2e_repo):
    env = {"PARE_PRESUBMIT_WORKTREE": str(_E2E / "base"), "PARE_PYTHON": sys.executable}
    script = e2e_repo / "tools" / "size_diff" / "presubmit.sh"
    budgets = "tests/size_diff/fixture_budgets.json"
    p = presubmit("--budgets", budgets, "--out", str(_E2E / "out1"), "--keep-base-server", cwd=e2e_repo, env=env,
                  script=script)
    assert p.returncode == 1, p.stdout + p.stderr[-4000:]
    assert "base: HEAD~1" in p.stderr and "building 1 target(s) at HEAD~1" in p.stderr
    assert p.stdout.count("FAIL //tests/verify/fixture:clean") == 3
    assert "kernel dtype mm_kernel/Float" in p.stdout and "fix: the selection gained aten::mm" in p.stdout

    p = presubmit("--budgets", budgets, "--out", str(_E2E / "out2"), "HEAD", cwd=e2e_repo, env=env, script=script)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "presubmit: PASS" in p.stdout and p.stdout.count("(+0 B, +0.00% vs base") == 3
