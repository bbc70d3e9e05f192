"""tools/platforms.py reads platforms/table.bzl, the one platform table, for Python tools."""

from __future__ import annotations

import pytest

from tools.platforms import PLATFORMS, SHIPPED_PLATFORMS, read_table


def test_the_table_rows_as_bazel_has_them():
    assert SHIPPED_PLATFORMS == ("android_arm64", "ios_arm64", "linux_x86_64")
    by_name = {p.name: p for p in PLATFORMS}
    assert by_name["ios_arm64"].shared_ext == ".dylib" and by_name["ios_arm64"].flavor == "ios"
    assert not by_name["linux_arm64"].ship  # the emulator harness's helper platform
    assert "@platforms//cpu:arm64" in by_name["android_arm64"].constraints


def test_an_unreadable_row_is_named(tmp_path):
    bad = tmp_path / "table.bzl"
    bad.write_text('PLATFORMS = [\n    struct(name = "x", flavor = FLAVOR),\n]\n')
    with pytest.raises(ValueError, match=r"table.bzl:2: unreadable platform row"):
        read_table(bad)
    bad.write_text("ROWS = []\n")
    with pytest.raises(ValueError, match=r"no `PLATFORMS = \[struct\(...\), ...\]` found"):
        read_table(bad)
