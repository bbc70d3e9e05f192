#!/usr/bin/env bash
# make lint: the formatters and linters over every tracked source file; any
# finding fails (docs/testing.md, "Lint"). Versions are pinned where setup
# installs them: clang-format-16 (apt), buildifier (package.json), ruff
# (requirements.txt). Configuration: .clang-format, pyproject.toml, and the
# buildifier warnings below.
#
#   tools/lint.sh         check; exit 1 on any finding
#   tools/lint.sh --fix   rewrite the files in place (formatting and the
#                         fixable findings), then check
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  *) echo "usage: tools/lint.sh [--fix]" >&2; exit 2 ;;
esac

clang_format="$(command -v clang-format-16 || true)"
buildifier="$root/node_modules/.bin/buildifier"
ruff="$root/.venv/bin/ruff"
for tool in "$clang_format" "$buildifier" "$ruff"; do
  if [[ -z "$tool" || ! -x "$tool" ]]; then
    echo "lint: clang-format-16, node_modules/.bin/buildifier or .venv/bin/ruff is missing: run make setup" >&2
    exit 2
  fi
done

# Tracked files only: generated headers, Bazel's output trees and the venvs
# are never linted.
mapfile -t cxx < <(git ls-files '*.cc' '*.h' '*.c')
mapfile -t starlark < <(git ls-files '*.bzl' '*.bazel' 'WORKSPACE' '*/WORKSPACE' 'BUILD' '*/BUILD')

# Buildifier's lint warnings, less those this repository cannot follow:
# native-* (Bazel 4.2.3 offline has no rules_python, and rules_cc /
# rules_java are shims re-exporting the native rules: third_party/README.md)
# and bzl-visibility (tests load rules/private/ on purpose).
buildifier_warnings="-native-android,-native-cc-binary,-native-cc-common,-native-cc-import,-native-cc-info,-native-cc-library,-native-cc-objc-import,-native-cc-objc-library,-native-cc-proto,-native-cc-shared-library,-native-cc-test,-native-cc-toolchain,-native-cc-toolchain-suite,-native-java-binary,-native-java-common,-native-java-import,-native-java-library,-native-java-package-config,-native-java-plugin,-native-java-runtime,-native-java-test,-native-java-toolchain,-native-proto,-native-py,-native-sh-binary,-native-sh-library,-native-sh-test,-bzl-visibility"

failed=0
step() {  # name, command...
  local name="$1"; shift
  if ! "$@"; then
    echo "lint: $name found problems (tools/lint.sh --fix rewrites what can be fixed)" >&2
    failed=1
  fi
}

if ((fix)); then
  "$clang_format" -i --style=file "${cxx[@]}"
  "$buildifier" --mode=fix --lint=fix --warnings="$buildifier_warnings" "${starlark[@]}"
  "$ruff" check --fix --quiet . || true
  "$ruff" format --quiet .
fi

echo "== clang-format (${#cxx[@]} C/C++ files)"
step clang-format "$clang_format" --style=file --dry-run --Werror "${cxx[@]}"
echo "== buildifier (${#starlark[@]} Starlark files)"
step buildifier "$buildifier" --mode=check --lint=warn --warnings="$buildifier_warnings" "${starlark[@]}"
echo "== ruff format"
step "ruff format" "$ruff" format --check --quiet .
echo "== ruff check"
step "ruff check" "$ruff" check --quiet .

if ((failed)); then
  exit 1
fi
echo "lint: clean"
