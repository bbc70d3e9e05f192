"""The skip gate (tests/skip_gate.py) on throwaway test files, each run in its
own pytest process, as CI would run the suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import skip_gate
from tests.conftest import REPO_ROOT

# One of each way a test can end up not running, plus a platform limit and a
# plain pass.
SAMPLE = """
import pytest

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

@pytest.mark.platform_limit("no such device on this host")
def test_platform_limit():
    pytest.skip("no such device on this host")

@pytest.mark.platform_limit(reason="no such device on this host")
@pytest.mark.skipif(True, reason="no such device on this host")
def test_platform_limit_skipif():
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

@pytest.mark.platform_limit("no such device on this host")
def test_platform_limit():
    pytest.skip("no such device on this host")
"""


def run_pytest(tmp_path: Path, files: dict[str, str], **env: str) -> subprocess.CompletedProcess:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", skip_gate.ENV_VAR, "PYTEST_ADDOPTS")}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # hypothesis' plugin alone triples the start-up time
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
        r"^((?:SKIPPED|XFAIL|XPASS) \S+?):? ", output.split("skips that are not platform limits")[-1], re.MULTILINE
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
    assert "6 skipped/xfailed test(s) without @pytest.mark.platform_limit" in out


def test_gate_is_off_by_default_and_with_zero(tmp_path):
    assert run_pytest(tmp_path, {"test_sample.py": SAMPLE}).returncode == 0
    proc = run_pytest(tmp_path, {"test_sample.py": SAMPLE}, CI="true", PARE_NO_SKIPS="0")
    assert proc.returncode == 0 and "not platform limits" not in proc.stdout, proc.stdout


def test_platform_limits_pass_the_gate(tmp_path):
    proc = run_pytest(tmp_path, {"test_limits.py": ONLY_LIMITS}, PARE_NO_SKIPS="1")
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 1 skipped" in proc.stdout


def test_platform_limit_needs_a_reason(tmp_path):
    proc = run_pytest(
        tmp_path,
        {"test_bare.py": "import pytest\n\n@pytest.mark.platform_limit\ndef test_x():\n    pytest.skip('why?')\n"},
    )
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR
    assert "test_bare.py::test_x: @pytest.mark.platform_limit needs a reason" in proc.stderr


def test_every_platform_limit_in_the_suite_is_documented():
    # docs/testing.md lists each platform limit's reason, so the list of
    # tests allowed to skip is reviewed with the docs.
    docs = (REPO_ROOT / "docs" / "testing.md").read_text()
    undocumented = []
    for path in sorted((REPO_ROOT / "tests").rglob("*.py")):
        if path.name in ("skip_gate.py", "test_skip_gate.py"):
            continue
        for reason in re.findall(r"mark\.platform_limit\(\s*(?:reason\s*=\s*)?[\"']([^\"']+)[\"']", path.read_text()):
            if reason not in docs:
                undocumented.append(f"{path.relative_to(REPO_ROOT)}: {reason}")
    assert not undocumented, "platform limits missing from docs/testing.md (Skips):\n" + "\n".join(undocumented)
