"""python -m tools.bench.winograd: each layer runs both ways, the two agree
with float64, the table says which way the exporter chooses, and bad
arguments are one-line errors (never how fast anything is: that is the
benchmark's job)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import bazel_build
from tools.bench import winograd


@pytest.fixture(scope="module")
def full_lib() -> Path:
    value = os.environ.get("PARE_RUNTIME_LIB")
    return Path(value) if value else bazel_build("//runtime:full") / "runtime/full/linux_x86_64/libpare_full.so"


def test_each_layer_is_timed_both_ways_and_checked(full_lib):
    table = winograd.run(full_lib, winograd.parse_layers("16x8x8:17,16x4x4"), rounds=1, cpu=None)
    rows = {line.split()[0] + " " + line.split()[2]: line.split() for line in table.splitlines()[3:]}
    assert set(rows) == {"16x8x8 17", "16x4x4 16"}
    assert rows["16x8x8 17"][3] == "winograd" and rows["16x4x4 16"][3] == "im2col"  # 16 tiles vs 4
    for row in rows.values():
        assert float(row[4]) > 0 and float(row[5]) > 0 and row[6].endswith("x")
        assert float(row[7]) < 1e-5 and float(row[8]) < 1e-5  # both agree with float64


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
