#!/usr/bin/env bash
# The whole test suite (the README's test command runs this after setup):
# Bazel tests (`bazel test //...`: verification of every selective runtime on
# every platform, toolchain smoke tests, rule analysis tests), then the pytest
# suites under tests/, which reuse the Bazel-built full and instrumentation
# runtimes instead of compiling their own.
# pytest's exit code 5 ("no tests collected") is a failure here.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== bazel test //..."
tools/bazel test //... || { echo "bazel test failed" >&2; exit 1; }

echo "== bazel build (runtimes the pytest suites load)"
tools/bazel build //runtime:full //runtime:instrumentation || { echo "bazel build failed" >&2; exit 1; }
export PARE_RUNTIME_LIB="$root/bazel-bin/runtime/full/linux_x86_64/libpare_full.so"
export PARE_TRACING_RUNTIME_LIB="$root/bazel-bin/runtime/instrumentation/linux_x86_64/libpare_instrumentation.so"
export PARE_INSTRUMENTATION_LIB="$PARE_TRACING_RUNTIME_LIB"

echo "== pytest"
.venv/bin/python -m pytest tests "$@"
rc=$?
if [[ $rc -eq 5 ]]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit $rc
