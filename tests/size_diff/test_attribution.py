"""Attribution of section bytes to ops / dtype cases / classes / core / other / unattributed.

The invariant: the buckets sum to the section total exactly (residual 0), on
every platform, whatever the symbols overlap; ops and dtype cases land where
expected_symbols.json says.
"""

from __future__ import annotations

import pytest

from tests.verify.conftest import synthetic_arm64_library
from tools.platforms import SHIPPED_PLATFORMS
from tools.size_diff import SizeDiffError, attribute
from tools.size_diff.attribution import BUCKETS, check_twins
from tools.size_diff.report import build_report, measure
from tools.verify import load_expected, read_binary
from tools.verify.binary import Section, Symbol

PLATFORMS = SHIPPED_PLATFORMS


@pytest.mark.parametrize("variant", ["clean", "grown", "leaky_kernel", "leaky_export"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_buckets_sum_to_section_total(fixture_build, variant, platform):
    _, p = measure(fixture_build.size_run(variant, platform))
    a = p["attribution"]
    total = sum(sum(a[b].values()) if isinstance(a[b], dict) else a[b] for b in BUCKETS)
    assert a["residual"] == 0 and total == p["section_bytes"] == sum(s["bytes"] for s in p["sections"])
    assert all(s["attributed"] + s["unattributed"] == s["bytes"] and s["unattributed"] >= 0 for s in p["sections"])
    assert p["file_section_bytes"] + p["outside_sections_bytes"] == p["file_bytes"]
    # Every listed symbol's bytes are counted exactly once.
    assert sum(s["bytes"] for s in p["symbols"]) + a["unattributed"] == p["section_bytes"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ops_dtypes_classes_land_in_their_buckets(fixture_build, platform):
    _, clean = measure(fixture_build.size_run("clean", platform))
    a = clean["attribution"]
    assert {k for k, v in a["op"].items() if v} == {"aten::add.Tensor", "aten::relu"}
    assert a["op"]["aten::mm"] == 0  # listed, so diffs show it appear
    assert {k for k, v in a["kernel_dtype"].items() if v} == {
        "add_kernel/Float",
        "add_kernel/Long",
        "relu_kernel/Float",
    }
    assert {k for k, v in a["class"].items() if v} == {"LinearPackedParams"}
    assert a["core"] > 0  # pare_run_kernel, the registry table, ...
    # An op's cost includes the dtype cases instantiated from its kernel.
    inc = clean["op_inclusive"]
    assert (
        inc["aten::add.Tensor"]
        == a["op"]["aten::add.Tensor"] + a["kernel_dtype"]["add_kernel/Float"] + a["kernel_dtype"]["add_kernel/Long"]
    )
    assert inc["aten::relu"] == a["op"]["aten::relu"] + a["kernel_dtype"]["relu_kernel/Float"]
    # Code is (almost) all attributed; linker-made sections go to core as what they are (test_causes.py).
    sections = {s["name"]: s for s in clean["sections"]}
    text = sections["__TEXT,__text" if platform == "ios_arm64" else ".text"]
    assert text["unattributed"] <= 0.05 * text["bytes"]
    if platform != "ios_arm64":
        dynsym = [r for r in clean["symbols"] if r["section"] == ".dynsym"]
        assert [(r["bucket"], r["kind"]) for r in dynsym] == [("core", "linker table")]


def test_report_is_deterministic_and_path_free(fixture_build):
    runs = [fixture_build.size_run("clean", p) for p in PLATFORMS]
    a, b = build_report("//x:clean", runs), build_report("//x:clean", runs)
    assert a == b
    assert "/" not in str(a["platforms"]["ios_arm64"]["expected_symbols"])
    assert str(fixture_build.root) not in str(a)


# --- synthetic binaries: overlaps, aliases, gaps, no expected file ---


def _sym(name, address, size, section=".text", source="st_size"):
    return Symbol(name, name, address, size, source, section, True, False)


def _binary(symbols, sections):
    return synthetic_arm64_library(path="synthetic.so", file_bytes=4096, sections=sections, symbols=symbols)


def test_overlaps_and_aliases_count_each_byte_once(expected_clean):
    exp = load_expected(expected_clean)
    text = Section(".text", 0x1000, 0x100, True, True)
    rodata = Section(".rodata", 0x2000, 0x40, True, False)
    dyn = Section(".dynsym", 0x3000, 0x30, True, False)
    case = "pare::Error pare::dispatch_case<pare::tags::add_kernel, float, F>(F&)"
    symbols = [
        _sym("pare::kernels::aten_add_Tensor(pare::KernelContext&, pare::Tensor*)", 0x1000, 0x40),
        _sym("pare_alias_of_add", 0x1000, 0x40),  # an alias: the op keeps the bytes
        _sym(case, 0x1030, 0x30),  # overlaps the kernel's tail by 0x10
        _sym("pare::classes::LinearPackedParams::apply(float) const", 0x1080, 0x10),
        _sym("memcpy", 0x10A0, 0x20),
        _sym("pare::kTable", 0x2000, 0x20, ".rodata"),
        _sym("pare::overruns_section()", 0x10F0, 0x40),  # clipped to the section end
    ]
    a = attribute(_binary(symbols, [text, rodata, dyn]), exp)
    assert a.keyed["op"]["aten::add.Tensor"] == 0x40
    assert a.keyed["kernel_dtype"]["add_kernel/Float"] == 0x20
    assert a.keyed["class"]["LinearPackedParams"] == 0x10
    assert a.other == 0x20
    assert a.core == 0x20 + 0x10  # the table, the clipped function; the alias got 0
    assert a.unattributed == (0x100 - 0x40 - 0x20 - 0x10 - 0x20 - 0x10) + (0x40 - 0x20) + 0x30
    assert a.residual == 0 and a.section_bytes == 0x100 + 0x40 + 0x30
    assert next(s for s in a.symbols if s.name == "pare_alias_of_add").bytes == 0


def test_same_address_goes_to_the_most_specific_bucket(expected_clean):
    exp = load_expected(expected_clean)
    text = Section(".text", 0, 0x20, True, True)
    symbols = [_sym("pare_entry", 0, 0x20), _sym("pare::classes::LinearPackedParams::run()", 0, 0x20)]
    a = attribute(_binary(symbols, [text]), exp)
    assert a.keyed["class"]["LinearPackedParams"] == 0x20 and a.core == 0


def test_without_expected_everything_is_core_other_or_unattributed():
    text = Section(".text", 0, 0x30, True, True)
    symbols = [_sym("pare::kernels::aten_relu(pare::Ctx&)", 0, 0x10), _sym("helper", 0x10, 0x10)]
    a = attribute(_binary(symbols, [text]), None)
    assert (a.core, a.other, a.unattributed, a.residual) == (0x10, 0x10, 0x10, 0)
    assert a.op_inclusive == {}


def test_twins_must_match(fixture_build):
    android = read_binary(fixture_build.lib("clean", "android_arm64"), demangle=False)
    other = read_binary(fixture_build.lib("grown", "android_arm64", unstripped=True), demangle=False)
    with pytest.raises(SizeDiffError, match="not a stripped/unstripped pair"):
        check_twins(android, other)
    check_twins(android, read_binary(fixture_build.lib("clean", "android_arm64", unstripped=True), demangle=False))
