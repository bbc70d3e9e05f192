"""`python -m tools.verify`: a thin argparse layer over tools.verify.

Exit status: 0 every check passed, 1 a verification failure (leak, missing
symbol, exported non-API symbol, wrong platform fact), 2 a user error (one
line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import one_line_parser
from tools.verify.errors import EXIT_FAILED, EXIT_OK, EXIT_USER_ERROR, VerifyError
from tools.verify.expected import load_expected
from tools.verify.platforms import PLATFORMS
from tools.verify.report import render_text, to_json
from tools.verify.verify import bundle_paths, bundle_platforms, check_loads, verify

PROG = "python -m tools.verify"


_Parser = one_line_parser(VerifyError, see=f"{PROG} --help")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Check a Pare library against expected_symbols.json: selected kernels, dtype cases and classes "
        "present, unselected ones gone, only the C API exported, and the platform's loader facts (docs/verify.md).",
        epilog="examples:\n"
        f"  {PROG} --bundle bazel-bin/apps/demo/runtime\n"
        f"  {PROG} --expected bazel-bin/apps/demo/runtime/expected_symbols.json --platform ios_arm64 \\\n"
        "      --stripped bazel-bin/apps/demo/runtime/ios_arm64/libpare_runtime.dylib \\\n"
        "      bazel-bin/apps/demo/runtime/ios_arm64/unstripped/libpare_runtime.dylib",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "binary",
        nargs="?",
        metavar="UNSTRIPPED_LIB",
        help="the unstripped library (.so / .dylib) with its full symbol table",
    )
    p.add_argument("--expected", metavar="JSON", help="expected_symbols.json from codegen")
    p.add_argument(
        "--stripped", metavar="LIB", help="the shipped (stripped) library: exports and platform facts are checked on it"
    )
    p.add_argument(
        "--bundle",
        metavar="DIR",
        help="a selective_runtime output directory (bazel-bin/<pkg>/<name>): "
        "verify its platforms, stripped and unstripped, against its expected_symbols.json",
    )
    p.add_argument(
        "--platform",
        action="append",
        choices=sorted(PLATFORMS),
        metavar="NAME",
        help=f"platform row ({', '.join(sorted(PLATFORMS))}); default: inferred from the binary, or every "
        "platform of --bundle. Repeat with --bundle.",
    )
    p.add_argument(
        "--jni", action="store_true", help="a JNI build: JNI_OnLoad, JNI_OnUnload and Java_* may be exported"
    )
    p.add_argument(
        "--load",
        action="store_true",
        help="also load each shipped library: Android under the emulator harness (qemu-aarch64; builds it with "
        "Bazel if needed), x86_64 Linux natively; iOS is not loadable here",
    )
    p.add_argument("--json", action="store_true", help="print JSON (schema pare.verify_result) instead of text")
    p.add_argument("--json-out", metavar="FILE", help="also write the JSON result to FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="list every entry and export, not only the failures")
    p.add_argument("--cxxfilt", metavar="PATH", help="llvm-cxxfilt to demangle with (default: $PARE_CXXFILT, PATH)")
    return p


def _runs(args: argparse.Namespace) -> list[dict]:
    if args.bundle:
        if args.binary or args.stripped:
            raise VerifyError("--bundle takes the libraries from the directory; drop UNSTRIPPED_LIB and --stripped")
        root = Path(args.bundle)
        platforms = args.platform or bundle_platforms(root)
        runs = []
        for platform in platforms:
            unstripped, stripped, expected = bundle_paths(root, platform)
            if args.expected:
                expected = Path(args.expected)
            elif expected is None:
                raise VerifyError(
                    f"{root}: the bundle lists no expected_symbols.json (not a selective_runtime?); "
                    "pass --expected FILE"
                )
            runs.append({"binary": unstripped, "stripped": stripped, "platform": platform, "expected": expected})
        return runs
    if not args.binary:
        raise VerifyError("give the unstripped library (UNSTRIPPED_LIB) or --bundle DIR")
    if not args.expected:
        raise VerifyError("--expected is required with UNSTRIPPED_LIB (bazel-bin/<pkg>/<name>/expected_symbols.json)")
    if args.platform and len(args.platform) > 1:
        raise VerifyError("one --platform per library; repeat --platform only with --bundle")
    return [
        {
            "binary": Path(args.binary),
            "stripped": Path(args.stripped) if args.stripped else None,
            "platform": args.platform[0] if args.platform else None,
            "expected": Path(args.expected),
        }
    ]


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    runs = _runs(args)
    results = []
    expected_cache = {}
    for r in runs:
        exp = expected_cache.get(r["expected"]) or expected_cache.setdefault(
            r["expected"], load_expected(r["expected"])
        )
        result = verify(
            r["binary"], exp, platform=r["platform"], stripped=r["stripped"], jni=args.jni, cxxfilt=args.cxxfilt
        )
        results.append(check_loads(result) if args.load else result)
    payload = (
        to_json(results[0])
        if len(results) == 1 and not args.bundle
        else {
            "schema": "pare.verify_results",
            "version": 1,
            "passed": all(r.passed for r in results),
            "results": [to_json(r) for r in results],
        }
    )
    text = json.dumps(payload, indent=2) + "\n"
    if args.json_out:
        try:
            Path(args.json_out).write_text(text)
        except OSError as e:
            raise VerifyError(f"--json-out {args.json_out}: {e.strerror}") from None
    if args.json:
        sys.stdout.write(text)
    else:
        sys.stdout.write("\n".join(render_text(r, verbose=args.verbose) for r in results))
    return EXIT_OK if all(r.passed for r in results) else EXIT_FAILED


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except VerifyError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
