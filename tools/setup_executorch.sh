#!/usr/bin/env bash
# Sets up .venv-executorch, the venv python -m tools.bench runs ExecuTorch in
# (portable and XNNPACK, the peers Pare is timed against; docs/performance.md).
# Idempotent: re-running skips what is already done. Pip only, no root.
#
# ExecuTorch stays out of .venv: its declared dependencies are its whole
# toolkit, so requirements-executorch.txt pins everything the benchmark
# needs and installs it with --no-deps (the file says why). When the file
# changes, the venv is made anew, so it holds exactly what the file lists
# and a missing pin fails here as it would on a fresh machine
# (tools/pinned_venv.sh, shared with setup_llama_cpp.sh).
#
#   PARE_HOST_PYTHON   the interpreter to make the venv with (default python3)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf '\033[1msetup-executorch:\033[0m %s\n' "$*"; }
# shellcheck source=tools/pinned_venv.sh
source tools/pinned_venv.sh

venv=.venv-executorch
requirements=requirements-executorch.txt
if pinned_venv_ready "$venv" "$requirements"; then
  say "$venv: $requirements already installed"
  exit 0
fi

started=$SECONDS
pinned_venv_install "$venv" "$requirements" "torch==2.13.0 CPU, executorch, torchao, torchvision; a few minutes"

# What the benchmark's worker (tools/bench/executorch_worker.py) imports: fail
# now, naming the missing module, rather than in the middle of a benchmark.
say "$venv: checking that exir, the XNNPACK partitioner, the pybindings runtime and the zoo's torchvision import"
# torch and torchao print warnings on import: shown only when the check fails.
if ! check_output="$("$venv/bin/python3" - 2>&1 <<'EOF'
import sys

import executorch.backends.xnnpack.partition.xnnpack_partitioner
import executorch.exir
import executorch.extension.pybindings.portable_lib

sys.path.insert(0, "models/zoo")
import _zoo  # noqa: E402

_zoo.torchvision_models()
EOF
)"; then
  printf '%s\n' "$check_output" >&2
  echo "setup-executorch: $venv lacks a module the benchmark imports (above); add it to $requirements" >&2
  exit 1
fi
pinned_venv_stamp "$venv" "$requirements"
say "$venv: done in $((SECONDS - started)) s ($("$venv/bin/python3" -c 'import executorch.version as v; print("executorch", v.__version__)'))"
