"""tools/verify's pieces: demangling, Mach-O names, ELF vs Mach-O reading, sizes,
expected_symbols.json validation, the platform table, and the fixture's sync with codegen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import codegen
from tests.conftest import require_tool
from tests.verify.conftest import FIXTURE_SRC, synthetic_arm64_library
from tools.platforms import read_table as read_platform_table
from tools.verify import VerifyError, load_expected, read_binary
from tools.verify.demangle import demangle_all, find_cxxfilt, strip_macho_underscore
from tools.verify.expected import classify, parse_expected
from tools.verify.platforms import PLATFORMS

# --- demangling and Mach-O's underscore ---


def test_demangle_batch_keeps_order_and_passes_c_names_through():
    names = [
        "pare_version",
        "_ZN4pare7kernels9aten_reluERNS_13KernelContextEPNS_6TensorE",
        "$x.0",
        "_ZN4pare13dispatch_caseINS_4tags10add_kernelExZNS_7kernels15aten_add_TensorERNS_13KernelContextEPNS_6TensorEE3$_0EENS_5ErrorERT1_",
    ]
    out = demangle_all(names)
    assert out[0] == "pare_version" and out[2] == "$x.0"
    assert out[1] == "pare::kernels::aten_relu(pare::KernelContext&, pare::Tensor*)"
    # LLVM's spelling: clang's lambda names ($_0) and `long long` for Apple's int64_t.
    assert out[3].startswith(
        "pare::Error pare::dispatch_case<pare::tags::add_kernel, long long, "
        "pare::kernels::aten_add_Tensor(pare::KernelContext&, pare::Tensor*)::$_0>"
    )


def test_macho_underscore_is_stripped_once():
    assert strip_macho_underscore(["_pare_version", "__ZN4pare1fEv", "ltmp0", "dyld_stub_binder"]) == [
        "pare_version",
        "_ZN4pare1fEv",
        "ltmp0",
        "dyld_stub_binder",
    ]
    # A Mach-O C++ name demangles only after the underscore is gone.
    assert demangle_all(strip_macho_underscore(["__ZN4pare1fEv"])) == ["pare::f()"]
    assert demangle_all(["__ZN4pare1fEv"]) == ["__ZN4pare1fEv"]


def test_find_cxxfilt_honours_environment(monkeypatch, tmp_path):
    assert Path(find_cxxfilt()).name.startswith(("llvm-cxxfilt", "c++filt"))
    monkeypatch.setenv("PARE_CXXFILT", str(tmp_path / "missing"))
    with pytest.raises(VerifyError, match="PARE_CXXFILT=.*not an executable"):
        find_cxxfilt()
    with pytest.raises(VerifyError, match="--cxxfilt"):
        find_cxxfilt(tmp_path / "missing")


# --- reading ELF and Mach-O ---


def test_elf_and_macho_builds_have_the_same_names(fixture_build):
    names = {}
    for platform in ("android_arm64", "ios_arm64", "linux_x86_64"):
        info = read_binary(fixture_build.lib("clean", platform, unstripped=True))
        names[platform] = {s.demangled for s in info.symbols if "pare" in s.demangled}
    # Same source, so the same pare symbols, but Apple spells int64_t `long long`.
    assert names["android_arm64"] == names["linux_x86_64"]
    to_apple = {n.replace("add_kernel, long,", "add_kernel, long long,") for n in names["android_arm64"]}
    assert names["ios_arm64"] == to_apple
    assert "pare_run_kernel" in names["ios_arm64"]  # no leading underscore


def test_elf_reading(fixture_build):
    info = read_binary(fixture_build.lib("clean", "android_arm64", unstripped=True))
    assert (info.format, info.arch, info.is_shared_library, info.has_symbol_table) == ("elf", "arm64", True, True)
    assert info.needed == ("libc.so", "libm.so", "liblog.so")
    assert info.load_alignments and set(info.load_alignments) == {16384}
    relu = next(s for s in info.symbols if s.demangled.startswith("pare::kernels::aten_relu("))
    assert relu.size_source == "st_size" and relu.size > 0 and relu.section == ".text" and relu.is_function
    assert not relu.is_global  # hidden: local after linking
    assert not any(re.match(r"^\$[xd]", s.name) for s in info.symbols)  # mapping symbols dropped
    stripped = read_binary(fixture_build.lib("clean", "android_arm64"))
    assert not stripped.has_symbol_table and not stripped.symbols
    assert [e.name for e in stripped.exports] == [e.name for e in info.exports]


def test_macho_reading_and_gap_sizes(fixture_build):
    info = read_binary(fixture_build.lib("clean", "ios_arm64", unstripped=True))
    assert (info.format, info.arch, info.build_platform, info.min_os) == ("macho", "arm64", "ios", (15, 0, 0))
    assert info.needed == ("/usr/lib/libSystem.B.dylib",) and info.load_alignments == ()
    text = next(s for s in info.sections if s.name == "__TEXT,__text")
    code = sorted((s for s in info.symbols if s.section == text.name), key=lambda s: s.address)
    # nlist has no sizes: each symbol runs to the next one, the last to the section's end.
    assert all(s.size_source == "gap" for s in code)
    for a, b in zip(code, code[1:]):
        assert a.address + a.size == b.address
    assert code[-1].address + code[-1].size == text.end
    assert sum(s.size for s in code) == text.size - (code[0].address - text.address)
    # Listed twice by the linker, counted once.
    assert len([s for s in info.symbols if s.name == "_ZN4pare12_GLOBAL__N_18kKernelsE"]) == 1
    stripped = read_binary(fixture_build.lib("clean", "ios_arm64"))
    assert not stripped.has_symbol_table  # strip -x keeps only the exports
    assert [e.name for e in stripped.exports] == ["pare_linear_packed_apply", "pare_run_kernel", "pare_version"]
    assert all(e.is_function for e in stripped.exports)


# --- expected_symbols.json ---


def test_fixture_expected_files_match_codegen():
    """The checked-in fixture files are exactly what codegen generates (the schema cannot drift)."""
    inventory = codegen.load_inventory(FIXTURE_SRC / "inventory")
    for name in ("clean", "grown"):
        manifest = codegen.load(FIXTURE_SRC / "manifests" / f"{name}.yaml")
        sel = codegen.resolve(manifest, inventory)
        want = codegen.expected_symbols_json(sel)
        got = (FIXTURE_SRC / "expected" / f"{name}.expected_symbols.json").read_text()
        assert got == want, (
            f"regenerate: .venv/bin/python -m codegen generate --manifest {FIXTURE_SRC}/manifests/{name}.yaml "
            f"--inventory {FIXTURE_SRC}/inventory --out /tmp/x && cp /tmp/x/expected_symbols.json "
            f"{FIXTURE_SRC}/expected/{name}.expected_symbols.json"
        )


def test_load_expected(expected_clean):
    exp = load_expected(expected_clean)
    assert exp.symbol_formats == ("elf", "macho")
    kinds = {(e.kind, e.key): e.expect for e in exp.entries}
    assert kinds[("op", "aten::add.Tensor")] == "present" and kinds[("op", "aten::mm")] == "absent"
    assert kinds[("kernel_dtype", "add_kernel/Long")] == "present"
    assert kinds[("class", "Conv2dPackedParams")] == "absent"
    # Attribution order: a dtype case instantiated from a kernel's lambda names the kernel too.
    name = (
        "pare::Error pare::dispatch_case<pare::tags::add_kernel, float, pare::kernels::aten_add_Tensor"
        "(pare::KernelContext&, pare::Tensor*)::$_0>(pare::kernels::aten_add_Tensor(pare::KernelContext&, "
        "pare::Tensor*)::$_0&)"
    )
    assert classify(exp, "elf", name).key == "add_kernel/Float"
    assert (
        classify(exp, "elf", "pare::kernels::aten_add_Tensor(pare::KernelContext&, pare::Tensor*)").key
        == "aten::add.Tensor"
    )
    assert classify(exp, "elf", "pare_version") is None


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.update(version=7), "schema version 7 is not supported"),
        (lambda d: d.update(symbol_formats=[]), "symbol_formats must be a non-empty list"),
        (lambda d: d.update(operators={}), "operators must be a list"),
        (lambda d: d["operators"][0].update(expect="maybe"), r"operators\[0\].expect is 'maybe'"),
        (lambda d: d["operators"][0]["match"].pop("macho"), r"operators\[0\].match.macho is missing"),
        (
            lambda d: d["kernel_dtypes"][0]["match"].update(elf="(unclosed"),
            r"kernel_dtypes\[0\].match.elf is not a valid regex",
        ),
        (lambda d: d["custom_classes"][0].update(name=""), r"custom_classes\[0\].name must be a non-empty string"),
    ],
)
def test_expected_schema_errors_name_the_field(expected_clean, mutate, message):
    data = json.loads(expected_clean.read_text())
    mutate(data)
    with pytest.raises(VerifyError, match=message) as e:
        parse_expected(data, Path("x.json"))
    assert "regenerate it" in str(e.value)


# --- platforms ---


def test_every_platform_row_is_known_to_the_verifier():
    rows = [(p.name, p.flavor, p.triple) for p in read_platform_table()]
    for name, flavor, triple in rows:
        assert name in PLATFORMS, f"platform {name} (platforms/table.bzl) has no facts in tools/verify/platforms.py"
        facts = PLATFORMS[name]
        assert facts.flavor == flavor
        assert facts.format == ("macho" if flavor == "ios" else "elf")
        assert facts.arch == {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64"}[triple.split("-")[0]]


def test_fat_macho_reads_its_arm64_slice(fixture_build, tmp_path):
    import subprocess as _subprocess

    lipo = require_tool("llvm-lipo-16", "llvm-lipo", package="llvm-16")
    fat = tmp_path / "fat.dylib"
    _subprocess.run(
        [lipo, "-create", str(fixture_build.lib("clean", "ios_arm64", unstripped=True)), "-output", str(fat)],
        check=True,
    )
    assert fat.read_bytes()[:4] == b"\xca\xfe\xba\xbe"
    info = read_binary(fat)
    thin = read_binary(fixture_build.lib("clean", "ios_arm64", unstripped=True))
    assert (info.format, info.arch) == ("macho", "arm64")
    assert [s.demangled for s in info.symbols] == [s.demangled for s in thin.symbols]


def test_partially_stripped_elf_counts_as_stripped(fixture_build, tmp_path):
    import subprocess as _subprocess

    strip = require_tool("llvm-strip-16", "llvm-strip", package="llvm-16")
    out = tmp_path / "x.so"
    # -x keeps a .symtab of global symbols only: the hidden kernels are gone from it.
    _subprocess.run(
        [strip, "-x", "-o", str(out), str(fixture_build.lib("clean", "android_arm64", unstripped=True))], check=True
    )
    info = read_binary(out)
    assert info.symbols and not info.has_symbol_table


def test_export_rules(expected_clean):
    from tools.verify.binary import Export
    from tools.verify.verify import check_exports

    def exports(*items):
        return synthetic_arm64_library(exports=tuple(Export(n, d, 0, f) for n, d, f in items))

    exp = load_expected(expected_clean)
    binary = exports(
        ("pare_run", "pare_run", True),
        ("pare_table", "pare_table", False),
        ("JNI_OnLoad", "JNI_OnLoad", True),
        (
            "_ZN4pare7kernels7aten_mmERNS_13KernelContextEPNS_6TensorE",
            "pare::kernels::aten_mm(pare::KernelContext&, pare::Tensor*)",
            True,
        ),
    )
    leaks = {x.export.name: x.reason for x in check_exports(binary, exp, jni=False)}
    assert set(leaks) == {"pare_table", "JNI_OnLoad", "_ZN4pare7kernels7aten_mmERNS_13KernelContextEPNS_6TensorE"}
    assert "data rather than a function" in leaks["pare_table"]
    assert "--jni" in leaks["JNI_OnLoad"]
    assert leaks["_ZN4pare7kernels7aten_mmERNS_13KernelContextEPNS_6TensorE"].startswith("op aten::mm's code")
    assert "JNI_OnLoad" not in {x.export.name for x in check_exports(binary, exp, jni=True)}


def test_unselected_threads_must_import_no_pthread_symbol(expected_clean):
    # A runtime whose manifest leaves build feature threads out must not
    # import pthread_*: its thread code was linked in otherwise.
    import dataclasses

    from tools.verify.verify import check_feature_imports

    def importing(*names):
        return synthetic_arm64_library(imports=tuple(names))

    exp = load_expected(expected_clean)
    binary = importing("free", "posix_memalign", "pthread_create", "pthread_join")
    without = dataclasses.replace(exp, build_features={"op_profiling": False, "threads": False})
    found = check_feature_imports(binary, without)
    assert [(f.name, f.feature) for f in found] == [("pthread_create", "threads"), ("pthread_join", "threads")]
    assert check_feature_imports(binary, dataclasses.replace(exp, build_features={"threads": True})) == []
    # An older runtime's expected_symbols.json that has no threads feature: nothing to check.
    assert check_feature_imports(binary, dataclasses.replace(exp, build_features={"op_profiling": False})) == []
    assert check_feature_imports(importing("free"), without) == []
