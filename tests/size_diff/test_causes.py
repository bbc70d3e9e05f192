"""The bytes between symbols, attributed to what caused them (tools/size_diff/causes.py),
and `report --explain`.

Synthetic libraries and sources with known contents check each rule; the
fixture runtimes check that the identity holds (residual 0) and that what no
rule explains stays under 5% on every platform.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from pare import messages
from tests.verify.conftest import synthetic_arm64_library
from tools.message_pairs import render
from tools.platforms import SHIPPED_PLATFORMS
from tools.size_diff import SizeDiffError, attribute
from tools.size_diff.attribution import BUCKETS
from tools.size_diff.causes import GapExplainer, LibraryBytes, SourceOwners
from tools.size_diff.cli import main
from tools.size_diff.explain import explain
from tools.size_diff.report import build_report
from tools.verify import load_expected
from tools.verify.binary import Section, Symbol

KERNELS = """\
namespace pare::kernels {

Error aten_add_Tensor(KernelContext& ctx, ValueSpan in, ValueSpan out) {
  PARE_FAIL(ctx, Error::InvalidArgument, "add: sizes %s and %s differ");
}

static Error check_add(KernelContext& ctx) {
  return PARE_FAIL(ctx, Error::InvalidArgument, "add helper says %d");
}

}  // namespace pare::kernels
"""
SHARED = """\
Error aten_add_Tensor(KernelContext& ctx, ValueSpan in, ValueSpan out);

Error aten_relu(KernelContext& ctx, ValueSpan in, ValueSpan out) { return Error::Ok; }

Error aten_add_Tensor(KernelContext& ctx, ValueSpan in, ValueSpan out) { return Error::Ok; }

