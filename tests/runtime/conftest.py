"""Fixtures for the runtime tests: runtime libraries built from runtime/.

By default every runtime is compiled here with clang++-16 (the house flags,
the same ones the Bazel pare_cc_library macro applies) into pytest's cache
directory, keyed by a hash of the sources and flags, so unchanged sources
are not rebuilt. Point PARE_RUNTIME_LIB (full runtime),
PARE_RUNTIME_V3_LIB (its x86-64-v3 build), PARE_RUNTIME_BASELINE_LIB (its SSE2-only build), PARE_TRACING_RUNTIME_LIB
(instrumentation build) and PARE_TEST_DOUBLE_RUNTIME_LIB (the full runtime
linked with the recording PAL) at prebuilt libraries, e.g. Bazel's
//runtime:full and //runtime:full_test_double (tools/run_tests.sh does), to
test those instead. The selective runtime (a custom selection that drops
ops, a dtype, a class and a feature) is always compiled here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).absolute().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import runtime_build  # noqa: E402
from runtime_testing import (  # noqa: E402
    RUNTIME_ISA_ENV,
    SELECTIVE_CLASSES,
    SELECTIVE_FEATURES,
    SELECTIVE_KERNEL_DTYPES,
    SELECTIVE_OPS,
    runtime_isa_limit,
    suite_kernel_isa,
)

from pare.runtime import Runtime  # noqa: E402


def pytest_configure(config):
    # CI runs these a second time with ATEN_CPU_CAPABILITY=default (torch's scalar loops).
    config.addinivalue_line("markers", "fp_ops: op-vs-torch tests whose float results depend on torch's CPU path")
    config.addinivalue_line(
        "markers",
        f"{runtime_build.ABSENCE_MARK}: asserts that unselected code is absent from a selective runtime's binary "
        "(deselected under the sanitizers, which keep every instrumented global)",
    )
    config.addinivalue_line(
        "markers",
        f"{runtime_build.ISA_BUILD_MARK}: needs the whole runtime built at one ISA level "
        "(deselected under the sanitizers: the auto runtime runs those copies capped)",
    )
    try:
        runtime_build.check_sanitizer_runtime_loaded()
        # Under pytest -n a worker may not run Bazel (BAZEL_TESTS in
        # tests/conftest.py): the controller gets what runtime_build
        # compiles from Bazel first, and the workers inherit its path.
        if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
            runtime_build.compile_info_path()
    except RuntimeError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_collection_modifyitems(config, items):
    runtime_build.deselect_other_builds(config, items)
    # A runtime built for an ISA level (PARE_RUNTIME_ISA): every test carries
    # the limit under which the CPU cannot run it, and skips where the host
    # has it (tests/skip_gate.py; pare.runtime refuses to load it there).
    try:
        limit = runtime_isa_limit(os.environ.get(RUNTIME_ISA_ENV))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    # The copy the suite's runtime runs here: the suite must run it (a
    # runtime whose CPUID or cap picked another fails under the skip gate).
    kernel_isa = suite_kernel_isa()
    for item in items:
        if HERE not in item.path.parents:  # a session over more of tests/ than this suite
            continue
        if limit:
            item.add_marker(pytest.mark.platform_limit(limit))
        if "runtime" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.isa_coverage(kernel_isa))


def _lib_from_env(var: str) -> Path | None:
    value = os.environ.get(var)
    if not value:
        return None
    if runtime_build.sanitizers():  # a prebuilt library is not sanitized
        raise pytest.UsageError(f"{var} is set but {runtime_build.SANITIZE_ENV} asks for sanitized runtimes: unset it")
    path = Path(value)
    if not path.is_file():
        raise pytest.UsageError(f"{var}={value} does not exist")
    return path


def _full_lib(pytestconfig, var: str, name: str, **options) -> Path:
    """A build of the full selection: the prebuilt library named by `var`,
    else `name` compiled here with runtime_build.build's `options`."""
    return _lib_from_env(var) or runtime_build.build(
        runtime_build.cache_root(pytestconfig), name, selection_dir=runtime_build.DEFAULT_SELECTION, **options
    )


@pytest.fixture(scope="session")
def runtime_lib(pytestconfig) -> Path:
    return _full_lib(pytestconfig, "PARE_RUNTIME_LIB", "full")


@pytest.fixture(scope="session")
def runtime(runtime_lib) -> Runtime:
    return Runtime(runtime_lib)


@pytest.fixture(scope="session")
def runtime_v3_lib(pytestconfig) -> Path:
    """The full runtime at --//runtime:x86_64_isa=v3 (AVX2+FMA): Bazel's
    //runtime:full_v3 via PARE_RUNTIME_V3_LIB, else compiled here."""
    return _full_lib(pytestconfig, "PARE_RUNTIME_V3_LIB", "full_v3", extra_flags=runtime_build.X86_64_V3_FLAGS)


@pytest.fixture(scope="session")
def runtime_baseline_lib(pytestconfig) -> Path:
    """The full runtime at --//runtime:x86_64_isa=baseline (SSE2 only):
    Bazel's //runtime:full_baseline via PARE_RUNTIME_BASELINE_LIB, else
    compiled here."""
    return _full_lib(
        pytestconfig, "PARE_RUNTIME_BASELINE_LIB", "full_baseline", extra_flags=runtime_build.X86_64_BASELINE_FLAGS
    )


@pytest.fixture(scope="session")
def tracing_runtime(pytestconfig) -> Runtime:
    return Runtime(_full_lib(pytestconfig, "PARE_TRACING_RUNTIME_LIB", "tracing", defines=["PARE_TRACING=1"]))


@pytest.fixture(scope="session")
def selection_dir(pytestconfig) -> Path:
    return runtime_build.write_selection(
        runtime_build.cache_root(pytestconfig) / "selection_custom",
        SELECTIVE_OPS,
        SELECTIVE_KERNEL_DTYPES,
        SELECTIVE_CLASSES,
        SELECTIVE_FEATURES,
    )


@pytest.fixture(scope="session")
def selection_cache(pytestconfig) -> Path:
    """Where a test builds a runtime of its own selection
    (runtime_build.build). A fixture of its own so that make sanitize's
    full-runtime subset deselects such tests (runtime_build.OTHER_BUILD_FIXTURES):
    under ASan every global is registered at start-up, so a sanitized
    selective runtime keeps what the selection leaves out."""
    return runtime_build.cache_root(pytestconfig)


@pytest.fixture(scope="session")
def selective_lib(pytestconfig, selection_dir) -> Path:
    # Built as an app's runtime is (runtime_build.selected_objects): the
    # selection folded into code compiled with every kernel, so the "absent"
    # symbol checks test what deletes unselected code in shipped runtimes.
    return runtime_build.build(runtime_build.cache_root(pytestconfig), "selective", selection_dir=selection_dir)


@pytest.fixture(scope="session")
def selective_runtime(selective_lib) -> Runtime:
    return Runtime(selective_lib)


@pytest.fixture(scope="session")
def test_double_runtime(pytestconfig) -> Runtime:
    """The full runtime linked with the recording PAL (pal_test_double.cc):
    Bazel's //runtime:full_test_double via PARE_TEST_DOUBLE_RUNTIME_LIB, else
    the full runtime's objects compiled here, linked with that PAL."""
    return Runtime(_full_lib(pytestconfig, "PARE_TEST_DOUBLE_RUNTIME_LIB", "full", pal="test_double"))
