"""tools/test_cache.py: the key of a checkout changes with what the tests
outside Bazel read (files, executable bits, arguments, PARE_* variables) and
with nothing else, and a key that passed is found again."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import pytest

from tools import test_cache


@pytest.fixture
def checkout(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("A = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / ".gitignore").write_text("bazel-*\n/.cache/\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return root


def key(root: Path, *args: str, **env: str) -> str:
    return test_cache.tree_key(root, args, {"HOME": "/root", **env})


def test_the_key_follows_what_the_tests_read(checkout):
    base = key(checkout)
    assert key(checkout) == base
    (checkout / "src" / "a.py").write_text("A = 2\n")  # an uncommitted edit
    edited = key(checkout)
    assert edited != base
    (checkout / "src" / "b.py").write_text("")  # a new file git would track
    added = key(checkout)
    assert added != edited
    (checkout / "run.sh").chmod(0o755)
    executable = key(checkout)
    assert executable != added
    (checkout / ".bazelrc.local").write_text("build --override_repository=platforms=/x\n")
    machine = key(checkout)
    assert machine != executable
    (checkout / "src" / "b.py").unlink()
    assert key(checkout) != machine
    assert key(checkout, "-k", "x") != key(checkout)
    assert key(checkout, PARE_NO_SKIPS="1") != key(checkout) and key(checkout, CI="true") != key(checkout)


def test_the_key_ignores_what_git_ignores_and_other_variables(checkout):
    base = key(checkout)
    (checkout / "bazel-bin").mkdir()
    (checkout / "bazel-bin" / "lib.so").write_bytes(b"\0")
    (checkout / ".cache" / "test_passes").mkdir(parents=True)
    (checkout / ".cache" / "test_passes" / "x").write_text("")
    assert key(checkout) == base
    assert key(checkout, PATH="/usr/bin", TMPDIR="/var/tmp") == base


def test_a_recorded_key_is_a_hit(checkout):
    k = key(checkout)
    assert test_cache.hit(checkout, k) is None
    when = datetime.datetime(2026, 11, 27, 5, 30, tzinfo=datetime.timezone.utc)
    path = test_cache.record(checkout, k, now=when)
    assert path == checkout / ".cache" / "test_passes" / k
    assert test_cache.hit(checkout, k) == "2026-11-27 05:30:00 UTC"
    assert test_cache.hit(checkout, key(checkout, PARE_NO_SKIPS="1")) is None


def test_cli_exit_codes_and_errors(checkout, capsys):
    assert test_cache.main(["key", "--", "-x"], root=checkout) == 0
    k = capsys.readouterr().out.strip()
    assert k == test_cache.tree_key(checkout, ["-x"]) and len(k) == 64
    assert test_cache.main(["hit", k], root=checkout) == 1
    assert test_cache.main(["record", k], root=checkout) == 0
    assert test_cache.main(["hit", k], root=checkout) == 0
    assert capsys.readouterr().out.strip().endswith("UTC")
    assert test_cache.main(["hit", "abc"], root=checkout) == 2
    assert "error: 'abc' is not a key; print one with `python -m tools.test_cache key`" in capsys.readouterr().err
    assert test_cache.main(["frobnicate"], root=checkout) == 2
    assert "usage: python -m tools.test_cache key" in capsys.readouterr().err


def test_outside_a_git_checkout_is_an_error(tmp_path):
    env_dir = tmp_path / "plain"
    env_dir.mkdir()
    with pytest.raises(test_cache.CacheError, match=r"cannot list the checkout's files with git"):
        test_cache.tree_key(env_dir)


MACHINE = {"cpu model": "Example CPU", "cpu features": "avx avx2 fma sse2", "python": "CPython 3.11.7"}


def test_the_key_follows_the_machine(checkout):
    """A pass on one machine or setup does not stand in for another (issue 46):
    the CPU's features, the tools' and Python's versions and the venvs'
    packages are in the key."""
    base = test_cache.tree_key(checkout, machine=MACHINE)
    assert test_cache.tree_key(checkout, machine=MACHINE) == base
    for name, value in (
        ("cpu features", "avx avx2 avx512f fma sse2"),
        ("cpu model", "Other CPU"),
        ("python", "CPython 3.12.1"),
        ("clang-16", "clang version 16.0.7"),
        (".venv packages", "36 distributions, sha256 0123"),
    ):
        assert test_cache.tree_key(checkout, machine={**MACHINE, name: value}) != base, name


def test_the_machine_facts_name_cpu_tools_python_venvs_and_bazelrcs(checkout):
    facts = test_cache.machine_facts(checkout)
    for name in ("cpu arch", "cpu model", "cpu features", "python", "clang-16", "ld.lld-16", "qemu-aarch64"):
        assert facts[name], name
    assert facts[".venv packages"] == "absent"  # this checkout has no venv
    assert "/etc/bazel/bazelrc" in facts and "~/.bazelrc" in facts
    (checkout / ".venv/lib/python3.11/site-packages/numpy-2.0.0.dist-info").mkdir(parents=True)
    with_numpy = test_cache.machine_facts(checkout)[".venv packages"]
    (checkout / ".venv/lib/python3.11/site-packages/numpy-2.0.0.dist-info").rename(
        checkout / ".venv/lib/python3.11/site-packages/numpy-2.1.0.dist-info"
    )
    assert (
        with_numpy.startswith("1 distributions") and test_cache.machine_facts(checkout)[".venv packages"] != with_numpy
    )


def test_cpu_facts_read_x86_and_arm_cpuinfo():
    x86 = test_cache.cpu_facts("processor : 0\nmodel name : Example CPU\nflags : sse2 avx2 avx\n\nprocessor : 1\n")
    assert x86["model"] == "Example CPU" and x86["features"] == "avx avx2 sse2"
    arm = test_cache.cpu_facts("processor : 0\nFeatures : fp asimd asimddp\nCPU implementer : 0x41\nCPU part : 0xd0b\n")
    assert arm["features"] == "asimd asimddp fp" and arm["model"] == "0x41 0xd0b"


def test_records_expire(checkout):
    k = key(checkout)
    when = datetime.datetime(2026, 11, 1, tzinfo=datetime.timezone.utc)
    test_cache.record(checkout, k, now=when)
    assert test_cache.hit(checkout, k, now=when + test_cache.MAX_AGE) == "2026-11-01 00:00:00 UTC"
    assert test_cache.hit(checkout, k, now=when + test_cache.MAX_AGE + datetime.timedelta(seconds=1)) is None
    # A record in the older, plain-text format is not a pass.
    (checkout / ".cache" / "test_passes" / k).write_text("2026-11-27 05:30:00 UTC\n")
    assert test_cache.hit(checkout, k, now=when) is None


def test_explain_names_the_machine_and_why_a_run_was_not_served(checkout, capsys):
    assert test_cache.main(["--explain"], root=checkout) == 0
    out = capsys.readouterr().out
    for name in ("cpu model:", "cpu features:", "clang-16:", "python:", ".venv packages:", "checkout:"):
        assert f"\n  {name}" in out, name
    assert "not served: no run has passed in this checkout yet" in out

    assert test_cache.main(["key"], root=checkout) == 0
    k = capsys.readouterr().out.strip()
    assert test_cache.main(["record", k], root=checkout) == 0
    assert test_cache.main(["--explain"], root=checkout) == 0
    assert "served from cache: this key passed at " in capsys.readouterr().out

    (checkout / "src" / "a.py").write_text("A = 3\n")
    assert test_cache.main(["--explain", "--", "-k", "x"], root=checkout) == 0
    out = capsys.readouterr().out
    assert "not served: no pass with this key; the newest pass" in out
    assert "  checkout: " in out.split("differs in:")[1] and "  pytest args: (none) -> -k x" in out
    assert "  cpu features" not in out.split("differs in:")[1]  # the same machine


def test_bazel_suites_take_the_host_cpu_as_an_input():
    """Bazel caches a suite's result by its inputs: @pare_host_cpu//:cpu.txt
    (the CPU's model and features) is one of every pytest suite's, so no
    cache serves a result from a CPU with other features (issue 46)."""
    srcdir = os.environ.get("TEST_SRCDIR")
    if srcdir:  # under bazel test: the file is in this suite's runfiles, and it is this CPU's
        text = (Path(srcdir) / "pare_host_cpu" / "cpu.txt").read_text()
        features = next(line for line in text.splitlines() if line.startswith("features: "))
        assert features == "features: " + test_cache.cpu_facts()["features"]
    else:  # from a checkout: the macro that declares every suite lists it
        from tools import REPO_ROOT

        assert '["@pare_host_cpu//:cpu.txt"]' in (REPO_ROOT / "tests" / "pytest_suite.bzl").read_text()
