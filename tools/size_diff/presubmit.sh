#!/usr/bin/env bash
# Size presubmit: build the budgeted runtimes at a base revision and at head
# (this working tree), attribute their bytes, diff them and enforce the
# budgets (docs/size.md).
#
#   tools/size_diff/presubmit.sh [options] [BASE_REV]
#
#   BASE_REV              revision to compare against (default HEAD~1)
#   --budgets FILE        budgets file (default size_budgets.json); its
#                         targets are what gets built
#   --out DIR             where reports go (default: a new temporary directory):
#                         DIR/{head,base}/<target>.{json,md,png}, DIR/diff/<target>.md
#   --base-reports DIR    use DIR/<target>.json as the base reports instead of
#                         building BASE_REV (e.g. reports CI kept from the base)
#   --keep-base-server    leave the base worktree's Bazel server running
#   --require-base        a base that does not exist, does not build or cannot
#                         be measured is an error (exit 2); the default when
#                         CI=true (or CI=1) is in the environment
#   --allow-missing-base  such a base is a warning: growth limits are not
#                         checked, max_bytes still is; the default otherwise
#
# The base is built in a git worktree of BASE_REV, by default at
# ${XDG_CACHE_HOME:-~/.cache}/pare/presubmit/<hash of this checkout>/base
# ($PARE_PRESUBMIT_WORKTREE overrides), reused between runs so its Bazel
# output base stays warm. Both sides are measured by this checkout's tools.
#
# A budgeted target that does not exist at the base (a target added by this
# change) is a note either way: its growth is not checked.
#
# Exit status: 0 within budget, 1 a budget violation, 2 an error (bad usage,
# head does not build, a budgeted target does not exist at head, and with
# --require-base or CI=true an unusable base).
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
base_policy=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budgets) [[ $# -ge 2 ]] || die "--budgets needs a file"; budgets="$2"; shift 2 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a directory"; out="$2"; shift 2 ;;
    --base-reports) [[ $# -ge 2 ]] || die "--base-reports needs a directory"; base_reports="$2"; shift 2 ;;
    --keep-base-server) keep_server=1; shift ;;
    --require-base|--allow-missing-base)
      [[ -z "$base_policy" || "$base_policy" == "$1" ]] || die "give --require-base or --allow-missing-base, not both"
      base_policy="$1"; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [[ -z "$base_rev" ]] || die "one BASE_REV only (got $base_rev and $1)"; base_rev="$1"; shift ;;
  esac
done
[[ -f "$budgets" ]] || die "$budgets: no such budgets file (pass --budgets FILE; format in docs/size.md)"
budgets="$(cd "$(dirname "$budgets")" && pwd)/$(basename "$budgets")"
[[ -z "$base_reports" || -d "$base_reports" ]] || die "--base-reports $base_reports: no such directory"
[[ -z "$base_reports" || -z "$base_rev" ]] || die "give BASE_REV or --base-reports, not both"
# CI must not pass a change whose growth went unchecked; locally, a missing
# base (a shallow clone, a base that no longer builds on this machine) should
# not stop the max_bytes check.
policy_why="$base_policy"
if [[ -z "$base_policy" ]]; then
  case "${CI:-}" in
    true|TRUE|True|1) base_policy=--require-base; policy_why="CI=$CI" ;;
    *) base_policy=--allow-missing-base ;;
  esac
fi
# missing_base REASON FIX: the base cannot be compared against.
missing_base() {
  if [[ "$base_policy" == "--require-base" ]]; then
    die "$1; with $policy_why growth must be checked: $2, or pass --allow-missing-base to check max_bytes only"
  fi
  echo "presubmit: warning: $1: growth limits not checked, max_bytes only" >&2
}

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

# The base revision is resolved before head is built, so a wrong one fails at once.
base_sha=""
if [[ -z "$base_reports" ]]; then
  base_rev="${base_rev:-HEAD~1}"
  if ! base_sha="$(cd "$root" && git rev-parse --verify --quiet "${base_rev}^{commit}")"; then
    base_sha=""
    missing_base "base revision $base_rev does not exist in this repository" \
      "name one that does, or fetch it (a shallow clone lacks history: git fetch --unshallow)"
  fi
fi

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
# build_base: builds and measures base_sha in its worktree; on failure sets
# base_error to the reason. Targets absent at the base are notes.
base_error=""
base_fix=""
build_base() {
  local key wt gitdir common f label
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

  # Which budgeted targets exist at the base. Bazel calls a target of a
  # package with errors "not declared" too, so a missing target is new in this
  # change only when the query's errors are all "not declared" / "no BUILD
  # file"; any other (a broken BUILD or .bzl file) makes the base unusable.
  local query_out query_err query_rc other_errors
  query_out="$(mktemp "${TMPDIR:-/tmp}/pare-presubmit-query.XXXXXX")"
  query_err="$query_out.err"
  (cd "$wt" && tools/bazel query --keep_going "set(${labels[*]})") >"$query_out" 2>"$query_err"
  query_rc=$?  # 3: partial success (some label did not load)
  mapfile -t base_labels <"$query_out"
  other_errors="$(grep -F ERROR "$query_err" | grep -v -e "no such target '[^']*': target '[^']*' not declared in package" \
                                                    -e "no such package '[^']*': BUILD file not found")"
  if [[ ( $query_rc -ne 0 && $query_rc -ne 3 ) || -n "$other_errors" ]]; then
    [[ -z "$other_errors" ]] || printf '%s\n' "$other_errors" >&2
    base_error="base $base_rev does not load (bazel query exit $query_rc, errors above)"
    base_fix="fix the base's BUILD files or name another BASE_REV"
  else
    for label in "${labels[@]}"; do
      if [[ " ${base_labels[*]} " != *" $label "* ]]; then
        echo "presubmit: $label does not exist at $base_rev: its growth is not checked" >&2
      fi
    done
  fi
  rm -f -- "$query_out" "$query_err"

  if [[ -z "$base_error" && ${#base_labels[@]} -gt 0 ]]; then
    step "building ${#base_labels[@]} target(s) at $base_rev"
    if ! (cd "$wt" && tools/bazel build "${base_labels[@]}") >&2; then
      base_error="base $base_rev ($base_sha) does not build (Bazel's errors above)"
      base_fix="name a BASE_REV that builds"
    else
      step "measuring base"
      if measure "$wt" base "${base_labels[@]}"; then
        have_base=1
      else
        base_error="measuring base $base_rev failed (the error above)"
        base_fix="fix what the error names, or name another BASE_REV"
      fi
    fi
  fi
  if [[ $keep_server -eq 0 ]]; then
    (cd "$wt" && tools/bazel shutdown) >/dev/null 2>&1 || true
  fi
}

have_base=0
if [[ -n "$base_reports" ]]; then
  for label in "${labels[@]}"; do
    f="$base_reports/$(slug "$label").json"
    if [[ -f "$f" ]]; then
      cp "$f" "$out/base/" && have_base=1
    else
      echo "presubmit: no base report $f: growth of $label is not checked" >&2
    fi
  done
  [[ $have_base -eq 1 ]] || missing_base "--base-reports $base_reports has no report for any budgeted target" \
    "give the directory holding the base's presubmit reports (<target>.json, as --out DIR/head/ names them)"
  step "base: reports from $base_reports"
elif [[ -n "$base_sha" ]]; then
  build_base
  [[ -z "$base_error" ]] || { have_base=0; missing_base "$base_error" "$base_fix"; }
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
