"""The skip gate (tests/skip_gate.py) on throwaway test files, each run in its
own pytest process, as CI would run the suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pare.runtime as pare_runtime
from tests import skip_gate
from tests.conftest import REPO_ROOT

# One of each way a test can end up not running, plus platform limits (on a
# host without AVX-512: FAKE_HOST) and a plain pass.
SAMPLE = """
import pytest

from tests import skip_gate

def test_passes():
    pass

def test_skips_inline():
    pytest.skip("tool not installed")

@pytest.mark.skipif(True, reason="feature not written yet")
def test_skipif():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False

@pytest.mark.xfail(reason="fixed long ago")
def test_xpasses():
    pass

@pytest.fixture
def artifact():
    pytest.skip("artifact not built")

def test_skips_in_fixture(artifact):
    pass

@pytest.mark.platform_limit("cpu:avx512")
def test_platform_limit():
    pass

@pytest.fixture
def avx512_device():
    skip_gate.skip_if_limit("cpu:avx512")

@pytest.mark.platform_limit(reason="cpu:avx512")
def test_platform_limit_in_fixture(avx512_device):
    pass
"""

MODULE_SKIP = """
import pytest
pytest.importorskip("no_such_module_pare")

def test_never_collected():
    pass
"""

ONLY_LIMITS = """
import pytest

def test_passes():
    pass

@pytest.mark.platform_limit("cpu:avx512")
def test_platform_limit():
    pass
"""

# What the throwaway session sees of the host: FAKE_CPU_FLAGS (a
# /proc/cpuinfo flags line) and FAKE_MACHINE (platform.machine()) replace
# this machine's, so each case means the same on every CI host.
CONFTEST = """
import os
import platform

import pare.runtime

if "FAKE_CPU_FLAGS" in os.environ:
    pare.runtime.host_cpu_flags = lambda: frozenset(os.environ["FAKE_CPU_FLAGS"].split())
if "FAKE_MACHINE" in os.environ:
    platform.machine = lambda: os.environ["FAKE_MACHINE"]
