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
# What a runtime build compiles: a library older than any of these is stale.
_RUNTIME_SOURCE_SUFFIXES = (".cc", ".c", ".h", ".def", ".inc", ".bazel", ".yaml")


def repo_root() -> Path:
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY")
    if workspace:
        return Path(workspace)
    return Path(__file__).absolute().parents[2]


def inventory_dir() -> Path:
    return repo_root() / "runtime" / "kernels"


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


def _newest_runtime_source(root: Path) -> float:
    newest = 0.0
    for p in (root / "runtime").rglob("*"):
        if p.suffix in _RUNTIME_SOURCE_SUFFIXES or p.name == "BUILD.bazel":
            try:
                newest = max(newest, p.stat().st_mtime)
            except OSError:
                continue
    return newest


def instrumentation_runtime(explicit: str | os.PathLike | None = None, progress: Progress | None = None) -> Path:
    """The instrumentation runtime: `explicit` (--runtime), else
    $PARE_INSTRUMENTATION_LIB, else Bazel's output, built (or rebuilt when
    runtime/ changed since) with `tools/bazel build //runtime:instrumentation`."""
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
    if lib.is_file() and lib.stat().st_mtime >= _newest_runtime_source(root):
        return lib
    reason = "runtime/ changed since it was built" if lib.is_file() else "it is not built yet"
    bazel = root / "tools" / "bazel"
    with progress.step(f"building the instrumentation runtime ({reason}): tools/bazel build {INSTRUMENTATION_TARGET}"):
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
