#!/usr/bin/env bash
# `make sanitize`: the runtime and loader suites on runtimes built with ASan +
# UBSan. Arguments go to pytest (default: tests/runtime; the Makefile passes
# CI's subset and says why).
#
#   1. Wiring check: two planted bugs (tests/fuzz/sanitizer_canary.py, a heap
#      overflow and a misaligned load inside the runtime) must each end
#      pytest with a sanitizer report. If either passes, the run fails: a
#      sanitizer run that cannot fail proves nothing.
#   2. The suites, with PARE_SANITIZE=address,undefined: the fixtures in
#      tests/runtime/conftest.py compile every runtime with the house flags
#      plus -fsanitize=address,undefined -fno-sanitize-recover=all into
#      pytest's cache (never the Bazel-built PARE_RUNTIME_LIB), and Python
#      runs with clang's shared ASan runtime preloaded (the runtimes are
#      dlopened through ctypes). The first report ends the process with exit
#      code 86; reports also go to a log directory, and any file there fails
#      the run even if the exit code were lost (but for ASan's one-line notes
#      on impossible allocations, which allocator_may_return_null=1 refuses).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

SANITIZER_EXIT=86  # ASAN_OPTIONS/UBSAN_OPTIONS exitcode (tests/runtime/runtime_build.py)
tests=("$@")
((${#tests[@]})) || tests=(tests/runtime)

unset PARE_RUNTIME_LIB PARE_RUNTIME_V3_LIB PARE_RUNTIME_BASELINE_LIB PARE_TRACING_RUNTIME_LIB PARE_INSTRUMENTATION_LIB PARE_TEST_DOUBLE_RUNTIME_LIB
export PARE_SANITIZE=address,undefined
logs="$(mktemp -d "${TMPDIR:-/tmp}/pare_sanitize.XXXXXX")"
python=.venv/bin/python
# What the fixtures compile, and with which flags: Bazel's
# (//tests:runtime_compile_info, tests/runtime/runtime_build.py), built once here.
PARE_RUNTIME_COMPILE_INFO="$("$python" -m tests.runtime.runtime_build compile-info)" || exit 1
export PARE_RUNTIME_COMPILE_INFO

# Runs pytest with the sanitizer environment, reports going to $1.
sanitized_pytest() {
  local log_dir="$1"
  shift
  (
    eval "$("$python" -m tests.runtime.runtime_build sanitizer-env "$log_dir")" || exit 1
    exec "$python" -m pytest "$@"
  )
}

echo "== sanitize: wiring check (planted bugs must be reported)"
for canary in asan_heap_overflow ubsan_misaligned_load; do
  dir="$logs/canary_$canary"
  mkdir -p "$dir"
  sanitized_pytest "$dir" tests/fuzz/sanitizer_canary.py -q -k "$canary" >"$dir/pytest.out" 2>&1
  rc=$?
  expect="AddressSanitizer"
  [[ $canary == ubsan_* ]] && expect="runtime error:"
  if [[ $rc -ne $SANITIZER_EXIT ]] || ! grep -qs "$expect" "$dir"/*san.*; then
    echo "sanitize: the planted bug $canary was not reported (pytest exit $rc, expected $SANITIZER_EXIT):" \
         "the sanitizer wiring is broken; see $dir" >&2
    cat "$dir/pytest.out" >&2
    exit 1
  fi
  echo "   $canary: reported ($(grep -ohs -m1 "$expect[^(]*" "$dir"/*san.* | head -1 | cut -c1-100))"
done

echo "== sanitize: pytest ${tests[*]} on ASan + UBSan runtimes"
mkdir -p "$logs/suite"
start=$SECONDS
# test_portability.py is left out: it checks sources and the link's
# dependencies, not behaviour, and a sanitized library rightly depends on
# the ASan runtime. test_concurrency.py too: it builds its own
# ThreadSanitizer runtime, which cannot share a process with ASan. The plain
# `make test` runs both.
# On every core (pytest-xdist, as tools/run_tests.sh runs the other suites):
# the sanitized builds compile on every core already, and the tests, about
# 6,000 under ASan, split over the workers. A report in a worker ends that
# worker (exit code 86, which pytest-xdist reports as a crashed node) and is
# in the log directory, checked below. PARE_SANITIZE_WORKERS overrides the count.
workers="${PARE_SANITIZE_WORKERS:-$(nproc)}"
sanitized_pytest "$logs/suite" "${tests[@]}" -q -n "$workers" --durations=15 \
  --ignore tests/runtime/test_portability.py --ignore tests/runtime/test_concurrency.py
rc=$?
# Any log file is a report, unless all it says is ASan's note on an
# impossible allocation: allocator_may_return_null=1 makes one fail as with
# libc (the runtime's OutOfMemory path, e.g. tests/fuzz's petabyte
# regression), and ASan logs a line for each.
refused_allocation='^==[0-9]+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes$'
reports=()
for log in "$logs"/suite/*san.*; do
  [[ -e $log ]] && grep -qvE "$refused_allocation" "$log" && reports+=("$log")
done
if ((${#reports[@]})); then
  echo "sanitize: sanitizer reports (${#reports[@]} files in $logs/suite):" >&2
  cat "${reports[@]}" >&2
  exit 1
fi
if [[ $rc -eq $SANITIZER_EXIT ]]; then
  echo "sanitize: pytest ended with the sanitizer exit code $rc" >&2
  exit 1
fi
if [[ $rc -eq 5 ]]; then
  echo "sanitize: pytest collected no tests: that is a failure" >&2
  exit 1
fi
if [[ $rc -ne 0 ]]; then
  echo "sanitize: pytest failed (exit $rc)" >&2
  exit "$rc"
fi
echo "sanitize: 0 sanitizer reports; pytest passed in $((SECONDS - start))s"
rm -rf "$logs"