"""
V3_FLAGS = "sse sse2 avx avx2 fma bmi1 bmi2 f16c movbe abm"
V4_FLAGS = V3_FLAGS + " avx512f avx512bw avx512cd avx512dq avx512vl"
FAKE_HOST = {"FAKE_CPU_FLAGS": V3_FLAGS, "FAKE_MACHINE": "x86_64"}  # this machine's kind: AVX2, no AVX-512


def run_pytest(
    tmp_path: Path, files: dict[str, str], *args: str, host: dict[str, str] = FAKE_HOST, **env: str
) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", skip_gate.ENV_VAR, "PYTEST_ADDOPTS")}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # hypothesis' plugin alone triples the start-up time
    environ.update(host)
    environ.update(env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.skip_gate",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(tmp_path),
            *args,
            *files,
        ],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def offenders(output: str) -> list[str]:
    return re.findall(
        r"^((?:SKIPPED|XFAIL|XPASS) \S+?):? ", output.split("PARE_NO_SKIPS: what did not run")[-1], re.MULTILINE
    )


@pytest.mark.parametrize("env", [{"PARE_NO_SKIPS": "1"}, {"CI": "true"}])
def test_gate_fails_the_session_listing_each_skip(tmp_path, env):
    proc = run_pytest(tmp_path, {"test_sample.py": SAMPLE, "test_module_skip.py": MODULE_SKIP}, **env)
    out = proc.stdout
    assert proc.returncode == 1, out
    assert sorted(offenders(out)) == [
        "SKIPPED test_module_skip.py",
        "SKIPPED test_sample.py::test_skipif",
        "SKIPPED test_sample.py::test_skips_in_fixture",
        "SKIPPED test_sample.py::test_skips_inline",
        "XFAIL test_sample.py::test_xfails",
        "XPASS test_sample.py::test_xpasses",
    ], out
    for reason in (
        "tool not installed",
        "feature not written yet",
        "known bug",
        "fixed long ago",
        "artifact not built",
        "no_such_module_pare",
    ):
        assert reason in out, reason
    assert "6 skipped/xfailed test(s) without a listed @pytest.mark.platform_limit this host has" in out
    # The two platform limits (by marker, and by skip_if_limit in a fixture) are counted, not failed.
    assert "cpu:avx512: 2 tests skipped (the CPU lacks AVX-512 F, BW, CD, DQ and VL" in out, out


def test_gate_is_off_by_default_and_with_zero(tmp_path):
    assert run_pytest(tmp_path, {"test_sample.py": SAMPLE}).returncode == 0
    proc = run_pytest(tmp_path, {"test_sample.py": SAMPLE}, CI="true", PARE_NO_SKIPS="0")
    assert proc.returncode == 0 and "what did not run" not in proc.stdout, proc.stdout


def test_a_platform_limit_skips_where_the_host_has_it_and_runs_where_not(tmp_path):
    proc = run_pytest(tmp_path, {"test_limits.py": ONLY_LIMITS}, "-rs", PARE_NO_SKIPS="1")
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped" in proc.stdout
    assert "test_limits.py:7: cpu:avx512: the CPU lacks AVX-512 F, BW, CD, DQ and VL" in proc.stdout, proc.stdout
    assert "cpu:avx512: 1 test skipped" in proc.stdout
    proc = run_pytest(tmp_path, {"test_limits.py": ONLY_LIMITS}, PARE_NO_SKIPS="1", FAKE_CPU_FLAGS=V4_FLAGS)
    assert proc.returncode == 0 and "2 passed" in proc.stdout, proc.stdout
    assert "platform limits" not in proc.stdout


def test_a_platform_limit_skip_must_name_a_listed_limit(tmp_path):
    test = (
        "import pytest\n\n"
        "@pytest.mark.platform_limit('cpu:avx2')\n"
        "def test_passes():\n    pass\n\n"
        "@pytest.mark.platform_limit('cpu:avx2')\n"
        "def test_x():\n    pytest.skip('no such device on this host')\n"
    )
    proc = run_pytest(tmp_path, {"test_unlisted.py": test}, PARE_NO_SKIPS="1")  # AVX2: the tests run
    assert proc.returncode == 1, proc.stdout
    assert offenders(proc.stdout) == ["SKIPPED test_unlisted.py::test_x"], proc.stdout
    assert "no such device on this host (a platform_limit skip's reason starts with one listed limit" in proc.stdout


def test_a_skip_naming_a_feature_the_host_has_fails(tmp_path):
    # The limit named in the skip is not the host's: this host has AVX2, so the test could have run.
    test = (
        "import pytest\nfrom tests import skip_gate\n\n"
        "def test_passes():\n    pass\n\n"
        "@pytest.mark.platform_limit('cpu:avx2')\n"
        "def test_x():\n    pytest.skip(skip_gate.limit_reason('cpu:avx2'))\n"
    )
    proc = run_pytest(tmp_path, {"test_has_it.py": test}, PARE_NO_SKIPS="1")
    assert proc.returncode == 1, proc.stdout
    assert offenders(proc.stdout) == ["SKIPPED test_has_it.py::test_x"], proc.stdout
    assert "(this host does not have the limit cpu:avx2: the test could have run)" in proc.stdout
    # On a host without AVX2 the same skip is the limit's.
    proc = run_pytest(tmp_path, {"test_has_it.py": test}, PARE_NO_SKIPS="1", FAKE_CPU_FLAGS="sse sse2")
    assert proc.returncode == 0, proc.stdout
    assert "cpu:avx2: 1 test skipped" in proc.stdout


@pytest.mark.parametrize(
    "marker,error",
    [
        ("platform_limit", "@pytest.mark.platform_limit needs a limit"),
        ("platform_limit('no such device')", "@pytest.mark.platform_limit('no such device') names no listed limit"),
        ("platform_limit('')", "@pytest.mark.platform_limit needs a limit"),
        ("isa_coverage('x86_64_v9')", "@pytest.mark.isa_coverage('x86_64_v9',): name ISA copies among"),
        ("isa_coverage", "@pytest.mark.isa_coverage(): name ISA copies among"),
    ],
)
def test_a_marker_names_listed_limits_and_copies(tmp_path, marker, error):
    proc = run_pytest(tmp_path, {"test_bare.py": f"import pytest\n\n@pytest.mark.{marker}\ndef test_x():\n    pass\n"})
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert f"test_bare.py::test_x: {error}" in proc.stderr


ALL_SKIP = """
import pytest

