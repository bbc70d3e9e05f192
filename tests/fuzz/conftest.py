"""Fixtures for the fuzzing regression tests: the full runtime, built as
tests/runtime builds it (sanitized under PARE_SANITIZE), or PARE_RUNTIME_LIB."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).absolute().parents[2]
for path in (str(REPO), str(REPO / "tests" / "runtime")):
    if path not in sys.path:
        sys.path.insert(0, path)

import runtime_build  # noqa: E402

from pare.runtime import Runtime  # noqa: E402

CORPUS = REPO / "fuzz" / "corpus"
CRASHES = REPO / "fuzz" / "regressions"


@pytest.fixture(scope="session")
def runtime(pytestconfig) -> Runtime:
    prebuilt = os.environ.get("PARE_RUNTIME_LIB")
    if prebuilt and not runtime_build.sanitizers():
        return Runtime(prebuilt)
    runtime_build.check_sanitizer_runtime_loaded()
    return Runtime(
        runtime_build.build(
            Path(pytestconfig.cache.mkdir("pare_runtime")), "full", selection_dir=runtime_build.DEFAULT_SELECTION
        )
    )
