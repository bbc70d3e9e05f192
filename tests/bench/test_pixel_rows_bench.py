"""python -m tools.bench.pixel_rows: each layer runs both ways (the weights
packed as A, and pixel rows on the im2col matrix) at each ISA the runtime
can be capped to, both agree with float64, the table says which way the
exporter chooses, and bad arguments are one-line errors (never how fast
anything is: that is the benchmark's job)."""

from __future__ import annotations

import pytest

from tools.bench import pixel_rows


def test_each_layer_is_timed_both_ways_at_each_isa_and_checked(full_runtime):
    layers = pixel_rows.parse_layers("40x2x2:70/3s1,8x8x8:16/3s2,16x4x4:24/1s2,8x4x4:9/3s1")
    table = pixel_rows.run(full_runtime, layers, ["x86_64_v4", "x86_64_baseline"], rounds=1, cpu=None)
    rows = [line.split() for line in table.splitlines()[3:]]
    assert len(rows) == 4 * 2  # every layer at both caps
    chosen = {row[0]: row[3:5] if row[3] == "pixel" else row[3:4] for row in rows}
    # 4, 16, 4 and 16 output pixels: pixel rows up to 12, the register tile from 16 on.
    assert chosen["40x2x2->70"] == ["pixel", "rows"] and chosen["16x4x4->24"] == ["pixel", "rows"]
    assert chosen["8x8x8->16"] == ["im2col"] and chosen["8x4x4->9"] == ["im2col"]
    assert {row[-6] for row in rows} >= {"x86_64_baseline"}  # the cap took
    for row in rows:
        assert all(float(v) > 0 for v in row[-5:-3]) and row[-3].endswith("x")
        assert all(float(v) < 1e-5 for v in row[-2:])  # both agree with float64


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--layers", "16x8x8"], "'16x8x8' is not CxHxW:O/KsS"),
        (["--layers", "16x8x8:4/3"], "'16x8x8:4/3' is not CxHxW:O/KsS"),
        (["--layers", "0x8x8:4/3s1"], "'0x8x8:4/3s1' has a size below 1"),
        (["--runtime", "/nonexistent/libpare.so"], "no runtime at /nonexistent/libpare.so"),
        (["--layers", "8x2x2:8/3s1", "--isa", "arm64_neon", "--rounds", "1"], "--isa arm64_neon:"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message, full_runtime):
    if "--runtime" not in argv:
        argv = [*argv, "--runtime", str(full_runtime)]
    assert pixel_rows.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
