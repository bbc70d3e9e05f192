#!/usr/bin/env bash
# The whole test suite (the README's test command runs this after setup):
# Bazel tests (`bazel test //...`: verification of every selective runtime on
# every platform, toolchain smoke tests, rule analysis tests, and the pytest
# suites tests/BUILD.bazel declares as py_tests), then the other pytest
# suites under tests/, which reuse the Bazel-built full and instrumentation
# runtimes instead of compiling their own, then the floating-point op tests a
# second time against torch's scalar kernels and a third time on the x86_64
# v3 (AVX2+FMA) runtime. Skips fail the run unless they
# are documented platform limits, and pytest's exit code 5 ("no tests
# collected") is a failure here (docs/testing.md).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== bazel test //..."
tools/bazel test //... || { echo "bazel test failed" >&2; exit 1; }

echo "== bazel build (runtimes the pytest suites load)"
tools/bazel build //runtime:full //runtime:full_v3 //runtime:full_test_double //runtime:instrumentation //runtime:bitcode ||
  { echo "bazel build failed" >&2; exit 1; }
# The suites read these runtimes while tests of the bazel group run builds,
# and a build in another configuration repoints bazel-bin: each bundle is
# copied to a directory of this run's own first. Its bundle.json says where
# its files are (tools/bundle.py).
runtimes_dir="$(mktemp -d "${TMPDIR:-/tmp}/pare-test-runtimes.XXXXXX")"
trap 'rm -rf "$runtimes_dir"' EXIT
shared_lib() {
  mkdir -p "$runtimes_dir/$1" && cp -R "$root/bazel-bin/$1/." "$runtimes_dir/$1/" &&
    .venv/bin/python -m tools.bundle "$runtimes_dir/$1" linux_x86_64 shared
}
PARE_RUNTIME_LIB="$(shared_lib runtime/full)" || exit 1
PARE_RUNTIME_V3_LIB="$(shared_lib runtime/full_v3)" || exit 1
PARE_TRACING_RUNTIME_LIB="$(shared_lib runtime/instrumentation)" || exit 1
PARE_TEST_DOUBLE_RUNTIME_LIB="$(shared_lib runtime/full_test_double)" || exit 1
# The full runtime's shared bitcode: tests/runtime folds its own selections
# into it (runtime_build.selected_objects) instead of compiling the runtime.
mkdir -p "$runtimes_dir/bitcode" && cp "$root"/bazel-bin/runtime/bitcode/linux_x86_64/*.bc "$runtimes_dir/bitcode/" || exit 1
PARE_RUNTIME_BITCODE_DIR="$runtimes_dir/bitcode"
export PARE_RUNTIME_LIB PARE_RUNTIME_V3_LIB PARE_TRACING_RUNTIME_LIB PARE_TEST_DOUBLE_RUNTIME_LIB PARE_RUNTIME_BITCODE_DIR
export PARE_INSTRUMENTATION_LIB="$PARE_TRACING_RUNTIME_LIB"

# Any skip that is not a @pytest.mark.platform_limit fails the run
# (tests/skip_gate.py, docs/testing.md).
export PARE_NO_SKIPS=1

# pytest, failing on exit code 5 ("no tests collected") too.
run_pytest() {
  .venv/bin/python -m pytest "$@"
  local rc=$?
  if [[ $rc -eq 5 ]]; then
    echo "pytest collected no tests: that is a failure" >&2
    return 1
  fi
  return $rc
}

# The suites tests/BUILD.bazel runs as py_tests ran (or came from Bazel's
# cache) in `bazel test //...` above; pytest runs the rest.
# Each is tagged pytest_suite:<its directory> (tests/pytest_suite.bzl).
suites_query=$(tools/bazel query 'attr(tags, "pytest_suite:", kind(py_test, //tests:all))' --output=build 2>/dev/null) ||
  { echo "bazel query of //tests failed" >&2; exit 1; }
bazel_suites=$(grep -o '"pytest_suite:[^"]*"' <<<"$suites_query" | sed 's/^"pytest_suite:\(.*\)"$/\1/' | sort -u)
[[ -n "$bazel_suites" ]] || { echo "no pytest suite found in //tests: expected at least tests/codegen" >&2; exit 1; }
ignore=()
for suite in $bazel_suites; do
  echo "== $suite: run by bazel test //tests (tests/BUILD.bazel)"
  ignore+=("--ignore=$suite")
done

# On every core (pytest-xdist): the tests that run Bazel (BAZEL_TESTS in
# tests/conftest.py) one at a time on one worker, each other test file on the
# next free worker (docs/testing.md, "Parallel runs"). One worker more than
# cores: the Bazel worker spends much of its time on one thread (tracing,
# Bazel's analysis and server start-up, qemu), and the extra worker fills the
# core it leaves idle. PARE_TEST_WORKERS overrides the count. The two fp_ops
# passes below stay serial: starting workers costs them more than it saves.
workers="${PARE_TEST_WORKERS:-$(($(nproc) + 1))}"
echo "== pytest ($workers workers)"
run_pytest -n "$workers" tests --durations=15 "${ignore[@]}" "$@" || exit 1

# torch's float results depend on its CPU capability (vector width, fused
# multiply-add); the op tests compare with torch's semantics, so they must
# also pass against torch's scalar kernels, what an older CPU gets.
# A run narrowed by arguments (make test's callers pass none) skips it.
if [[ $# -eq 0 ]]; then
  echo "== pytest: floating-point op tests against torch's scalar kernels (ATEN_CPU_CAPABILITY=default)"
  ATEN_CPU_CAPABILITY=default run_pytest tests/runtime -m fp_ops -q || exit 1
  # The same op tests on the x86-64-v3 build (AVX2+FMA: 8-lane vectors,
  # fused multiply-adds, the 6x16 GEMM tile), where this CPU can run it.
  if .venv/bin/python -c 'import sys; from pare.runtime import cpu_runs; sys.exit(not cpu_runs("x86_64_v3"))'; then
    echo "== pytest: floating-point op tests on the x86_64 v3 runtime (//runtime:full_v3)"
    PARE_RUNTIME_LIB="$PARE_RUNTIME_V3_LIB" run_pytest tests/runtime -m fp_ops -q || exit 1
  else
    echo "== this CPU cannot run x86-64-v3 code (AVX2, FMA, ...): the v3 runtime's op tests cannot run here (platform limit)"
  fi
else
  echo "== pytest arguments given: the ATEN_CPU_CAPABILITY=default and v3 passes of the fp_ops tests are skipped"
fi
