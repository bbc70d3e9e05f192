"""A team's HTTP remote cache, proven (docs/remote_cache.md).

Two checkouts of this working tree at different paths, each set up as
tools/setup.sh would set up a teammate's (its own .venv path in
.bazelrc.local's PARE_PYTHON), each with its own Bazel output base, share one
HTTP cache on loopback (tests/rules/http_cache.py). The first builds
//apps/demo:runtime and uploads the result of every action it runs; the
second must then run nothing: every spawn in its execution log is a
remote-cache hit, and its outputs are byte-identical to the first's. A miss
means an action's key depends on where the checkout is (an absolute path in
a command line or an input): the failure names the action and what differs
between the two logs.

The cache also answers, read-only, from this checkout's own disk cache
(setup.sh's .cache/bazel-disk), where `make test`'s `bazel test //...` has
already built the demo: the first checkout is then served from a third path
instead of compiling the runtime again. Both checkouts carry one edit no
cache has seen (EDITED), so the first still runs and uploads some actions,
and the second must find those among the first's uploads. Without a disk
cache the first build is cold: 1.5 to 2.5 minutes on 2 cores.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, bazel, snapshot_checkout
from tests.rules.http_cache import HttpCache

TARGET = "//apps/demo:runtime"
BUNDLE = Path("apps/demo/runtime")  # under bazel-bin
PLATFORM_FILES = (
    "android_arm64/libpare_runtime.so",
    "android_arm64/unstripped/libpare_runtime.so",
    "ios_arm64/libpare_runtime.dylib",
    "ios_arm64/unstripped/libpare_runtime.dylib",
    "ios_arm64/libpare_runtime.a",
    "linux_x86_64/libpare_runtime.so",
    "linux_x86_64/unstripped/libpare_runtime.so",
)
# The user's ~/.bazelrc may name a disk or remote cache of their own, which
# would serve the first build and prove nothing. (The system rc stays: Debian's
# Bazel finds its install base through /etc/bazel/bazelrc.)
STARTUP = ("--nohome_rc",)
# Appended to this source in both checkouts: its compile actions (one per
# platform) miss the seed, so the upload path is always exercised.
EDITED = Path("runtime/c_api/pare.cc")
EDIT = "\n// tests/rules/test_remote_cache.py: an edit no cache has seen.\n"


def _disk_cache() -> Path | None:
    """This checkout's Bazel disk cache (.bazelrc.local, written by setup.sh), if it has one."""
    try:
        rc = (REPO_ROOT / ".bazelrc.local").read_text()
    except OSError:
        return None
    paths = re.findall(r"--disk_cache=(\S*)", rc)
    if not paths or not paths[-1]:  # Bazel takes the last; an empty one turns it off
        return None
    path = Path(paths[-1])
    return path if path.is_dir() else None


def _read_execution_log(path: Path) -> list[dict]:
    """--execution_log_json_file: one JSON object per spawn, concatenated."""
    text, decoder, pos, spawns = path.read_text(), json.JSONDecoder(), 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return spawns
        spawn, pos = decoder.raw_decode(text, pos)
        spawns.append(spawn)


def _outputs(spawn: dict) -> tuple[str, ...]:
    return tuple(sorted(o["path"] for o in spawn.get("actualOutputs", [])))


def _why_missed(spawn: dict, first: dict | None) -> str:
    """What differs between a missed spawn and the first build's same action."""
    head = f"{spawn.get('mnemonic')} {_outputs(spawn)[:1]}"
    if first is None:
        return f"{head}: not run by the first build"
    diffs = []
    if spawn.get("commandArgs") != first.get("commandArgs"):
        diffs.append(f"command line {first.get('commandArgs')} -> {spawn.get('commandArgs')}")
    if spawn.get("environmentVariables") != first.get("environmentVariables"):
        diffs.append(f"environment {first.get('environmentVariables')} -> {spawn.get('environmentVariables')}")
    digests = [{i["path"]: i.get("digest", {}).get("hash") for i in s.get("inputs", [])} for s in (first, spawn)]
    for path in sorted(set(digests[0]) | set(digests[1])):
        if digests[0].get(path) != digests[1].get(path):
            diffs.append(f"input {path}")
    return f"{head}: " + ("; ".join(diffs) or "no difference in the log (platform or tool version?)")


