"""tests/pytest_main.py, the launcher of the suites Bazel runs
(tests/pytest_suite.bzl): its usage errors name the problem, and a suite
that collects nothing fails, as tools/run_tests.sh makes pytest's exit 5 fail."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

MAIN = REPO_ROOT / "tests" / "pytest_main.py"


def run(*args: str, cwd=REPO_ROOT) -> subprocess.CompletedProcess:
    # As Bazel runs it: the workspace root (here, the checkout) on the path.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, str(MAIN), *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def test_no_arguments_is_a_usage_error():
    proc = run()
    assert proc.returncode == 2 and "usage: pytest_main.py SUITE " in proc.stderr


@pytest.mark.parametrize("value", ["PARE_RUNTIME_LIB", "=runtime/full", "PARE_RUNTIME_LIB="])
def test_malformed_bundle_env_names_the_expected_form(value):
    proc = run("tests/codegen", "--bundle-env", value)
    assert proc.returncode == 2
    assert f"--bundle-env {value!r}: expected VAR=BUNDLE_DIR" in proc.stderr


@pytest.mark.parametrize("value", ["PARE_RUNTIME_BITCODE_DIR", "=runtime/bitcode"])
def test_malformed_dir_env_names_the_expected_form(value):
    proc = run("tests/codegen", "--dir-env", value)
    assert proc.returncode == 2
    assert f"--dir-env {value!r}: expected VAR=DIR" in proc.stderr


def test_a_dir_env_folder_missing_from_the_runfiles_names_the_fix():
    proc = run("tests/codegen", "--dir-env", "PARE_RUNTIME_BITCODE_DIR=no_such_folder")
    assert proc.returncode == 2
    assert "PARE_RUNTIME_BITCODE_DIR=no_such_folder: no such folder in the runfiles; add its target to data" in (
        proc.stderr
    )


def test_flags_without_a_suite_are_a_usage_error():
    proc = run("--bundle-env", "PARE_RUNTIME_LIB=runtime/full")
    assert proc.returncode == 2
    assert "name at least one SUITE (a directory or test file) before the flags" in proc.stderr


def test_a_suite_that_collects_nothing_fails(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = run(str(tmp_path / "empty"))
    assert proc.returncode == 1
    assert "collected no tests" in proc.stderr
