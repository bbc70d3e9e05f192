"""`python -m tools.soak`: the soak (docs/testing.md, "Soak"); `make soak` runs it.

Exit status: 0 every check of every run passed, 1 a check failed (the report
says which), 2 a usage error or a run that could not be made (one line).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import tool_parser

PROG = "python -m tools.soak"


def _parser() -> argparse.ArgumentParser:
    from tools.soak.soak import CALLS, INSTANCES, MODELS, RSS_BOUND_KIB, THREADS, SoakError

    p = tool_parser(
        SoakError,
        PROG,
        (
            f"Run {INSTANCES} method instances on {THREADS} threads in a C driver linked against the runtime, "
            f"{CALLS:,} calls in all over four runs (each of {', '.join(m.name for m in MODELS)} alone on the "
            "runtime its app ships, then all three on //runtime:full), checking every output bit for bit against "
            "a reference checked against torch, the PAL's live bytes after warm-up against the end, and the "
            "growth of the process's anonymous resident memory."
        ),
        (PROG, f"{PROG} --calls 4000 --runtime bazel-bin/runtime/full/linux_x86_64/libpare_full.so"),
    )
    p.add_argument("--calls", type=int, default=CALLS, help=f"calls in all, shared by the runs (default {CALLS:,})")
    p.add_argument(
        "--runtime",
        type=Path,
        help="one runtime library for every run (default: build each app's runtime and //runtime:full)",
    )
    p.add_argument("--threads", type=int, default=THREADS, help=f"threads per run (default {THREADS})")
    p.add_argument(
        "--instances",
        type=int,
        default=INSTANCES,
        help=f"method instances per run, a multiple of --threads (default {INSTANCES})",
    )
    p.add_argument(
        "--rss-bound-kib",
        type=int,
        default=RSS_BOUND_KIB,
        help=f"allowed growth of anonymous resident memory from warm-up to the end, KiB (default {RSS_BOUND_KIB})",
    )
    p.add_argument("--work-dir", type=Path, help="keep the cases and drivers here (default: a temporary directory)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write every run's driver report as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from tools.soak.soak import SoakError, format_report, soak

    try:
        args = _parser().parse_args(argv)
        if args.calls < 1 or args.threads < 1 or args.instances < args.threads or args.instances % args.threads:
            raise SoakError(
                f"--calls and --threads must be positive and --instances a multiple of --threads (see {PROG} --help)"
            )
        with tempfile.TemporaryDirectory(prefix="pare-soak-") as tmp:
            reports = soak(
                args.work_dir or Path(tmp),
                calls=args.calls,
                runtime=args.runtime,
                threads=args.threads,
                instances=args.instances,
                rss_bound_kib=args.rss_bound_kib,
            )
    except SoakError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_report(reports))
    if args.json:
        args.json.write_text(
            json.dumps([{"run": r.run.name, "runtime": r.run.runtime, **r.report} for r in reports], indent=1) + "\n"
        )
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
