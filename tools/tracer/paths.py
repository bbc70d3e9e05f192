"""Where the tracer finds the repository, the runtime inventory and the
instrumentation runtime.

Under `bazel run //tools/tracer` the code runs from runfiles; the workspace
is then $BUILD_WORKSPACE_DIRECTORY, and user paths are relative to
$BUILD_WORKING_DIRECTORY (the CLI changes into it).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import codegen
from tools.tracer.errors import TracerError
from tools.tracer.progress import Progress

INSTRUMENTATION_TARGET = "//runtime:instrumentation"
INSTRUMENTATION_OUTPUT = "runtime/instrumentation/linux_x86_64/libpare_instrumentation.so"
INSTRUMENTATION_ENV = "PARE_INSTRUMENTATION_LIB"


def repo_root() -> Path:
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if workspace:
        return Path(workspace)
    return Path(__file__).absolute().parents[2]


def inventory_dir() -> Path:
    return repo_root() / "runtime" / "inventory"


def load_inventory() -> codegen.Inventory:
    """The operators, kernel tags and classes the runtime implements."""
    return codegen.load_inventory(inventory_dir())


def display(path: str | os.PathLike) -> str:
    """A path as users should see it: relative to the working directory
    when inside it, else relative to the repository, else absolute."""
    path = Path(os.path.abspath(path))  # symlinks kept: bazel-bin/... reads better than Bazel's cache
    for base in (Path.cwd(), repo_root()):
        try:
            return str(path.relative_to(os.path.abspath(base)))
        except ValueError:
            continue
    return str(path)


def instrumentation_runtime(explicit: str | os.PathLike | None = None, progress: Progress | None = None) -> Path:
    """The instrumentation runtime: `explicit` (--runtime), else
    $PARE_INSTRUMENTATION_LIB, else Bazel's output, brought up to date with
    `tools/bazel build //runtime:instrumentation` (Bazel knows whether it is
    stale, and does nothing when it is not: no guessing from mtimes)."""
    progress = progress or Progress.silent()
    for value, origin in ((explicit, "--runtime"), (os.environ.get(INSTRUMENTATION_ENV), f"${INSTRUMENTATION_ENV}")):
        if value:
            path = Path(value)
            if not path.is_file():
                raise TracerError(
                    f"{origin} {value}: no such runtime library; pass the path of a built "
                    f"instrumentation runtime (e.g. bazel-bin/{INSTRUMENTATION_OUTPUT})"
                )
            return path
    root = repo_root()
    lib = root / "bazel-bin" / INSTRUMENTATION_OUTPUT
    bazel = root / "tools" / "bazel"
    with progress.step(f"bringing the instrumentation runtime up to date: tools/bazel build {INSTRUMENTATION_TARGET}"):
        try:
            proc = subprocess.run(
                [str(bazel), "build", INSTRUMENTATION_TARGET], cwd=root, capture_output=True, text=True
            )
        except OSError as e:
            raise TracerError(
                f"cannot run {bazel}: {e}; build {INSTRUMENTATION_TARGET} yourself and pass "
                f"--runtime or set ${INSTRUMENTATION_ENV}"
            ) from None
    if proc.returncode != 0 or not lib.is_file():
        errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
        detail = errors[0].strip() if errors else f"exit status {proc.returncode}"
        raise TracerError(
            f"building {INSTRUMENTATION_TARGET} failed ({detail}); fix the build, or pass --runtime "
            f"PATH / set ${INSTRUMENTATION_ENV} to a prebuilt instrumentation runtime"
        )
    return lib