@pytest.mark.platform_limit("{limit}")
@pytest.mark.parametrize("n", [1, 2])
def test_x(n):
    pass
"""


def test_a_suite_whose_every_test_skips_fails_unless_the_cpu_lacks_a_feature(tmp_path):
    # Every test skips for AVX-512 this host lacks (//tests:kernels_v3_test on an older CPU): nothing to run here.
    proc = run_pytest(tmp_path, {"test_all.py": ALL_SKIP.format(limit="cpu:avx512")}, PARE_NO_SKIPS="1")
    assert proc.returncode == 0, proc.stdout
    assert "cpu:avx512: 2 tests skipped (the CPU lacks AVX-512" in proc.stdout
    # Every test skips for a limit that is no CPU feature: the suite runs nothing and proves nothing.
    files = {"test_all.py": ALL_SKIP.format(limit="arch:x86_64")}
    host = {"FAKE_MACHINE": "aarch64", "FAKE_CPU_FLAGS": ""}
    proc = run_pytest(tmp_path, files, host=host, CI="true")
    assert proc.returncode == 1, proc.stdout
    assert "arch:x86_64: 2 tests skipped (the host is not x86_64" in proc.stdout
    assert "every test skipped (2 tests), not all for a CPU feature this host lacks" in proc.stdout
    assert run_pytest(tmp_path, files, host=host).returncode == 0  # the gate off


ISA_TESTS = """
import pytest
from tests import skip_gate

pytestmark = pytest.mark.isa_coverage("x86_64_baseline", "x86_64_v3", "x86_64_v4")

@pytest.mark.parametrize("isa", {copies})
def test_runs_on(request, isa):
    skip_gate.record_isa(request.config, isa)

def test_runs_nothing():
    pass
