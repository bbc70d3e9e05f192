"""Size budgets (schema pare.size_budgets, version 1) and checking reports against them.

The checked-in file is size_budgets.json at the workspace root (docs/size.md):

    {
      "schema": "pare.size_budgets",
      "version": 1,
      "targets": {
        "//apps/demo:runtime": {
          "comment": "why these numbers",
          "platforms": {
            "android_arm64": {"max_bytes": 262144, "max_growth_bytes": 4096, "max_growth_percent": 2.0}
          }
        }
      }
    }

Every limit is optional. `max_bytes` caps the size, `max_growth_bytes` /
`max_growth_percent` cap one change's growth over the base revision. They
count the shipped (stripped) file's bytes, or with "measure": "section_bytes"
the allocated sections' bytes: better for iOS, whose dylib grows in 16 KB
page steps while apps link the static archive's code. The targets listed are the ones
tools/size_diff/presubmit.sh builds. A target that is not a selective_runtime
(no expected_symbols.json beside its outputs) may name one with
"expected_symbols": "<workspace-relative path>".
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from tools.size_diff.diff import describe_contributor, diff_platform, pct
from tools.size_diff.errors import SizeDiffError
from tools.size_diff.report import bucket_total, n, signed

SCHEMA = "pare.size_budgets"
VERSION = 1
DEFAULT_PATH = "size_budgets.json"
LIMITS = ("max_bytes", "max_growth_bytes", "max_growth_percent")
MEASURES = ("file_bytes", "section_bytes")
_TARGET_KEYS = ("comment", "platforms", "expected_symbols")
_LABEL = re.compile(r"^//[A-Za-z0-9_./+-]*:[A-Za-z0-9_./+=,@~-]+$")


@dataclass(frozen=True)
class Budget:
    max_bytes: int | None = None
    max_growth_bytes: int | None = None
    max_growth_percent: float | None = None
    measure: str = "file_bytes"  # or "section_bytes"


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


def load_budgets(path: str | os.PathLike[str]) -> Budgets:
    path = Path(path)
    if not path.is_file():
        raise SizeDiffError(f"{path}: no such budgets file; create it (docs/size.md) or pass --budgets FILE")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SizeDiffError(f"{path}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None

    def bad(msg: str) -> SizeDiffError:
        return SizeDiffError(f"{path}: {msg} (format: docs/size.md)")

    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise bad(f'not a budgets file (want "schema": "{SCHEMA}")')
    if data.get("version") != VERSION:
        raise bad(f"version {data.get('version')!r} is not supported (want {VERSION})")
    unknown = sorted(set(data) - {"schema", "version", "comment", "targets"})
    if unknown:
        raise bad(f"unknown key {unknown[0]!r}; allowed: schema, version, comment, targets")
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
        plats = t.get("platforms")
        if not isinstance(plats, dict) or not plats:
            raise bad(f"{label}.platforms must be a non-empty object of platform -> limits")
        budgets = {}
        for platform, limits in plats.items():
            if not isinstance(limits, dict):
                raise bad(f"{label}.platforms.{platform} must be an object of limits ({', '.join(LIMITS)})")
            extra = sorted(set(limits) - set(LIMITS) - {"measure"})
            if extra:
                raise bad(
                    f"{label}.platforms.{platform}: unknown key {extra[0]!r}; allowed: {', '.join(LIMITS)}, measure"
                )
            if limits.get("measure", "file_bytes") not in MEASURES:
                raise bad(
                    f"{label}.platforms.{platform}.measure = {limits['measure']!r}: want one of {', '.join(MEASURES)}"
                )
            for k, v in limits.items():
                if k == "measure":
                    continue
                if v is not None and (
                    isinstance(v, bool)
                    or not isinstance(v, (int, float))
                    or v < 0
                    or (k != "max_growth_percent" and not isinstance(v, int))
                ):
                    kind = "a number" if k == "max_growth_percent" else "a whole number of bytes"
                    raise bad(f"{label}.platforms.{platform}.{k} = {v!r}: want {kind} >= 0 or null")
            budgets[platform] = Budget(**limits)
        exp = t.get("expected_symbols")
        if exp is not None and not isinstance(exp, str):
            raise bad(f"{label}.expected_symbols must be a workspace-relative path")
        targets[label] = TargetBudget(label, budgets, exp, str(t.get("comment", "")))
    return Budgets(path, targets)


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
    for bucket in ("core", "other", "unattributed"):
        v = bucket_total(p, bucket)
        if v:
            items.append((v, f"{bucket} {n(v)} B"))
    items.append((p["outside_sections_bytes"], f"outside sections {n(p['outside_sections_bytes'])} B"))
    items.sort(key=lambda x: -x[0])
    return "; ".join(text for _, text in items[:k])


def _attribution(d: dict, k: int = 6) -> str:
    parts = [describe_contributor(c) for c in d["contributors"][:k]]
    outside = d["outside_sections_bytes"]["delta"]
    if outside:
        parts.append(f"outside sections {signed(outside)} B (headers, segment padding)")
    return "; ".join(parts) if parts else "no attributed change"


def _fix(d: dict | None, budgets_path: Path) -> str:
    new_ops = [
        c["key"] for c in (d or {}).get("contributors", []) if c["kind"] == "op" and c["base"] == 0 and c["head"]
    ]
    if new_ops:
        return (
            f"the selection gained {', '.join(new_ops)}: drop {'it' if len(new_ops) == 1 else 'them'} from the "
            f"manifest, or raise the budget in {budgets_path} in the same change and say why"
        )
    return f"shrink the change, or raise the budget in {budgets_path} in the same change and say why"


def check(budgets: Budgets, head: dict, base: dict | None = None, *, target: str | None = None) -> CheckResult:
    """Checks every platform of `head` (a size report) against its target's budget, growth against `base`."""
    label = target or head.get("target")
    result = CheckResult()
    if not label:
        raise SizeDiffError("the report has no target label; pass --target //pkg:name (or regenerate it with --target)")
    tb = budgets.targets.get(label)
    if tb is None:
        raise SizeDiffError(f"{label}: no budget in {budgets.path}; add it under `targets` (docs/size.md)")
    for platform in sorted(set(tb.platforms) - set(head["platforms"])):
        result.notes.append(f"{label} {platform}: budgeted but not in the report (not built for it?)")
    for platform, p in head["platforms"].items():
        budget = tb.platforms.get(platform)
        where = f"{label} {platform}"
        if budget is None:
            result.notes.append(f"{where}: no budget in {budgets.path} ({n(p['file_bytes'])} B); add one")
            continue
        measure = budget.measure
        size = p[measure]
        unit = "B" if measure == "file_bytes" else "B of sections"
        b = base["platforms"].get(platform) if base else None
        d = diff_platform(b, p) if b else None
        over = []
        if budget.max_bytes is not None and size > budget.max_bytes:
            over.append(f"over max_bytes {n(budget.max_bytes)} by {n(size - budget.max_bytes)} B")
        delta = percent = None
        if d is not None:
            delta = size - b[measure]
            percent = pct(delta, b[measure])
            if budget.max_growth_bytes is not None and delta > budget.max_growth_bytes:
                over.append(f"growth over max_growth_bytes {n(budget.max_growth_bytes)}")
            if budget.max_growth_percent is not None and percent is not None and percent > budget.max_growth_percent:
                over.append(f"growth over max_growth_percent {budget.max_growth_percent:g}%")
        elif base is not None:
            result.notes.append(f"{where}: not in the base report; growth not checked")
        change = ""
        if delta is not None:
            change = (
                f" ({signed(delta)} B"
                + (f", {percent:+.2f}%" if percent is not None else "")
                + f" vs base {n(b[measure])})"
            )
        if not over:
            limit = f"max {n(budget.max_bytes)}" if budget.max_bytes is not None else "no max_bytes set"
            result.passed.append(f"{where}: {n(size)} {unit}{change}; {limit}")
            continue
        lines = [f"{where}: {n(size)} {unit}{change}", f"  {'; '.join(over)} ({budgets.path})"]
        if d is not None:
            lines.append(f"  change attributed to: {_attribution(d)}")
        if budget.max_bytes is not None and size > budget.max_bytes:
            lines.append(f"  largest now: {_largest(p)}")
        lines.append(f"  fix: {_fix(d, budgets.path)}")
        result.violations.append("\n".join(lines))
    return result


__all__ = ["Budget", "Budgets", "CheckResult", "DEFAULT_PATH", "TargetBudget", "bundle_dir", "check", "load_budgets"]
