"""tools.bench.arm64_mca: each float hot loop of the arm64 build is found in
the assembly of its own runtime source (the GEMM tile's 12 FMLAs, the 3x3
depthwise step's 36), llvm-mca-16 estimates it on a little and a big core
within the core's peak, the bottleneck reads "latency" only when no unit is
busy for most of the loop, and the CLI prints the table docs/performance.md
quotes or a one-line error. Static estimates, not timings."""

import pytest

from tests.conftest import require_tool
from tools.bench import arm64_mca


@pytest.fixture(scope="module", autouse=True)
def tools():
    require_tool("clang++-16", package="clang-16")
    require_tool("llvm-mca-16", package="llvm-16")
    require_tool("llvm-cxxfilt-16", package="llvm-16")


def _count(loop: str, mnemonic: str) -> int:
    return sum(line.split()[0] == mnemonic for line in loop.splitlines())


def test_loops_are_the_kernels_own():
    gemm = arm64_mca.kernel_loop("gemm 6x8 tile")
    # Two depth steps of the 6 x (2 vectors) register tile: 12 FMLAs each, by element of A's vectors.
    assert _count(gemm, "fmla") == 24 and "str" not in gemm
    assert sum(".s[" in line for line in gemm.splitlines() if line.startswith("fmla")) == 24
    for stride in (1, 2):
        row = arm64_mca.kernel_loop(f"depthwise 3x3 stride {stride}")
        assert _count(row, "fmla") == 36, row  # the 3x3 taps, unrolled, for each of 4 output vectors
    assert _count(arm64_mca.kernel_loop("winograd 4x4 output"), "fadd") > 0
    copy = arm64_mca.kernel_loop("im2col rows")
    assert any(line.split()[0] in ("str", "stur", "stp") for line in copy.splitlines())


def test_estimates_and_table(capsys):
    rows = arm64_mca.estimates(["cortex-a55", "neoverse-n2"])
    assert {(r.kernel, r.cpu) for r in rows} == {
        (k, c) for k in arm64_mca.KERNELS for c in ("cortex-a55", "neoverse-n2")
    }
    for r in rows:
        assert r.cycles_per_iteration > 0, r
        if arm64_mca.KERNELS[r.kernel].peak is None:
            assert r.use is None
        else:
            assert 0 < r.use <= 1.01, r
    assert arm64_mca.main(["--cpus", "cortex-a55", "--kernels", "gemm 6x8 tile"]) == 0
    out = capsys.readouterr().out
    assert "| gemm 6x8 tile | cortex-a55 |" in out and "of peak" in out


def test_bottleneck_names_a_busy_unit_or_latency():
    assert arm64_mca.bottleneck(arm64_mca.Mca(10.0, "N2UnitV0", 9.5)) == "N2UnitV0 (9.5)"
    assert arm64_mca.bottleneck(arm64_mca.Mca(64.0, "CortexA55UnitLd", 9.0)).startswith("latency (busiest: ")


@pytest.mark.parametrize(
    "argv,fragment",
    [
        (["--kernels", "gemm 9x9 tile"], "unknown kernel 'gemm 9x9 tile'; the kernels are gemm 6x8 tile"),
        (["--cpus", "no-such-core", "--kernels", "gemm 6x8 tile"], "error: llvm-mca-16 failed"),
    ],
)
def test_errors_are_one_line(capsys, argv, fragment):
    assert arm64_mca.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err
