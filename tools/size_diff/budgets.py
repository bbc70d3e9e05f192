"""Size budgets (schema pare.size_budgets, version 2) and checking reports against them.

The checked-in file is size_budgets.json at the workspace root (docs/size.md):

    {
      "schema": "pare.size_budgets",
      "version": 2,
      "targets": {
        "//apps/demo:runtime": {
          "platforms": {
            "android_arm64": {"recorded_bytes": 94488, "max_bytes": 102400,
                              "max_growth_bytes": 4096, "max_growth_percent": 2.0}
          }
        }
      }
    }

Per platform, `recorded_bytes` is the size when the budget was last set,
`max_bytes` caps the size, and `max_growth_bytes` / `max_growth_percent` (at
least one) cap the growth since `recorded_bytes`: counted from the recording,
not from the previous commit, so small steps add up. All are numbers; null is
an error. They count the shipped (stripped) file's bytes, or with "measure":
"section_bytes" the allocated sections' bytes: better for iOS, whose dylib
grows in 16 KB page steps while apps link the static archive's code. The
targets listed are the ones tools/size_diff/presubmit.sh builds. A target that
is not a selective_runtime (no expected_symbols.json beside its outputs) may
name one with "expected_symbols": "<workspace-relative path>".

Version 1 (no `recorded_bytes`; each change's growth counted from the base
revision's build) is read only as a base revision's budgets (`load_budgets_at`),
so a presubmit whose base predates version 2 still checks its change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tools.size_diff.diff import describe_contributor, diff_platform, pct
from tools.size_diff.errors import SizeDiffError
from tools.size_diff.report import bucket_total, n, signed

SCHEMA = "pare.size_budgets"
VERSION = 2
LEGACY_VERSION = 1
DEFAULT_PATH = "size_budgets.json"
GROWTH_LIMITS = ("max_growth_bytes", "max_growth_percent")
LIMITS = ("max_bytes", *GROWTH_LIMITS)
PLATFORM_KEYS = ("recorded_bytes", *LIMITS, "measure")  # version 1: no recorded_bytes
MEASURES = ("file_bytes", "section_bytes")
COMMENT_MAX_CHARS = 200
_TARGET_KEYS = ("comment", "platforms", "expected_symbols")
_LABEL = re.compile(r"^//[A-Za-z0-9_./+-]*:[A-Za-z0-9_./+=,@~-]+$")

# What to write instead of a null, per field: the error names it.
_NULL_FIX = {
    "recorded_bytes": "set it to the platform's size now (presubmit and `python -m tools.size_diff check` print it)",
    "max_bytes": "set it to the size plus about 10%",
    "max_growth_bytes": "give a number of bytes, or leave the key out if max_growth_percent caps growth",
    "max_growth_percent": "give a percentage, or leave the key out if max_growth_bytes caps growth",
}


@dataclass(frozen=True)
class Budget:
    max_bytes: int | None = None
    max_growth_bytes: int | None = None
    max_growth_percent: float | None = None
    measure: str = "file_bytes"  # or "section_bytes"
    # Version 2: the size when the budget was last set; growth counts from it.
    # None only in a version 1 file, whose growth counts from the base's build.
    recorded_bytes: int | None = None


@dataclass(frozen=True)
class TargetBudget:
    label: str
    platforms: dict[str, Budget]
    expected_symbols: str | None = None
    comment: str = ""


@dataclass(frozen=True)
class Budgets:
    path: Path
    targets: dict[str, TargetBudget]
    version: int = VERSION
    # How messages name the file: its path, or "<path> at <revision>".
    name: str = ""

    def __str__(self) -> str:
        return self.name or str(self.path)


def load_budgets(path: str | os.PathLike[str]) -> Budgets:
    """The budgets file at `path`, which must be version 2."""
    path = Path(path)
    if not path.is_file():
        raise SizeDiffError(f"{path}: no such budgets file; create it (docs/size.md) or pass --budgets FILE")
    return parse_budgets(path.read_text(encoding="utf-8"), path, str(path))


def load_budgets_at(path: str | os.PathLike[str], rev: str, *, rev_name: str | None = None) -> Budgets:
    """The budgets file `path` (in a git working tree) as committed at revision `rev`: a base's budgets.

    Version 1 is accepted here, for a base from before version 2.
    """
    path = Path(path).absolute()
    name = f"{path.name} at {rev_name or rev}"
    git = ["git", "-C", str(path.parent)]
    top = subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise SizeDiffError(
            f"{path} is not in a git repository: a base's budgets are read from git; "
            "name a budgets file the repository holds"
        )
    if subprocess.run([*git, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], capture_output=True).returncode:
        raise SizeDiffError(f"revision {rev} does not exist in {top.stdout.strip()}; name one that does")
    shown = subprocess.run([*git, "show", f"{rev}:./{path.name}"], capture_output=True)
    if shown.returncode != 0:
        raise SizeDiffError(
            f"{path.name} does not exist at {rev_name or rev}: budgets are read from the base revision, "
            "so a new budgets file takes effect once it is committed, in a commit of its own"
        )
    try:
        text = shown.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise SizeDiffError(f"{name}: not UTF-8 text; fix the file at that revision") from None
    return parse_budgets(text, path, name, allow_version_1=True)


def parse_budgets(text: str, path: Path, name: str, *, allow_version_1: bool = False) -> Budgets:
    """Validates budgets JSON `text`; `name` says where it came from in messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SizeDiffError(f"{name}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None

    def bad(msg: str) -> SizeDiffError:
        return SizeDiffError(f"{name}: {msg} (format: docs/size.md)")

    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise bad(f'not a budgets file (want "schema": "{SCHEMA}")')
    version = data.get("version")
    if version == LEGACY_VERSION and not allow_version_1:
        raise bad(
            f"version {LEGACY_VERSION} is read only as a base revision's budgets; "
            f"write version {VERSION}, with recorded_bytes per platform"
        )
    if version not in (VERSION, LEGACY_VERSION):
        raise bad(f"version {version!r} is not supported (want {VERSION})")
    unknown = sorted(set(data) - {"schema", "version", "comment", "targets"})
    if unknown:
        raise bad(f"unknown key {unknown[0]!r}; allowed: schema, version, comment, targets")
    if version == VERSION:
        _check_comment(data.get("comment", ""), "comment", bad)
    targets_raw = data.get("targets")
    if not isinstance(targets_raw, dict):
        raise bad("`targets` must be an object of Bazel label -> budget")
    targets = {}
    for label, t in targets_raw.items():
        if not _LABEL.match(label):
            raise bad(f"target {label!r} is not an absolute Bazel label like //apps/demo:runtime")
        if not isinstance(t, dict):
            raise bad(f"{label} must be an object with `platforms`")
        extra = sorted(set(t) - set(_TARGET_KEYS))
        if extra:
            raise bad(f"{label}: unknown key {extra[0]!r}; allowed: {', '.join(_TARGET_KEYS)}")
        if version == VERSION:
            _check_comment(t.get("comment", ""), f"{label}.comment", bad)
        plats = t.get("platforms")
        if not isinstance(plats, dict) or not plats:
            raise bad(f"{label}.platforms must be a non-empty object of platform -> limits")
        budgets = {}
        for platform, limits in plats.items():
            budgets[platform] = _parse_budget(limits, f"{label}.platforms.{platform}", version, bad)
        exp = t.get("expected_symbols")
        if exp is not None and not isinstance(exp, str):
            raise bad(f"{label}.expected_symbols must be a workspace-relative path")
        targets[label] = TargetBudget(label, budgets, exp, str(t.get("comment", "")))
    return Budgets(path, targets, version, name)


def _check_comment(comment: object, where: str, bad) -> None:
    if not isinstance(comment, str) or "\n" in comment or len(comment) > COMMENT_MAX_CHARS:
        raise bad(
            f"{where} must be one line of at most {COMMENT_MAX_CHARS} characters: the file holds budgets, "
            "not their history; say why a budget changed in its commit's message (docs/size.md, Budget history)"
        )


def _parse_budget(limits: object, where: str, version: int, bad) -> Budget:
    keys = PLATFORM_KEYS if version == VERSION else tuple(k for k in PLATFORM_KEYS if k != "recorded_bytes")
    if not isinstance(limits, dict):
        raise bad(f"{where} must be an object of limits ({', '.join(keys)})")
    extra = sorted(set(limits) - set(keys))
    if extra:
        raise bad(f"{where}: unknown key {extra[0]!r}; allowed: {', '.join(keys)}")
    if limits.get("measure", "file_bytes") not in MEASURES:
        raise bad(f"{where}.measure = {limits['measure']!r}: want one of {', '.join(MEASURES)}")
    for k, v in limits.items():
        if k == "measure":
            continue
        if v is None:
            raise bad(f"{where}.{k} is null, and a null would leave it unchecked: {_NULL_FIX[k]}")
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or v < 0
            or (k != "max_growth_percent" and not isinstance(v, int))
        ):
            kind = "a number" if k == "max_growth_percent" else "a whole number of bytes"
            raise bad(f"{where}.{k} = {v!r}: want {kind} >= 0")
    if version == VERSION:
        for k in ("recorded_bytes", "max_bytes"):
            if k not in limits:
                raise bad(f"{where} has no {k}: {_NULL_FIX[k]}")
        if not any(k in limits for k in GROWTH_LIMITS):
            raise bad(f"{where} caps no growth: give max_growth_bytes, max_growth_percent or both")
        if limits["recorded_bytes"] > limits["max_bytes"]:
            raise bad(
                f"{where}.recorded_bytes {n(limits['recorded_bytes'])} is over its max_bytes {n(limits['max_bytes'])}: "
                "raise max_bytes, or record the size it should be held to"
            )
    return Budget(**limits)


