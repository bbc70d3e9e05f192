#!/usr/bin/env bash
# `make fuzz FUZZ_SECONDS=N`: runs every fuzz target (fuzz/README.md) for N
# seconds each, starting from the checked-in seed corpora; exits non-zero
# when any target finds a crash (the crashing input is saved under
# build/fuzz/crashes/ and its path printed).
#
#   tools/fuzz.sh [SECONDS] [TARGET...]     targets: loader manifest codegen
#   FUZZ_JOBS=2 nice -n 19 tools/fuzz.sh 5400 loader    a long run on both cores
#
# New interesting inputs go to build/fuzz/corpus/<target>/ (kept between
# runs, not checked in); the seeds in fuzz/corpus/ are only read.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds="${1:-30}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(loader manifest codegen)
python=.venv/bin/python
out=build/fuzz
mkdir -p "$out/crashes"

# -timeout bounds one input (a hang is a finding too; inputs take
# milliseconds, and 30 s leaves room for a busy CI machine); -rss_limit_mb
# keeps a runaway allocation from taking the shared machine.
# FUZZ_SEED fixes libFuzzer's random seed: CI derives one from the commit
# (.ci/run prints it), so each change explores new inputs and a failure
# reproduces with `FUZZ_SEED=<seed> make fuzz FUZZ_SECONDS=20`; unset
# (0) means a new seed each run.
common=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=3072 -print_final_stats=1 -seed="${FUZZ_SEED:-0}")
# FUZZ_JOBS=N (N > 1) runs N fuzzing processes at once (libFuzzer's fork
# mode: each job fuzzes a slice of the corpus and the parent merges what
# they find), for a long run on an otherwise idle machine; a crash still
# stops the run. The default, 1, is one process as CI's round uses.
jobs="${FUZZ_JOBS:-1}"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_JOBS must be a positive number of processes, not '$jobs'" >&2; exit 2; }
((jobs > 1)) && common+=(-fork="$jobs")

if [[ " ${targets[*]} " == *" loader "* ]]; then
  echo "== fuzz: building the loader target (cached)"
  "$python" -m fuzz.build >/dev/null || exit 1
fi

failed=()
for target in "${targets[@]}"; do
  work="$out/corpus/$target"
  mkdir -p "$work"
  case "$target" in
    loader) cmd=("$out/loader_fuzzer") ;;
    manifest | codegen) cmd=("$python" -m fuzz.codegen_targets "$target" -dict=fuzz/manifest.dict) ;;
    *) echo "fuzz: unknown target $target (loader, manifest, codegen)" >&2; exit 2 ;;
  esac
  echo "== fuzz: $target for ${seconds}s"
  log="$out/$target.log"
  # ASan/UBSan options for the loader (the Python targets ignore them).
  # Allocations above 1 GB fail (return null) as on a device with little
  # memory, so a program asking for a huge tensor exercises the runtime's
  # out-of-memory path instead of being reported as a crash by ASan.
  # No Vulkan driver: the full runtime has the Vulkan backend, and a
  # program the fuzzer writes could reach a real driver, whose own code is
  # not under test and leaks under LeakSanitizer (Mesa's lavapipe: 2 x 128
  # B per device opened). The backend reports itself unavailable, so its
  # delegate_init path runs up to that check; its blob checks are fuzzed
  # by tests/runtime/test_vulkan_backend.py's mutations on lavapipe.
  VK_ICD_FILENAMES=/nonexistent/pare-fuzz-has-no-vulkan-driver.json \
  ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=1024" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "${cmd[@]}" "${common[@]}" -artifact_prefix="$out/crashes/$target-" "$work" "fuzz/corpus/$target" \
    >"$log" 2>&1
  rc=$?
  grep -E "^stat::number_of_executed_units|^stat::average_exec_per_sec|^Done [0-9]+ runs" "$log" | sed 's/^/   /'
  # Fork mode reports its totals on its progress lines ("#<runs>: cov: ...").
  ((jobs > 1)) && grep -E "^#[0-9]+: cov" "$log" | tail -1 | sed 's/^/   /'
  if [[ $rc -ne 0 ]]; then
    echo "fuzz: $target FAILED (exit $rc); log: $log" >&2
    grep -E "ERROR|runtime error|\[pare error\]|Traceback|AssertionError|Exception|Test unit written|artifact" "$log" | head -20 >&2
    # A CI machine's build/ is gone after the run: print a small crashing
    # input into the log itself (gzip, base64) so the failure reproduces
    # without it. Decode with: base64 -d | gunzip > crash.pare
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    if [[ -n "$crash" && -f "$crash" ]]; then
      encoded=$(gzip -9c "$crash" | base64 -w0)
      if ((${#encoded} <= 32768)); then
        echo "fuzz: $target crashing input ($(stat -c %s "$crash") B; base64 -d | gunzip > crash): $encoded" >&2
      else
        echo "fuzz: $target crashing input too large to print (${#encoded} B encoded): $crash" >&2
      fi
    fi
    failed+=("$target")
  fi
done

if ((${#failed[@]})); then
  echo "fuzz: crashes in ${failed[*]}: reproduce with fuzz/README.md, then add a tests/fuzz regression" >&2
  exit 1
fi
echo "fuzz: ${targets[*]}: no crashes"
