"""Writes a selective_runtime target's report.json (called by the Bazel rule).

    bundle_report.py --target LABEL --manifest M --manifest-label L --out report.json \
        --binary PLATFORM STRIPPED UNSTRIPPED [--binary ...]

report.json (version 1):
  target, manifest: {label, sha256},
  platforms: {<platform>: {file, format, stripped_bytes, unstripped_bytes,
                           section_bytes, sections: {<name>: bytes}}}

A quick build-time summary; the full attribution (ops, dtypes, classes) is
`python -m tools.size_diff report --bundle bazel-bin/<pkg>/<name>`, which
needs the demangler and expected_symbols.json (docs/size.md). The report has
no absolute paths or times, so two clean builds write identical bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from tools.verify.binary import read_binary
from tools.verify.errors import EXIT_USER_ERROR, VerifyError


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_report(target: str, manifest: Path, manifest_label: str, binaries: list[tuple[str, Path, Path]]) -> dict:
    platforms = {}
    for platform, stripped, unstripped in binaries:
        shipped = read_binary(stripped, demangle=False)
        sections = sorted(shipped.sections, key=lambda s: (-s.size, s.name))
        platforms[platform] = {
            "file": stripped.name,
            "format": shipped.format,
            "stripped_bytes": shipped.file_bytes,
            "unstripped_bytes": unstripped.stat().st_size,
            "section_bytes": sum(s.size for s in sections),
            "sections": {s.name: s.size for s in sections},
        }
    return {
        "version": 1,
        "target": target,
        "manifest": {"label": manifest_label, "sha256": sha256_file(manifest)},
        "platforms": dict(sorted(platforms.items())),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", required=True)
    p.add_argument("--manifest", required=True, type=Path)
    p.add_argument("--manifest-label", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--binary", nargs=3, action="append", default=[], metavar=("PLATFORM", "STRIPPED", "UNSTRIPPED"))
    args = p.parse_args(argv)
    binaries = [(pl, Path(s), Path(u)) for pl, s, u in args.binary]
    try:
        report = build_report(args.target, args.manifest, args.manifest_label, binaries)
    except (VerifyError, OSError) as e:
        print(f"bundle_report: error: {e}", file=sys.stderr)
        return EXIT_USER_ERROR
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