def bundle_dir(label: str) -> str:
    """bazel-bin-relative output directory of a multi-platform target: //a/b:c -> a/b/c."""
    pkg, name = label[2:].split(":", 1)
    return f"{pkg}/{name}" if pkg else name


@dataclass
class CheckResult:
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def render(self) -> str:
        lines = []
        lines += [f"FAIL {v}" for v in self.violations]
        lines += [f"ok   {p}" for p in self.passed]
        lines += [f"note {x}" for x in self.notes]
        return "\n".join(lines) + ("\n" if lines else "")


def _largest(p: dict, k: int = 5) -> str:
    inclusive = p.get("op_inclusive", {})
    items = []
    for bucket, kind in (("op", "op"), ("kernel_dtype", "kernel dtype"), ("class", "class")):
        for key, v in p["attribution"][bucket].items():
            v = inclusive.get(key, v) if bucket == "op" else v
            if v:
                items.append((v, f"{kind} {key} {n(v)} B" + (" (incl. dtype cases)" if bucket == "op" else "")))
    for bucket in ("shared_kernels", "core", "other", "unattributed"):
        v = bucket_total(p, bucket)
        if v:
            items.append((v, f"{bucket.replace('_', ' ')} {n(v)} B"))
    items.append((p["outside_sections_bytes"], f"outside sections {n(p['outside_sections_bytes'])} B"))
    items.sort(key=lambda x: -x[0])
    return "; ".join(text for _, text in items[:k])


