#!/usr/bin/env bash
# Sets up this machine for Pare. Idempotent: safe to re-run; each step says
# what it does and skips what is already done. Needs root (or sudo) for apt.
#
#   1. apt: Bazel 4.2.3 (bazel-bootstrap) + @platforms (bazel-platforms),
#      clang/lld/llvm 16 with its sanitizer and libFuzzer runtimes
#      (libclang-rt-16-dev: make sanitize, make fuzz), qemu-user and the
#      aarch64 glibc cross packages (Android emulator harness), JDK headers,
#      clang-format-16 (make lint), and the Vulkan backend's shader compiler
#      and test device (glslc; Mesa's lavapipe, a CPU Vulkan driver, and its
#      loader: docs/delegates.md).
#   2. .venv: Python deps from requirements.txt (torch pinned, CPU wheel),
#      then requirements-no-deps.txt with --no-deps (torchvision: models/zoo).
#   3. npm: bazelisk and buildifier (make lint), pinned in package.json /
#      package-lock.json.
#   4. Machine-specific Bazel settings, in files that are not checked in:
#      .bazelrc.local (the @platforms override, the venv interpreter) and
#      .bazeliskrc (bazelisk runs Debian's Bazel binary; see docs/bazel.md).
#   5. .venv-executorch: ExecuTorch (portable and XNNPACK), the peers
#      python -m tools.bench times Pare against (tools/setup_executorch.sh),
#      installed beside steps 2 to 4.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

APT_PACKAGES=(
  bazel-bootstrap bazel-platforms
  clang-16 lld-16 llvm-16 libclang-rt-16-dev
  qemu-user libc6-dev-arm64-cross libgcc-12-dev-arm64-cross
  openjdk-17-jdk-headless zip unzip file
  clang-format-16
  glslc mesa-vulkan-drivers libvulkan1 vulkan-tools
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  say "apt: installing ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "apt: all ${#APT_PACKAGES[@]} packages present"
fi

# ExecuTorch (portable and XNNPACK), the peers python -m tools.bench times Pare
# against, in its own venv .venv-executorch (docs/performance.md). Its own
# script, idempotent like this one: it skips when requirements-executorch.txt
# is already installed. It needs nothing the steps below make, and pip
# installs on one core, so it runs beside them: on a fresh 2-core machine
# both venvs are ready in the time of the longer (about 90 s, not 165 s).
# Its output is shown when it is done. It runs in a process group of its own
# (setsid), so that a failure here or Ctrl-C stops its pip too, not only the
# script: a pip left running would be writing the venv the next setup
# deletes and makes anew.
executorch_log="$(mktemp "${TMPDIR:-/tmp}/pare-setup-executorch.XXXXXX")"
setsid tools/setup_executorch.sh >"$executorch_log" 2>&1 &
executorch_pid=$!
trap 'kill -TERM -- -"$executorch_pid" 2>/dev/null || true; rm -f "$executorch_log"' EXIT

python="${PARE_HOST_PYTHON:-python3}"
packages_changed=0
if [[ ! -x .venv/bin/python3 ]]; then
  say "venv: creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
stamp=.venv/.pare-requirements.sha256
want="$(cat requirements.txt requirements-no-deps.txt | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  say "venv: installing requirements.txt (torch==2.13.0 CPU and friends) and requirements-no-deps.txt (--no-deps)"
  .venv/bin/python3 -m pip install -q --disable-pip-version-check -r requirements.txt
  .venv/bin/python3 -m pip install -q --disable-pip-version-check --no-deps -r requirements-no-deps.txt
  echo "$want" > "$stamp"
  packages_changed=1
else
  say "venv: requirements.txt already installed"
fi

# npm's own record (node_modules/.package-lock.json) never equals the lock
# file (it omits the root package), so compare what matters: the versions.
locked() { node -p "require('./package-lock.json').packages['node_modules/$1'].version" 2>/dev/null; }
installed() { node -p "require('./node_modules/$1/package.json').version.replace(/^v/, '')" 2>/dev/null; }
npm_current=1
for pkg in @bazel/bazelisk @bazel/buildifier; do
  if [[ ! -f "node_modules/$pkg/package.json" || "$(installed "$pkg")" != "$(locked "$pkg")" ]]; then npm_current=0; fi
done
if ((!npm_current)) || [[ ! -x node_modules/.bin/bazelisk || ! -x node_modules/.bin/buildifier ]]; then
  say "npm: installing bazelisk and buildifier (package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
else
  say "npm: bazelisk and buildifier already installed"
fi

# @pare_python hashes the venv's packages into the Python toolchain (cache
# keys, docs/remote_cache.md) when the Bazel server starts: restart it.
if ((packages_changed)) && [[ -x node_modules/.bin/bazelisk && -f .bazeliskrc ]]; then
  say "venv packages changed: stopping this workspace's Bazel server so the Python toolchain is re-read"
  tools/bazel shutdown >/dev/null 2>&1 || true
fi

platforms_dir="$(dirname "$(dpkg -L bazel-platforms | grep '/platforms/WORKSPACE$' | head -n1)")"
bazel_bin="$(dpkg -L bazel-bootstrap | grep -E '^/usr/bin/bazel-[0-9]' | head -n1)"
[[ -d "$platforms_dir" ]] || { echo "setup: bazel-platforms' directory not found" >&2; exit 1; }
[[ -x "$bazel_bin" ]] || { echo "setup: bazel-bootstrap's binary not found" >&2; exit 1; }

write_if_changed() {  # file, content
  if [[ "$(cat "$1" 2>/dev/null)" != "$2" ]]; then
    printf '%s\n' "$2" > "$1"
    say "wrote $1"
  fi
}
# The disk cache: every checkout that copies this file (a presubmit
# worktree, a test's second checkout) reuses the actions this one ran, and
# the other way round (docs/remote_cache.md). It lives in this checkout and
# goes with it; nothing prunes it: rm -rf .cache/bazel-disk.
write_if_changed .bazelrc.local "# Written by tools/setup.sh for this machine; not checked in.
build --override_repository=platforms=$platforms_dir
build --repo_env=PARE_PYTHON=$root/.venv/bin/python3
build --disk_cache=$root/.cache/bazel-disk"
write_if_changed .bazeliskrc "# Written by tools/setup.sh: run Debian's Bazel 4.2.3 offline.
USE_BAZEL_VERSION=$bazel_bin"

executorch_status=0
wait "$executorch_pid" || executorch_status=$?
trap 'rm -f "$executorch_log"' EXIT  # reaped: its pid may be another process's now
cat "$executorch_log"
((executorch_status == 0)) || { echo "setup: tools/setup_executorch.sh failed (above)" >&2; exit 1; }

say "done: tools/bazel runs Bazel $(dpkg-query -W -f='${Version}' bazel-bootstrap) ($bazel_bin) with clang $(clang-16 --version | head -n1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+')"
