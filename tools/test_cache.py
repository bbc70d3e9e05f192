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
ATEN_CPU_CAPABILITY), and the machine the tests ran on (machine_facts: the
CPU and its features, which choose the runtime's ISA paths; the versions of
clang, lld, qemu and Python; the installed distributions of .venv and
.venv-executorch; every bazelrc Bazel reads, system and user ones included),
so a pass on one machine or setup never stands in for a run on another.
Records expire after MAX_AGE. tools/run_tests.sh skips pytest when the key
passed before and records it when pytest passes; PARE_TEST_RERUN=1 runs it
anyway.

    python -m tools.test_cache key [-- PYTEST_ARGS...]   print this checkout's key
    python -m tools.test_cache hit KEY                   exit 0 (and say when) if KEY passed, else 1
    python -m tools.test_cache record KEY                record KEY as passed
    python -m tools.test_cache --explain [-- PYTEST_ARGS...]   what the key holds, and why the last
                                                         run was or was not served from cache
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools import REPO_ROOT

# Not tracked by git, but what Bazel and bazelisk run with on this machine.
MACHINE_FILES = (".bazelrc.local", ".bazeliskrc", "user.bazelrc")
# The bazelrc files Bazel reads outside the checkout (Bazel's own list, plus
# Debian's /etc/bazel/bazelrc).
SYSTEM_BAZELRCS = ("/etc/bazel.bazelrc", "/etc/bazel/bazelrc", "~/.bazelrc")
# The tools whose version a test result depends on (the tests' own clang
# builds, the Android harness, the sanitizers).
TOOL_VERSIONS = ("clang-16", "ld.lld-16", "qemu-aarch64")
VENVS = (".venv", ".venv-executorch")
ENV_NAMES = ("CI", "ATEN_CPU_CAPABILITY")
ENV_PREFIX = "PARE_"
RECORDS = Path(".cache") / "test_passes"  # under the checkout (/.cache/ is ignored)
MAX_AGE = datetime.timedelta(days=7)


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


def cpu_facts(cpuinfo: str | None = None) -> dict[str, str]:
    """The CPU: its model and every feature flag the kernel reports (the
    runtime's ISA dispatch and torch's vector paths both follow them)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name in ("model name", "flags", "Features", "CPU implementer", "CPU part") and name not in fields:
            fields[name] = value.strip()
    flags = sorted(set((fields.get("flags") or fields.get("Features") or "").split()))
    model = fields.get("model name") or " ".join(filter(None, (fields.get("CPU implementer"), fields.get("CPU part"))))
    return {"arch": platform.machine(), "model": model or "unknown", "features": " ".join(flags)}


def _first_line(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else f"exit {out.returncode}"


def _distributions(venv: Path) -> str:
    """sha256 of the venv's installed distributions (name-version, from
    their .dist-info folders), or 'absent'."""
    found = sorted(p.name for p in venv.glob("lib/python*/site-packages/*.dist-info"))
    if not found:
        return "absent"
    return f"{len(found)} distributions, sha256 " + hashlib.sha256("\n".join(found).encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    try:
        return "sha256 " + hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return "absent"


def machine_facts(root: Path) -> dict[str, str]:
    """What a test result depends on besides the checkout: the machine and its setup."""
    facts = {f"cpu {k}": v for k, v in cpu_facts().items()}
    facts["python"] = f"{platform.python_implementation()} {platform.python_version()}"
    for tool in TOOL_VERSIONS:
        facts[tool] = _first_line([tool, "--version"]) if shutil.which(tool) else "not found"
    for venv in VENVS:
        facts[f"{venv} packages"] = _distributions(root / venv)
    for rc in SYSTEM_BAZELRCS:
        facts[rc] = _file_digest(Path(rc).expanduser())
    return facts


def key_parts(
    root: Path,
    args: Sequence[str] = (),
    environ: Mapping[str, str] = os.environ,
    machine: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The key's components, each a short readable string: the checkout's
    files (a digest), the pytest arguments, the test variables, the machine."""
    h = hashlib.sha256()
    files = tree_files(root)
    for rel in files:
        path = root / rel
        if path.is_symlink():
            kind, data = b"l", os.readlink(path).encode()
        elif path.is_file():
            kind, data = (b"x" if os.access(path, os.X_OK) else b"f"), path.read_bytes()
        else:
            continue  # deleted in the working tree
        h.update(b"%s %d %s\0" % (kind, len(data), rel.encode()))
        h.update(data)
    parts = {"checkout": f"{len(files)} files, sha256 {h.hexdigest()}", "pytest args": " ".join(args)}
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) or name in ENV_NAMES:
            parts[f"env {name}"] = environ[name]
    parts.update(machine_facts(root) if machine is None else machine)
    return parts


def key_of(parts: Mapping[str, str]) -> str:
    return hashlib.sha256(json.dumps(dict(parts), sort_keys=True).encode()).hexdigest()


