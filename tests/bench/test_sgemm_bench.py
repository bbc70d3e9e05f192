"""python -m tools.bench.sgemm: the product it times is right, the peak it
compares with is computed as stated, bad arguments are one-line errors
(never how fast anything is: that is the benchmark's job)."""

from __future__ import annotations

import pytest
import torch

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


def test_without_a_peak_the_fraction_is_none(runtime):
    result = sgemm.bench_size(runtime, 9, rounds=1, peak_gflops=None)
    assert result.gflops > 0 and result.peak_gflops is None and result.fraction_of_peak is None


# Register-only GFLOP/s as cpu_peak prints them (clock_ghz, fma, sse, avx512).
XEON = sgemm.Peak(15.2, 93.4, 46.7, 186.1)  # Pare issue 47's AVX-512 Xeon (its clock misread; GFLOP/s illustrative)
ZEN3 = sgemm.Peak(3.21, 102.7, 51.3)  # no AVX-512: avx512_gflops 0


@pytest.mark.parametrize(
    "peak,kernel_isa,expected,name",
    [
        (XEON, "x86_64_v4", 186.1, "AVX-512 FMA (avx512_gflops)"),
        (XEON, "x86_64_v3", 93.4, "AVX2 FMA (fma_gflops)"),  # an AVX-512 CPU capped at v3: not 186.1
        (XEON, "x86_64_baseline", 46.7, "SSE2 mul+add (sse_gflops)"),
        (ZEN3, "x86_64_v3", 102.7, "AVX2 FMA (fma_gflops)"),
        (ZEN3, "x86_64_baseline", 51.3, "SSE2 mul+add (sse_gflops)"),
    ],
)
def test_the_peak_is_the_measured_one_of_the_kernels_isa(peak, kernel_isa, expected, name):
    gflops, source = sgemm.peak_for_isa(peak, kernel_isa)
    assert gflops == expected  # the measurement itself: no clock, no FLOP per cycle
    assert source == f"measured register-only {name}"


@pytest.mark.parametrize(
    "peak,kernel_isa,reason",
    [
        (ZEN3, "x86_64_v4", "n/a: cpu_peak measured no AVX-512 FMA on this CPU (avx512_gflops = 0.0)"),
        (sgemm.Peak(2.0, 0.0, 16.0), "x86_64_v3", "n/a: cpu_peak measured no AVX2 FMA on this CPU (fma_gflops = 0.0)"),
        (ZEN3, "arm64_neon", "n/a: cpu_peak measures x86_64 only, not arm64_neon"),
    ],
)
def test_a_missing_measurement_is_marked_not_available(peak, kernel_isa, reason):
    assert sgemm.peak_for_isa(peak, kernel_isa) == (None, reason)


def test_a_sizes_peak_is_each_figures_best_of_the_runs_beside_it():
    busy_before = sgemm.Peak(1.1, 41.4, 20.4, 78.9)
    quieter_after = sgemm.Peak(1.9, 63.9, 19.8, 196.7)
    assert sgemm.best_of(busy_before, quieter_after) == sgemm.Peak(1.9, 63.9, 20.4, 196.7)
    result = sgemm.SgemmResult(256, 371.0, 90.45, None, None, 1e-7)
    assert sgemm.with_peak(result, 180.7) == sgemm.SgemmResult(256, 371.0, 90.45, 180.7, round(90.45 / 180.7, 4), 1e-7)
    assert sgemm.with_peak(sgemm.with_peak(result, 180.7), None) == result


def test_every_kernel_isa_of_an_x86_64_runtime_has_a_measured_peak():
    # runtime/core/cpu.h's x86_64 levels, as Runtime.kernel_isa names them.
    assert set(sgemm.PEAK_OF_KERNEL_ISA) == {"x86_64_baseline", "x86_64_v3", "x86_64_v4"}
    assert all(field in sgemm.Peak.__dataclass_fields__ for field, _ in sgemm.PEAK_OF_KERNEL_ISA.values())


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--sizes", "0,256"], "sizes must be in 1..8192"),
        (["--sizes", "a"], "not a comma list of integers"),
        (["--isa", "v4"], "invalid choice: 'v4'"),
        (["--sizes", "256", "--mobilenet-v2"], "not allowed with argument"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    assert sgemm.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_mobilenet_v2_shapes_are_its_1x1_convolutions(monkeypatch):
    from tests.conftest import REPO_ROOT

    # As models/bench/mobilenet_v2_224.py builds it (the zoo's helper: //models/zoo is the suite's data).
    monkeypatch.syspath_prepend(str(REPO_ROOT / "models" / "zoo"))
    from _zoo import vision

    module, inputs = vision("mobilenet_v2", 1, size=224)
    seen = []

    def hook(module, args):
        shape = (args[0].shape[-1], module.in_channels, module.out_channels)
        if module.kernel_size == (1, 1) and shape not in seen:
            seen.append(shape)

    for conv in module.modules():
        if isinstance(conv, torch.nn.Conv2d):
            conv.register_forward_pre_hook(hook)
    with torch.no_grad():
        module(*inputs[0])
    assert tuple(seen) == sgemm.MOBILENET_V2_1X1


@pytest.mark.parametrize("side,cin,cout", [(7, 20, 13), (5, 3, 40)])
def test_a_1x1_convolution_is_checked_against_float64_and_reported(runtime, side, cin, cout):
    result = sgemm.bench_conv1x1(runtime, side, cin, cout, rounds=1, peak_gflops=100.0)
    assert (result.side, result.in_channels, result.out_channels) == (side, cin, cout)
    assert result.median_us > 0 and result.max_relative_error <= (cin + 1) * sgemm.EPS32
    flop = 2 * side * side * cin * cout  # per call; median_us is rounded to 0.1 µs, gflops to 0.01
    assert (
        flop / (result.median_us + 0.05) * 1e-3 - 0.01
        <= result.gflops
        <= flop / (result.median_us - 0.05) * 1e-3 + 0.01
    )
    assert result.fraction_of_peak == round(result.gflops / 100.0, 4)
