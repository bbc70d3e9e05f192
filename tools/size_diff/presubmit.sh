#!/usr/bin/env bash
# Size presubmit: build the budgeted runtimes at a base revision and at head
# (this working tree), attribute their bytes, diff them and enforce the
# budgets (docs/size.md).
#
#   tools/size_diff/presubmit.sh [options] [BASE_REV]
#
#   BASE_REV              revision to compare against (default HEAD~1; if it
#                         does not exist, growth limits are skipped with a
#                         message and only max_bytes is enforced)
#   --budgets FILE        budgets file (default size_budgets.json); its
#                         targets are what gets built
#   --out DIR             where reports go (default: a new temporary directory):
#                         DIR/{head,base}/<target>.{json,md,png}, DIR/diff/<target>.md
#   --base-reports DIR    use DIR/<target>.json as the base reports instead of
#                         building BASE_REV (e.g. reports CI kept from the base)
#   --keep-base-server    leave the base worktree's Bazel server running
#
# The base is built in a git worktree of BASE_REV, by default at
# ${XDG_CACHE_HOME:-~/.cache}/pare/presubmit/<hash of this checkout>/base
# ($PARE_PRESUBMIT_WORKTREE overrides), reused between runs so its Bazel
# output base stays warm. Both sides are measured by this checkout's tools.
#
# Exit status: 0 within budget, 1 a budget violation, 2 an error (bad usage,
# head does not build, a budgeted target does not exist).
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
die() { echo "presubmit: error: $*" >&2; exit 2; }
step() { echo "== presubmit: $*" >&2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
budgets="$root/size_budgets.json"
out=""
base_reports=""
keep_server=0
base_rev=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budgets) [[ $# -ge 2 ]] || die "--budgets needs a file"; budgets="$2"; shift 2 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --base-reports) [[ $# -ge 2 ]] || die "--base-reports needs a directory"; base_reports="$2"; shift 2 ;;
    --keep-base-server) keep_server=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [[ -z "$base_rev" ]] || die "one BASE_REV only (got $base_rev and $1)"; base_rev="$1"; shift ;;
  esac
done
[[ -f "$budgets" ]] || die "$budgets: no such budgets file (pass --budgets FILE; format in docs/size.md)"
budgets="$(cd "$(dirname "$budgets")" && pwd)/$(basename "$budgets")"
[[ -z "$base_reports" || -d "$base_reports" ]] || die "--base-reports $base_reports: no such directory"
[[ -z "$base_reports" || -z "$base_rev" ]] || die "give BASE_REV or --base-reports, not both"
if [[ -z "$out" ]]; then
  out="$(mktemp -d "${TMPDIR:-/tmp}/pare-presubmit.XXXXXX")"
fi
mkdir -p "$out/head" "$out/base" "$out/diff" || die "cannot create $out"
out="$(cd "$out" && pwd)"

python="${PARE_PYTHON:-$root/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3)" || die "no Python: run tools/setup.sh or set PARE_PYTHON"
size_diff() { (cd "$root" && "$python" -m tools.size_diff "$@"); }

# label <TAB> bazel-bin-relative directory <TAB> expected_symbols override or "-"
targets_tsv="$(size_diff targets --budgets "$budgets")" || exit 2
[[ -n "$targets_tsv" ]] || die "$budgets lists no targets"
labels=()
while IFS=$'\t' read -r label _ _; do labels+=("$label"); done <<<"$targets_tsv"
slug() { printf '%s' "${1#//}" | tr -c 'A-Za-z0-9_.-' '_'; }

# measure CHECKOUT SIDE LABEL...: reports for the built labels into $out/SIDE.
measure() {
  local checkout="$1" side="$2"; shift 2
  local bin
  bin="$(cd "$checkout" && tools/bazel info bazel-bin 2>/dev/null)" || { echo "presubmit: cannot find bazel-bin in $checkout" >&2; return 2; }
  # The convenience symlink, when it points there, gives shorter paths in messages.
  if [[ -L "$checkout/bazel-bin" && "$(readlink -f "$checkout/bazel-bin")" == "$(readlink -f "$bin")" ]]; then
    bin="$checkout/bazel-bin"
  fi
  local label dir expected args
  for label in "$@"; do
    while IFS=$'\t' read -r l dir expected; do
      [[ "$l" == "$label" ]] && break
    done <<<"$targets_tsv"
    args=(report -q --bundle "$bin/$dir" --target "$label"
          --json "$out/$side/$(slug "$label").json" --markdown "$out/$side/$(slug "$label").md"
          --png "$out/$side/$(slug "$label").png")
    [[ "$expected" == "-" ]] || args+=(--expected "$checkout/$expected")
    size_diff "${args[@]}" || return 2
  done
}

# --- head: this working tree ---
step "building ${#labels[@]} budgeted target(s) at head (working tree): ${labels[*]}"
(cd "$root" && tools/bazel build "${labels[@]}") >&2 || die "head does not build: fix it first (tools/bazel build ${labels[*]})"
step "measuring head"
measure "$root" head "${labels[@]}" || die "measuring head failed (see above)"

# --- base ---
have_base=0
if [[ -n "$base_reports" ]]; then
  for label in "${labels[@]}"; do
    f="$base_reports/$(slug "$label").json"
    [[ -f "$f" ]] && cp "$f" "$out/base/"
  done
  have_base=1
  step "base: reports from $base_reports"
else
  base_rev="${base_rev:-HEAD~1}"
  if ! base_sha="$(cd "$root" && git rev-parse --verify --quiet "${base_rev}^{commit}")"; then
    echo "presubmit: no base revision $base_rev in this repository: growth limits not checked, max_bytes only" >&2
  else
    key="$(printf '%s' "$root" | cksum | cut -d' ' -f1)"
    wt="${PARE_PRESUBMIT_WORKTREE:-${XDG_CACHE_HOME:-$HOME/.cache}/pare/presubmit/$key/base}"
    step "base: $base_rev ($base_sha) in worktree $wt"
    # A worktree whose repository is gone (a .git file naming a missing
    # gitdir) holds nothing of value: start again.
    if [[ -f "$wt/.git" ]]; then
      gitdir="$(sed -n 's/^gitdir: //p' "$wt/.git")"
      if [[ -n "$gitdir" && ! -d "$gitdir" ]]; then
        echo "presubmit: $wt is a worktree of a repository that no longer exists: recreating it" >&2
        rm -rf -- "$wt"
      fi
    fi
    common="$(cd "$root" && git rev-parse --path-format=absolute --git-common-dir)"
    if [[ -e "$wt/.git" ]] && [[ "$(git -C "$wt" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)" == "$common" ]]; then
      git -C "$wt" checkout --quiet --detach --force "$base_sha" && git -C "$wt" clean -fdq \
        || die "cannot check out $base_sha in $wt (remove it: git worktree remove --force $wt)"
    else
      [[ ! -e "$wt" ]] || die "$wt exists and is not a worktree of this repository; remove it or set PARE_PRESUBMIT_WORKTREE"
      (cd "$root" && git worktree prune && git worktree add --quiet --detach "$wt" "$base_sha") \
        || die "git worktree add $wt $base_sha failed"
    fi
    # Machine-specific files setup writes (not in git), and the npm bazelisk.
    for f in .bazelrc.local .bazeliskrc user.bazelrc; do
      if [[ -f "$root/$f" ]]; then cp -f "$root/$f" "$wt/$f"; fi
    done
    [[ -e "$wt/node_modules" ]] || ln -s "$root/node_modules" "$wt/node_modules"
    mapfile -t base_labels < <(cd "$wt" && tools/bazel query --keep_going "set(${labels[*]})" 2>/dev/null)
    for label in "${labels[@]}"; do
      if [[ " ${base_labels[*]} " != *" $label "* ]]; then
        echo "presubmit: $label does not exist at $base_rev: its growth is not checked" >&2
      fi
    done
    if [[ ${#base_labels[@]} -gt 0 ]]; then
      step "building ${#base_labels[@]} target(s) at $base_rev"
      if (cd "$wt" && tools/bazel build "${base_labels[@]}") >&2; then
        step "measuring base"
        measure "$wt" base "${base_labels[@]}" && have_base=1 \
          || echo "presubmit: measuring the base failed: growth limits not checked" >&2
      else
        echo "presubmit: $base_rev does not build: growth limits not checked" >&2
      fi
    fi
    if [[ $keep_server -eq 0 ]]; then
      (cd "$wt" && tools/bazel shutdown) >/dev/null 2>&1 || true
    fi
  fi
fi

# --- diff and budgets ---
status=0
for label in "${labels[@]}"; do
  s="$(slug "$label")"
  head_json="$out/head/$s.json"
  check_args=(check --budgets "$budgets" "$head_json")
  if [[ $have_base -eq 1 && -f "$out/base/$s.json" ]]; then
    size_diff diff "$out/base/$s.json" "$head_json" >"$out/diff/$s.md" || exit 2
    cat "$out/diff/$s.md"
    check_args+=(--base "$out/base/$s.json")
  fi
  size_diff "${check_args[@]}"
  rc=$?
  if [[ $rc -eq 2 ]]; then exit 2; fi
  if [[ $rc -ne 0 ]]; then status=1; fi
done
if [[ $status -eq 0 ]]; then
  echo "presubmit: PASS: ${#labels[@]} target(s) within budget (reports in $out)"
else
  echo "presubmit: FAIL: size budget exceeded (reports in $out; budgets in $budgets)"
fi
exit $status
