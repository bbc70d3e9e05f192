"""`python -m tools.size_diff {report,diff,check,targets,changes}`: a thin argparse layer over the library.

Exit status: 0 success, 1 a budget violation (`check`) or a budget change
sharing its commit (`changes`), 2 a user error (one line on stderr, no
traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import one_line_parser
from tools.size_diff.budget_changes import budget_changes
from tools.size_diff.budgets import DEFAULT_PATH, bundle_dir, check, load_budgets, load_budgets_at
from tools.size_diff.diff import diff_reports
from tools.size_diff.diff import render_markdown as render_diff
from tools.size_diff.errors import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR, SizeDiffError, VerifyError
from tools.size_diff.report import (
    Run,
    build_report,
    bundle_runs,
    load_report,
    render_markdown,
    target_from_bundle,
    write_json,
    write_markdown,
)
from tools.verify.platforms import PLATFORMS

PROG = "python -m tools.size_diff"


_COMMANDS = "{report,diff,check,targets,changes}"
_Parser = one_line_parser(SizeDiffError, see=f"{PROG} {_COMMANDS} --help")
_AT_HELP = (
    "read FILE as committed at git revision REV instead of from the disk: the base's budgets, as presubmit "
    "checks against them (a version 1 file is accepted there)"
)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description="Size attribution, diffs and budgets for Pare runtimes (docs/size.md).")
    sub = p.add_subparsers(dest="command", required=True, metavar=_COMMANDS, parser_class=_Parser)

    r = sub.add_parser(
        "report",
        help="attribute a library's bytes to ops, dtypes, classes, shared kernels, core, unattributed",
        description="Measure a shipped library: file size, sections, and attribution of section bytes "
        "to ops / (tag, dtype) / classes / shared kernels / core / other / unattributed, from the unstripped twin's "
        "symbols. Prints markdown; writes JSON / markdown / PNG on request.",
        epilog=f"examples:\n  {PROG} report --bundle bazel-bin/apps/demo/runtime --json demo.json --png demo.png\n"
        f"  {PROG} report bazel-bin/x/rt/android_arm64/libpare_rt.so \\\n"
        "      --unstripped bazel-bin/x/rt/android_arm64/unstripped/libpare_rt.so --expected bazel-bin/x/rt/expected_symbols.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("binary", nargs="?", metavar="LIB", help="the shipped (stripped) library")
    r.add_argument("--unstripped", metavar="LIB", help="LIB's unstripped twin (its symbols); default: LIB itself")
    r.add_argument("--expected", metavar="JSON", help="expected_symbols.json (default with --bundle: the bundle's own)")
    r.add_argument("--bundle", metavar="DIR", help="a multi-platform output directory, bazel-bin/<pkg>/<name>")
    r.add_argument(
        "--platform",
        action="append",
        choices=sorted(PLATFORMS),
        metavar="NAME",
        help="platform of LIB (default: inferred), or the platforms of --bundle to measure (default: all)",
    )
    r.add_argument(
        "--target", metavar="LABEL", help="target label recorded in the report (default: from the bundle path)"
    )
    r.add_argument("--json", metavar="FILE", help="write the report as JSON (schema pare.size_report)")
    r.add_argument("--markdown", metavar="FILE", help="write the markdown table to FILE")
    r.add_argument("--png", metavar="FILE", help="write a bar chart (needs matplotlib)")
    r.add_argument("-q", "--quiet", action="store_true", help="do not print the markdown to stdout")
    r.add_argument("--cxxfilt", metavar="PATH", help="llvm-cxxfilt to demangle with (default: $PARE_CXXFILT, PATH)")
    r.add_argument(
        "--explain",
        metavar="NAME",
        help="instead of the tables, say why NAME is in the runtime: a symbol (with or without its parameters), "
        "a string's text, a section (.rela.dyn, __cstring), an op, a tag/dtype or a class",
    )
    r.add_argument(
        "--runtime-dir",
        metavar="DIR",
        help="the runtime/ sources the library was built from, whose string literals and error messages "
        "attribute .rodata (default: this checkout's)",
    )

    d = sub.add_parser("diff", help="what changed between two reports, and who changed it")
    d.add_argument("base", metavar="BASE.json")
    d.add_argument("head", metavar="HEAD.json")
    d.add_argument("--top", type=int, default=10, help="contributors and symbols to list per platform (default 10)")
    d.add_argument("--json", metavar="FILE", help="also write the diff as JSON (schema pare.size_diff)")

    c = sub.add_parser(
        "check",
        help="check a report against the size budgets; exit 1 on a violation",
        description="Check a report against its target's budget: max_bytes, and growth since each platform's "
        "recorded_bytes. A base report attributes the change (and with a version 1 budgets file, read with --at, "
        "growth counts from it).",
    )
    c.add_argument("head", metavar="HEAD.json")
    c.add_argument(
        "--base", metavar="BASE.json", help="the same target's report at the base revision: what this change did"
    )
    c.add_argument("--budgets", default=DEFAULT_PATH, metavar="FILE", help=f"budgets file (default {DEFAULT_PATH})")
    c.add_argument("--at", metavar="REV", help=_AT_HELP)
    c.add_argument("--target", metavar="LABEL", help="budget to check against (default: the report's target)")

    t = sub.add_parser("targets", help="list the budgeted targets (what presubmit builds)")
    t.add_argument("--budgets", default=DEFAULT_PATH, metavar="FILE", help=f"budgets file (default {DEFAULT_PATH})")
    t.add_argument("--at", metavar="REV", help=_AT_HELP)

    g = sub.add_parser(
        "changes",
        help="list every change to the budgets file since a base revision; exit 1 if one shares its commit",
        description="Every commit in BASE..HEAD (and the working tree) that changes the budgets file, with what it "
        "changed (old -> new) and its subject. A budget change is a commit of its own: one that also changes "
        "another file fails (exit 1).",
    )
    g.add_argument("--base", required=True, metavar="REV", help="the base revision")
    g.add_argument("--budgets", default=DEFAULT_PATH, metavar="FILE", help=f"budgets file (default {DEFAULT_PATH})")
    return p


def _budgets(args: argparse.Namespace):
    return load_budgets_at(args.budgets, args.at) if args.at else load_budgets(args.budgets)


def _report(args: argparse.Namespace) -> int:
    if args.bundle:
        if args.binary or args.unstripped:
            raise SizeDiffError("--bundle takes the libraries from the directory; drop LIB and --unstripped")
        runs = bundle_runs(args.bundle, expected=args.expected, platforms=args.platform)
        target = args.target or target_from_bundle(args.bundle)
    else:
        if not args.binary:
            raise SizeDiffError("give the shipped library (LIB, with --unstripped) or --bundle DIR")
        if args.platform and len(args.platform) > 1:
            raise SizeDiffError("one --platform per library; repeat --platform only with --bundle")
        stripped = Path(args.binary)
        unstripped = Path(args.unstripped) if args.unstripped else stripped
        runs = [
            Run(
                args.platform[0] if args.platform else None,
                stripped if args.unstripped else None,
                unstripped,
                Path(args.expected) if args.expected else None,
            )
        ]
        target = args.target
    report = build_report(target, runs, cxxfilt=args.cxxfilt, runtime_dir=args.runtime_dir)
    if args.json:
        write_json(report, args.json)
    if args.markdown:
        write_markdown(report, args.markdown)
    if args.png:
        from tools.size_diff.chart import write_png

        write_png(report, args.png)
    if args.explain is not None:
        from tools.size_diff.explain import explain

        sys.stdout.write(explain(report, args.explain))
    elif not args.quiet:
        sys.stdout.write(render_markdown(report))
    return EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    d = diff_reports(load_report(args.base), load_report(args.head), top=args.top)
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(d, indent=2) + "\n")
        except OSError as e:
            raise SizeDiffError(f"--json {args.json}: {e.strerror}") from None
    sys.stdout.write(render_diff(d, top=args.top))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    budgets = _budgets(args)
    head = load_report(args.head)
    base = load_report(args.base) if args.base else None
    result = check(budgets, head, base, target=args.target)
    sys.stdout.write(result.render())
    return EXIT_OK if result.ok else EXIT_FAILED


def _targets(args: argparse.Namespace) -> int:
    budgets = _budgets(args)
    for label, t in budgets.targets.items():
        # label, bazel-bin-relative output directory, expected_symbols override ("-": the bundle's own)
        print(f"{label}\t{bundle_dir(label)}\t{t.expected_symbols or '-'}")
    return EXIT_OK


def _changes(args: argparse.Namespace) -> int:
    result = budget_changes(args.budgets, args.base)
    sys.stdout.write(result.render())
    return EXIT_OK if result.ok else EXIT_FAILED


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"report": _report, "diff": _diff, "check": _check, "targets": _targets, "changes": _changes}
    return commands[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except VerifyError as e:  # SizeDiffError included
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
