"""tools/size_diff/presubmit.sh on the fixture runtime.

Fast: base reports given (--base-reports), head built in this checkout.
End to end: a throwaway git repository copied from this working tree, whose
second commit makes //tests/verify/fixture:clean's selection gain aten::mm;
presubmit builds HEAD~1 in a git worktree and the working tree, and fails
naming aten::mm; against HEAD (an unchanged tree) it passes.

An unusable base (a revision that does not exist, does not load, does not
build, cannot be measured) fails with CI=true (or --require-base) and only
warns locally or with --allow-missing-base. The cheap cases run in this
checkout; the others reuse the end-to-end repository and its warm worktree,
with bases that fail at once (an #error, a broken BUILD file, a missing file).
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

from tests.conftest import snapshot_checkout
from tests.verify.conftest import REPO_ROOT
from tools.size_diff import build_report, bundle_runs

PRESUBMIT = REPO_ROOT / "tools" / "size_diff" / "presubmit.sh"
FIXTURE_BUDGETS = REPO_ROOT / "tests" / "size_diff" / "fixture_budgets.json"


def presubmit(*args: str, cwd: Path = REPO_ROOT, env: dict | None = None, script: Path = PRESUBMIT):
    # CI unset unless a test sets it: the runner's own CI=true must not change
    # what the lenient-path tests see.
    return subprocess.run(
        ["bash", str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "CI": "", **(env or {})},
    )


def _last_line(p: subprocess.CompletedProcess) -> str:
    return p.stderr.strip().splitlines()[-1]


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
    p = presubmit(
        "--budgets", str(_budgets_for(tmp_path, target)), "--base-reports", str(base), "--out", str(tmp_path / "out")
    )
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
    missing.write_text(
        json.dumps(
            {
                "schema": "pare.size_budgets",
                "version": 1,
                "targets": {"//tests/verify/fixture:no_such_target": {"platforms": {"android_arm64": {}}}},
            }
        )
    )
    p = presubmit("--budgets", str(missing), "--base-reports", str(tmp_path))
    assert p.returncode == 2 and "head does not build" in p.stderr
    p = presubmit("--require-base", "--allow-missing-base")
    assert p.returncode == 2 and "not both" in p.stderr


# --- an unusable base: an error in CI, a warning locally ---

ALLOW_HINT = "or pass --allow-missing-base to check max_bytes only"


@pytest.mark.parametrize("how", [{"env": {"CI": "true"}}, {"args": ("--require-base",)}], ids=["CI=true", "flag"])
def test_ci_fails_at_once_on_a_base_revision_that_does_not_exist(how):
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), *how.get("args", ()), "no-such-rev", env=how.get("env"))
    assert p.returncode == 2, p.stderr[-3000:]
    assert _last_line(p).startswith("presubmit: error: base revision no-such-rev does not exist in this repository;")
    assert ALLOW_HINT in _last_line(p) and ("CI=true" in _last_line(p) or "--require-base" in _last_line(p))
    assert "building" not in p.stderr  # before head's build


@pytest.mark.parametrize(
    "env,args", [({}, ()), ({"CI": "true"}, ("--allow-missing-base",))], ids=["local", "CI=true --allow-missing-base"]
)
def test_missing_base_revision_only_warns_locally_or_when_allowed(fixture_build, tmp_path, env, args):
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "--out", str(tmp_path / "out"), *args, "no-such-rev", env=env)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert (
        "presubmit: warning: base revision no-such-rev does not exist in this repository: "
        "growth limits not checked, max_bytes only"
    ) in p.stderr
    assert "presubmit: PASS" in p.stdout and p.stdout.count("ok   //tests/verify/fixture:clean") == 3
    assert "vs base" not in p.stdout


def test_ci_fails_when_base_reports_hold_no_report(fixture_build, tmp_path):
    p = presubmit(
        "--budgets",
        str(FIXTURE_BUDGETS),
        "--base-reports",
        str(tmp_path),
        "--out",
        str(tmp_path / "o"),
        env={"CI": "true"},
    )
    assert p.returncode == 2, p.stdout + p.stderr[-3000:]
    assert "no base report" in p.stderr
    assert _last_line(p).startswith(f"presubmit: error: --base-reports {tmp_path} has no report for any budgeted")


# --- end to end, with git worktrees ---

# Fixed paths (not tmp_path): each Bazel workspace path gets its own output
# base, so reusing the paths keeps reruns warm and leaves no new caches behind.
_E2E = Path(tempfile.gettempdir()) / "pare-presubmit-test"


def _git(repo: Path, *args: str, env: dict | None = None, input: bytes | None = None) -> str:  # noqa: A002
    return (
        subprocess.run(
            ["git", "-c", "user.name=presubmit test", "-c", "user.email=test@pare.invalid", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            input=input,
            env={**os.environ, **(env or {})},
        )
        .stdout.decode()
        .strip()
    )


def _side_commit(repo: Path, message: str, edits: dict[str, str]) -> str:
    """A commit on top of HEAD with files replaced, that HEAD does not move to:
    a base revision to test against. Its sha."""
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "side-commit-index")}
    _git(repo, "read-tree", "HEAD", env=env)
    for path, text in edits.items():
        blob = _git(repo, "hash-object", "-w", "--stdin", input=text.encode())
        _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = _git(repo, "write-tree", env=env)
    os.unlink(env["GIT_INDEX_FILE"])
    return _git(repo, "commit-tree", tree, "-p", "HEAD", "-m", message)


@pytest.fixture(scope="module")
def e2e_repo():
    repo = _E2E / "repo"
    for stale in (repo, _E2E / "base"):  # a worktree of the previous run's repository
        if stale.exists():
            shutil.rmtree(stale)
    snapshot_checkout(repo)
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
    p = presubmit(
        "--budgets", budgets, "--out", str(_E2E / "out1"), "--keep-base-server", cwd=e2e_repo, env=env, script=script
    )
    assert p.returncode == 1, p.stdout + p.stderr[-4000:]
    assert "base: HEAD~1" in p.stderr and "building 1 target(s) at HEAD~1" in p.stderr
    assert p.stdout.count("FAIL //tests/verify/fixture:clean") == 3
    assert "kernel dtype mm_kernel/Float" in p.stdout and "fix: the selection gained aten::mm" in p.stdout

    p = presubmit("--budgets", budgets, "--out", str(_E2E / "out2"), "HEAD", cwd=e2e_repo, env=env, script=script)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "presubmit: PASS" in p.stdout and p.stdout.count("(+0 B, +0.00% vs base") == 3


def _e2e_presubmit(
    repo: Path, *args: str, env: dict | None = None, budgets: str = "tests/size_diff/fixture_budgets.json"
):
    # The base server stays up between these tests; e2e_repo shuts it down.
    return presubmit(
        "--budgets",
        budgets,
        "--keep-base-server",
        *args,
        cwd=repo,
        env={"PARE_PRESUBMIT_WORKTREE": str(_E2E / "base"), "PARE_PYTHON": sys.executable, **(env or {})},
        script=repo / "tools" / "size_diff" / "presubmit.sh",
    )


def test_ci_fails_on_a_base_that_does_not_build_and_allow_missing_base_warns(e2e_repo):
    source = "tests/verify/fixture/fixture_runtime.cc"
    broken = _side_commit(
        e2e_repo,
        "a base that does not build",
        {source: '#error "presubmit test: this base does not build"\n' + (e2e_repo / source).read_text()},
    )
    p = _e2e_presubmit(e2e_repo, broken, env={"CI": "true"})
    assert p.returncode == 2, p.stdout + p.stderr[-4000:]
    assert "this base does not build" in p.stderr  # Bazel's error, above the reason
    assert _last_line(p) == (
        f"presubmit: error: base {broken} ({broken}) does not build (Bazel's errors above); "
        f"with CI=true growth must be checked: name a BASE_REV that builds, {ALLOW_HINT}"
    )

    p = _e2e_presubmit(e2e_repo, "--allow-missing-base", broken, env={"CI": "true"})
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert (
        f"presubmit: warning: base {broken} ({broken}) does not build (Bazel's errors above): growth limits "
        "not checked, max_bytes only" in p.stderr
    )
    assert "presubmit: PASS" in p.stdout and "vs base" not in p.stdout


def test_ci_fails_on_a_base_whose_build_files_do_not_load(e2e_repo):
    # Before, the targets of a base that failed to load counted as "new at
    # head": presubmit passed without checking growth.
    build = "tests/verify/fixture/BUILD.bazel"
    broken = _side_commit(
        e2e_repo, "a base that does not load", {build: (e2e_repo / build).read_text() + "\nthis is not starlark(\n"}
    )
    p = _e2e_presubmit(e2e_repo, broken, env={"CI": "true"})
    assert p.returncode == 2, p.stdout + p.stderr[-4000:]
    assert "syntax error" in p.stderr  # Bazel's error, above the reason
    assert _last_line(p).startswith(
        f"presubmit: error: base {broken} does not load (bazel query exit 3, errors "
        "above); with CI=true growth must be checked: fix the base's BUILD files"
    )


def test_ci_fails_on_a_base_that_cannot_be_measured(e2e_repo, tmp_path):
    # The budgets name an expected-symbols file that only head has: the base
    # builds, then its report cannot be made.
    head_only = "tests/verify/fixture/expected/head_only.expected_symbols.json"
    shutil.copy(e2e_repo / "tests/verify/fixture/expected/clean.expected_symbols.json", e2e_repo / head_only)
    budgets = json.loads(FIXTURE_BUDGETS.read_text())
    budgets["targets"]["//tests/verify/fixture:clean"]["expected_symbols"] = head_only
    (tmp_path / "budgets.json").write_text(json.dumps(budgets))
    try:
        p = _e2e_presubmit(e2e_repo, budgets=str(tmp_path / "budgets.json"), env={"CI": "true"})
        assert p.returncode == 2, p.stdout + p.stderr[-4000:]
        assert "head_only.expected_symbols.json" in p.stderr  # size_diff's own error, above the reason
        assert _last_line(p).startswith(
            "presubmit: error: measuring base HEAD~1 failed (the error above); with CI=true growth must be checked:"
        )
        assert ALLOW_HINT in _last_line(p)
    finally:
        (e2e_repo / head_only).unlink()
