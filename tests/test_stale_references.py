"""Every repository path named in the docs, comments, BUILD files and code
exists: a file that moves or goes takes its mentions with it.

A mention is a path that starts at a top-level directory of the repository
(`runtime/executor/method.cc`, `docs/size.md`, `tests/rules/`), found in every
tracked text file. It passes when the path exists, or when it is a Bazel
output path: `<package>/<target>...` (bazel-bin-relative, e.g.
apps/demo/runtime/android_arm64/libpare_runtime.so) for a target its
package's BUILD file declares, or, in a BUILD file, when it exists relative
to that package (the globs and files of tests/BUILD.bazel). The few mentions that are neither (examples
of a user's paths, placeholders) are listed below with the reason.
"""

from __future__ import annotations

import re
import subprocess

from tests.conftest import PARE_APP_TARGETS, REPO_ROOT

TOP_LEVEL = sorted(
    p.name
    for p in REPO_ROOT.iterdir()
    if p.is_dir() and not p.name.startswith((".", "bazel-")) and p.name not in ("node_modules", "build", "out")
)
MENTION = re.compile(r"(?<![\w./@:$<>{}-])((?:%s)/[\w.+/-]*[\w+])" % "|".join(map(re.escape, TOP_LEVEL)))
NOT_REPOSITORY_PATHS = {
    "third_party/pare": "docs/bazel.md's example of where a user's repository keeps Pare",
    "tests/x/test_y.py": "docs/testing.md's placeholder for any test file",
    "tests/runtime/kernels/test_": "the prefix of tests/runtime/kernels/test_<family>.py",
    "runtime/android_arm64/libpare_runtime.so": "an output path relative to a rule's package (analysis_testing.bzl)",
    "rules/tests/_generated_bad_platform": "written by tests/rules at run time (.gitignore)",
    "rules/tests/_generated_vulkan": "written by tests/rules at run time (.gitignore)",
    "tests/prune/out": "written by tests/prune at run time (.gitignore)",
    "tests/verify/fixture/expected/head_only.expected_symbols.json": "written by the presubmit test it names",
    "apps/demo/PareDemo.xcframework": "the output of //apps/demo:ios_xcframework (named for its framework)",
}
SKIP_SUFFIXES = (".png", ".pare", ".bin", ".jar", ".aar")


def _declared_targets(package) -> set[str]:
    build = package / "BUILD.bazel"
    if not build.is_file():
        return set()
    text = build.read_text()
    names = set(re.findall(r'\bname = "([^"]+)"', text))
    if "pare_app(" in text:
        names |= set(PARE_APP_TARGETS)
    return names


def _is_output_path(path: str) -> bool:
    parts = path.split("/")
    for i in range(1, len(parts)):
        for target in _declared_targets(REPO_ROOT.joinpath(*parts[:i])):
            if parts[i] == target or parts[i].startswith(target + "."):
                return True
    return False


def _tracked_text_files():
    listed = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    for name in listed.splitlines():
        path = REPO_ROOT / name
        if path.suffix in SKIP_SUFFIXES or "/corpus/" in name or not path.is_file():
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def test_every_repository_path_mentioned_exists():
    stale: dict[str, list[str]] = {}
    for name, text in _tracked_text_files():
        for number, line in enumerate(text.splitlines(), 1):
            for m in MENTION.finditer(line):
                path = m.group(1).rstrip(".")
                if path in NOT_REPOSITORY_PATHS or (REPO_ROOT / path).exists() or _is_output_path(path):
                    continue
                if name.endswith("BUILD.bazel") and (REPO_ROOT / name).parent.joinpath(path).exists():
                    continue  # a BUILD file's paths are relative to its package
                stale.setdefault(path, []).append(f"{name}:{number}")
    report = "\n".join(f"  {path}  (named at {', '.join(where[:5])})" for path, where in sorted(stale.items()))
    assert not stale, f"paths named in the repository that do not exist; fix or drop the mention:\n{report}"


def test_the_check_finds_a_stale_mention():
    missing = "runtime/core/" + "no_such_file.h"  # split, or this file would name it
    assert MENTION.findall(f"see {missing}, and docs/size.md.") == [missing, "docs/size.md"]
    assert not (REPO_ROOT / missing).exists()
    assert not _is_output_path(missing)
    assert _is_output_path("apps/demo/runtime/android_arm64/libpare_runtime.so")
    assert MENTION.findall("bazel-bin/apps/demo/runtime and //runtime:full and $root/runtime/x") == []
