"""`python -m tools.zoo`: trace, build and check every zoo model (docs/model_zoo.md).

`--coverage` instead prints which core ATen operators Pare runs, in which
dtypes (tools/zoo/coverage.py), and records it in docs/coverage.md.

Exit status: 0 every model passed, 1 some model failed (its row says why),
2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import tool_parser

PROG = "python -m tools.zoo"


def _list(text: str) -> list[str]:
    return [x for x in (part.strip() for part in text.split(",")) if x]


def _parser() -> argparse.ArgumentParser:
    from tools.zoo.zoo import PLATFORMS, ZooError

    p = tool_parser(
        ZooError,
        PROG,
        "Trace every model of models/zoo/ on the instrumentation runtime, build each one's "
        "selective runtime for the shipped platforms, check it against torch eager on linux_x86_64 and "
        "android_arm64 (qemu), and record the results in models/zoo/results.json and docs/model_zoo.md.",
        (
            PROG,
            f"{PROG} --only resnet18,lstm_tagger --json /tmp/zoo.json",
            f"{PROG} --coverage --json /tmp/coverage.json",
        ),
    )
    p.add_argument(
        "--only",
        type=_list,
        action="extend",
        metavar="NAME[,NAME]",
        help="run these models only (file names under models/zoo/ without .py); repeatable",
    )
    p.add_argument(
        "--platforms",
        type=_list,
        default=list(PLATFORMS),
        metavar="P[,P]",
        help=f"platforms to report and check (default: {','.join(PLATFORMS)}); Bazel builds them all",
    )
    p.add_argument(
        "--coverage",
        action="store_true",
        help="run no model: print which core ATen operators Pare runs and in which dtypes (a markdown table), "
        "and record it in docs/coverage.md",
    )
    p.add_argument(
        "--json",
        metavar="FILE",
        help="also write this run's results as JSON (one object per model; with --coverage: the coverage report)",
    )
    p.add_argument(
        "--no-record",
        action="store_true",
        help="do not update models/zoo/results.json and docs/model_zoo.md (with --coverage: docs/coverage.md)",
    )
    p.add_argument(
        "--frozen",
        action="store_true",
        help="never rewrite a manifest: a model whose traced manifest differs from models/zoo/manifests/ "
        "fails (what the test suite uses)",
    )
    p.add_argument("--no-timing", action="store_true", help="skip timing execute() on linux_x86_64")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


def _write(path: Path, text: str) -> None:
    from tools.zoo.zoo import ZooError

    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ZooError(f"{path}: cannot write ({e.strerror}); check the directory exists and is writable") from None


# Options that only a zoo run reads: with --coverage they are a usage error.
_RUN_ONLY = {"only": "--only", "frozen": "--frozen", "no_timing": "--no-timing"}


def _coverage(args: argparse.Namespace) -> int:
    from tools.tracer import paths
    from tools.zoo import coverage
    from tools.zoo.zoo import PLATFORMS, ZooError

    given = [flag for dest, flag in _RUN_ONLY.items() if getattr(args, dest)]
    if args.platforms != list(PLATFORMS):
        given.append("--platforms")
    if given:
        raise ZooError(f"{', '.join(given)} cannot be used with --coverage, which runs no model; drop it")
    report = coverage.build_report()
    if args.json:
        _write(Path(args.json), coverage.to_json(report))
    if not args.no_record:
        coverage.update_doc(paths.repo_root() / "docs" / "coverage.md", report)
    print(coverage.markdown(report))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from tools.tracer import paths
    from tools.tracer.progress import Progress
    from tools.zoo import report
    from tools.zoo.zoo import PLATFORMS, ZooError, discover, run, to_json

    try:
        args = _parser().parse_args(argv)
        if args.coverage:
            return _coverage(args)
        unknown = [p for p in args.platforms if p not in PLATFORMS]
        if unknown:
            raise ZooError(f"--platforms: unknown platform {', '.join(unknown)}; choose from {', '.join(PLATFORMS)}")
        progress = Progress.silent() if args.quiet else Progress(prefix="zoo: ")
        results = run(
            args.only, tuple(args.platforms), progress=progress, timing=not args.no_timing, frozen=args.frozen
        )
        if args.json:
            _write(Path(args.json), to_json(results))
        root = paths.repo_root()
        if not args.no_record:
            record_path = root / "models" / "zoo" / "results.json"
            record = report.merge(report.load_record(record_path), results, [p.stem for p in discover(root)])
            _write(record_path, report.json_text(record))
            report.update_doc(root / "docs" / "model_zoo.md", record)
    except ZooError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    failed = [r for r in results if not r.ok]
    for r in results:
        sizes = ", ".join(f"{p} {n:,} B" for p, n in r.sizes.items())
        ms = f", {r.median_ms:.2f} ms" if r.median_ms is not None else ""
        line = f"{r.model}: {r.status}" + (f" ({r.operators} operators; {sizes}{ms})" if r.ok else f": {r.error}")
        print(line)
    print(
        f"{len(results) - len(failed)} of {len(results)} models passed"
        + ("" if args.no_record else "; results in models/zoo/results.json and docs/model_zoo.md")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
