#!/usr/bin/env bash
# The whole test suite (the README's test command runs this after setup):
# Bazel tests (`bazel test //...`: verification of every selective runtime on
# every platform, toolchain smoke tests, rule analysis tests, and the pytest
# suites tests/BUILD.bazel declares as py_tests, among them the
# floating-point op tests against torch's scalar kernels and on the x86_64
# v3 runtime), then the other pytest suites under tests/, which reuse the
# Bazel-built full and instrumentation runtimes instead of compiling their
# own. Skips fail the run unless they are documented platform limits, and
# pytest's exit code 5 ("no tests collected") is a failure here
# (docs/testing.md).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# The key of this checkout for the pytest suites below (tools/test_cache.py),
# taken before this script sets any variable of its own.
pytest_key="$(.venv/bin/python -m tools.test_cache key -- "$@")" || exit 1

echo "== bazel test //..."
tools/bazel test //... || { echo "bazel test failed" >&2; exit 1; }

# The other suites take the whole checkout as their input: their result is
# cached by its key, as Bazel caches its tests' (tools/test_cache.py).
if [[ "${PARE_TEST_RERUN:-0}" != 1 ]] && when="$(.venv/bin/python -m tools.test_cache hit "$pytest_key")"; then
  echo "== pytest: the other suites passed on this same tree (files, arguments, PARE_* variables) at $when:" \
    "not run again (PARE_TEST_RERUN=1 runs them)"
  exit 0
fi

echo "== bazel build (runtimes the pytest suites load)"
tools/bazel build //runtime:full //runtime:instrumentation //runtime:bitcode //tests:runtime_compile_info ||
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
PARE_TRACING_RUNTIME_LIB="$(shared_lib runtime/instrumentation)" || exit 1
export PARE_RUNTIME_LIB PARE_TRACING_RUNTIME_LIB
export PARE_INSTRUMENTATION_LIB="$PARE_TRACING_RUNTIME_LIB"
# The full runtime's bitcode (docs/bazel.md, "Kernels compiled once"): a
# suite that builds a selection of its own (tests/runtime/test_shipped_selections.py)
# compiles only its selection unit and folds it into this.
mkdir -p "$runtimes_dir/bitcode" && cp "$root"/bazel-bin/runtime/bitcode/linux_x86_64/*.bc "$runtimes_dir/bitcode/" ||
  { echo "no //runtime:bitcode in bazel-bin" >&2; exit 1; }
export PARE_RUNTIME_BITCODE_DIR="$runtimes_dir/bitcode"
# What tests/runtime/runtime_build.py compiles (a suite's own selection), and
# with which flags: Bazel's. The workers below may not run Bazel themselves.
cp "$root/bazel-bin/tests/runtime_compile_info.json" "$runtimes_dir/" ||
  { echo "no //tests:runtime_compile_info in bazel-bin" >&2; exit 1; }
export PARE_RUNTIME_COMPILE_INFO="$runtimes_dir/runtime_compile_info.json"

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
# core it leaves idle. PARE_TEST_WORKERS overrides the count.
workers="${PARE_TEST_WORKERS:-$(($(nproc) + 1))}"
echo "== pytest ($workers workers)"
run_pytest -n "$workers" tests --durations=15 "${ignore[@]}" "$@" || exit 1
.venv/bin/python -m tools.test_cache record "$pytest_key" || exit 1
