"""The checks: selected code present, unselected code gone, only the C API exported, platform facts.

    result = verify("bazel-bin/apps/demo/runtime/android_arm64/unstripped/libpare_runtime.so",
                    "bazel-bin/apps/demo/runtime/expected_symbols.json",
                    platform="android_arm64",
                    stripped="bazel-bin/apps/demo/runtime/android_arm64/libpare_runtime.so")
    result.passed, result.leaks, result.missing, result.export_leaks

Symbols come from the unstripped library's full symbol table (kernels are
hidden, so only it names them). Exports and platform facts are read from the
stripped library when given, because that is what ships.
"""

from __future__ import annotations

import os
import platform as host
import re
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from tools.bundle import Bundle, BundleError, load_bundle
from tools.verify.binary import BinaryInfo, Export, Symbol, read_binary
from tools.verify.errors import VerifyError
from tools.verify.expected import Entry, Expected, check_format, classify, load_expected
from tools.verify.platforms import FactCheck, PlatformFacts, check_platform_facts, get_platform, infer_platform

OK = "ok"
LEAK = "leak"
MISSING = "missing"

C_API = re.compile(r"^pare_\w+$")
JNI = re.compile(r"^(?:JNI_OnLoad|JNI_OnUnload|Java_\w+)$")


@dataclass(frozen=True)
class EntryResult:
    entry: Entry
    status: str  # "ok", "leak" (absent but linked) or "missing" (present but not linked)
    symbols: tuple[Symbol, ...]  # the defined symbols its pattern matches


@dataclass(frozen=True)
class ExportLeak:
    export: Export
    reason: str


@dataclass(frozen=True)
class FeatureImport:
    name: str  # the imported symbol, e.g. pthread_create
    feature: str  # the unselected build feature whose code imports it


# Imports only a build feature's code makes: present with the feature
# unselected, that feature's code was linked in.
FEATURE_IMPORTS = {"threads": re.compile(r"^pthread_\w+$")}


@dataclass(frozen=True)
class VerifyResult:
    binary: BinaryInfo  # the unstripped library: symbols
    shipped: BinaryInfo  # the stripped library when given, else the same: exports, facts
    expected: Expected
    platform: PlatformFacts
    platform_inferred: bool
    jni: bool
    entries: tuple[EntryResult, ...]
    export_leaks: tuple[ExportLeak, ...]
    facts: tuple[FactCheck, ...]
    feature_imports: tuple[FeatureImport, ...] = ()

    @property
    def leaks(self) -> tuple[EntryResult, ...]:
        return tuple(r for r in self.entries if r.status == LEAK)

    @property
    def missing(self) -> tuple[EntryResult, ...]:
        return tuple(r for r in self.entries if r.status == MISSING)

    @property
    def failed_facts(self) -> tuple[FactCheck, ...]:
        return tuple(f for f in self.facts if not f.ok)

    @property
    def passed(self) -> bool:
        return not (self.leaks or self.missing or self.export_leaks or self.failed_facts or self.feature_imports)


def check_entries(binary: BinaryInfo, expected: Expected) -> list[EntryResult]:
    check_format(expected, binary.format)
    fmt = binary.format
    results = []
    for entry in expected.entries:
        pattern = entry.patterns[fmt]
        hits = tuple(s for s in binary.symbols if pattern.search(s.demangled))
        if entry.expect == "absent" and hits:
            status = LEAK
        elif entry.expect == "present" and not hits:
            status = MISSING
        else:
            status = OK
        results.append(EntryResult(entry, status, hits))
    return results


def check_exports(shipped: BinaryInfo, expected: Expected | None, *, jni: bool) -> list[ExportLeak]:
    """Every exported symbol must be a C API function (pare_*), or a JNI entry point in a JNI build."""
    leaks = []
    for e in shipped.exports:
        if C_API.match(e.name):
            if not e.is_function:
                leaks.append(ExportLeak(e, "C API name, but data rather than a function; export an accessor function"))
            continue
        if JNI.match(e.name):
            if not jni:
                leaks.append(
                    ExportLeak(e, "JNI entry point in a library not verified as a JNI build (pass --jni if it is one)")
                )
            elif not e.is_function:
                leaks.append(ExportLeak(e, "JNI name, but data rather than a function"))
            continue
        owner = (
            classify(expected, shipped.format, e.demangled)
            if expected and shipped.format in expected.symbol_formats
            else None
        )
        what = f"{owner.label()}'s code" if owner else "not part of the C API (pare_*)"
        leaks.append(ExportLeak(e, f"{what}; give it hidden visibility (the default under -fvisibility=hidden)"))
    return leaks


