"""Shared pytest fixtures: building Bazel targets once per session."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BAZEL = [str(REPO_ROOT / "tools" / "bazel")]

_built: set[tuple[str, ...]] = set()


def bazel(*args: str, check: bool = True, capture: bool = True) -> subprocess.CompletedProcess:
    """Runs tools/bazel in the repo root; raises with Bazel's output on failure."""
    proc = subprocess.run(
        BAZEL + list(args),
        cwd=REPO_ROOT,
        capture_output=capture,
        text=True,
        timeout=1800,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"bazel {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
    return proc


def bazel_build(*targets: str, flags: tuple[str, ...] = ()) -> Path:
    """Builds targets (once per session for the same arguments); returns bazel-bin."""
    key = tuple(flags) + tuple(targets)
    if key not in _built:
        bazel("build", *flags, *targets)
        _built.add(key)
    return REPO_ROOT / "bazel-bin"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def smoke_outputs() -> Path:
    """bazel-bin/toolchains/smoke/smoke, built for every shipped platform."""
    bin_dir = bazel_build("//toolchains/smoke", "//tools/android_harness:harness")
    return bin_dir / "toolchains" / "smoke" / "smoke"


def pytest_report_header(config):
    return [f"pare repo: {REPO_ROOT}", f"PARE_RUNTIME_LIB={os.environ.get('PARE_RUNTIME_LIB', '')}"]
