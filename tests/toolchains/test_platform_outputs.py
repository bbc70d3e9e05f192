"""The toolchains produce real Android, iOS and x86_64 binaries (issue 2).

Each platform's smoke library is checked structurally with LIEF, and run where
this machine can run it: natively on x86_64, under qemu-aarch64 through the
emulator harness for Android (an emulated stand-in for a device).
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys

import lief
import pytest

from tests.conftest import REPO_ROOT, bazel, bazel_build
from tools.android_harness import run as harness
from tools.verify.binary import read_binary

ANDROID_NEEDED = {"libc.so", "libm.so", "liblog.so"}
SELECTIVE_BUNDLE = "//tests/verify/selective:small"


def _dynamic_exports(elf: lief.ELF.Binary) -> set[str]:
    return {s.name for s in elf.dynamic_symbols if s.exported and s.name}


def test_android_is_aarch64_elf_with_bionic_needed_and_16k_pages(smoke_outputs):
    lib = smoke_outputs / "android_arm64" / "libpare_smoke.so"
    elf = lief.ELF.parse(str(lib))
    assert elf.header.machine_type == lief.ELF.ARCH.AARCH64
    assert elf.header.file_type == lief.ELF.Header.FILE_TYPE.DYN
    needed = {e.name for e in elf.dynamic_entries if e.tag == lief.ELF.DynamicEntry.TAG.NEEDED}
    assert needed == ANDROID_NEEDED
    soname = [e.name for e in elf.dynamic_entries if e.tag == lief.ELF.DynamicEntry.TAG.SONAME]
    assert soname == ["libpare_smoke.so"]
    loads = [s for s in elf.segments if s.type == lief.ELF.Segment.TYPE.LOAD]
    assert loads and all(s.alignment == 16384 for s in loads), [s.alignment for s in loads]
    assert elf.has_section(".gnu.hash") and not elf.has_section(".hash")
    assert elf.has_section(".note.gnu.build-id")
    # -fvisibility=hidden: only the C entry point is exported.
    assert _dynamic_exports(elf) == {"pare_smoke_answer"}


def test_android_runs_under_qemu_harness(smoke_outputs):
    lib = smoke_outputs / "android_arm64" / "libpare_smoke.so"
    assert harness.call_i32(lib, "pare_smoke_answer", 20) == 42
    assert harness.call_i32(lib, "pare_smoke_answer", -1) == 0


def test_android_harness_reports_missing_symbol(smoke_outputs):
    lib = smoke_outputs / "android_arm64" / "libpare_smoke.so"
    with pytest.raises(harness.HarnessError, match="symbol no_such_symbol not found"):
        harness.call_i32(lib, "no_such_symbol", 1)


# The dynamic relocation forms the Android toolchain packs by API level
# (toolchains/toolchains.bzl), as tools.verify names them. The smoke library
# has relative relocations (a function table) and one against libm's sqrt.
ANDROID_RELOCATIONS = {
    22: "RELA",
    24: "APS2 (Android packed)",
    28: "RELR (Android tags) + APS2 (Android packed)",
    30: "RELR + APS2 (Android packed)",
}


@pytest.fixture
def default_smoke_build_after():
    yield
    # Put the default build back for the other tests (bazel_build would
    # skip a build it has already run this session).
    bazel("build", "//toolchains/smoke", "//tools/android_harness:harness")


@pytest.mark.parametrize("api", sorted(ANDROID_RELOCATIONS))
def test_android_relocations_are_packed_by_api_level_and_load(api, default_smoke_build_after):
    bin_dir = bazel_build(
        "//toolchains/smoke", "//tools/android_harness:harness", flags=(f"--//toolchains:android_api={api}",)
    )
    lib = bin_dir / "toolchains" / "smoke" / "smoke" / "android_arm64" / "libpare_smoke.so"
    info = read_binary(lib, demangle=False)
    assert info.relocations == ANDROID_RELOCATIONS[api]
    plain = read_binary(lib.parent / "unstripped" / lib.name, demangle=False)
    if api >= 23:  # packed: smaller than the 3 x 24 B of plain RELA entries
        assert info.relocation_bytes < 24 + 3 * 24, info.relocation_bytes
    assert plain.relocations == info.relocations
    # Both table entries (even and odd x) and the libm pointer are relocated:
    # under emulation the harness applies Bionic's forms as Bionic would.
    assert harness.call_i32(lib, "pare_smoke_answer", 20) == 42
    assert harness.call_i32(lib, "pare_smoke_answer", -1) == 0
    assert harness.call_i32(lib, "pare_smoke_answer", 3) == 8


def test_harness_refuses_initializers_with_android_relocations(smoke_outputs, tmp_path):
    # A library with DT_INIT_ARRAY would run its initializers before the
    # harness applied the packed relocations: refused in one line.
    lib = tmp_path / "libinit.so"
    data = bytearray((smoke_outputs / "android_arm64" / "libpare_smoke.so").read_bytes())
    elf = lief.ELF.parse(str(smoke_outputs / "android_arm64" / "libpare_smoke.so"))
    dynamic = next(s for s in elf.segments if s.type == lief.ELF.Segment.TYPE.DYNAMIC)
    # Rewrite the first DT_NEEDED entry's tag into DT_INIT_ARRAY (25).
    assert int.from_bytes(data[dynamic.file_offset : dynamic.file_offset + 8], "little") == 1
    data[dynamic.file_offset : dynamic.file_offset + 8] = (25).to_bytes(8, "little")
    lib.write_bytes(data)
    with pytest.raises(harness.HarnessError, match="has initializers .* remove the static initializers"):
        harness.call_i32(lib, "pare_smoke_answer", 20)


def test_ios_is_arm64_macho_dylib_for_ios_15(smoke_outputs):
    lib = smoke_outputs / "ios_arm64" / "libpare_smoke.dylib"
    macho = lief.MachO.parse(str(lib)).at(0)
    assert macho.header.cpu_type == lief.MachO.Header.CPU_TYPE.ARM64
    assert macho.header.file_type == lief.MachO.Header.FILE_TYPE.DYLIB
    build = macho.build_version
    assert build.platform == lief.MachO.BuildVersion.PLATFORMS.IOS
    assert list(build.minos) == [15, 0, 0]
    commands = {c.command: c for c in macho.commands}
    assert commands[lief.MachO.LoadCommand.TYPE.ID_DYLIB].name == "@rpath/libpare_smoke.dylib"
    loads = [c.name for c in macho.commands if c.command == lief.MachO.LoadCommand.TYPE.LOAD_DYLIB]
    assert loads == ["/usr/lib/libSystem.B.dylib"]
    exported = {s.name for s in macho.exported_symbols}
    assert exported == {"_pare_smoke_answer"}


def test_ios_static_library_is_darwin_archive(smoke_outputs, repo_root):
    archive = smoke_outputs / "ios_arm64" / "libpare_smoke.a"
    assert archive.read_bytes()[:8] == b"!<arch>\n"
    # llvm-nm reads each member as a Mach-O arm64 object.
    nm = subprocess.run(
        ["llvm-nm-16", "--defined-only", str(archive)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "T _pare_smoke_answer" in nm.stdout


def test_ios_min_version_is_configurable():
    bin_dir = bazel_build("//toolchains/smoke", flags=("--//toolchains:ios_min_version=16.4",))
    lib = bin_dir / "toolchains" / "smoke" / "smoke" / "ios_arm64" / "libpare_smoke.dylib"
    macho = lief.MachO.parse(str(lib)).at(0)
    assert list(macho.build_version.minos) == [16, 4, 0]
    # Put the default build back for the other tests.
    bazel_build("//toolchains/smoke", flags=("--//toolchains:ios_min_version=15.0",))


def test_linux_x86_64_runs_natively(smoke_outputs):
    lib = smoke_outputs / "linux_x86_64" / "libpare_smoke.so"
    elf = lief.ELF.parse(str(lib))
    assert elf.header.machine_type == lief.ELF.ARCH.X86_64
    assert _dynamic_exports(elf) == {"pare_smoke_answer"}
    answer = ctypes.CDLL(str(lib)).pare_smoke_answer
    answer.argtypes, answer.restype = [ctypes.c_int32], ctypes.c_int32
    assert answer(20) == 42


def test_stripped_and_unstripped_forms(smoke_outputs):
    for platform, name in [
        ("android_arm64", "libpare_smoke.so"),
        ("linux_x86_64", "libpare_smoke.so"),
        ("ios_arm64", "libpare_smoke.dylib"),
    ]:
        stripped = smoke_outputs / platform / name
        unstripped = smoke_outputs / platform / "unstripped" / name
        if platform == "ios_arm64":
            # The smoke dylib has no local symbols to strip: equal is right.
            assert stripped.stat().st_size <= unstripped.stat().st_size
            macho = lief.MachO.parse(str(stripped)).at(0)
            assert {s.name for s in macho.symbols if s.name.startswith("_pare")} == {"_pare_smoke_answer"}
        else:
            assert stripped.stat().st_size < unstripped.stat().st_size, platform


def test_platforms_do_not_share_output_directories(smoke_outputs):
    # The split transition gives every platform its own configuration, so
    # the per-platform outputs are distinct files with distinct contents.
    outputs = [
        smoke_outputs / "android_arm64" / "libpare_smoke.so",
        smoke_outputs / "ios_arm64" / "libpare_smoke.dylib",
        smoke_outputs / "linux_x86_64" / "libpare_smoke.so",
    ]
    contents = {p.read_bytes() for p in outputs}
    assert len(contents) == 3


def test_verify_load_loads_every_loadable_platform_and_names_relocation_forms(tmp_path):
    # Under pytest, not in //tests:verify_test: the harness and qemu are no Bazel inputs.
    bundle_dir = bazel_build(SELECTIVE_BUNDLE) / "tests" / "verify" / "selective" / "small"
    # --load: the Android build under the emulator harness (Bionic's packed
    # relocations applied as Bionic would), x86_64 natively; iOS is not
    # loadable here and keeps its static facts only.
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tools.verify", "--bundle", str(bundle_dir), "--load", "--json-out", str(out)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r["platform"]: r for r in json.loads(out.read_text())["results"]}
    loads = {p: [f for f in r["platform_facts"] if f["check"] == "loads"] for p, r in results.items()}
    assert loads["android_arm64"] == [
        {"check": "loads", "ok": True, "expected": "loads and resolves the C API", "actual": "loaded: Ok"}
    ]
    assert [f["ok"] for f in loads["linux_x86_64"]] == [True] and loads["ios_arm64"] == []
    forms = {p: r["relocations"]["form"] for p, r in results.items()}
    # The default --//toolchains:android_api (24) packs in Android's format.
    assert forms == {"android_arm64": "APS2 (Android packed)", "ios_arm64": "chained fixups", "linux_x86_64": "RELA"}
    assert "relocations: APS2 (Android packed)" in proc.stdout
