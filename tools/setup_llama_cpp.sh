#!/usr/bin/env bash
# Sets up .venv-llama-cpp, the venv python -m tools.bench.llm_weights
# --llama-cpp runs llama.cpp in (docs/llm.md, "Peers"). Idempotent: re-running
# skips what is already done. Pip only, no root; `make llama-cpp` runs it.
#
# llama-cpp-python builds llama.cpp from source with the machine's C/C++
# compiler and CMake (about 15 minutes on two cores), so `make setup` leaves
# it out: only that benchmark needs it. Installed with --no-deps from the
# pins of requirements-llama-cpp.txt; when the file changes, the venv is made
# anew.
# The venv logic is tools/pinned_venv.sh's, shared with setup_executorch.sh.
#
#   PARE_HOST_PYTHON   the interpreter to make the venv with (default python3)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf '\033[1msetup-llama-cpp:\033[0m %s\n' "$*"; }
# shellcheck source=tools/pinned_venv.sh
source tools/pinned_venv.sh

venv=.venv-llama-cpp
requirements=requirements-llama-cpp.txt
if pinned_venv_ready "$venv" "$requirements"; then
  say "$venv: $requirements already installed"
  exit 0
fi

for tool in cc c++ cmake; do
  if ! command -v "$tool" >/dev/null; then
    echo "setup-llama-cpp: $tool is missing (llama-cpp-python builds llama.cpp with it): apt-get install build-essential cmake" >&2
    exit 1
  fi
done

started=$SECONDS
pinned_venv_install "$venv" "$requirements" "builds llama.cpp from source: about 15 minutes on two cores"

say "$venv: checking that llama_cpp imports"
"$venv/bin/python3" -c "import llama_cpp" || {
  echo "setup-llama-cpp: $venv cannot import llama_cpp (above); add what it lacks to $requirements" >&2
  exit 1
}
pinned_venv_stamp "$venv" "$requirements"
say "$venv: ready ($((SECONDS - started)) s)"
