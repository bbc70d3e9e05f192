#!/bin/sh
# The app's selection step (rules/private/select_link.bzl): the runtime's
# shared LLVM bitcode plus the app's selection unit in, one native object
# holding exactly what the app selects out, archived.
#
#   select_link.sh OUT.a LLVM_LINK OPT LLVM_NM LLVM_AR AR_FORMAT CLANG \
#       [codegen flags...] -- ROOT.bc... -- [LAZY.bc...]
#
# 1. llvm-link merges the roots (the C API, the executor, the registry and
#    the app's selection unit) whole, then from the lazy inputs (the
#    kernels) only what the roots reach: the operators the selection's
#    operator table names, and what those call. Lazy inputs are merged into
#    one module first, so that reach is followed through all of them. (A
#    test's runtime that selects no operator may pass none.)
# 2. opt internalizes all but the C API (pare_*), drops what nothing
#    reaches, folds the selection's constants into the code that reads them
#    (ipsccp), deletes what became unreachable, folds again (an argument
#    that was a variable only at call sites the first round deleted, such
#    as the row and column offsets the threaded GEMM passes, is now a
#    constant: the demo's android_arm64 runtime is 256 B smaller for the
#    second round, a third changes nothing), cleans up what the folding
#    left (sroa, instcombine, adce, simplifycfg), and merges the constants
#    the units each had a copy of (constmerge: string tables from the same
#    inline functions; as separate objects, each kept its own). Nothing
#    else: every unit was optimised when it was compiled, and cross-unit
#    inlining grows the runtime (docs/bazel.md).
# 3. clang generates the platform's machine code without running LLVM's
#    pipeline again (-disable-llvm-passes).
set -eu
usage="usage: select_link.sh OUT.a LLVM_LINK OPT LLVM_NM LLVM_AR AR_FORMAT CLANG [FLAGS...] -- ROOTS... -- [LAZY...]"
[ "$#" -ge 7 ] || { echo "$usage" >&2; exit 2; }
out="$1" llvm_link="$2" opt="$3" llvm_nm="$4" llvm_ar="$5" ar_format="$6" clang="$7"
shift 7
work="$out.work"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# Codegen flags up to the first --, written one per line for later.
: >"$work/flags"
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  printf '%s\n' "$1" >>"$work/flags"
  shift
done
[ "$#" -gt 0 ] || { echo "$usage" >&2; exit 2; }
shift
roots=""
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  roots="$roots $1"
  shift
done
[ "$#" -gt 0 ] && [ -n "$roots" ] || { echo "$usage" >&2; exit 2; }
shift
# shellcheck disable=SC2086 # the roots are words (Bazel paths have no spaces)
"$llvm_link" $roots -o "$work/roots.bc"
if [ "$#" -gt 1 ]; then
  "$llvm_link" "$@" -o "$work/lazy.bc"
  "$llvm_link" "$work/roots.bc" --only-needed "$work/lazy.bc" -o "$work/merged.bc"
elif [ "$#" -eq 1 ]; then
  "$llvm_link" "$work/roots.bc" --only-needed "$1" -o "$work/merged.bc"
else
  mv "$work/roots.bc" "$work/merged.bc"
fi

# The C API is what stays visible (Mach-O spells symbols with a leading _).
"$llvm_nm" --defined-only --extern-only --just-symbol-name "$work/merged.bc" |
  sed -n -e 's/^_\{0,1\}\(pare_[A-Za-z0-9_]*\)$/\1/p' | sort -u >"$work/api.txt"
[ -s "$work/api.txt" ] || { echo "select_link.sh: the roots define no pare_* C API function" >&2; exit 1; }
"$opt" \
  -passes='internalize,globaldce,ipsccp,globalopt,globaldce,ipsccp,globalopt,globaldce,function(sroa,instcombine,adce,simplifycfg),globaldce,constmerge' \
  -internalize-public-api-file="$work/api.txt" \
  "$work/merged.bc" -o "$work/selected.bc"
object="$work/$(basename "$out" .a).o"
# shellcheck disable=SC2046 # one flag per line, none with spaces
"$clang" $(cat "$work/flags") -Xclang -disable-llvm-passes -Wno-unused-command-line-argument \
  -c "$work/selected.bc" -o "$object"
rm -f "$out"
"$llvm_ar" rcsD --format="$ar_format" "$out" "$object"