Error both_use(KernelContext& ctx) {
  return PARE_FAIL(ctx, Error::InvalidArgument, "shared by two ops");
}
"""
CLASSES = """\
Error LinearPackedParams::init(KernelContext& ctx) {
  PARE_FAIL(ctx, Error::InvalidArgument, "in_features %lld");
  const char* what = "W^T " "packed";
}
"""
EXECUTOR = """\
Error load(Ctx& ctx) {
  PARE_FAIL(ctx, Error::InvalidProgram, "bad program %s");  // "not a literal in a comment"
  const char* name = "Float";
}
"""


@pytest.fixture()
def runtime_dir(tmp_path) -> Path:
    root = tmp_path / "runtime"
    for rel, text in {
        "kernels/binary_math/add_mul.cc": KERNELS,
        "kernels/unary_math/shared.cc": SHARED,
        "kernels/prepacked/packed_params.cc": CLASSES,
        "executor/program.cc": EXECUTOR,
        "kernels/unary_math/names.cc": 'Error aten_relu(KernelContext& ctx) { name = "Float"; }\n',
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_string_owners_follow_the_function_that_holds_them(expected_clean, runtime_dir):
    owners = SourceOwners(load_expected(expected_clean), runtime_dir)

    def who(text):
        o = owners.owner(text)
        return None if o is None else (o.bucket, o.key)

    assert who("add: sizes %s and %s differ") == ("op", "aten::add.Tensor")  # in the op's kernel
    assert who("add helper says %d") == ("op", "aten::add.Tensor")  # a helper of the file's one op
    assert who("shared by two ops") == ("shared_kernels", None)  # a kernel helper two ops share
    assert who("in_features %lld") == ("class", "LinearPackedParams")
    assert who("W^T packed") == ("class", "LinearPackedParams")  # adjacent literals joined
    assert who("bad program %s") == ("core", None)
    assert who("Float") == ("core", None)  # core uses it too
    assert who("aten::relu") == ("op", "aten::relu")  # the registry's name of a selected op
    assert who("aten::mm") is None  # not selected
    assert who("not a literal in a comment") is None
    reason = owners.owner("add: sizes %s and %s differ").reason
    assert reason.startswith("error message at runtime/kernels/binary_math/add_mul.cc:4, in aten_add_Tensor")


def test_a_packed_message_is_shown_as_its_text_and_owned_like_the_literal(expected_clean, runtime_dir):
    # A runtime with messages stores each format packed (runtime/core/message_text.h), as a symbol whose
    # template arguments are the packed bytes: signed chars on x86_64, unsigned on arm64.
    formats = ["add: sizes %s and %s differ", "add helper says %d", "shared by two ops", "bad program %s"]
    pairs = messages.train_pairs(formats, 16)
    (runtime_dir / "core").mkdir()
    (runtime_dir / "core" / "message_pairs.inc").write_text(render(pairs))
    exp = load_expected(expected_clean)
    gaps = GapExplainer(None, SourceOwners(exp, runtime_dir))
    packed = messages.pack("add helper says %d", pairs)
    assert len(packed) < len("add helper says %d") and messages.unpack(packed, pairs) == "add helper says %d"
    for signed in (True, False):
        chars = ", ".join(f"(char){b - 256 if signed and b >= 0x80 else b}" for b in packed)
        name, owner = gaps.packed_message(f"pare::detail::PackedText<{chars}>::text")
        assert name == '"add helper says %d"'
        assert (owner.bucket, owner.key) == ("op", "aten::add.Tensor")
        assert owner.reason.startswith("packed error message at runtime/kernels/binary_math/add_mul.cc:8")
    # Any other symbol is not a message; nor is one packed with another table (a code past its rows).
    assert gaps.packed_message("pare::kernels::aten_relu(pare::KernelContext&)") is None
    assert gaps.packed_message("pare::detail::PackedText<(char)-1>::text") is None
    # In an attribution the symbol's bytes are the row of its text.
    rodata = Section(".rodata", 0x2000, 0x20, True, False)
    chars = ", ".join(f"(char){b}" for b in packed)
    binary = synthetic_arm64_library(
        path="synthetic.so",
        file_bytes=4096,
        sections=(rodata,),
        symbols=[_sym(f"pare::detail::PackedText<{chars}>::text", 0x2000, len(packed) + 1, ".rodata")],
    )
    lib = _Bytes({".rodata": packed + b"\0" * (0x20 - len(packed))}, {})
    a = attribute(binary, exp, gaps=GapExplainer(lib, SourceOwners(exp, runtime_dir)))
    row = next(r for r in a.symbols if r.name == '"add helper says %d"')
    assert (row.bytes, row.bucket, row.kind) == (len(packed) + 1, "op", "string")
    assert a.residual == 0


def _sym(name, address, size, section=".text"):
    return Symbol(name, name, address, size, "st_size", section, True, False)


class _Bytes(LibraryBytes):
    """Section contents and relocations given directly instead of read from a file."""

    def __init__(self, contents, relocations):
        self.contents = contents
        self.relocations = defaultdict(list, relocations)
        self._targets = sorted({t: loc for loc, t in sum(relocations.values(), [])}.items())


def test_gaps_go_to_their_causes_and_the_identity_holds(expected_clean, runtime_dir):
    exp = load_expected(expected_clean)
    text = Section(".text", 0x1000, 0x40, True, True)
    rodata = Section(".rodata", 0x2000, 0x40, True, False)
    table = Section(".data.rel.ro", 0x3000, 0x10, True, False)
    dynsym = Section(".dynsym", 0x400, 0x30, True, False)
    rela = Section(".rela.dyn", 0x500, 0x30, True, False)
    strings = b"add helper says %d\0aten::relu\0\x01\x02\x03\0" + b"\0" * 3  # 19 + 11 + 4 + 3 padding
    rodata_bytes = strings + b"\0" * (0x30 - len(strings)) + b"K" * 0x10
    symbols = [
        _sym("pare::kernels::aten_add_Tensor(pare::KernelContext&)", 0x1000, 0x1C),
        _sym("pare::kernels::aten_relu(pare::KernelContext&)", 0x1020, 0x20),  # 4 bytes of padding before it
        _sym("pare::kTable", 0x2030, 0x10, ".rodata"),
        _sym("pare::(anonymous namespace)::kKernels", 0x3000, 0x10, ".data.rel.ro"),
    ]
    binary = synthetic_arm64_library(
        path="synthetic.so", file_bytes=8192, sections=(dynsym, rela, text, rodata, table), symbols=symbols
    )
    lib = _Bytes(
        {".rodata": rodata_bytes, ".data.rel.ro": b"\0" * 0x10},
        {".rela.dyn": [(0x3000, 0x2013), (0x3008, 0x2000), (0x600, 0x1000)]},
    )
    a = attribute(binary, exp, gaps=GapExplainer(lib, SourceOwners(exp, runtime_dir)))
    rows = {r.name: r for r in a.symbols}
    assert a.residual == 0
    assert rows['"add helper says %d"'].bucket == "op" and rows['"add helper says %d"'].kind == "string"
    assert rows['"aten::relu"'].key == "aten::relu"
    pad = rows["padding before pare::kernels::aten_relu(pare::KernelContext&)"]
    assert (pad.bytes, pad.key, pad.kind) == (4, "aten::relu", "padding")
    assert rows[".dynsym"].bucket == "core" and rows[".dynsym"].kind == "linker table"
    # Two of the three relocations fix kKernels' pointers, one a word outside symbols: 0x30 bytes shared 2:1.
    relocs = {r.name: r.bytes for r in a.symbols if r.kind == "relocations"}
    assert relocs == {
        "relocations of pare::(anonymous namespace)::kKernels": 0x20,
        "relocations of words outside any symbol (.got, unnamed pointer tables)": 0x10,
    }
    # Left: the binary bytes \x01\x02\x03\0, which no rule explains. The 14 zeros after them end at
    # kTable (16-aligned): its padding.
    assert a.unattributed == 4
    assert rows["padding before pare::kTable"].bytes == 0x30 - 30 - 4
    total = sum(a.bucket_total(b) for b in BUCKETS)
    assert total == a.section_bytes == sum(s.bytes for s in a.sections)


@pytest.mark.parametrize("variant", ["clean", "grown"])
def test_fixture_runtimes_leave_under_5_percent_unattributed(fixture_build, variant):
    runs = [fixture_build.size_run(variant, p) for p in SHIPPED_PLATFORMS]
    report = build_report("//tests/verify/fixture:" + variant, runs)
    for name, p in report["platforms"].items():
        a = p["attribution"]
        assert a["residual"] == 0, name
        assert a["unattributed"] < 0.05 * p["section_bytes"], (name, a["unattributed"], p["section_bytes"])
        assert sum(r["bytes"] for r in p["symbols"]) + a["unattributed"] == p["section_bytes"]
        # The registry's op names are the ops' bytes.
        names = {r["name"]: r for r in p["symbols"] if r.get("kind") == "string"}
        assert names['"aten::add.Tensor"']["key"] == "aten::add.Tensor"
        if p["format"] == "elf":
            dynsym = next(s for s in p["sections"] if s["name"] == ".dynsym")
            assert dynsym["unattributed"] == 0


@pytest.fixture(scope="module")
def clean_report(fixture_build):
    runs = [fixture_build.size_run("clean", p) for p in SHIPPED_PLATFORMS]
    return build_report("//tests/verify/fixture:clean", runs)


def test_explain_a_symbol_an_entry_a_section_and_a_string(clean_report):
    out = explain(clean_report, "pare_run_kernel")
    assert out.startswith("pare_run_kernel\n")
    assert all(f"  {p}: " in out for p in SHIPPED_PLATFORMS)
    assert "attributed to: core" in out and "every runtime carries it" in out

    out = explain(clean_report, "pare::kernels::aten_relu")  # without its parameters
    assert "attributed to: op aten::relu" in out and "the manifest selects it" in out

    out = explain(clean_report, "aten::add.Tensor")
    assert out.startswith("op aten::add.Tensor\n") and "with its dtype cases" in out and '"aten::add.Tensor"' in out

    out = explain(clean_report, "aten::mm")
    assert "not linked" in out

    out = explain(clean_report, ".dynsym")
    assert "ios_arm64: not in this platform's library" in out and "linker table" not in out.split("\n")[0]
    assert "dynamic linking" in out

    out = explain(clean_report, "aten::relu")
    assert out.startswith("op aten::relu")


def test_explain_an_unknown_name_names_the_closest(clean_report):
    with pytest.raises(SizeDiffError, match=r"nothing named 'aten::rleu' .*closest: .*aten::relu"):
        explain(clean_report, "aten::rleu")


def test_explain_cli_error_is_one_line(fixture_build, capsys):
    rc = main(["report", "--bundle", str(fixture_build.bundle("clean")), "--explain", "pare_run_kernl"])
    err = capsys.readouterr().err
    assert rc == 2
    lines = [ln for ln in err.splitlines() if not ln.startswith("size_diff: measuring")]
    assert len(lines) == 1 and "closest: pare_run_kernel" in lines[0]
