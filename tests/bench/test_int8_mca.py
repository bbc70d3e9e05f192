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


def test_the_columns_loops_are_one_quad_of_the_8x12_tile():
    # arm64_cost's int8 convolutions: qgemm_arm64_columns.inc's tile, per quad of k. SDOT: 24 by
    # element (8 channels x 3 vectors of 4 pixels), 2 weight and 3 pixel vectors loaded, no spill.
    sdot = int8_mca.columns_loop(int8_mca.COLUMNS)
    assert sdot.count("sdot\t") == 24 and "smull" not in sdot
    assert "str" not in sdot and "stp" not in sdot
    # NEON: one vector of 4 pixels against the 8 channels, 16 SMULL(2) and 16 SADALP.
    neon = int8_mca.columns_loop(int8_mca.COLUMNS_NEON)
    assert neon.count("smull") == 16 and neon.count("sadalp") == 16 and "sdot" not in neon
    assert "str" not in neon and "stp" not in neon
    for cpu in ("cortex-a55", "neoverse-n2"):
        sdot_rate = int8_mca.COLUMNS_MACS / int8_mca.loop_cycles_per_iteration(int8_mca.COLUMNS, cpu)
        neon_rate = int8_mca.COLUMNS_LOOPS[int8_mca.COLUMNS_NEON][2] / int8_mca.loop_cycles_per_iteration(
            int8_mca.COLUMNS_NEON, cpu
        )
        assert sdot_rate > 3 * neon_rate


def test_the_dynamic_linear_loops_are_its_16_channel_blocks():
    # pare::qlinear_dynamic on arm64 (qgemm_arm64_dynamic.inc). SDOT: 4 quads of 4 rows per
    # iteration, 64 SDOTs by element into 16 accumulators; NEON: one quad of 2 rows, 16 SMULL(2)
    # and 16 SADALP. Neither spills.
    sdot = int8_mca.columns_loop(int8_mca.DYNAMIC)
    assert sdot.count("sdot\t") == 64 and "smull" not in sdot
    neon = int8_mca.columns_loop(int8_mca.DYNAMIC_NEON)
    assert neon.count("smull") == 16 and neon.count("sadalp") == 16 and "sdot" not in neon
    for loop in (sdot, neon):
        assert "str" not in loop and "stp" not in loop
    for cpu in ("cortex-a55", "neoverse-n2"):
        rates = [
            int8_mca.RUNTIME_LOOPS[n][2] / int8_mca.loop_cycles_per_iteration(n, cpu)
            for n in (int8_mca.DYNAMIC, int8_mca.DYNAMIC_NEON)
        ]
        assert rates[0] > 3 * rates[1], (cpu, rates)


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
    assert f"| {int8_mca.COLUMNS}" in out and f"| {int8_mca.COLUMNS_NEON}" in out
    assert f"| {int8_mca.DYNAMIC}" in out and f"| {int8_mca.DYNAMIC_NEON}" in out


def test_unknown_core_is_one_line_error(capsys):
    assert int8_mca.main(["--cpus", "no-such-core"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: llvm-mca-16 failed") and err.count("\n") == 1
