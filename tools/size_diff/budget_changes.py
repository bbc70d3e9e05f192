"""Budget changes since a base revision: every commit (and the working tree) that changed the budgets file.

A budget is raised (a limit, or its recorded size re-recorded) in a commit of
its own: one that changes the budgets file and nothing else, whose message
is the reason. The presubmit reads the budgets from the base revision, so a
change is always checked against the budgets it did not write; this module
lists every budget change between the base and head, so none passes
unnoticed, and flags a commit that changes the budgets together with
anything else (docs/size.md).

Merge commits count by what they change against all their parents
(`git diff-tree --cc`): a merge that resolves nothing in the budgets file is
not a budget change; the commits it merges are checked themselves.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tools.size_diff.errors import SizeDiffError
from tools.size_diff.report import n

WORKING_TREE = "working tree"


@dataclass(frozen=True)
class BudgetChange:
    commit: str  # full sha, or WORKING_TREE for uncommitted changes
    subject: str
    changes: tuple[str, ...]  # "//apps/demo:runtime linux_x86_64 max_bytes: 116,736 -> 122,880"
    other_files: tuple[str, ...]  # what else the commit changes: must be empty

    @property
    def short(self) -> str:
        return self.commit[:12] if self.commit != WORKING_TREE else "(working tree, uncommitted)"


@dataclass
class ChangesResult:
    budgets_file: str  # repository-relative
    base: str
    changes: list[BudgetChange] = field(default_factory=list)

    @property
    def mixed(self) -> list[BudgetChange]:
        return [c for c in self.changes if c.other_files]

    @property
    def ok(self) -> bool:
        return not self.mixed

    def render(self) -> str:
        if not self.changes:
            return f"budgets: {self.budgets_file} unchanged since {self.base}\n"
        lines = [
            f"BUDGET CHANGES since {self.base}: {len(self.changes)} change(s) to {self.budgets_file}; "
            f"this run checks head against the budgets at {self.base}, and these apply from the next change on"
        ]
        for c in self.changes:
            subject = f' "{c.subject}"' if c.subject else ""
            lines.append(f"BUDGET CHANGE {c.short}{subject}")
            lines += [f"  {x}" for x in c.changes or ("(no field changed: formatting only)",)]
        for c in self.mixed:
            shown = ", ".join(c.other_files[:5]) + (
                f" and {len(c.other_files) - 5} more" if len(c.other_files) > 5 else ""
            )
            lines.append(
                f"FAIL budget change {c.short} also changes {len(c.other_files)} other file(s): {shown}\n"
                "  a budget change is a commit of its own, its message saying why: "
                f"{_split_fix(c, self.budgets_file)}"
            )
        return "\n".join(lines) + "\n"


def _split_fix(c: BudgetChange, budgets_file: str) -> str:
    if c.commit == WORKING_TREE:
        return f"commit {budgets_file} alone first (git commit {budgets_file}), then the rest"
    return (
        f"split {c.commit[:12]} into a commit of {budgets_file} alone and one of the rest "
        "(git rebase -i, edit; git reset HEAD~1; commit each), and land the budget first"
    )


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True)
    if check and p.returncode != 0:
        raise SizeDiffError(f"git {' '.join(args)} failed in {repo}: {p.stderr.decode(errors='replace').strip()}")
    return p


def _json_at(repo: Path, rev: str, relpath: str) -> tuple[object, str | None]:
    """(parsed JSON, or None when absent; a note when it is not JSON)."""
    p = _git(repo, "show", f"{rev}:{relpath}", check=False)
    if p.returncode != 0:
        return None, None
    return _parse(p.stdout)


def _parse(raw: bytes) -> tuple[object, str | None]:
    try:
        return json.loads(raw.decode("utf-8")), None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"not valid JSON ({e})"


def _flatten(data: object) -> dict[str, object]:
    """Budget fields by where they are: "version", "//t comment", "//t android_arm64 max_bytes"."""
    out: dict[str, object] = {}
    if not isinstance(data, dict):
        return out
    for k, v in data.items():
        if k != "targets":
            out[k] = v
    targets = data.get("targets")
    if not isinstance(targets, dict):
        return out
    for label, t in targets.items():
        if not isinstance(t, dict):
            out[label] = t
            continue
        for k, v in t.items():
            if k != "platforms":
                out[f"{label} {k}"] = v
        plats = t.get("platforms")
        if not isinstance(plats, dict):
            out[f"{label} platforms"] = plats
            continue
        for platform, limits in plats.items():
            if not isinstance(limits, dict):
                out[f"{label} {platform}"] = limits
                continue
            for k, v in limits.items():
                out[f"{label} {platform} {k}"] = v
    return out


def _show(v: object) -> str:
    if v is _ABSENT:
        return "(none)"
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, int):
        return n(v)
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str) and len(v) > 60:
        return f"{len(v):,} characters"
    return json.dumps(v)


_ABSENT = object()


def describe(old: object, new: object) -> list[str]:
    """One line per budget field that differs between two versions of the file."""
    a, b = _flatten(old), _flatten(new)
    lines = []
    for key in sorted(set(a) | set(b), key=lambda k: (k.count(" "), k)):
        va, vb = a.get(key, _ABSENT), b.get(key, _ABSENT)
        if va != vb or type(va) is not type(vb):
            lines.append(f"{key}: {_show(va)} -> {_show(vb)}")
    return lines


def _describe_versions(before: tuple[object, str | None], after: tuple[object, str | None]) -> tuple[str, ...]:
    (old, old_note), (new, new_note) = before, after
    notes = [f"{side}: {note}" for side, note in (("before", old_note), ("after", new_note)) if note]
    return (*notes, *describe(old, new))


def _changed_files(repo: Path, commit: str) -> list[str]:
    out = _git(repo, "diff-tree", "-r", "--root", "--cc", "--no-commit-id", "--name-only", "-z", commit).stdout
    return [f for f in out.decode().split("\0") if f]


def budget_changes(budgets: str | Path, base: str, *, base_name: str | None = None) -> ChangesResult:
    """Every change to the budgets file `budgets` in base..HEAD, then in the working tree, oldest first."""
    path = Path(budgets).absolute()
    repo_p = _git(path.parent, "rev-parse", "--show-toplevel", check=False)
    if repo_p.returncode != 0:
        raise SizeDiffError(f"{path} is not in a git repository: budget changes are read from git")
    repo = Path(repo_p.stdout.decode().strip())
    prefix = _git(path.parent, "rev-parse", "--show-prefix").stdout.decode().strip()
    relpath = f"{prefix}{path.name}"
    if _git(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", check=False).returncode != 0:
        raise SizeDiffError(f"revision {base} does not exist in {repo}; name one that does")
    result = ChangesResult(relpath, base_name or base)
    commits = _git(repo, "rev-list", "--reverse", "--topo-order", f"{base}..HEAD").stdout.decode().split()
    for commit in commits:
        files = _changed_files(repo, commit)
        if relpath not in files:
            continue
        subject = _git(repo, "log", "-1", "--format=%s", commit).stdout.decode().strip()
        parents = _git(repo, "log", "-1", "--format=%P", commit).stdout.decode().split()
        before = _json_at(repo, parents[0], relpath) if parents else (None, None)
        changes = _describe_versions(before, _json_at(repo, commit, relpath))
        result.changes.append(BudgetChange(commit, subject, changes, tuple(f for f in files if f != relpath)))
    # Uncommitted: what presubmit builds is the working tree.
    dirty = _git(repo, "diff", "--name-only", "-z", "HEAD", "--").stdout.decode().split("\0")
    dirty = [f for f in dirty if f]
    if relpath in dirty:
        after = _parse(path.read_bytes()) if path.is_file() else (None, None)
        changes = _describe_versions(_json_at(repo, "HEAD", relpath), after)
        result.changes.append(BudgetChange(WORKING_TREE, "", changes, tuple(f for f in dirty if f != relpath)))
    return result


__all__ = ["WORKING_TREE", "BudgetChange", "ChangesResult", "budget_changes", "describe"]