def _attribution(d: dict, k: int = 6) -> str:
    parts = [describe_contributor(c) for c in d["contributors"][:k]]
    outside = d["outside_sections_bytes"]["delta"]
    if outside:
        parts.append(f"outside sections {signed(outside)} B (headers, segment padding)")
    return "; ".join(parts) if parts else "no attributed change"


def _fix(d: dict | None, budgets: Budgets) -> str:
    raise_it = (
        f"or raise the budget first: a commit of its own that changes only {budgets.path.name} "
        "(a limit, or recorded_bytes re-recorded) and says why (docs/size.md)"
    )
    new_ops = [
        c["key"] for c in (d or {}).get("contributors", []) if c["kind"] == "op" and c["base"] == 0 and c["head"]
    ]
    if new_ops:
        return (
            f"the selection gained {', '.join(new_ops)}: drop {'it' if len(new_ops) == 1 else 'them'} from the "
            f"manifest, {raise_it}"
        )
    return f"shrink the change, {raise_it}"


def _growth(delta: int, since: int) -> str:
    percent = pct(delta, since)
    return f"{signed(delta)} B" + (f", {percent:+.2f}%" if percent is not None else "")


def _growth_limits(budget: Budget) -> str:
    parts = []
    if budget.max_growth_bytes is not None:
        parts.append(f"{n(budget.max_growth_bytes)} B")
    if budget.max_growth_percent is not None:
        parts.append(f"{budget.max_growth_percent:g}%")
    return " / ".join(parts)


