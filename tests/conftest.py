"""Shared pytest fixtures and helpers: building Bazel targets once per
session, requiring the tools setup installs, the skip gate
(tests/skip_gate.py: PARE_NO_SKIPS=1 or CI=true fails any skip that is not a
listed platform limit) and the record of the ISA copies each test ran, and
the named set of tests that run Bazel, kept
on one worker under `pytest -n` (docs/testing.md, "Parallel runs")."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pare.runtime
from tests import skip_gate
from tools import test_cache

REPO_ROOT = Path(__file__).absolute().parents[1]
BAZEL = [str(REPO_ROOT / "tools" / "bazel")]
# The targets pare_app (rules/private/app.bzl) declares beside the app's own
# name: no BUILD file spells them in a `name = "..."` line.
PARE_APP_TARGETS = (
    "runtime",
    "runtime_jni",
    "java_api",
    "android_aar",
    "ios_xcframework",
    "update_manifest",
    "size_budget_test",
)

_built: set[tuple[str, ...]] = set()

# The tests that run Bazel, in this checkout or in a workspace of their own
# (a second checkout, a presubmit worktree, examples/external_workspace): the
# named set that cannot be a Bazel test itself (docs/testing.md, "Parallel
# runs"). Node id prefixes: a directory, a file or one test. They get the
# `bazel` mark (`pytest -m "not bazel"` leaves them out), and under `pytest
# -n` (tools/run_tests.sh) they run one at a time on one worker, in
# collection order, as in a serial run: Bazel runs one command at a time per
# workspace anyway, and a build with other flags (`--define ops=...`)
# rewrites bazel-bin under a concurrent test that reads it. Every other test
# file is a scope of its own (its module fixtures are set up once), spread
# over the other workers. In a worker, tools/bazel refuses to run for a test
# outside this set (NO_BAZEL_ENV names the test), so a missing entry fails at
# once instead of racing now and then.
BAZEL_TESTS = (
    "tests/docs/test_readme_pipeline.py",
    "tests/mobile/",
    "tests/prune/test_prune_runtime_size.py",
    "tests/rules/",
    "tests/size_diff/",
    "tests/toolchains/test_platform_outputs.py",
    "tests/tracer/test_android.py",
    "tests/tracer/test_demo.py",
    "tests/verify/",
    "tests/zoo/test_zoo_end_to_end.py",
)
BAZEL_MARK = "bazel"
NO_BAZEL_ENV = "PARE_TEST_OUTSIDE_BAZEL_TESTS"


# A manifest selecting the Vulkan delegate backend and nothing else (what
# a runtime's platforms lacking it refuse: docs/delegates.md).
VULKAN_MANIFEST = """\
include_all_operators: false
operators:
  pare::delegate_init.vulkan:
    is_root_operator: true
    is_used_for_training: false
    include_all_overloads: false
  pare::delegate_call:
    is_root_operator: true
    is_used_for_training: false
    include_all_overloads: false
custom_classes:
- Delegate
"""


def runs_bazel(nodeid: str) -> bool:
    return nodeid.startswith(BAZEL_TESTS)


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


# Set by tests/pytest_main.py in a Bazel test: the runfiles tree, where the
# test's data deps sit at their packages' paths as they do under bazel-bin.
BAZEL_OUTPUTS_ENV = "PARE_BAZEL_OUTPUTS"


def bazel_build(*targets: str, flags: tuple[str, ...] = ()) -> Path:
    """Builds targets (once per session for the same arguments); returns bazel-bin.

    In a Bazel test (BAZEL_OUTPUTS_ENV set) nothing is built: the targets
    are the test's data deps (tests/BUILD.bazel), and the runfiles tree
    stands in for bazel-bin."""
    outputs = os.environ.get(BAZEL_OUTPUTS_ENV)
    if outputs:
        root = Path(outputs)
        missing = [t for t in targets if not (root / t.lstrip("/").split(":")[0]).is_dir()]
        if flags or missing:
            raise AssertionError(
                f"a Bazel test cannot build {' '.join((*flags, *targets))}: add "
                f"{', '.join(missing or targets)} to the test's data in tests/BUILD.bazel "
                "(and build it without flags), or run this test under pytest"
            )
        return root
    key = tuple(flags) + tuple(targets)
    if key not in _built:
        bazel("build", *flags, *targets)
        _built.add(key)
    return REPO_ROOT / "bazel-bin"


def bazel_output_files(target: str, flags: tuple[str, ...] = ()) -> list[Path]:
    """The files `target` builds, where its own configuration puts them (a
    rule with a transition writes under bazel-out/<config>-ST-<hash>, not
    bazel-bin); builds it first."""
    bazel_build(target, flags=flags)
    out = bazel(
        "cquery",
        *flags,
        target,
        "--output=starlark",
        '--starlark:expr="\\n".join([f.path for f in target.files.to_list()])',
    ).stdout
    return [REPO_ROOT / line for line in out.splitlines() if line.strip()]


def export_program(model: Path | str, program: Path) -> Path:
    """Exports the model spec file `model` to the program file `program` with
    the tracer's CLI (python -m tools.tracer export, run from the repository
    root); fails the test with the tracer's errors if it fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "tools.tracer", "export", str(model), "-o", str(program)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return program


