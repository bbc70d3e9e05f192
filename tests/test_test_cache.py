"""tools/test_cache.py: the key of a checkout changes with what the tests
outside Bazel read (files, executable bits, arguments, PARE_* variables) and
with nothing else, and a key that passed is found again."""

from __future__ import annotations

import datetime
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