def check(budgets: Budgets, head: dict, base: dict | None = None, *, target: str | None = None) -> CheckResult:
    """Checks every platform of `head` (a size report) against its target's budget.

    Growth counts from each platform's recorded_bytes; `base` (the same
    target's report at the base revision) attributes the change, and with a
    version 1 file (no recorded sizes) growth counts from it instead.
    """
    label = target or head.get("target")
    result = CheckResult()
    if not label:
        raise SizeDiffError("the report has no target label; pass --target //pkg:name (or regenerate it with --target)")
    tb = budgets.targets.get(label)
    if tb is None:
        raise SizeDiffError(f"{label}: no budget in {budgets}; add it under `targets` (docs/size.md)")
    for platform in sorted(set(tb.platforms) - set(head["platforms"])):
        result.violations.append(
            f"{label} {platform}: budgeted in {budgets} but not in the report\n"
            f"  fix: build {label} for {platform}, or remove its budget first, in a commit of its own that "
            f"changes only {budgets.path.name} and says why"
        )
    for platform, p in head["platforms"].items():
        budget = tb.platforms.get(platform)
        where = f"{label} {platform}"
        if budget is None:
            result.notes.append(
                f"{where}: no budget in {budgets} ({n(p['file_bytes'])} B); add one, in a commit of its own"
            )
            continue
        measure = budget.measure
        size = p[measure]
        unit = "B" if measure == "file_bytes" else "B of sections"
        b = base["platforms"].get(platform) if base else None
        d = diff_platform(b, p) if b else None
        # Growth counts from the recording, or (version 1) from the base's build.
        since = budget.recorded_bytes if budget.recorded_bytes is not None else (b[measure] if b else None)
        since_what = "since recorded" if budget.recorded_bytes is not None else "vs base"
        over = []
        if budget.max_bytes is not None and size > budget.max_bytes:
            over.append(f"over max_bytes {n(budget.max_bytes)} by {n(size - budget.max_bytes)} B")
        if since is not None:
            growth, percent = size - since, pct(size - since, since)
            if budget.max_growth_bytes is not None and growth > budget.max_growth_bytes:
                over.append(
                    f"growth {signed(growth)} B {since_what} {n(since)} is over max_growth_bytes "
                    f"{n(budget.max_growth_bytes)}"
                )
            if budget.max_growth_percent is not None and percent is not None and percent > budget.max_growth_percent:
                over.append(
                    f"growth {percent:+.2f}% {since_what} {n(since)} is over max_growth_percent "
                    f"{budget.max_growth_percent:g}%"
                )
        elif budget.max_growth_bytes is not None or budget.max_growth_percent is not None:
            why = "not in the base report" if base is not None else "no base report"
            result.notes.append(
                f"{where}: {why}, and {budgets} (version {budgets.version}) records no size: growth not checked"
            )
        changes = []
        if b is not None:
            changes.append(f"{_growth(size - b[measure], b[measure])} vs base {n(b[measure])}")
        if budget.recorded_bytes is not None:
            changes.append(
                f"{_growth(size - budget.recorded_bytes, budget.recorded_bytes)} since recorded "
                f"{n(budget.recorded_bytes)}"
            )
        change = f" ({'; '.join(changes)})" if changes else ""
        if not over:
            limits = []
            if since is not None and _growth_limits(budget):
                limits.append(f"growth limit {_growth_limits(budget)}")
            limits.append(f"max {n(budget.max_bytes)}" if budget.max_bytes is not None else "no max_bytes set")
            result.passed.append(f"{where}: {n(size)} {unit}{change}; {', '.join(limits)}")
            continue
        lines = [f"{where}: {n(size)} {unit}{change}", f"  {'; '.join(over)} ({budgets})"]
        if d is not None:
            lines.append(f"  this change (vs base) attributed to: {_attribution(d)}")
        if budget.max_bytes is not None and size > budget.max_bytes:
            lines.append(f"  largest now: {_largest(p)}")
        lines.append(f"  fix: {_fix(d, budgets)}")
        result.violations.append("\n".join(lines))
    return result


__all__ = [
    "Budget",
    "Budgets",
    "CheckResult",
    "DEFAULT_PATH",
    "TargetBudget",
    "bundle_dir",
    "check",
    "load_budgets",
    "load_budgets_at",
    "parse_budgets",
]
