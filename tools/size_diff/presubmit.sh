#!/usr/bin/env bash
# Size presubmit: build the budgeted runtimes at head (this working tree) and
# at a base revision, attribute their bytes, diff them, and check head
# against the budgets as they are at the base (docs/size.md).
#
#   tools/size_diff/presubmit.sh [options] [BASE_REV]
#
#   BASE_REV              revision to compare against (default HEAD~1)
#   --budgets FILE        budgets file of this repository (default
#                         size_budgets.json): head's copy says which targets
#                         are built, BASE_REV's copy holds the limits
#   --out DIR             where reports go (default: a new temporary directory):
#                         DIR/{head,base}/<target>.{json,md,png}, DIR/diff/<target>.md,
#                         DIR/head/budgets.json (head's budgets file)
#   --base-reports DIR    the base measured already (e.g. what CI kept from the
#                         base's run, as --out DIR/head/ holds it): DIR/<target>.json
#                         its reports, DIR/budgets.json its budgets; no
#                         BASE_REV, so budget changes are not listed
#   --keep-base-server    leave the base worktree's Bazel server running
#   --require-base        a base that does not exist, does not build or cannot
#                         be measured is an error (exit 2); the default when
#                         CI=true (or CI=1) is in the environment
#   --allow-missing-base  such a base is a warning: no diff against it (and
#                         without the base's budgets, head's are used); the
#                         default otherwise
#
# Budgets a change cannot raise for itself: the limits are read from BASE_REV
# (git show BASE_REV:FILE), and growth counts from each platform's
# recorded_bytes, the size when its budget was last set, so small steps add
# up. Every change to FILE in BASE_REV..HEAD and in the working tree is
# printed (commit, subject, each field old -> new); a commit that changes FILE
# and anything else fails at once (exit 1): a budget change is a commit of
# its own, its message the reason.
#
# The base is built in a git worktree of BASE_REV, by default at
# ${XDG_CACHE_HOME:-~/.cache}/pare/presubmit/<hash of this checkout>/base
# ($PARE_PRESUBMIT_WORKTREE overrides), reused between runs so its Bazel
# output base stays warm, and checked out and cleaned (git clean) each run.
# So it must be a new or empty directory or a worktree presubmit made (marked
# by a .pare-presubmit-base file in it): this checkout, the repository's main
# checkout, a directory holding either, and any other directory with files
# are refused (exit 2) before anything in them is touched. Both sides are
# measured by this checkout's tools.
#
# A budgeted target that does not exist at the base (a target added by this
# change), or that has no budget at the base, is a note: it is checked from
# the next change on.
#
# Exit status: 0 within budget, 1 a budget violation or a budget change that
# shares its commit, 2 an error (bad usage, a refused worktree, head does not
# build, a budgeted target does not exist at head, invalid budgets, and with
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
# CI must not pass a change that was not compared with its base; locally, a
# missing base (a shallow clone, a base that no longer builds on this
# machine) should not stop the checks that can still be made.
policy_why="$base_policy"
if [[ -z "$base_policy" ]]; then
  case "${CI:-}" in
    true|TRUE|True|1) base_policy=--require-base; policy_why="CI=$CI" ;;
    *) base_policy=--allow-missing-base ;;
  esac
