"""Running this checkout's `tools/bazel build` from Python tools, with Bazel's progress shown as it comes.

Used where a tool builds what it needs on first use (the emulator harness,
the zoo's runtimes). Bazel's `[n / m] ...` progress lines and its ERROR
lines go to `info`; the caller decides what a failure means.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools import REPO_ROOT


@dataclass(frozen=True)
class BuildResult:
    returncode: int
    errors: list[str]  # Bazel's ERROR lines
    last_line: str

    def first_error(self) -> str:
        return self.errors[0] if self.errors else self.last_line or "no output"


def build(
    targets: Sequence[str],
    info: Callable[[str], None],
    *,
    flags: Sequence[str] = (),
    startup: Sequence[str] = (),
    root: Path = REPO_ROOT,
    quiet_progress: bool = False,
) -> BuildResult:
    """`tools/bazel STARTUP build FLAGS TARGETS` in `root`; raises OSError
    when tools/bazel cannot run. quiet_progress: pass on only Bazel's
    `[n / m]` progress, ERROR and summary lines (not loading, analysis or
    INFO lines)."""
    command = [str(root / "tools" / "bazel"), *startup, "build", *flags, *targets]
    proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    errors, last = [], ""
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        if not line:
            continue
        last = line
        if line.startswith("ERROR"):
            errors.append(line)
        if not quiet_progress or line.startswith(("ERROR", "INFO: Elapsed", "INFO: Build", "[")):
            info(f"  bazel: {line}")
    return BuildResult(proc.wait(), errors, last)
