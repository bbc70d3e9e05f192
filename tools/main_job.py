"""The README's main job: the demo app's minimal runtime for every platform.

1. Builds, in one Bazel invocation, the demo's selective runtime
   (//apps/demo:runtime, from apps/demo/manifest.yaml), the same operators
   with every dtype (//apps/demo/all_dtypes:runtime), the full runtime
   (//runtime:full), and the app bundles (AAR, xcframework).
2. Prints the size table: full vs selective per platform, and what dtype
   selection alone saves.
3. Runs the demo model on the x86_64 runtime and compares with torch.
4. Ends with a summary: the demo's size per platform against the full
   runtime, and whether it matched torch.

`make demo` runs it (after setup) as `python -m tools.main_job` from the
repository root, the way every Python entry point starts (docs/testing.md,
"Entry points").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from tools import REPO_ROOT
from tools.bundle import load_bundle
from tools.platforms import SHIPPED_PLATFORMS

TARGETS = [
    "//apps/demo:runtime",
    "//apps/demo/all_dtypes:runtime",
    "//runtime:full",
    "//apps/demo:android_aar",
    "//apps/demo:ios_xcframework",
]
PLATFORMS = SHIPPED_PLATFORMS


def _report(bin_dir: Path, target: str) -> dict:
    return json.loads(load_bundle(bin_dir / target).file("report").read_text())["platforms"]


def size_table(bin_dir: Path) -> str:
    full = _report(bin_dir, "runtime/full")
    demo = _report(bin_dir, "apps/demo/runtime")
    all_dtypes = _report(bin_dir, "apps/demo/all_dtypes/runtime")
    rows = [
        "| platform | full runtime | demo runtime | smaller than full | demo, all dtypes | dtype selection saves |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in PLATFORMS:
        f, d, a = full[p]["stripped_bytes"], demo[p]["stripped_bytes"], all_dtypes[p]["stripped_bytes"]
        rows.append(
            f"| {p} | {f:,} B | {d:,} B | {100 * (1 - d / f):.1f}% | {a:,} B | {a - d:,} B ({100 * (1 - d / a):.1f}%) |"
        )
    return "\n".join(rows)


def summary(bin_dir: Path, check_passed: bool) -> str:
    """The closing lines: what the demo's runtime costs, and whether it runs."""
    full = _report(bin_dir, "runtime/full")
    demo = _report(bin_dir, "apps/demo/runtime")
    lines = ["main job: the demo's selective runtime, stripped, against the full runtime:"]
    for p in PLATFORMS:
        f, d = full[p]["stripped_bytes"], demo[p]["stripped_bytes"]
        lines.append(f"  {p:<14} {d:>9,} B of {f:>10,} B ({100 * (1 - d / f):.1f}% smaller)")
    lines.append(
        "  numeric check against torch on linux_x86_64: "
        + ("passed" if check_passed else "FAILED (see the tracer's lines above)")
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(
        prog="python -m tools.main_job",
        description="The README's main job (make demo): build the demo app's selective runtime for every "
        "platform, the full runtime and the app bundles, print the size table, and check the demo model "
        "against torch on the x86_64 runtime.",
    ).parse_args(argv)
    print(f"main job: tools/bazel build {' '.join(TARGETS)}", flush=True)
    start = time.monotonic()
    if subprocess.run([str(REPO_ROOT / "tools" / "bazel"), "build", *TARGETS], cwd=REPO_ROOT).returncode != 0:
        print("main job: the build failed (see Bazel's output above)", file=sys.stderr)
        return 1
    print(f"\nbuilt in {time.monotonic() - start:.1f}s\n")
    bin_dir = REPO_ROOT / "bazel-bin"
    print("Stripped sizes (what ships):\n")
    print(size_table(bin_dir))
    print(
        "\nOutputs: bazel-bin/apps/demo/runtime/<platform>/, bazel-bin/apps/demo/android_aar.aar, "
        "bazel-bin/apps/demo/PareDemo.xcframework\n"
    )

    print("Checking the demo model on the x86_64 runtime against torch:", flush=True)
    check = [
        sys.executable,
        "-m",
        "tools.tracer",
        "check",
        "apps/demo/model.py",
        "--runtime",
        str(load_bundle(bin_dir / "apps/demo/runtime").platform("linux_x86_64").shared),
    ]
    passed = subprocess.run(check, cwd=REPO_ROOT).returncode == 0
    print("\n" + summary(bin_dir, passed))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