def _rmtree(path: Path) -> None:
    # Bazel leaves its output trees read-only.
    def make_writable_and_retry(func, p, _exc):
        os.chmod(os.path.dirname(p), stat.S_IRWXU)
        if os.path.lexists(p) and not os.path.islink(p):
            os.chmod(p, stat.S_IRWXU)
        func(p)

    shutil.rmtree(path, onerror=make_writable_and_retry)


@pytest.fixture(scope="module")
def two_builds():
    """(first, second) checkouts after building TARGET in each through one
    cache, each with its execution log; the cache's request counts during
    each build."""
    tmp = Path(tempfile.mkdtemp(prefix="pare-remote-cache-"))
    # Different names and lengths, so a leaked path cannot match by accident.
    checkouts = {"first": tmp / "first" / "pare", "second": tmp / "second-checkout" / "pare"}
    started = []
    try:
        requests = {}
        with HttpCache(seed=_disk_cache()) as cache:
            try:
                for name, checkout in checkouts.items():
                    before = collections.Counter(cache.requests)
                    snapshot_checkout(checkout)
                    with open(checkout / EDITED, "a", encoding="utf-8") as f:
                        f.write(EDIT)
                    startup = (*STARTUP, f"--output_base={tmp / name / 'output_base'}")
                    started.append((checkout, startup))
                    bazel(
                        "build",
                        TARGET,
                        f"--remote_cache={cache.url}",
                        "--remote_upload_local_results",
                        "--disk_cache=",  # a disk cache would answer before the remote one
                        # Debian's /etc/bazel/bazelrc sets --sandbox_debug, which keeps
                        # every action's sandbox: deleting those takes half a minute.
                        "--nosandbox_debug",
                        f"--execution_log_json_file={tmp / name / 'execution_log.json'}",
                        cwd=checkout,
                        startup=startup,
                    )
                    requests[name] = collections.Counter(cache.requests) - before
                yield (
                    {
                        name: (checkout, _read_execution_log(tmp / name / "execution_log.json"))
                        for name, checkout in checkouts.items()
                    },
                    requests,
                )
            finally:
                for checkout, startup in started:  # only the servers this test started
                    bazel("shutdown", check=False, cwd=checkout, startup=startup)
    finally:
        _rmtree(tmp)


def test_second_checkout_runs_nothing_every_action_a_remote_cache_hit(two_builds):
    builds, requests = two_builds
    first_log, second_log = builds["first"][1], builds["second"][1]
    assert first_log, "the first build has no spawn in its log: was it served by a cache of its own?"
    ran = [s for s in first_log if not s.get("remoteCacheHit")]
    assert ran, f"the first build ran nothing, though {EDITED} was edited: did a cache of its own serve it?"
    assert requests["first"][("PUT", "ac", "stored")] == len(ran)  # what it ran, it uploaded

    first_by_outputs = {_outputs(s): s for s in first_log}
    missed = [s for s in second_log if not s.get("remoteCacheHit")]
    assert not missed, (
        f"{len(missed)} of {len(second_log)} actions of the second checkout missed the remote cache; an absolute "
        "path of the checkout leaks into their keys:\n  "
        + "\n  ".join(_why_missed(s, first_by_outputs.get(_outputs(s))) for s in missed)
    )
    assert len(second_log) == len(first_log)
    # What the first ran, the second found among its uploads; the rest in the seed.
    assert requests["second"][("GET", "ac", "hit")] == len(ran)
    assert requests["second"][("GET", "ac", "seed hit")] == len(second_log) - len(ran)
    assert not requests["second"][("PUT", "ac", "stored")]


def test_both_checkouts_produce_byte_identical_runtimes(two_builds):
    builds, _ = two_builds
    bundles = [checkout / "bazel-bin" / BUNDLE for checkout, _ in builds.values()]
    for rel in (*PLATFORM_FILES, "expected_symbols.json", "report.json"):
        a, b = (bundle / rel for bundle in bundles)
        assert a.is_file() and b.is_file(), rel
        assert a.read_bytes() == b.read_bytes(), f"{rel} differs between the two checkouts"
