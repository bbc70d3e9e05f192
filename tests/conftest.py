"""Shared pytest fixtures and helpers: building Bazel targets once per
session, requiring the tools setup installs, and the skip gate
(tests/skip_gate.py: PARE_NO_SKIPS=1 or CI=true fails any skip that is not a
documented platform limit)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import skip_gate

REPO_ROOT = Path(__file__).absolute().parents[1]
BAZEL = [str(REPO_ROOT / "tools" / "bazel")]

_built: set[tuple[str, ...]] = set()


def bazel(
    *args: str, check: bool = True, capture: bool = True, cwd: Path = REPO_ROOT, startup: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """Runs tools/bazel in cwd (default: the repo root; another workspace, e.g. a
    second checkout, works too) with Bazel startup options `startup`; raises with
    Bazel's output on failure."""
    proc = subprocess.run(
        BAZEL + list(startup) + list(args),
        cwd=cwd,
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


def require_tool(*names: str, package: str) -> str:
    """The path of the first of `names` on PATH.

    tools/setup.sh installs every tool the suite runs, so a missing one is a
    broken setup: the test fails naming the fix instead of skipping.
    """
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    pytest.fail(
        f"{names[0]} not found on PATH: run `make setup` (tools/setup.sh installs the apt package {package})",
        pytrace=False,
    )


def pytest_configure(config):
    skip_gate.register(config)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def full_runtime() -> Path:
    """The x86_64 full runtime: $PARE_RUNTIME_LIB, else Bazel's //runtime:full."""
    value = os.environ.get("PARE_RUNTIME_LIB")
    if value:
        return Path(value)
    return bazel_build("//runtime:full") / "runtime" / "full" / "linux_x86_64" / "libpare_full.so"


@pytest.fixture(scope="session")
def smoke_outputs() -> Path:
    """bazel-bin/toolchains/smoke/smoke, built for every shipped platform."""
    bin_dir = bazel_build("//toolchains/smoke", "//tools/android_harness:harness")
    return bin_dir / "toolchains" / "smoke" / "smoke"


def pytest_report_header(config):
    gate = "on" if skip_gate.gate_enabled() else f"off (set {skip_gate.ENV_VAR}=1 to fail on skips)"
    return [
        f"pare repo: {REPO_ROOT}",
        f"PARE_RUNTIME_LIB={os.environ.get('PARE_RUNTIME_LIB', '')}",
        f"skip gate: {gate}",
    ]
