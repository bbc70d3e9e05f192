"""python -m tools.bench.ab: two runtimes side by side (never how fast either is)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT
from tools.bench import ab
from tools.bench.models import load_runtime

MODEL = REPO_ROOT / "tests" / "tracer" / "models" / "tiny_mlp.py"


def test_one_runtime_against_itself_reports_both_medians_and_the_spread(full_runtime):
    runtime = load_runtime(full_runtime)
    r = ab.compare_model({"base": (runtime, full_runtime), "head": (runtime, full_runtime)}, MODEL, rounds=3)
    assert r["base"] > 0 and r["head"] > 0
    assert r["ratio"] == r["head"] / r["base"]
    assert 0 < r["p10"] <= r["p90"]


def test_a_quantized_output_is_checked_in_quantization_steps(full_runtime):
    # PT2E's int8 graph ends in a dequantize: its float output is checked
    # as tools.bench checks it (within 3 steps of the last quantize on
    # 99.9% of elements), not at the float default's atol 1e-4.
    runtime = load_runtime(full_runtime)
    model = REPO_ROOT / "models" / "bench" / "mobilenet_v3_small_224_int8.py"
    r = ab.compare_model({"base": (runtime, full_runtime), "head": (runtime, full_runtime)}, model, rounds=2)
    assert r["base"] > 0 and r["head"] > 0


def test_the_spread_stays_within_the_measured_ratios():
    # One noisy round of three: exclusive deciles would put p10 below zero.
    p10, p90 = ab.ratio_spread([1.0, 1.0, 1.0], [0.5, 1.0, 3.0])
    assert 0.5 <= p10 <= p90 <= 3.0
    assert ab.ratio_spread([2.0], [1.0]) == (0.5, 0.5)


def test_the_cli_prints_a_row_per_model_and_refuses_bad_input_in_one_line(full_runtime, tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "tools.bench.ab", *map(str, args)], cwd=REPO_ROOT, capture_output=True, text=True
        )

    ok = run(full_runtime, full_runtime, MODEL, "--rounds", 2)
    assert ok.returncode == 0, ok.stderr
    assert "| tiny_mlp | " in ok.stdout and "| model | base µs | head µs | head / base |" in ok.stdout
    missing = run(tmp_path / "none.so", full_runtime, MODEL)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "no runtime at" in missing.stderr and "Traceback" not in missing.stderr
    rounds = run(full_runtime, full_runtime, MODEL, "--rounds", 1)
    assert rounds.returncode == 2 and "--rounds 1: give at least 2" in rounds.stderr


def test_a_base_tree_exports_the_base_runtimes_program(full_runtime, tmp_path):
    # --base-tree: the base runtime runs what the base checkout's exporter
    # writes (a format change); this checkout stands in for the base here.
    runtime = load_runtime(full_runtime)
    r = ab.compare_model({"base": (runtime, full_runtime), "head": (runtime, full_runtime)}, MODEL, 2, REPO_ROOT)
    assert r["base"] > 0 and r["head"] > 0
    bad = subprocess.run(
        [sys.executable, "-m", "tools.bench.ab", full_runtime, full_runtime, MODEL, "--base-tree", tmp_path],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "no .venv/bin/python there" in bad.stderr and "Traceback" not in bad.stderr
