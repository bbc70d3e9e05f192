"""Pare's tools: tracer, verify, size_diff, bench, zoo, prune, mobile, the emulator harness.

REPO_ROOT is the checkout these tools belong to, computed here once for all
of them (under Bazel, where tools run from runfiles, tools/tracer/paths.py's
repo_root() prefers $BUILD_WORKSPACE_DIRECTORY).
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
