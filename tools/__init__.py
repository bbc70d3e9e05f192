"""Pare's tools: tracer, verify, size_diff, bench, zoo, prune, mobile, the emulator harness.

REPO_ROOT is the checkout these tools belong to, computed here once for all
of them. Under Bazel (an action, a test) it is the runfiles tree the tool
runs in: absolute(), not resolve(), which would follow the runfiles'
symlinks back into the source tree and read files Bazel does not know are
inputs. tools/tracer/paths.py's repo_root() prefers
$BUILD_WORKSPACE_DIRECTORY (bazel run).
"""

from pathlib import Path

REPO_ROOT = Path(__file__).absolute().parents[1]
