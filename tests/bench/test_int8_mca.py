"""tools.bench.int8_mca: the arm64 int8 micro-kernels' inner loops compile,
are found in the assembly (SDOT in the dotprod copy, none in the NEON one),
and llvm-mca-16 estimates them on a little and a big core; the CLI prints
the table docs/quantization.md quotes. Static estimates, not timings."""

import pytest

from tests.conftest import require_tool
from tools.bench import int8_mca


@pytest.fixture(scope="module", autouse=True)
def tools():
    require_tool("clang++-16", package="clang-16")
    require_tool("llvm-mca-16", package="llvm-16")


def test_each_kernel_has_its_own_multiply_in_its_inner_loop():
    neon = int8_mca.inner_loop(int8_mca.kernel_assembly("neon (smull/smull2/sadalp)"))
    sdot = int8_mca.inner_loop(int8_mca.kernel_assembly("dotprod (sdot)"))
    # The 4x4 tile per 16 bytes of k: 16 SDOTs; 32 SMULL(2)s and 32 SADALPs.
    assert sdot.count("sdot") == 16 and "smull" not in sdot
    assert "sdot" not in neon and neon.count("smull") == 32 and neon.count("sadalp") == 32
    # 4 weight rows and 4 pixel rows loaded per step, in registers otherwise.
    assert sdot.count("ldr\tq") == 8 and "str" not in sdot


def test_the_columns_loop_is_one_depth_of_the_portable_4x16_tile():
    # arm64_cost's int8 convolutions: per depth, 4 weights broadcast against 16 pixels (4 vectors
    # of int32 lanes): 16 MLAs, in registers (the loop's outer ones spill the sums to the stack).
    loop = int8_mca.columns_loop()
    assert loop.count("mla\t") == 16 and "str" not in loop and "stp" not in loop
    for cpu in ("cortex-a55", "neoverse-n2"):
        assert (
            int8_mca.loop_cycles_per_iteration(int8_mca.COLUMNS, cpu)
            > int8_mca.loop_cycles_per_iteration("dotprod (sdot)", cpu) / int8_mca.TILE_MACS * int8_mca.COLUMNS_MACS
        )


def test_estimates_and_table(capsys):
    rows = int8_mca.estimates(["cortex-a55", "neoverse-n2"])
    assert {(r.kernel, r.cpu) for r in rows} == {
        (k, c) for k in int8_mca.KERNELS for c in ("cortex-a55", "neoverse-n2")
    }
    for r in rows:
        assert 0 < r.macs_per_cycle <= r.peak_macs_per_cycle * 1.01, r
    by = {(r.kernel, r.cpu): r for r in rows}
    for cpu in ("cortex-a55", "neoverse-n2"):
        assert by["dotprod (sdot)", cpu].macs_per_cycle > 2 * by["neon (smull/smull2/sadalp)", cpu].macs_per_cycle
    assert int8_mca.main(["--cpus", "cortex-a55"]) == 0
    out = capsys.readouterr().out
    assert "| dotprod (sdot)" in out and "cortex-a55" in out and "MACs/cycle" in out


def test_unknown_core_is_one_line_error(capsys):
    assert int8_mca.main(["--cpus", "no-such-core"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: llvm-mca-16 failed") and err.count("\n") == 1
