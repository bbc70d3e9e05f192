"""`tools.tracer check --runtime <android .so>` builds the emulator harness
on first use (issue 17) and rebuilds a stale one (issue 42): run.ensure_built()
runs the checkout's tools/bazel every time, streams Bazel's lines as
progress, and turns a failed build into one HarnessError naming the command. A stand-in
tools/bazel in a temporary checkout plays Bazel, so the logic is tested
without touching the real bazel-bin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.android_harness import run as harness

FAKE_BAZEL = """#!/bin/sh
echo "INFO: Analyzed target {target} (1 packages loaded)."
{body}
"""


def _fake_checkout(tmp_path: Path, body: str) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    bazel = tools / "bazel"
    bazel.write_text(FAKE_BAZEL.format(target=harness.HARNESS_TARGET, body=body))
    bazel.chmod(0o755)
    return tmp_path


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    monkeypatch.delenv("PARE_HARNESS_DIR", raising=False)

    def make(body: str) -> Path:
        root = _fake_checkout(tmp_path, body)
        monkeypatch.setattr(harness, "REPO_ROOT", root)
        return root

    return make


def test_missing_harness_is_built_with_progress(checkout):
    out = f"bazel-bin/{harness.HARNESS_OUTPUT}"
    root = checkout(f'mkdir -p {out} && touch {out}/harness_bin {out}/liblog.so && echo "INFO: Build completed"')
    lines: list[str] = []
    p = harness.ensure_built(lines.append)
    assert p.harness == root / out / "harness_bin" and p.liblog == root / out / "liblog.so"
    assert lines[0] == "bringing the emulator harness up to date: tools/bazel build //tools/android_harness:harness ..."
    assert "  bazel: INFO: Build completed" in lines


def test_a_stale_harness_is_rebuilt(checkout):
    """A harness already in bazel-bin is not trusted: Bazel is asked every
    time (issue 42), so one left by an older checkout is rebuilt."""
    out = f"bazel-bin/{harness.HARNESS_OUTPUT}"
    root = checkout(f"mkdir -p {out} && echo new > {out}/harness_bin && touch {out}/liblog.so")
    (root / out).mkdir(parents=True)
    (root / out / "harness_bin").write_text("stale\n")
    (root / out / "liblog.so").touch()
    p = harness.ensure_built(lambda _: None)
    assert p.harness.read_text() == "new\n"


def test_failed_build_names_the_command_and_the_first_error(checkout):
    checkout('echo "ERROR: /x/BUILD.bazel:3:1: no such package"; echo "FAILED: Build did NOT complete"; exit 1')
    with pytest.raises(harness.HarnessError) as e:
        harness.ensure_built(lambda _: None)
    assert str(e.value) == (
        "building the emulator harness failed (tools/bazel build //tools/android_harness:harness, "
        "exit 1): ERROR: /x/BUILD.bazel:3:1: no such package"
    )


def test_an_explicit_harness_dir_is_never_built(checkout, tmp_path, monkeypatch):
    checkout("exit 99")
    monkeypatch.setenv("PARE_HARNESS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(harness.HarnessError, match=r"harness not built: .*nowhere/harness_bin is missing"):
        harness.ensure_built(lambda _: None)


def test_check_reports_a_failed_harness_build_as_one_tracer_error(checkout, monkeypatch):
    from tools.tracer.errors import TracerError
    from tools.tracer.runner import HarnessRunner

    checkout('echo "ERROR: toolchain not found"; exit 1')
    with pytest.raises(
        TracerError, match=r"libx\.so: building the emulator harness failed .*ERROR: toolchain not found"
    ):
        HarnessRunner(Path(os.devnull).parent / "libx.so")