def tree_key(
    root: Path,
    args: Sequence[str] = (),
    environ: Mapping[str, str] = os.environ,
    machine: Mapping[str, str] | None = None,
) -> str:
    """The sha256 of key_parts: the checkout's files (path, executable bit,
    bytes or symlink target), `args`, the test environment variables in
    `environ`, and the machine (machine_facts, unless given)."""
    return key_of(key_parts(root, args, environ, machine))


def _record_path(root: Path, key: str) -> Path:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise CacheError(f"{key!r} is not a key; print one with `python -m tools.test_cache key`")
    return root / RECORDS / key


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
        data["when_dt"] = datetime.datetime.fromisoformat(data["when"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, or a record of an older format: not a pass
    return data


def hit(root: Path, key: str, now: datetime.datetime | None = None) -> str | None:
    """When `key` passed, or None (never passed, or longer ago than MAX_AGE)."""
    data = _read(_record_path(root, key))
    if data is None or (now or _now()) - data["when_dt"] > MAX_AGE:
        return None
    return data["when_dt"].strftime("%Y-%m-%d %H:%M:%S UTC")


def record(root: Path, key: str, now: datetime.datetime | None = None, parts: Mapping[str, str] | None = None) -> Path:
    """Records `key` as passed, with the parts it was made of (for --explain)."""
    path = _record_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    when = (now or _now()).astimezone(datetime.timezone.utc).replace(microsecond=0)
    path.write_text(json.dumps({"when": when.isoformat(), "parts": dict(parts or {})}, indent=1, sort_keys=True) + "\n")
    return path


def _parts_path(root: Path, key: str) -> Path:
    return _record_path(root, key).parent / "parts" / f"{key}.json"


def _save_parts(root: Path, key: str, parts: Mapping[str, str]) -> None:
    """`key` keeps what it was made of until `record` (the test run changes
    the environment in between, so record cannot recompute it)."""
    path = _parts_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(parts), sort_keys=True))


def _saved_parts(root: Path, key: str) -> dict[str, str]:
    try:
        return json.loads(_parts_path(root, key).read_text())
    except (OSError, ValueError):
        return {}


def explain(root: Path, args: Sequence[str] = (), now: datetime.datetime | None = None) -> str:
    """What the current key holds, and why a run with it is or is not served
    from a record: the record's age, or what differs from the newest record."""
    now = now or _now()
    parts = key_parts(root, args)
    key = key_of(parts)
    lines = [f"key {key} (python -m tools.test_cache key), made of:"]
    lines += [f"  {name}: {value or '(none)'}" for name, value in parts.items()]
    data = _read(_record_path(root, key))
    if data is not None and now - data["when_dt"] <= MAX_AGE:
        lines.append(f"served from cache: this key passed at {data['when']} (records expire after {MAX_AGE.days} days)")
        return "\n".join(lines)
    if data is not None:
        lines.append(f"not served: this key passed at {data['when']}, more than {MAX_AGE.days} days ago (expired)")
        return "\n".join(lines)
    records = sorted(
        (r for r in ((p, _read(p)) for p in (root / RECORDS).glob("*") if p.is_file()) if r[1] is not None),
        key=lambda r: r[1]["when_dt"],
    )
    if not records:
        lines.append(f"not served: no run has passed in this checkout yet ({RECORDS}/ is empty)")
        return "\n".join(lines)
    last = records[-1][1]
    old = last.get("parts", {})
    changed = [
        f"  {name}: {old.get(name, '(absent)') or '(none)'} -> {parts.get(name, '(absent)') or '(none)'}"
        for name in sorted(set(old) | set(parts))
        if old.get(name) != parts.get(name)
    ]
    lines.append(f"not served: no pass with this key; the newest pass ({last['when']}) differs in:")
    lines += changed or ["  (its record holds no parts: made by an older tools/test_cache.py)"]
    return "\n".join(lines)


USAGE = (
    "usage: python -m tools.test_cache key [-- PYTEST_ARGS...] | hit KEY | record KEY | --explain [-- PYTEST_ARGS...]"
)


def main(argv: Sequence[str] | None = None, root: Path = REPO_ROOT) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        print((__doc__ or "").strip().splitlines()[0])
        return 0
    try:
        if argv[:1] == ["key"] and (len(argv) == 1 or argv[1] == "--"):
            parts = key_parts(root, argv[2:])
            key = key_of(parts)
            _save_parts(root, key, parts)
            print(key)
            return 0
        if len(argv) == 2 and argv[0] == "hit":
            when = hit(root, argv[1])
            if when is None:
                return 1
            print(when)
            return 0
        if len(argv) == 2 and argv[0] == "record":
            record(root, argv[1], parts=_saved_parts(root, argv[1]))
            return 0
        if argv[:1] == ["--explain"] and (len(argv) == 1 or argv[1] == "--"):
            print(explain(root, argv[2:]))
            return 0
    except CacheError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"error: {' '.join(argv) or 'no command'}: {USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
