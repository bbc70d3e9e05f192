"""tools/size_diff/presubmit.sh on the fixture runtime.

Fast: base reports and budgets given (--base-reports), head built in this
checkout.
End to end: a throwaway git repository copied from this working tree, whose
second commit makes //tests/verify/fixture:clean's selection gain aten::mm;
presubmit builds HEAD~1 in a git worktree and the working tree, and fails
naming aten::mm, even with the budget raised in the working tree (the limits
come from the base); against a base that re-recorded the sizes it passes. A
commit that grows the runtime and raises its own budget fails before anything
is built, naming the budget change.

Budget changes since the base (git, no Bazel): each listed with its commit,
subject and fields; one sharing its commit fails. The base's budgets read
from git, version 1 included.

The base worktree: this checkout, its parent, the main checkout, a directory
with files, a worktree presubmit did not make are refused before anything in
them is touched.

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
from tools.size_diff import SizeDiffError, budget_changes, build_report, bundle_runs, load_budgets_at

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


def _base_reports(tmp_path: Path, fixture_build, target: str, budgets: Path) -> Path:
    """A --base-reports directory as a presubmit run of the base leaves DIR/head/:
    the clean build's report under `target`, and the base's budgets."""
    base = tmp_path / "base"
    base.mkdir()
    report = build_report(target, bundle_runs(fixture_build.bundle("clean")))
    (base / f"{target[2:].replace('/', '_').replace(':', '_')}.json").write_text(json.dumps(report))
    shutil.copy(budgets, base / "budgets.json")
    return base


def test_unchanged_target_passes(fixture_build, tmp_path):
    base = _base_reports(tmp_path, fixture_build, "//tests/verify/fixture:clean", FIXTURE_BUDGETS)
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "--base-reports", str(base), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "presubmit: PASS" in p.stdout and p.stdout.count("ok   //tests/verify/fixture:clean") == 3
    assert p.stdout.count("(+0 B, +0.00% vs base") == 3 and p.stdout.count("+0 B, +0.00% since recorded") == 3
    for ext in ("json", "md", "png"):
        assert (tmp_path / "out" / "head" / f"tests_verify_fixture_clean.{ext}").is_file()
    assert (tmp_path / "out" / "diff" / "tests_verify_fixture_clean.md").is_file()
    # What a later run takes as --base-reports: the reports and these budgets.
    assert (tmp_path / "out" / "head" / "budgets.json").read_text() == FIXTURE_BUDGETS.read_text()


def test_target_whose_selection_gained_an_op_fails_naming_it(fixture_build, tmp_path):
    # Head is :grown (clean.yaml + aten::mm); its base report is the clean build.
    target = "//tests/verify/fixture:grown"
    budgets = _budgets_for(tmp_path, target)
    base = _base_reports(tmp_path, fixture_build, target, budgets)
    p = presubmit("--budgets", str(budgets), "--base-reports", str(base), "--out", str(tmp_path / "out"))
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
    limits = {"recorded_bytes": 1, "max_bytes": 1, "max_growth_bytes": 1}
    missing.write_text(
        json.dumps(
            {
                "schema": "pare.size_budgets",
                "version": 2,
                "targets": {"//tests/verify/fixture:no_such_target": {"platforms": {"android_arm64": limits}}},
            }
        )
    )
    p = presubmit("--budgets", str(missing), "--base-reports", str(tmp_path))
    assert p.returncode == 2 and "head does not build" in p.stderr
    p = presubmit("--require-base", "--allow-missing-base")
    assert p.returncode == 2 and "not both" in p.stderr


# --- an unusable base: an error in CI, a warning locally ---

ALLOW_HINT = "or pass --allow-missing-base to go on without it"


@pytest.mark.parametrize("how", [{"env": {"CI": "true"}}, {"args": ("--require-base",)}], ids=["CI=true", "flag"])
def test_ci_fails_at_once_on_a_base_revision_that_does_not_exist(how):
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), *how.get("args", ()), "no-such-rev", env=how.get("env"))
    assert p.returncode == 2, p.stderr[-3000:]
    assert _last_line(p).startswith("presubmit: error: base revision no-such-rev does not exist in this repository;")
    assert ALLOW_HINT in _last_line(p) and ("CI=true" in _last_line(p) or "--require-base" in _last_line(p))
    assert "with CI=true the base must be measured" in _last_line(p) or "with --require-base" in _last_line(p)
    assert "building" not in p.stderr  # before head's build


@pytest.mark.parametrize(
    "env,args", [({}, ()), ({"CI": "true"}, ("--allow-missing-base",))], ids=["local", "CI=true --allow-missing-base"]
)
def test_missing_base_revision_only_warns_locally_or_when_allowed(fixture_build, tmp_path, env, args):
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "--out", str(tmp_path / "out"), *args, "no-such-rev", env=env)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert (
        "presubmit: warning: base revision no-such-rev does not exist in this repository: no diff against it, "
        f"and the limits come from the working tree's {FIXTURE_BUDGETS}, which this change may have raised"
    ) in p.stderr
    assert "presubmit: PASS" in p.stdout and p.stdout.count("ok   //tests/verify/fixture:clean") == 3
    assert "vs base" not in p.stdout and p.stdout.count("since recorded") == 3


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


# --- budget changes since the base, and the base's budgets, from git (no Bazel) ---


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


def _commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _limits(recorded: int, max_bytes: int = 100_000, **growth) -> dict:
    return {"recorded_bytes": recorded, "max_bytes": max_bytes, **(growth or {"max_growth_bytes": 4096})}


def _budgets_json(version: int = 2, **platforms) -> str:
    return json.dumps(
        {
            "schema": "pare.size_budgets",
            "version": version,
            "targets": {"//apps/demo:runtime": {"platforms": platforms}},
        },
        indent=2,
    )


@pytest.fixture
def budget_repo(tmp_path):
    """A repository whose base commit has version 1 budgets (as main did before version 2)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    v1 = _budgets_json(1, android_arm64={"max_bytes": 102400, "max_growth_bytes": 4096})
    base = _commit(repo, "base: version 1 budgets", {"size_budgets.json": v1, "src.c": "int x;\n"})
    return repo, base


