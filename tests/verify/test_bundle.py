"""tools/bundle.py: bundle.json, the one description of a bundle's layout
(written by rules/private/multi_platform.bzl), and its errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, bazel_build
from tools.bundle import INDEX, BundleError, load_bundle
from tools.size_diff import bundle_runs
from tools.verify.errors import VerifyError
from tools.verify.verify import bundle_paths

TARGET = "//tests/verify/selective:small"


@pytest.fixture(scope="module")
def bundle_dir():
    return bazel_build(TARGET) / "tests" / "verify" / "selective" / "small"


def test_index_lists_every_file_of_a_selective_runtime(bundle_dir):
    bundle = load_bundle(bundle_dir)
    assert bundle.target == TARGET
    assert sorted(bundle.platforms) == ["android_arm64", "ios_arm64", "linux_x86_64"]
    assert sorted(bundle.files) == ["expected_symbols", "manifest", "report"]
    listed = {bundle_dir / INDEX, *bundle.files.values()}
    for name, files in bundle.platforms.items():
        assert files.shared.is_file() and files.unstripped.is_file(), name
        assert files.shared.name == files.unstripped.name
        assert (files.static is not None) == (name == "ios_arm64")
        listed |= {files.shared, files.unstripped} | ({files.static} if files.static else set())
    # Nothing the rule wrote is missing from the index.
    assert {p for p in bundle_dir.rglob("*") if p.is_file()} == listed
    report = json.loads(bundle.file("report").read_text())
    assert sorted(report["platforms"]) == sorted(bundle.platforms)


def test_verify_and_size_diff_read_the_index(bundle_dir):
    bundle = load_bundle(bundle_dir)
    unstripped, stripped, expected = bundle_paths(bundle_dir, "ios_arm64")
    assert (unstripped, stripped, expected) == (
        bundle.platforms["ios_arm64"].unstripped,
        bundle.platforms["ios_arm64"].shared,
        bundle.file("expected_symbols"),
    )
    runs = bundle_runs(bundle_dir, platforms=["android_arm64"])
    assert [r.unstripped for r in runs] == [bundle.platforms["android_arm64"].unstripped]


def test_plain_multi_platform_library_has_an_index_without_bundle_files():
    smoke = load_bundle(bazel_build("//toolchains/smoke") / "toolchains" / "smoke" / "smoke")
    assert smoke.files == {} and "ios_arm64" in smoke.platforms
    with pytest.raises(BundleError, match="has no report file"):
        smoke.file("report")
    with pytest.raises(BundleError, match="not built for linux_arm64"):
        smoke.platform("linux_arm64")


def _index(tmp_path, data) -> None:
    (tmp_path / INDEX).write_text(data if isinstance(data, str) else json.dumps(data))


GOOD = {
    "schema": "pare.bundle",
    "version": 1,
    "target": "//a:b",
    "files": {},
    "platforms": {"linux_x86_64": {"shared": "linux_x86_64/lib.so", "unstripped": "linux_x86_64/unstripped/lib.so"}},
}


@pytest.mark.parametrize(
    "data, message",
    [
        ("{", "not valid JSON"),
        ({"schema": "other"}, 'want "schema": "pare.bundle"'),
        ({**GOOD, "version": 2}, "this checkout reads version 1"),
        ({**GOOD, "target": ""}, "no target label"),
        ({**GOOD, "platforms": {}}, "no platforms"),
        ({**GOOD, "platforms": {"linux_x86_64": {"shared": "lib.so"}}}, "has no unstripped library"),
        ({**GOOD, "platforms": {"linux_x86_64": {**GOOD["platforms"]["linux_x86_64"], "debug": "x"}}}, "unknown roles"),
        ({**GOOD, "files": {"report": "../../etc/passwd"}}, "leaves the bundle directory"),
        ({**GOOD, "files": {"report": "/etc/passwd"}}, "leaves the bundle directory"),
    ],
)
def test_malformed_index_names_the_problem(tmp_path, data, message):
    _index(tmp_path, data)
    with pytest.raises(BundleError, match=message) as e:
        load_bundle(tmp_path)
    assert "rebuild the bundle" in str(e.value)


def test_missing_directory_or_index(tmp_path):
    with pytest.raises(BundleError, match="no such directory; build the target first"):
        load_bundle(tmp_path / "nope")
    with pytest.raises(BundleError, match="no bundle.json, so not a Pare bundle"):
        load_bundle(tmp_path)
    # The tools turn it into their own errors (exit 2 with the message).
    with pytest.raises(VerifyError, match="no bundle.json"):
        bundle_paths(tmp_path, "linux_x86_64")
    with pytest.raises(VerifyError, match="no bundle.json"):  # size_diff's CLI reports VerifyErrors too
        bundle_runs(tmp_path)


def test_cli_prints_a_path_or_the_error(bundle_dir, tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "tools.bundle", *map(str, args)], cwd=REPO_ROOT, capture_output=True, text=True
        )

    ok = run(bundle_dir, "linux_x86_64", "shared")
    assert ok.returncode == 0 and ok.stdout.strip() == str(load_bundle(bundle_dir).platforms["linux_x86_64"].shared)
    assert run(bundle_dir, "report").stdout.strip().endswith("report.json")
    bad = run(bundle_dir, "linux_x86_64", "static")
    assert bad.returncode == 2 and "linux_x86_64 has no static file" in bad.stderr
    missing = run(tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_bundle_built_before_indexes_is_read_from_its_layout(bundle_dir, tmp_path):
    # The size presubmit measures its base commit's bundles with this
    # checkout's tools; a base from before bundle.json has none.
    import shutil

    old = tmp_path / "bazel-bin" / "tests" / "verify" / "selective" / "small"
    shutil.copytree(bundle_dir, old)
    (old / INDEX).unlink()
    legacy, indexed = load_bundle(old), load_bundle(bundle_dir)
    assert legacy.target == TARGET
    assert sorted(legacy.files) == sorted(indexed.files)
    for name, files in indexed.platforms.items():
        got = legacy.platforms[name]
        assert [p and p.relative_to(old) for p in (got.shared, got.unstripped, got.static)] == [
            p and p.relative_to(bundle_dir) for p in (files.shared, files.unstripped, files.static)
        ]
