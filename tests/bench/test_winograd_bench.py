"""python -m tools.bench.winograd: each layer runs the three ways (im2col,
F(2x2, 3x3), F(4x4, 3x3)), all agree with float64, the table says which way the exporter chooses, and bad
arguments are one-line errors (never how fast anything is: that is the
benchmark's job)."""

from __future__ import annotations

import pytest

from tools.bench import winograd


def test_each_layer_is_timed_each_way_and_checked(full_runtime):
    table = winograd.run(full_runtime, winograd.parse_layers("16x8x8:17,16x4x4,8x16x16"), rounds=1, cpu=None)
    rows = {line.split()[0] + " " + line.split()[2]: line.split() for line in table.splitlines()[3:]}
    assert set(rows) == {"16x8x8 17", "16x4x4 16", "8x16x16 8"}
    # 16 2x2 tiles but 4 4x4 ones; 4 2x2 tiles; 16 4x4 tiles.
    assert rows["16x8x8 17"][3] == "F(2x2,3x3)" and rows["16x4x4 16"][3] == "im2col"
    assert rows["8x16x16 8"][3] == "F(4x4,3x3)"
    for row in rows.values():
        assert all(float(v) > 0 for v in row[4:7]) and row[7].endswith("x") and row[8].endswith("x")
        assert all(float(v) < 1e-5 for v in row[9:12])  # each agrees with float64


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--layers", "16x8"], "'16x8' is not CxHxW or CxHxW:O"),
        (["--layers", "16x8x8:a"], "'16x8x8:a' is not CxHxW"),
        (["--layers", "0x8x8"], "'0x8x8' has a size below 1"),
        (["--runtime", "/nonexistent/libpare.so"], "no runtime at /nonexistent/libpare.so"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    assert winograd.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