def test_budget_changes_list_each_commit_field_and_subject(budget_repo):
    repo, base = budget_repo
    _commit(repo, "a code change", {"src.c": "int x, y;\n"})
    migrate = _commit(
        repo,
        "size_budgets.json: version 2, sizes recorded",
        {"size_budgets.json": _budgets_json(android_arm64=_limits(94488, 102400))},
    )
    raise_ = _commit(
        repo,
        "size_budgets.json: android_arm64 max_bytes for the new kernels",
        {"size_budgets.json": _budgets_json(android_arm64=_limits(94488, 110000))},
    )
    result = budget_changes(repo / "size_budgets.json", base, base_name="HEAD~3")
    assert result.ok and [c.commit for c in result.changes] == [migrate, raise_]
    assert result.changes[0].changes == (
        "version: 1 -> 2",
        "//apps/demo:runtime android_arm64 recorded_bytes: (none) -> 94,488",
    )
    assert result.changes[1].changes == ("//apps/demo:runtime android_arm64 max_bytes: 102,400 -> 110,000",)
    text = result.render()
    assert text.startswith("BUDGET CHANGES since HEAD~3: 2 change(s) to size_budgets.json; this run checks head")
    assert f'BUDGET CHANGE {raise_[:12]} "size_budgets.json: android_arm64 max_bytes for the new kernels"\n' in text
    assert "  //apps/demo:runtime android_arm64 max_bytes: 102,400 -> 110,000\n" in text
    assert "FAIL" not in text
    assert (
        budget_changes(repo / "size_budgets.json", "HEAD").render()
        == "budgets: size_budgets.json unchanged since HEAD\n"
    )


def test_a_budget_change_sharing_its_commit_fails(budget_repo):
    repo, base = budget_repo
    mixed = _commit(
        repo,
        "new kernels, and room for them",
        {"size_budgets.json": _budgets_json(android_arm64=_limits(94488, 110000)), "src.c": "int x, y, z;\n"},
    )
    result = budget_changes(repo / "size_budgets.json", base)
    assert not result.ok and result.mixed[0].commit == mixed and result.mixed[0].other_files == ("src.c",)
    assert (
        f"FAIL budget change {mixed[:12]} also changes 1 other file(s): src.c\n"
        "  a budget change is a commit of its own, its message saying why: "
        f"split {mixed[:12]} into a commit of size_budgets.json alone"
    ) in result.render()
    # The CLI: exit 1, the same text.
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.size_diff",
            "changes",
            "--budgets",
            str(repo / "size_budgets.json"),
            "--base",
            base,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1 and p.stdout == result.render(), p.stderr


