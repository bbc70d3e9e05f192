"""Fixtures for the fuzzing regression tests: the full runtime, built as
tests/runtime builds it (sanitized under PARE_SANITIZE), or PARE_RUNTIME_LIB,
and the loader fuzz target's replay build against it."""

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
def runtime_lib(pytestconfig) -> Path:
    """The full runtime library: PARE_RUNTIME_LIB, or built (sanitized under PARE_SANITIZE)."""
    prebuilt = os.environ.get("PARE_RUNTIME_LIB")
    if prebuilt and not runtime_build.sanitizers():
        return Path(prebuilt)
    runtime_build.check_sanitizer_runtime_loaded()
    return runtime_build.build(
        Path(pytestconfig.cache.mkdir("pare_runtime")), "full", selection_dir=runtime_build.DEFAULT_SELECTION
    )


@pytest.fixture(scope="session")
def runtime(runtime_lib) -> Runtime:
    return Runtime(runtime_lib)


@pytest.fixture(scope="session")
def loader_replay(runtime_lib, tmp_path_factory) -> Path:
    """fuzz/loader_fuzzer.cc with fuzz/replay_main.cc, linked against the
    same runtime: `loader_replay FILE` runs one saved input through the
    harness, control block included."""
    from fuzz import build as fuzz_build

    return fuzz_build.replay(runtime_lib, tmp_path_factory.mktemp("loader_replay"), runtime_build.sanitizers())
