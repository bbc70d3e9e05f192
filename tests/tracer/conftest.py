"""Fixtures for the tracer tests: runtimes to run programs on.

The instrumentation runtime and the full runtime are compiled from runtime/
with tests/runtime/runtime_build.py into pytest's cache (keyed by a hash of
the sources, shared with tests/runtime), unless PARE_INSTRUMENTATION_LIB (or
tests/runtime's PARE_TRACING_RUNTIME_LIB) and PARE_RUNTIME_LIB point at
prebuilt ones (e.g. Bazel's //runtime:instrumentation and //runtime:full).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent))

# tracer_testlib puts the repo and tests/runtime on sys.path, so it comes
# first: runtime_build lives in tests/runtime.
import tracer_testlib  # noqa: E402,F401

# isort: split
import runtime_build  # noqa: E402


def pytest_configure(config):
    # test_android.py reuses tests/runtime/kernels/test_quantized_layers.py's
    # cases, whose tests carry the runtime suite's fp_ops mark.
    config.addinivalue_line("markers", "fp_ops: op-vs-torch tests whose float results depend on torch's CPU path")


def _prebuilt(var: str) -> Path | None:
    value = os.environ.get(var)
    if not value:
        return None
    if not Path(value).is_file():
        raise pytest.UsageError(f"{var}={value} does not exist")
    return Path(value)


@pytest.fixture(scope="session")
def tracing_lib(pytestconfig) -> Path:
    return (
        _prebuilt("PARE_INSTRUMENTATION_LIB")
        or _prebuilt("PARE_TRACING_RUNTIME_LIB")
        or runtime_build.build(
            runtime_build.cache_root(pytestconfig),
            "tracing",
            selection_dir=runtime_build.DEFAULT_SELECTION,
            defines=["PARE_TRACING=1"],
        )
    )


@pytest.fixture(scope="session")
def full_lib(pytestconfig) -> Path:
    return _prebuilt("PARE_RUNTIME_LIB") or runtime_build.build(
        runtime_build.cache_root(pytestconfig), "full", selection_dir=runtime_build.DEFAULT_SELECTION
    )