def test_uncommitted_budget_changes_count_as_one_more_change(budget_repo):
    repo, base = budget_repo
    (repo / "size_budgets.json").write_text(
        _budgets_json(1, android_arm64={"max_bytes": 200000, "max_growth_bytes": 1})
    )
    result = budget_changes(repo / "size_budgets.json", base)
    assert result.ok and result.changes[0].short == "(working tree, uncommitted)"
    assert result.changes[0].changes == (
        "//apps/demo:runtime android_arm64 max_bytes: 102,400 -> 200,000",
        "//apps/demo:runtime android_arm64 max_growth_bytes: 4,096 -> 1",
    )
    (repo / "src.c").write_text("int changed;\n")
    result = budget_changes(repo / "size_budgets.json", base)
    assert result.mixed and "commit size_budgets.json alone first" in result.render()


def test_the_base_budgets_come_from_git_version_1_included(budget_repo):
    repo, base = budget_repo
    _commit(repo, "version 2", {"size_budgets.json": _budgets_json(android_arm64=_limits(94488, 102400))})
    old = load_budgets_at(repo / "size_budgets.json", "HEAD~1")
    assert old.version == 1 and str(old) == "size_budgets.json at HEAD~1"
    assert old.targets["//apps/demo:runtime"].platforms["android_arm64"].recorded_bytes is None
    new = load_budgets_at(repo / "size_budgets.json", "HEAD", rev_name="the base")
    assert new.targets["//apps/demo:runtime"].platforms["android_arm64"].recorded_bytes == 94488
    with pytest.raises(SizeDiffError, match="revision nope does not exist"):
        load_budgets_at(repo / "size_budgets.json", "nope")
    with pytest.raises(SizeDiffError, match="other.json does not exist at HEAD: budgets are read from the base"):
        load_budgets_at(repo / "other.json", "HEAD")


# --- the base worktree: refused unless presubmit made it (no Bazel) ---


def _refused(p: subprocess.CompletedProcess, why: str) -> None:
    assert p.returncode == 2, p.stdout + p.stderr[-3000:]
    assert _last_line(p).startswith("presubmit: error: worktree ") and why in _last_line(p), _last_line(p)
    assert _last_line(p).endswith(
        "presubmit checks out and cleans that directory: set PARE_PRESUBMIT_WORKTREE to a new or empty directory "
        "(or unset it)"
    )
    assert "building" not in p.stderr and "budget changes" not in p.stderr  # before anything else


def _main_checkout() -> Path:
    porcelain = _git(REPO_ROOT, "worktree", "list", "--porcelain")
    return Path(porcelain.splitlines()[0].removeprefix("worktree "))


@pytest.mark.parametrize(
    "where, why",
    [
        (lambda tmp: REPO_ROOT, "is this checkout or holds it"),
        (lambda tmp: REPO_ROOT.parent, "is this checkout or holds it"),
        (lambda tmp: _main_checkout(), "or holds it"),  # this checkout, or the main one it is a worktree of
    ],
    ids=["this checkout", "its parent", "the main checkout"],
)
def test_worktree_guard_refuses_checkouts(tmp_path, where, why):
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "HEAD", env={"PARE_PRESUBMIT_WORKTREE": str(where(tmp_path))})
    _refused(p, why)


def test_worktree_guard_refuses_a_directory_presubmit_did_not_make(tmp_path):
    files = tmp_path / "notes"
    files.mkdir()
    (files / "draft.txt").write_text("mine")
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "HEAD", env={"PARE_PRESUBMIT_WORKTREE": str(files)})
    _refused(p, "exists, holds files and is not a worktree presubmit made (no .pare-presubmit-base in it)")
    # A worktree whose repository is gone used to be deleted and made again:
    # without the marker, it is someone's directory.
    (files / ".git").write_text("gitdir: /no/such/repository/.git/worktrees/x\n")
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "HEAD", env={"PARE_PRESUBMIT_WORKTREE": str(files)})
    _refused(p, "is not a worktree presubmit made")
    assert (files / "draft.txt").read_text() == "mine"
    # Another repository's main checkout, even with the marker.
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pare-presubmit-base").write_text("")
    p = presubmit("--budgets", str(FIXTURE_BUDGETS), "HEAD", env={"PARE_PRESUBMIT_WORKTREE": str(repo)})
    _refused(p, "is not a linked worktree (its .git is not a file)")


# --- end to end, with git worktrees ---

# Fixed paths (not tmp_path): each Bazel workspace path gets its own output
# base, so reusing the paths keeps reruns warm and leaves no new caches behind.
_E2E = Path(tempfile.gettempdir()) / "pare-presubmit-test"