def snapshot_checkout(dst: Path) -> None:
    """A second checkout at dst, as a teammate's would be: the working tree's
    files (tracked, and untracked but not ignored: uncommitted work included;
    no build outputs, caches or .venv-executorch), plus what tools/setup.sh
    leaves in a checkout that git does not hold: node_modules and .venv
    (symlinks to this checkout's, installing them again would take minutes),
    .bazeliskrc, and a .bazelrc.local that names dst's own venv path, as setup
    writes it."""
    shared_dirs = ("node_modules", ".venv")
    for name in test_cache.checkout_files(REPO_ROOT):
        src = REPO_ROOT / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet in git
        if name in shared_dirs:
            continue  # a symlink in a worktree set up to share them (git ignores only the directories); linked below
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / name, follow_symlinks=False)
    for shared in shared_dirs:
        (dst / shared).symlink_to(REPO_ROOT / shared)
    if (REPO_ROOT / ".bazeliskrc").is_file():
        shutil.copy2(REPO_ROOT / ".bazeliskrc", dst / ".bazeliskrc")
    local_rc = REPO_ROOT / ".bazelrc.local"
    if not local_rc.is_file():
        pytest.fail(
            f"{local_rc} is missing: run tools/setup.sh (it writes this machine's Bazel settings)", pytrace=False
        )
    lines = [line for line in local_rc.read_text().splitlines() if "PARE_PYTHON=" not in line]
    lines.append(f"build --repo_env=PARE_PYTHON={dst / '.venv' / 'bin' / 'python3'}")
    (dst / ".bazelrc.local").write_text("\n".join(lines) + "\n")


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
    config.addinivalue_line(
        "markers",
        f"{BAZEL_MARK}: runs Bazel (BAZEL_TESTS in tests/conftest.py): under pytest -n, one at a time on one worker",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if runs_bazel(item.nodeid):
            item.add_marker(BAZEL_MARK)


def pytest_xdist_make_scheduler(config, log):
    """pytest -n: BAZEL_TESTS in one scope, every other file in its own.
    (pytest-xdist's own --dist loadgroup renames items through an attribute
    pytest 9 no longer reads, so it groups nothing.)"""
    from xdist.scheduler import LoadScopeScheduling

    class BazelScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return BAZEL_MARK if runs_bazel(nodeid) else nodeid.split("::", 1)[0]

    return BazelScopeScheduling(config, log)


def pytest_runtest_setup(item):
    # Only in a pytest-xdist worker: a serial run has no one to race, and a
    # test may build what it needs when no prebuilt runtime is given.
    if os.environ.get("PYTEST_XDIST_WORKER") and not item.get_closest_marker(BAZEL_MARK):
        os.environ[NO_BAZEL_ENV] = item.nodeid
    else:
        os.environ.pop(NO_BAZEL_ENV, None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    # Module and session fixtures finish in the teardown of whichever test
    # comes last (a `bazel shutdown`, say): never refused.
    os.environ.pop(NO_BAZEL_ENV, None)


@pytest.fixture(scope="session", autouse=True)
def record_kernel_isa(pytestconfig):
    """Tells the skip gate which ISA copy each test's methods ran: the
    runtime's own pare_kernel_isa after each execute that succeeded (the
    copy a cap or the CPU picked, not the one a test meant to pick), for
    the summary and the isa_coverage check (docs/testing.md, Skips)."""
    execute = pare.runtime.Method.execute

    @functools.wraps(execute)  # tests that read the API's docstrings see execute's
    def recording_execute(self):
        execute(self)
        skip_gate.record_isa(pytestconfig, self.program.runtime.kernel_isa)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pare.runtime.Method, "execute", recording_execute)
        yield


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
