#!/usr/bin/env bash
# The whole test suite (the README's test command runs this after setup):
# Bazel tests (`bazel test //...`), then the pytest suites under tests/.
# pytest's exit code 5 ("no tests collected") is a failure here.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== bazel test //..."
tools/bazel test //... || { echo "bazel test failed" >&2; exit 1; }

echo "== pytest"
.venv/bin/python -m pytest tests "$@"
rc=$?
if [[ $rc -eq 5 ]]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit $rc