def _side_commit(repo: Path, message: str, edits: dict[str, str], parent: str = "HEAD") -> str:
    """A commit on top of `parent` with HEAD's files, some replaced, that HEAD
    does not move to: a base revision to test against, or a head to check out
    elsewhere. Its sha."""
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "side-commit-index")}
    _git(repo, "read-tree", "HEAD", env=env)
    for path, text in edits.items():
        blob = _git(repo, "hash-object", "-w", "--stdin", input=text.encode())
        _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
    tree = _git(repo, "write-tree", env=env)
    os.unlink(env["GIT_INDEX_FILE"])
    return _git(repo, "commit-tree", tree, "-p", parent, "-m", message)


@pytest.fixture(scope="module")
def e2e_repo():
    repo = _E2E / "repo"
    for stale in (repo, _E2E / "base", _E2E / "other", _E2E / "mixed"):  # worktrees of the previous run's repository
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


FIXTURE_BUDGETS_PATH = "tests/size_diff/fixture_budgets.json"


def _e2e_presubmit(repo: Path, *args: str, env: dict | None = None, budgets: str = FIXTURE_BUDGETS_PATH):
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


def _with_platforms(budgets: dict, update) -> dict:
    out = json.loads(json.dumps(budgets))
    for platform, limits in out["targets"]["//tests/verify/fixture:clean"]["platforms"].items():
        update(platform, limits)
    return out


def test_end_to_end_growth_fails_against_the_base_budgets_then_passes_once_recorded(e2e_repo):
    # Head grows by aten::mm and raises its budget in the working tree (a
    # change to the budgets alone, so allowed): listed, but the limits are
    # the base's, and the growth fails.
    budgets_file = e2e_repo / FIXTURE_BUDGETS_PATH
    committed = json.loads(budgets_file.read_text())
    budgets_file.write_text(
        json.dumps(_with_platforms(committed, lambda _, limits: limits.update(max_growth_bytes=4096)))
    )
    try:
        p = _e2e_presubmit(e2e_repo, "--out", str(_E2E / "out1"))
    finally:
        _git(e2e_repo, "checkout", "--", FIXTURE_BUDGETS_PATH)
    assert p.returncode == 1, p.stdout + p.stderr[-4000:]
    assert "base: HEAD~1" in p.stderr and "building 1 target(s) at HEAD~1" in p.stderr
    assert "BUDGET CHANGE (working tree, uncommitted)\n" in p.stdout
    assert p.stdout.count("max_growth_bytes: 512 -> 4,096") == 3
    assert p.stdout.count("FAIL //tests/verify/fixture:clean") == 3
    assert "growth +1,240 B since recorded 3,280 is over max_growth_bytes 512 (fixture_budgets.json at HEAD~1)" in (
        p.stdout
    )
    assert "kernel dtype mm_kernel/Float" in p.stdout and "fix: the selection gained aten::mm" in p.stdout
    assert "budgets: fixture_budgets.json at HEAD~1)" in p.stdout

    # A budget change of its own re-records the grown sizes; with it as the
    # base, the same tree passes: +0 B against the base and since recorded.
    head = json.loads((_E2E / "out1" / "head" / "tests_verify_fixture_clean.json").read_text())

    def record(platform: str, limits: dict) -> None:
        limits["recorded_bytes"] = head["platforms"][platform][limits.get("measure", "file_bytes")]

    recorded = _side_commit(
        e2e_repo,
        "fixture_budgets.json: sizes recorded with aten::mm",
        {FIXTURE_BUDGETS_PATH: json.dumps(_with_platforms(committed, record))},
    )
    p = _e2e_presubmit(e2e_repo, "--out", str(_E2E / "out2"), recorded)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    assert "presubmit: PASS" in p.stdout and p.stdout.count("(+0 B, +0.00% vs base") == 3
    assert p.stdout.count("+0 B, +0.00% since recorded") == 3