fi
# missing_base REASON FIX CONSEQUENCE: the base cannot be compared against.
missing_base() {
  if [[ "$base_policy" == "--require-base" ]]; then
    die "$1; with $policy_why the base must be measured: $2, or pass --allow-missing-base to go on without it"
  fi
  echo "presubmit: warning: $1: $3" >&2
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
cp -f "$budgets" "$out/head/budgets.json" || die "cannot write $out/head/budgets.json"

# --- the base worktree: refused before anything in it is touched ---
marker=.pare-presubmit-base
default_wt="${XDG_CACHE_HOME:-$HOME/.cache}/pare/presubmit/$(printf '%s' "$root" | cksum | cut -d' ' -f1)/base"
wt="${PARE_PRESUBMIT_WORKTREE:-$default_wt}"
# guard_worktree: exits 2 unless $wt is a new or empty directory or a
# worktree presubmit made, since build_base checks it out with --force and
# runs git clean in it.
guard_worktree() {
  local real here main refuse
  refuse="presubmit checks out and cleans that directory: set PARE_PRESUBMIT_WORKTREE to a new or empty directory (or unset it)"
  real="$(realpath -m -- "$wt")"
  here="$(realpath -- "$root")"
  main="$(cd "$root" && git worktree list --porcelain | sed -n '1s/^worktree //p')"
  main="$(realpath -m -- "${main:-$here}")"
  if [[ "$real" == "$here" || "$here" == "$real"/* || "$real" == / ]]; then
    die "worktree $wt is this checkout or holds it; $refuse"
  fi
  if [[ "$real" == "$main" || "$main" == "$real"/* ]]; then
    die "worktree $wt is the repository's main checkout ($main) or holds it; $refuse"
  fi
  [[ -e "$real" || -L "$real" ]] || return 0
  [[ -d "$real" && ! -L "$real" ]] || die "worktree $wt exists and is not a directory; $refuse"
  [[ -n "$(ls -A -- "$real")" ]] || return 0
  if [[ -e "$real/$marker" ]]; then
    [[ -f "$real/.git" ]] || die "worktree $wt has $marker but is not a linked worktree (its .git is not a file); $refuse"
    return 0
  fi
  # Before the marker, presubmit made worktrees at the default path unmarked:
  # a linked worktree there is one of them.
  if [[ "$wt" == "$default_wt" && -f "$real/.git" ]]; then
    echo "created by tools/size_diff/presubmit.sh for $root: it checks this directory out and cleans it" >"$real/$marker" ||
      die "cannot write $real/$marker"
    return 0
  fi
  die "worktree $wt exists, holds files and is not a worktree presubmit made (no $marker in it); $refuse"
}

# --- the base: its revision and its budgets ---
base_sha=""
base_budgets=()      # how `check` reads the base's budgets
base_budgeted=""     # the labels budgeted there, one a line
base_budgets_name="" # how messages name them
if [[ -z "$base_reports" ]]; then
  base_rev="${base_rev:-HEAD~1}"
  # Resolved before head is built, so a wrong one fails at once.
  if ! base_sha="$(cd "$root" && git rev-parse --verify --quiet "${base_rev}^{commit}")"; then
    base_sha=""
    missing_base "base revision $base_rev does not exist in this repository" \
      "name one that does, or fetch it (a shallow clone lacks history: git fetch --unshallow)" \
      "no diff against it, and the limits come from the working tree's $budgets, which this change may have raised"
  else
    guard_worktree
    step "budget changes since $base_rev"
    size_diff changes --budgets "$budgets" --base "$base_rev"
    rc=$?
    [[ $rc -ne 2 ]] || exit 2
    if [[ $rc -ne 0 ]]; then
      echo "presubmit: FAIL: a budget change shares its commit with other changes (above); nothing was built"
      exit 1
    fi
    base_budgets=(--budgets "$budgets" --at "$base_rev")
    base_budgets_name="$(basename "$budgets") at $base_rev"
    base_budgeted="$(size_diff targets "${base_budgets[@]}" | cut -f1)" || exit 2
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
  local gitdir common f label
  step "base: $base_rev ($base_sha) in worktree $wt"
  # A worktree presubmit made (guard_worktree let it through) whose
  # repository is gone (a .git file naming a missing gitdir) holds nothing
  # of value: start again.
  if [[ -f "$wt/.git" && -e "$wt/$marker" ]]; then
    gitdir="$(sed -n 's/^gitdir: //p' "$wt/.git")"
    if [[ -n "$gitdir" && ! -d "$gitdir" ]]; then
      echo "presubmit: $wt is a worktree of a repository that no longer exists: recreating it" >&2
      rm -rf -- "$wt"
    fi
  fi
  common="$(cd "$root" && git rev-parse --path-format=absolute --git-common-dir)"
  if [[ -e "$wt/.git" ]] && [[ "$(git -C "$wt" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)" == "$common" ]]; then
    git -C "$wt" checkout --quiet --detach --force "$base_sha" && git -C "$wt" clean -fdq -e "/$marker" \
      || die "cannot check out $base_sha in $wt (remove it: git worktree remove --force $wt)"
  else
    # guard_worktree let through only a new or empty directory here, or one
    # with the marker: a worktree presubmit made for another repository.
    [[ -z "$(ls -A -- "$wt" 2>/dev/null)" ]] || die "$wt is a worktree of another repository; remove it or set PARE_PRESUBMIT_WORKTREE"
    (cd "$root" && git worktree prune && git worktree add --quiet --detach "$wt" "$base_sha") \
      || die "git worktree add $wt $base_sha failed"
    echo "created by tools/size_diff/presubmit.sh for $root: it checks this directory out and cleans it" >"$wt/$marker" \
      || die "cannot write $wt/$marker"
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
        echo "presubmit: $label does not exist at $base_rev: no diff against the base" >&2
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
      echo "presubmit: no base report $f: no diff against the base for $label" >&2
    fi
  done
  [[ $have_base -eq 1 ]] || missing_base "--base-reports $base_reports has no report for any budgeted target" \
    "give the directory holding the base's presubmit reports (<target>.json, as --out DIR/head/ names them)" \
    "no diff against it"
  if [[ -f "$base_reports/budgets.json" ]]; then
    base_budgets=(--budgets "$base_reports/budgets.json")
    base_budgets_name="$base_reports/budgets.json"
    base_budgeted="$(size_diff targets "${base_budgets[@]}" | cut -f1)" || exit 2
    cp -f "$base_reports/budgets.json" "$out/base/budgets.json"
  else
    missing_base "--base-reports $base_reports has no budgets.json (the base's budgets)" \
      "give the directory a presubmit run of the base wrote as --out DIR/head/ (it holds budgets.json), or copy the base's budgets file there as budgets.json" \
      "the limits come from the working tree's $budgets, which this change may have raised"
  fi
  step "base: reports from $base_reports"
elif [[ -n "$base_sha" ]]; then
  build_base
  [[ -z "$base_error" ]] || { have_base=0; missing_base "$base_error" "$base_fix" "no diff against it: the change is not attributed"; }
fi
if [[ ${#base_budgets[@]} -eq 0 ]]; then
  base_budgets=(--budgets "$budgets")
  base_budgets_name="the working tree's $budgets"
  base_budgeted="$(printf '%s\n' "${labels[@]}")"
fi

# --- diff and budgets ---
# Budgets the base has and head does not: removed since (listed above when
# BASE_REV is known); not built, so not checked.
while IFS= read -r label; do
  [[ -z "$label" || " ${labels[*]} " == *" $label "* ]] ||
    echo "note $label: budgeted at the base, not in the working tree's $budgets: not built or checked"
done <<<"$base_budgeted"
status=0
for label in "${labels[@]}"; do
  s="$(slug "$label")"
  head_json="$out/head/$s.json"
  if ! grep -qxF -- "$label" <<<"$base_budgeted"; then
    echo "note $label: no budget at the base, so nothing to check against; its budget applies from the next change on"
    continue
  fi
  check_args=(check "${base_budgets[@]}" "$head_json")
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
  echo "presubmit: FAIL: size budget exceeded (reports in $out; budgets: $base_budgets_name)"
fi
exit $status
