"""The model zoo's fast subset end to end (docs/model_zoo.md): a few small
models go through `make zoo`'s runner (trace with --frozen, so a checked-in
manifest that is out of date fails; build //models/zoo:<model> for the
three platforms; check on x86_64 and on android_arm64 under qemu). This
test runs Bazel (tests/conftest.py, BAZEL_TESTS); tests/zoo/test_zoo.py
holds the others, which //tests:zoo_test runs.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import bazel_build, require_tool
from tools.tracer.progress import Progress
from tools.zoo import zoo

# Small models covering the kinds: a CNN with ceil-mode pooling, a mobile
# CNN whose layers the channels_last pass runs NHWC (depthwise, and 1x1 on
# weights packed for pixel rows: its manifest must select what loading
# them takes), and a sequence model.
END_TO_END = ["squeezenet1_1", "mobilenet_v3_small", "lstm_tagger"]


@pytest.fixture(scope="module")
def harness():
    require_tool("qemu-aarch64", "qemu-aarch64-static", package="qemu-user")
    if not os.environ.get("PARE_HARNESS_DIR"):  # unset: the harness runner uses Bazel's output
        bazel_build("//tools/android_harness:harness")


def test_fast_subset_traces_builds_for_every_platform_and_matches_torch(harness):
    results = zoo.run(END_TO_END, progress=Progress.silent(), timing=False, frozen=True)
    for r in results:
        assert r.ok, f"{r.model}: {r.status}: {r.error}"
        assert set(r.sizes) == set(zoo.PLATFORMS) and all(n > 10_000 for n in r.sizes.values())
        assert r.checked == list(zoo.CHECKED_PLATFORMS)
        assert not r.manifest_changed
