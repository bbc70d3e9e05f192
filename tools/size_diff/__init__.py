"""tools/size_diff: per-op size attribution, diffs against a base, budgets (docs/size.md).

Library API (the CLI, `python -m tools.size_diff`, is a thin layer over it):

    from tools.size_diff import bundle_runs, build_report, diff_reports, load_budgets, check
    head = build_report("//apps/demo:runtime", bundle_runs("bazel-bin/apps/demo/runtime"))
    result = check(load_budgets_at("size_budgets.json", "HEAD~1"), head, base_report)  # the base's budgets
"""

from tools.size_diff.attribution import Attribution, attribute
from tools.size_diff.budget_changes import budget_changes
from tools.size_diff.budgets import Budgets, CheckResult, check, load_budgets, load_budgets_at
from tools.size_diff.diff import diff_reports
from tools.size_diff.errors import SizeDiffError
from tools.size_diff.report import Run, build_report, bundle_runs, load_report, render_markdown, write_json

__all__ = [
    "Attribution",
    "Budgets",
    "CheckResult",
    "Run",
    "SizeDiffError",
    "attribute",
    "build_report",
    "budget_changes",
    "bundle_runs",
    "check",
    "diff_reports",
    "load_budgets",
    "load_budgets_at",
    "load_report",
    "render_markdown",
    "write_json",
]
