"""The tests that run Bazel under `pytest -n` (tests/conftest.py, docs/testing.md
"Parallel runs"): BAZEL_TESTS run on one worker, one at a time, in order;
every other file goes to any worker; in a worker, tools/bazel refuses to run
for a test outside BAZEL_TESTS, naming it and the list.

A real pytest-xdist session over a small suite written here, laid out like
tests/ and using tests/conftest.py's hooks. No Bazel server is started:
tools/bazel refuses before it would run one, and the "Bazel" tests only
record which worker ran them and when."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import NO_BAZEL_ENV, REPO_ROOT

CONFTEST = f"""
import sys
sys.path.insert(0, {str(REPO_ROOT)!r})
from tests.conftest import (  # noqa: F401
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_xdist_make_scheduler,
)
"""

# In BAZEL_TESTS (tests/rules/, tests/verify/): each test appends its worker,
# start and end to runs.jsonl, and checks tools/bazel would not refuse it.
BAZEL_SUITE = """
import json
import os
import time
from pathlib import Path

import pytest


@pytest.mark.parametrize("n", range(4))
def test_bazel(n, request):
    start = time.monotonic()
    assert {env!r} not in os.environ
    assert request.node.get_closest_marker("bazel")
    time.sleep(0.2)
    with open(Path(__file__).parents[2] / "runs.jsonl", "a") as f:
        f.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], request.node.nodeid, start, time.monotonic()]) + "\\n")
"""

OTHER_SUITE = """
import subprocess
import time

import pytest


@pytest.mark.parametrize("n", range(2))
def test_other(n, request):
    assert not request.node.get_closest_marker("bazel")
    time.sleep(0.3)


def test_tools_bazel_refuses_a_test_outside_the_list():
    proc = subprocess.run([{bazel!r}, "version"], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "test_{name}.py::test_tools_bazel_refuses_a_test_outside_the_list runs Bazel" in proc.stderr
    assert "BAZEL_TESTS (tests/conftest.py)" in proc.stderr
"""


# The suite's files, laid out like tests/: two under BAZEL_TESTS prefixes, four
# elsewhere. (Joined from parts: they are not paths of this repository.)
BAZEL_FILES = ["/".join(("tests", "rules", "test_a.py")), "/".join(("tests", "verify", "test_b.py"))]
OTHER_FILES = ["/".join(("tests", "other", f"test_{name}.py")) for name in "cdef"]


def test_bazel_tests_run_on_one_worker_one_at_a_time_and_others_cannot_run_bazel(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for suite in BAZEL_FILES:
        (tmp_path / suite).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / suite).write_text(BAZEL_SUITE.format(env=NO_BAZEL_ENV))
    for suite in OTHER_FILES:
        (tmp_path / suite).parent.mkdir(parents=True, exist_ok=True)
        name = suite[-4]
        (tmp_path / suite).write_text(OTHER_SUITE.format(bazel=str(REPO_ROOT / "tools" / "bazel"), name=name))
    env = {k: v for k, v in os.environ.items() if k not in (NO_BAZEL_ENV, "PYTEST_XDIST_WORKER")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "20 passed" in proc.stdout
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len({worker for worker, *_ in runs}) == 1, runs  # one worker
    assert [nodeid for _, nodeid, *_ in runs] == [  # all of them, in collection order
        f"{suite}::test_bazel[{n}]" for suite in BAZEL_FILES for n in range(4)
    ]
    for (_, _, _, end), (_, _, start, _) in zip(runs, runs[1:]):
        assert end <= start  # one at a time


def test_tools_bazel_runs_when_no_test_is_named():
    # The guard is the variable alone: unset, tools/bazel goes on to Bazel
    # (here with an unknown startup flag, so no server is started).
    env = {k: v for k, v in os.environ.items() if k != NO_BAZEL_ENV}
    proc = subprocess.run(
        [str(REPO_ROOT / "tools" / "bazel"), "--no_such_startup_flag_for_pare", "version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "BAZEL_TESTS" not in proc.stderr
    assert proc.returncode != 0 and "no_such_startup_flag_for_pare" in proc.stderr + proc.stdout
