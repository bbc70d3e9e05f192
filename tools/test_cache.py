"""Pass records for the tests `make test` runs outside Bazel.

Bazel caches a test's result until one of its declared inputs changes. The
pytest suites that cannot be Bazel tests (they run Bazel on the checkout,
read the whole tree, or time ExecuTorch from the machine's venv:
docs/testing.md) take the whole checkout as their input, so their result is
cached the same way, keyed by it: every file git tracks or would track (the
working tree's bytes, uncommitted work included; ignored files such as
bazel-* and .venv left out, but the machine's .bazelrc.local and
.bazeliskrc in), each file's executable bit, the pytest arguments and the
environment variables a user sets for the tests (PARE_*, CI,
ATEN_CPU_CAPABILITY). tools/run_tests.sh skips pytest when the key passed
before and records it when pytest passes; PARE_TEST_RERUN=1 runs it anyway.

    python -m tools.test_cache key [-- PYTEST_ARGS...]   print this checkout's key
    python -m tools.test_cache hit KEY                   exit 0 (and say when) if KEY passed, else 1
    python -m tools.test_cache record KEY                record KEY as passed
"""

from __future__ import annotations

import datetime
import hashlib
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools import REPO_ROOT

# Not tracked by git, but what Bazel and bazelisk run with on this machine.
MACHINE_FILES = (".bazelrc.local", ".bazeliskrc")
ENV_NAMES = ("CI", "ATEN_CPU_CAPABILITY")
ENV_PREFIX = "PARE_"
RECORDS = Path(".cache") / "test_passes"  # under the checkout (/.cache/ is ignored)


class CacheError(Exception):
    pass


def checkout_files(root: Path) -> list[str]:
    """The checkout as a teammate's would be: every file git tracks or would
    track under root (uncommitted work included, ignored files not), as
    sorted relative paths. Deleted files git still tracks are listed too."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise CacheError(f"{root}: cannot list the checkout's files with git ({e}); is it a git checkout?") from None
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p})


def tree_files(root: Path) -> list[str]:
    """checkout_files plus this machine's settings files (MACHINE_FILES) that exist."""
    return sorted(set(checkout_files(root)) | {f for f in MACHINE_FILES if (root / f).is_file()})


def tree_key(root: Path, args: Sequence[str] = (), environ: Mapping[str, str] = os.environ) -> str:
    """The sha256 of the checkout's files (path, executable bit, bytes or
    symlink target), `args` and the test environment variables in `environ`."""
    h = hashlib.sha256()
    for rel in tree_files(root):
        path = root / rel
        if path.is_symlink():
            kind, data = b"l", os.readlink(path).encode()
        elif path.is_file():
            kind, data = (b"x" if os.access(path, os.X_OK) else b"f"), path.read_bytes()
        else:
            continue  # deleted in the working tree
        h.update(b"%s %d %s\0" % (kind, len(data), rel.encode()))
        h.update(data)
    h.update(b"args\0" + "\0".join(args).encode() + b"\0")
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) or name in ENV_NAMES:
            h.update(f"env {name}={environ[name]}\0".encode())
    return h.hexdigest()


def _record_path(root: Path, key: str) -> Path:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise CacheError(f"{key!r} is not a key; print one with `python -m tools.test_cache key`")
    return root / RECORDS / key


def hit(root: Path, key: str) -> str | None:
    """When `key` passed (the record's text), or None."""
    path = _record_path(root, key)
    return path.read_text().strip() if path.is_file() else None


def record(root: Path, key: str, now: datetime.datetime | None = None) -> Path:
    path = _record_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%d %H:%M:%S UTC")
    path.write_text(stamp + "\n")
    return path


USAGE = "usage: python -m tools.test_cache key [-- PYTEST_ARGS...] | hit KEY | record KEY"


def main(argv: Sequence[str] | None = None, root: Path = REPO_ROOT) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        print((__doc__ or "").strip().splitlines()[0])
        return 0
    try:
        if argv[:1] == ["key"] and (len(argv) == 1 or argv[1] == "--"):
            print(tree_key(root, argv[2:]))
            return 0
        if len(argv) == 2 and argv[0] == "hit":
            when = hit(root, argv[1])
            if when is None:
                return 1
            print(when)
            return 0
        if len(argv) == 2 and argv[0] == "record":
            record(root, argv[1])
            return 0
    except CacheError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"error: {' '.join(argv) or 'no command'}: {USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
