# The two commands the README opens with. Both run setup first (idempotent).
#
# Every recipe runs in the repository root, wherever make was started
# (`make -C DIR demo`, `make -f DIR/Makefile demo`), and every Python entry
# point is a module started from there: `python -m tools.<tool>`. That is the
# one bootstrap (docs/testing.md, "Entry points"): no script puts the
# repository on sys.path itself.
ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
IN_ROOT := cd "$(ROOT)" &&
PYTHON := .venv/bin/python

.PHONY: setup demo test

setup:
	$(IN_ROOT) bash tools/setup.sh

demo: setup
	$(IN_ROOT) $(PYTHON) -m tools.main_job

test: setup
	$(IN_ROOT) bash tools/run_tests.sh

# Reliability checks (docs/testing.md). Each runs setup first, like the above.
#
# make sanitize: the runtime suites and the fuzz replays on runtimes built
# with ASan + UBSan; any report fails. What ships runs sanitized, not only
# the full runtime: every test of tests/runtime, test_selection.py and
# test_tracing.py included, test_shipped_selections.py (the demo's and two
# zoo models' selections, built as their runtimes are, their models checked
# against torch), and tests/fuzz (every seed and regression, through the
# Python binding and through the loader harness itself). The tests that
# assert unselected code is absent from a binary are deselected under the
# sanitizers (ASan keeps every instrumented global); make test runs them.
# The arm64 paths run under UBSan in make test (//tests:android_test), and
# test_concurrency.py under TSan (//tests:runtime_test).
# The full-runtime subset only: make sanitize SANITIZE_FULL_ONLY=1
SANITIZE_TESTS ?= tests/runtime tests/fuzz
SANITIZE_FULL_ONLY ?= 0
# make fuzz: every fuzz target (fuzz/README.md) for FUZZ_SECONDS each; any
# crash fails. CI runs FUZZ_SECONDS=20 (3 targets, about 1.5 minutes). The
# long run (docs/testing.md): make fuzz FUZZ_SECONDS=5400 FUZZ_JOBS=2, which
# runs the targets in libFuzzer's fork mode on 2 processes.
FUZZ_SECONDS ?= 30
FUZZ_JOBS ?= 1
# make soak: 8 method instances on 4 threads in a C driver linked against the
# runtime, SOAK_CALLS calls in all over four runs (the demo,
# mobilenet_v3_small and transformer_encoder_classifier each alone on the
# runtime its app ships, then all three on //runtime:full); every output is
# checked bit for bit, and the PAL's live bytes and the process's anonymous
# resident memory must not grow after warm-up (no leak). Prints calls per
# second and memory per run and model (about 2.5 minutes on 2 cores once the
# runtimes are built; numbers in docs/testing.md, "Soak"). make test runs a
# short form: 4,000 calls on the full runtime (tests/soak).
SOAK_CALLS ?= 100000
.PHONY: sanitize fuzz soak zoo lint lint-fix

sanitize: setup
	$(IN_ROOT) PARE_SANITIZE_FULL_ONLY=$(SANITIZE_FULL_ONLY) bash tools/sanitize.sh $(SANITIZE_TESTS)

fuzz: setup
	$(IN_ROOT) FUZZ_JOBS=$(FUZZ_JOBS) bash tools/fuzz.sh $(FUZZ_SECONDS)

soak: setup
	$(IN_ROOT) $(PYTHON) -m tools.soak --calls $(SOAK_CALLS)

# make lint: clang-format, buildifier and ruff (format and check) over every
# tracked source file; any finding fails. CI runs it. `make lint-fix`
# rewrites what can be fixed (docs/testing.md, "Lint").
lint: setup
	$(IN_ROOT) bash tools/lint.sh

lint-fix: setup
	$(IN_ROOT) bash tools/lint.sh --fix

# make zoo: every model of models/zoo/ traced, built for the three platforms
# and checked on x86_64 and android_arm64 (qemu); updates models/zoo/results.json
# and docs/model_zoo.md (about half an hour on 2 cores). make test runs a fast
# subset (tests/zoo/).
zoo: setup
	$(IN_ROOT) $(PYTHON) -m tools.zoo

# make llama-cpp: .venv-llama-cpp, llama.cpp for the LLM peer benchmark
# (python -m tools.bench.llm_weights --llama-cpp; docs/llm.md). Not in setup:
# pip builds llama.cpp from source (about 15 minutes on 2 cores).
.PHONY: llama-cpp
llama-cpp: setup
	$(IN_ROOT) bash tools/setup_llama_cpp.sh
