"""The README's main job: build Pare's outputs for every platform and show them.

Today: the toolchain smoke library for Android arm64, iOS arm64 and x86_64 in
one Bazel invocation, plus the Android emulator harness, then a table of what
was built (format, size) and the smoke library run on x86_64 and under the
Android harness.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tools.android_harness import run as harness  # noqa: E402

SMOKE = "toolchains/smoke/smoke"
TARGETS = ["//toolchains/smoke", "//tools/android_harness:harness"]


def _file_line(path: Path) -> str:
    out = subprocess.run(["file", "-b", str(path)], capture_output=True, text=True).stdout.strip()
    return out.split(", BuildID")[0]


def main() -> int:
    print(f"main job: bazel build {' '.join(TARGETS)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run([str(REPO_ROOT / "tools" / "bazel"), "build", *TARGETS], cwd=REPO_ROOT)
    if proc.returncode != 0:
        print("main job: the build failed (see Bazel's output above)", file=sys.stderr)
        return proc.returncode
    print(f"built in {time.monotonic() - start:.1f}s\n")

    bin_dir = REPO_ROOT / "bazel-bin"
    rows = sorted(p for p in (bin_dir / SMOKE).rglob("*") if p.is_file())
    width = max(len(str(p.relative_to(bin_dir))) for p in rows)
    print(f"{'output (under bazel-bin/)':<{width}}  {'bytes':>8}  format")
    for p in rows:
        print(f"{str(p.relative_to(bin_dir)):<{width}}  {p.stat().st_size:>8}  {_file_line(p)}")

    host = ctypes.CDLL(str(bin_dir / SMOKE / "linux_x86_64" / "libpare_smoke.so"))
    print(f"\nx86_64 (native):          pare_smoke_answer(20) = {host.pare_smoke_answer(20)}")
    android = harness.call_i32(bin_dir / SMOKE / "android_arm64" / "libpare_smoke.so", "pare_smoke_answer", 20)
    print(f"android_arm64 (qemu harness, emulated): pare_smoke_answer(20) = {android}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
