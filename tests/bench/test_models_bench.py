"""python -m tools.bench: what it reports and how it fails (never how fast anything is)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, bazel_build
from tools.bench.models import bench_model, load_runtime, table
from tools.bench.timing import BenchError, p90

MODEL = REPO_ROOT / "tests" / "tracer" / "models" / "tiny_mlp.py"


@pytest.fixture(scope="module")
def full_runtime() -> Path:
    value = os.environ.get("PARE_RUNTIME_LIB")
    if value:
        return Path(value)
    return bazel_build("//runtime:full") / "runtime" / "full" / "linux_x86_64" / "libpare_full.so"


def test_a_model_gets_pare_and_torch_numbers_and_the_json_fields(full_runtime):
    result = bench_model(MODEL, load_runtime(full_runtime), full_runtime, rounds=3, threads=1)
    row = result.to_json()
    for key in ("model", "runtime", "threads", "median_us", "p90_us", "arena_bytes", "torch_eager_median_us"):
        assert key in row
    assert 0 < result.median_us <= result.p90_us and 0 < result.torch_eager_median_us
    assert result.arena_bytes > 0
    assert row["pare_over_torch_eager"] == round(result.median_us / result.torch_eager_median_us, 4)
    assert f"| {MODEL} | " in table([result])


def test_p90_is_the_ninetieth_percentile():
    assert p90([float(i) for i in range(1, 11)]) == 9.0
    assert p90([5.0]) == 5.0


def test_cli_writes_json_and_reports_errors_in_one_line(full_runtime, tmp_path):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PARE_RUNTIME_LIB": str(full_runtime)}
    proc = subprocess.run([sys.executable, "-m", "tools.bench", str(MODEL), "--rounds", "2", "--json", str(out)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())
    assert row["threads"] == 1 and row["rounds"] == 2
    assert "Pare / torch" in proc.stdout
    for args, message in [([str(MODEL), "--runtime", str(tmp_path / "none.so")], "no runtime at"),
                          ([str(tmp_path / "missing.py")], "no such model spec"),
                          ([str(MODEL), "--threads", "0"], "must be at least 1")]:
        proc = subprocess.run([sys.executable, "-m", "tools.bench", *args], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_a_library_that_is_not_a_runtime_is_a_user_error(tmp_path):
    bogus = tmp_path / "lib.so"
    bogus.write_text("not a library")
    with pytest.raises(BenchError, match="not a loadable x86_64 Pare runtime"):
        load_runtime(bogus)
