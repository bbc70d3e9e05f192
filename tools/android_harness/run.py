"""Run Android arm64 shared libraries under qemu-aarch64 (an emulated device stand-in).

See README.md beside this file for what the emulation does and does not prove.
The harness binary and liblog shim are Bazel outputs of
//tools/android_harness:harness; `paths()` finds them under bazel-bin (or
`$PARE_HARNESS_DIR`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS_OUTPUT = "tools/android_harness/harness/linux_arm64"


class HarnessError(Exception):
    """The emulator harness is missing or could not run the library."""


@dataclass(frozen=True)
class HarnessPaths:
    harness: Path
    liblog: Path
    sysroot: Path
    qemu: str


def paths() -> HarnessPaths:
    out_dir = Path(os.environ.get("PARE_HARNESS_DIR") or REPO_ROOT / "bazel-bin" / HARNESS_OUTPUT)
    harness = out_dir / "harness_bin"
    liblog = out_dir / "liblog.so"
    if not harness.exists() or not liblog.exists():
        raise HarnessError(
            f"harness not built: {harness} is missing; run `tools/bazel build //tools/android_harness:harness`"
        )
    sysroot = Path(os.environ.get("PARE_AARCH64_SYSROOT", "/usr/aarch64-linux-gnu"))
    if not (sysroot / "lib" / "libc.so.6").exists():
        raise HarnessError(f"no aarch64 glibc at {sysroot}; run tools/setup.sh (apt: libc6-dev-arm64-cross)")
    qemu = shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")
    if not qemu:
        raise HarnessError("qemu-aarch64 not found; run tools/setup.sh (apt: qemu-user)")
    return HarnessPaths(harness, liblog, sysroot, qemu)


def _shim_dir(p: HarnessPaths, root: Path) -> Path:
    """Bionic's sonames mapped onto glibc: libc.so, libm.so and liblog.so."""
    shim = root / "shim"
    shim.mkdir()
    (shim / "libc.so").symlink_to(p.sysroot / "lib" / "libc.so.6")
    (shim / "libm.so").symlink_to(p.sysroot / "lib" / "libm.so.6")
    shutil.copy(p.liblog, shim / "liblog.so")
    return shim


def run(args: list[str], timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Runs the harness with ARGS under qemu-aarch64; returns the completed process."""
    p = paths()
    with tempfile.TemporaryDirectory(prefix="pare-harness-") as tmp:
        shim = _shim_dir(p, Path(tmp))
        cmd = [p.qemu, "-L", str(p.sysroot), "-E", f"LD_LIBRARY_PATH={shim}", str(p.harness), *args]
        return subprocess.run(cmd, capture_output=True, timeout=timeout, **kwargs)


def call_i32(library: Path, symbol: str, arg: int) -> int:
    """Calls int32_t SYMBOL(int32_t) in an Android .so under emulation."""
    proc = run(["call-i32", str(library), symbol, str(arg)], text=True)
    if proc.returncode != 0:
        raise HarnessError(f"harness failed ({proc.returncode}): {proc.stderr.strip()}")
    return int(proc.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.android_harness.run", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    call = sub.add_parser("call-i32", help="call int32_t SYMBOL(int32_t) in an Android .so")
    call.add_argument("library", type=Path)
    call.add_argument("symbol")
    call.add_argument("arg", type=int)
    args = parser.parse_args(argv)
    try:
        print(call_i32(args.library, args.symbol, args.arg))
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