"""


def isa_summary(out: str) -> list[str]:
    return out.split("ISA copies run (pare_kernel_isa after each execute)")[1].splitlines()[1:4]


def test_the_isa_summary_and_a_copy_the_host_runs_but_no_test_ran(tmp_path):
    # This host (FAKE_HOST) runs the baseline and v3 copies; the tests run v3 only.
    files = {"test_isa.py": ISA_TESTS.format(copies=["x86_64_v3", "x86_64_v3"])}
    proc = run_pytest(tmp_path, files, PARE_NO_SKIPS="1")
    out = proc.stdout
    assert proc.returncode == 1, out
    assert isa_summary(out) == [
        "x86_64_baseline: NOT RUN, though this host runs it and @pytest.mark.isa_coverage asks for it",
        "x86_64_v3: 2 tests",
        "x86_64_v4: not run: cpu:avx512: the CPU lacks AVX-512 F, BW, CD, DQ and VL: the x86-64-v4 GEMM tile cannot run",
    ], out
    assert (
        "x86_64_baseline: this host runs it and the suite's @pytest.mark.isa_coverage asks for it, but no test" in out
    )
    assert run_pytest(tmp_path, files).returncode == 0  # the gate off: printed, not failed

    files = {"test_isa.py": ISA_TESTS.format(copies=["x86_64_baseline", "x86_64_v3"])}
    proc = run_pytest(tmp_path, files, PARE_NO_SKIPS="1")
    assert proc.returncode == 0, proc.stdout
    assert isa_summary(proc.stdout)[:2] == ["x86_64_baseline: 1 test", "x86_64_v3: 1 test"], proc.stdout
    # On a host with AVX-512 the v4 copy is one it runs: no test ran it.
    proc = run_pytest(tmp_path, files, PARE_NO_SKIPS="1", FAKE_CPU_FLAGS=V4_FLAGS)
    assert proc.returncode == 1, proc.stdout
    assert (
        isa_summary(proc.stdout)[2]
        == "x86_64_v4: NOT RUN, though this host runs it and @pytest.mark.isa_coverage asks for it"
    )


def test_the_isa_record_crosses_from_pytest_xdist_workers(tmp_path):
    # tools/run_tests.sh runs pytest -n: the workers run the tests, the main process summarises.
    files = {"test_isa.py": ISA_TESTS.format(copies=["x86_64_baseline", "x86_64_v3", "x86_64_v3"])}
    proc = run_pytest(tmp_path, files, "-p", "xdist.plugin", "-n", "2", PARE_NO_SKIPS="1")
    assert proc.returncode == 0, proc.stdout
    assert isa_summary(proc.stdout)[:2] == ["x86_64_baseline: 1 test", "x86_64_v3: 2 tests"], proc.stdout


def test_a_suite_that_asks_for_no_copy_only_prints_what_ran(tmp_path):
    test = (
        "from tests import skip_gate\n\ndef test_x(request):\n    skip_gate.record_isa(request.config, 'x86_64_v3')\n"
    )
    proc = run_pytest(tmp_path, {"test_any.py": test}, PARE_NO_SKIPS="1")
    assert proc.returncode == 0, proc.stdout
    assert "x86_64_baseline: not run (no test here asks for it)\nx86_64_v3: 1 test" in proc.stdout


def test_every_listed_limit_is_documented_checked_and_used():
    # docs/testing.md lists each limit with its line, so the list of what
    # may skip is reviewed with the docs; every platform_limit in tests/
    # names one, and each one has a user.
    docs = (REPO_ROOT / "docs" / "testing.md").read_text()
    for limit, entry in skip_gate.LIMITS.items():
        assert f"`{limit}`" in docs and entry.doc in docs, f"{limit} missing from docs/testing.md (Skips)"
        assert isinstance(entry.holds(), bool)
    used: set[str] = set()
    for path in sorted((REPO_ROOT / "tests").rglob("*.py")):
        if path.name in ("skip_gate.py", "test_skip_gate.py"):
            continue
        text = path.read_text()
        for limit in re.findall(r"platform_limit\(\s*(?:reason\s*=\s*)?[\"']([^\"']*)[\"']", text):
            assert limit in skip_gate.LIMITS, f"{path.relative_to(REPO_ROOT)}: platform_limit({limit!r}) is not listed"
            used.add(limit)
        used.update(re.findall(r"skip_if_limit\([\"']([^\"']+)[\"']\)", text))
    used.update(skip_gate.ISA_LIMITS.values())  # tests/runtime/conftest.py marks a suite's items with these
    assert used == set(skip_gate.LIMITS), f"listed but never used: {sorted(set(skip_gate.LIMITS) - used)}"


def test_the_isa_copies_are_the_runtimes():
    # skip_gate's copies and pare.runtime's levels name the runtime's (runtime/core/cpu.cc).
    cpu_cc = (REPO_ROOT / "runtime" / "core" / "cpu.cc").read_text()
    names = re.search(r"kNames\[\] = \{([^}]*)\}", cpu_cc).group(1)
    assert re.findall(r'"(\w+)"', names) == list(skip_gate.ISA_COPIES)
    assert set(pare_runtime.ISA_CPU_FEATURES) <= set(skip_gate.ISA_LIMITS)