def check_feature_imports(shipped: BinaryInfo, expected: Expected) -> list[FeatureImport]:
    """A build feature the manifest does not select must leave no trace in
    the imports: no pthread_* symbol without threads."""
    found = []
    for feature, pattern in FEATURE_IMPORTS.items():
        if expected.build_features.get(feature, True):
            continue  # selected, or a runtime without the feature at all
        found += [FeatureImport(name, feature) for name in shipped.imports if pattern.match(name)]
    return found


def verify(
    binary: str | os.PathLike[str],
    expected: str | os.PathLike[str] | Expected,
    *,
    platform: str | None = None,
    stripped: str | os.PathLike[str] | None = None,
    jni: bool = False,
    cxxfilt: str | None = None,
) -> VerifyResult:
    """Verifies one platform's library against expected_symbols.json. Raises VerifyError for user errors."""
    exp = expected if isinstance(expected, Expected) else load_expected(expected)
    info = read_binary(binary, cxxfilt=cxxfilt)
    if not info.has_symbol_table:
        raise VerifyError(
            f"{info.path}: has no full symbol table (it is stripped); pass the unstripped twin, "
            "bazel-bin/<pkg>/<name>/<platform>/unstripped/<lib>"
        )
    shipped = info
    if stripped is not None:
        shipped = read_binary(stripped, cxxfilt=cxxfilt)
        if (shipped.format, shipped.arch) != (info.format, info.arch):
            raise VerifyError(
                f"{shipped.path} ({shipped.format}, {shipped.arch}) is not the stripped twin of {info.path} "
                f"({info.format}, {info.arch}); pass both from the same bazel-bin/<pkg>/<name>/<platform>/"
            )
    facts_for = get_platform(platform) if platform else infer_platform(info)
    return VerifyResult(
        binary=info,
        shipped=shipped,
        expected=exp,
        platform=facts_for,
        platform_inferred=platform is None,
        jni=jni,
        entries=tuple(check_entries(info, exp)),
        export_leaks=tuple(check_exports(shipped, exp, jni=jni)),
        facts=tuple(check_platform_facts(shipped, facts_for)),
        feature_imports=tuple(check_feature_imports(shipped, exp)),
    )


def check_loads(result: VerifyResult) -> VerifyResult:
    """Adds the fact that the shipped library loads: an Android build under
    the emulator harness (qemu-aarch64; it applies Bionic's packed
    relocations as Bionic would), an x86_64 Linux build natively. iOS cannot
    be loaded on this machine; its result is returned unchanged."""
    path = result.shipped.path
    if result.platform.flavor == "android":
        from tools.android_harness import run as harness  # imported late: only --load needs qemu

        try:
            harness.ensure_built()
            actual, ok = harness.load(path), True
        except harness.HarnessError as e:
            actual, ok = str(e), False
        fix = "the relocation form this API level packs must be one Bionic reads (toolchains/toolchains.bzl)"
    elif result.platform.flavor == "linux" and result.platform.arch == "x86_64" and host.machine() == "x86_64":
        probe = "import ctypes, sys; ctypes.CDLL(sys.argv[1]).pare_status_name"
        proc = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True)
        ok = proc.returncode == 0
        actual = "loaded" if ok else (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        fix = "link it with pare_platform_library against this machine's glibc"
    else:
        return result
    load = FactCheck("loads", ok, "loads and resolves the C API", actual, fix)
    return replace(result, facts=result.facts + (load,))


def _bundle(bundle: str | os.PathLike[str]) -> Bundle:
    try:
        return load_bundle(bundle)
    except BundleError as e:
        raise VerifyError(str(e)) from None


def bundle_platforms(bundle: str | os.PathLike[str]) -> list[str]:
    """The platforms a bundle (bazel-bin/<pkg>/<name>, tools/bundle.py) holds."""
    return sorted(_bundle(bundle).platforms)


def bundle_paths(bundle: str | os.PathLike[str], platform: str) -> tuple[Path, Path, Path | None]:
    """(unstripped, stripped, expected_symbols.json or None) of one platform of
    a bundle, from its bundle.json."""
    b = _bundle(bundle)
    try:
        files = b.platform(platform)
    except BundleError as e:
        raise VerifyError(str(e)) from None
    return files.unstripped, files.shared, b.files.get("expected_symbols")
