"""python -m tools.bench.sgemm: the product it times is right, the peak it
compares with is computed as stated, bad arguments are one-line errors
(never how fast anything is: that is the benchmark's job)."""

from __future__ import annotations

import pytest

from pare.runtime import Runtime
from tools.bench import sgemm


@pytest.fixture(scope="module")
def runtime(full_runtime) -> Runtime:
    return Runtime(full_runtime)


@pytest.mark.parametrize("n", [5, 17, 65])
def test_a_size_is_checked_against_float64_and_reported(runtime, n):
    result = sgemm.bench_size(runtime, n, rounds=1, peak_gflops=100.0)
    assert result.n == n and result.median_us > 0 and result.gflops > 0
    assert result.max_relative_error <= n * sgemm.EPS32
    assert result.fraction_of_peak == round(result.gflops / 100.0, 4)


@pytest.mark.parametrize(
    "clock,fma,sse,avx512,isa,expected",
    [
        (3.2, 102.0, 49.0, 0.0, "x86_64_v3", 32),  # 2 FMA units x 8 lanes x 2
        (3.2, 102.0, 49.0, 0.0, "x86_64_baseline", 16),  # 4-lane multiply + add, 2 each per cycle
        (3.0, 48.0, 24.0, 0.0, "x86_64_v3", 16),  # 128-bit FMA units (Zen 1)
        (1.0, 300.0, 90.0, 0.0, "x86_64_v3", 32),  # a clock measured low (a shared core): capped
        (3.7, 118.0, 59.0, 236.0, "x86_64_v4", 64),  # 2 FMA units x 16 lanes x 2 (Zen 5)
        (3.5, 112.0, 56.0, 112.0, "x86_64_v4", 32),  # 512-bit FMAs as two 256-bit halves (Zen 4)
    ],
)
def test_peak_is_the_clock_times_the_flop_per_cycle(clock, fma, sse, avx512, isa, expected):
    per_cycle, peak = sgemm.Peak(clock, fma, sse, avx512).for_isa(isa)
    assert per_cycle == expected and peak == pytest.approx(clock * expected)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--sizes", "0,256"], "sizes must be in 1..8192"),
        (["--sizes", "a"], "not a comma list of integers"),
        (["--isa", "v4"], "invalid choice: 'v4'"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    assert sgemm.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