def test_a_commit_that_grows_and_raises_its_own_budget_fails(e2e_repo):
    # One commit on the clean base: the selection gains aten::mm (HEAD's
    # tree) and the budget makes room for it. Checked out in a worktree of
    # its own; presubmit fails before building anything, naming the change.
    raised = _with_platforms(
        json.loads((e2e_repo / FIXTURE_BUDGETS_PATH).read_text()),
        lambda _, limits: limits.update(max_growth_bytes=4096, max_bytes=limits["max_bytes"] + 4096),
    )
    mixed = _side_commit(
        e2e_repo, "aten::mm, and room for it", {FIXTURE_BUDGETS_PATH: json.dumps(raised)}, parent="HEAD~1"
    )
    checkout = _E2E / "mixed"
    _git(e2e_repo, "worktree", "add", "-q", "--detach", str(checkout), mixed)
    try:
        p = _e2e_presubmit(checkout)
    finally:
        _git(e2e_repo, "worktree", "remove", "--force", str(checkout))
    assert p.returncode == 1, p.stdout + p.stderr[-4000:]
    assert f'BUDGET CHANGE {mixed[:12]} "aten::mm, and room for it"\n' in p.stdout
    assert "//tests/verify/fixture:clean linux_x86_64 max_bytes: 8,000 -> 12,096" in p.stdout
    assert (
        f"FAIL budget change {mixed[:12]} also changes 1 other file(s): tests/verify/fixture/BUILD.bazel\n"
        "  a budget change is a commit of its own, its message saying why: "
    ) in p.stdout
    assert p.stdout.rstrip().endswith(
        "presubmit: FAIL: a budget change shares its commit with other changes (above); nothing was built"
    )
    assert "building" not in p.stderr


def test_worktree_guard_refuses_a_worktree_presubmit_did_not_make(e2e_repo):
    other = _E2E / "other"
    _git(e2e_repo, "worktree", "add", "-q", "--detach", str(other), "HEAD")
    (other / "scratch.txt").write_text("uncommitted work")
    try:
        p = _e2e_presubmit(e2e_repo, env={"PARE_PRESUBMIT_WORKTREE": str(other)})
        _refused(p, "exists, holds files and is not a worktree presubmit made")
        assert (other / "scratch.txt").read_text() == "uncommitted work"
        # From that worktree, the repository's main checkout is refused.
        p = _e2e_presubmit(other, env={"PARE_PRESUBMIT_WORKTREE": str(e2e_repo)})
        _refused(p, f"is the repository's main checkout ({e2e_repo}) or holds it")
    finally:
        _git(e2e_repo, "worktree", "remove", "--force", str(other))


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
        f"with CI=true the base must be measured: name a BASE_REV that builds, {ALLOW_HINT}"
    )

    # Without the base's build there is no diff, but its budgets still hold:
    # head's growth since the recorded sizes fails.
    p = _e2e_presubmit(e2e_repo, "--allow-missing-base", broken, env={"CI": "true"})
    assert p.returncode == 1, p.stdout + p.stderr[-4000:]
    assert (
        f"presubmit: warning: base {broken} ({broken}) does not build (Bazel's errors above): no diff against it: "
        "the change is not attributed" in p.stderr
    )
    assert "vs base" not in p.stdout and p.stdout.count("FAIL //tests/verify/fixture:clean") == 3
    assert f"since recorded 3,280 is over max_growth_bytes 512 (fixture_budgets.json at {broken})" in p.stdout


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
        "above); with CI=true the base must be measured: fix the base's BUILD files"
    )


def test_ci_fails_on_a_base_that_cannot_be_measured(e2e_repo):
    # Head's budgets (the working tree's: a budget change of its own) name an
    # expected-symbols file that only head has: the base builds, then its
    # report cannot be made.
    head_only = "tests/verify/fixture/expected/head_only.expected_symbols.json"
    shutil.copy(e2e_repo / "tests/verify/fixture/expected/clean.expected_symbols.json", e2e_repo / head_only)
    budgets = json.loads((e2e_repo / FIXTURE_BUDGETS_PATH).read_text())
    budgets["targets"]["//tests/verify/fixture:clean"]["expected_symbols"] = head_only
    (e2e_repo / FIXTURE_BUDGETS_PATH).write_text(json.dumps(budgets))
    try:
        p = _e2e_presubmit(e2e_repo, env={"CI": "true"})
        assert p.returncode == 2, p.stdout + p.stderr[-4000:]
        assert "head_only.expected_symbols.json" in p.stderr  # size_diff's own error, above the reason
        assert _last_line(p).startswith(
            "presubmit: error: measuring base HEAD~1 failed (the error above); with CI=true the base must be measured:"
        )
        assert ALLOW_HINT in _last_line(p)
    finally:
        (e2e_repo / head_only).unlink()
        _git(e2e_repo, "checkout", "--", FIXTURE_BUDGETS_PATH)
