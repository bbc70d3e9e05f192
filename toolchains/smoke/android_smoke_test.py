"""Runs the Android smoke .so under the qemu-aarch64 harness, inside `bazel test`."""

import os
import sys
import unittest
from pathlib import Path

# Runfiles: the workspace root is the current directory under `bazel test`.
sys.path.insert(0, os.getcwd())

from tools.android_harness import run as harness  # noqa: E402


class AndroidSmokeTest(unittest.TestCase):
    def test_answer(self):
        os.environ["PARE_HARNESS_DIR"] = str(Path("tools/android_harness/harness/linux_arm64").resolve())
        lib = Path("toolchains/smoke/smoke/android_arm64/libpare_smoke.so").resolve()
        self.assertEqual(harness.call_i32(lib, "pare_smoke_answer", 20), 42)


if __name__ == "__main__":
    unittest.main()
