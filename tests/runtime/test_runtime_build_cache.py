"""The object cache of the tests' direct clang builds (runtime_build.py) stays bounded."""

from __future__ import annotations

import os
import time

import runtime_build


def _age(path, seconds):
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_prune_removes_idle_builds_and_their_locks_but_keeps_the_current_and_recent_ones(tmp_path):
    keep = tmp_path / "full-aaaa"
    idle = tmp_path / "full-bbbb"
    recent = tmp_path / "full-cccc"
    other = tmp_path / "instrumentation-dddd"  # another build's name: not this prune's business
    for d in (keep, idle, recent, other):
        d.mkdir()
        (tmp_path / f".{d.name}.lock").touch()
    for path in (keep, idle, other, tmp_path / ".full-aaaa.lock", tmp_path / ".full-bbbb.lock"):
        _age(path, 7200)
    _age(tmp_path / ".instrumentation-dddd.lock", 7200)

    runtime_build._prune(tmp_path, "full", keep=keep)
    runtime_build._prune(tmp_path, "full", keep=keep)  # nothing left to prune: no error either

    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [
        ".full-aaaa.lock",
        ".full-cccc.lock",
        ".instrumentation-dddd.lock",
        "full-aaaa",
        "full-cccc",
        "instrumentation-dddd",
    ]
