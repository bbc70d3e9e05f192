"""What a Pare library must look like on each platform of //platforms:table.bzl.

The rows here mirror platforms/table.bzl (name, flavor); tests/verify checks
that every row of the table has one, so adding a platform there without
telling the verifier fails a test rather than skipping checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.verify.binary import ELF, MACHO, BinaryInfo
from tools.verify.errors import VerifyError

ANDROID_PAGE_SIZE = 16384


@dataclass(frozen=True)
class PlatformFacts:
    name: str
    flavor: str  # "android", "ios" or "linux", as in platforms/table.bzl
    format: str  # "elf" or "macho"
    arch: str  # "arm64" or "x86_64"
    # Exactly these DT_NEEDED (android), or a subset of them (linux).
    needed: frozenset[str] = frozenset()
    needed_exact: bool = False
    # DT_NEEDED allowed besides `needed` even when exact: libdl.so on
    # Android, for a backend whose driver the PAL loads at run time (the
    # Vulkan backend; linked --as-needed, so only a runtime with one has it).
    needed_optional: frozenset[str] = frozenset()


PLATFORMS: dict[str, PlatformFacts] = {
    p.name: p
    for p in (
        PlatformFacts(
            "android_arm64",
            "android",
            ELF,
            "arm64",
            frozenset({"libc.so", "libm.so", "liblog.so"}),
            True,
            frozenset({"libdl.so"}),
        ),
        PlatformFacts("ios_arm64", "ios", MACHO, "arm64"),
        # The runtime is freestanding (docs/portable_cpp.md): on glibc it may
        # need libc and libm, never a C++ standard library.
        PlatformFacts("linux_x86_64", "linux", ELF, "x86_64", frozenset({"libc.so.6", "libm.so.6"})),
        PlatformFacts("linux_arm64", "linux", ELF, "arm64", frozenset({"libc.so.6", "libm.so.6"})),
    )
}


def get_platform(name: str) -> PlatformFacts:
    try:
        return PLATFORMS[name]
    except KeyError:
        raise VerifyError(
            f"--platform {name}: unknown platform; use one of {', '.join(sorted(PLATFORMS))} (rows of platforms/table.bzl)"
        ) from None


def infer_platform(binary: BinaryInfo) -> PlatformFacts:
    """The platform a binary was built for, from its format, architecture and libc."""
    if binary.format == MACHO:
        candidates = [p for p in PLATFORMS.values() if p.format == MACHO and p.arch == binary.arch]
    else:
        bionic = "libc.so" in binary.needed or "liblog.so" in binary.needed
        flavor = "android" if bionic else "linux"
        candidates = [p for p in PLATFORMS.values() if p.format == ELF and p.arch == binary.arch and p.flavor == flavor]
    if len(candidates) != 1:
        raise VerifyError(
            f"{binary.path}: cannot tell its platform ({binary.format}, {binary.arch}); pass --platform "
            f"({', '.join(sorted(PLATFORMS))})"
        )
    return candidates[0]


@dataclass(frozen=True)
class FactCheck:
    check: str  # short name: "format", "architecture", "DT_NEEDED", ...
    ok: bool
    expected: str
    actual: str
    fix: str = ""


def check_platform_facts(binary: BinaryInfo, platform: PlatformFacts) -> list[FactCheck]:
    """Architecture, object format and the platform's loader requirements."""
    out = [
        FactCheck(
            "format",
            binary.format == platform.format,
            platform.format,
            binary.format,
            f"this is not a {platform.name} build; pass the library from bazel-bin/<pkg>/<name>/{platform.name}/",
        ),
        FactCheck(
            "architecture",
            binary.arch == platform.arch,
            platform.arch,
            binary.arch,
            f"this is not a {platform.name} build; pass the library from bazel-bin/<pkg>/<name>/{platform.name}/",
        ),
        FactCheck(
            "shared library",
            binary.is_shared_library,
            "yes",
            "yes" if binary.is_shared_library else "no",
            "link it with pare_platform_library (a shared library)",
        ),
    ]
    if binary.format != platform.format:
        return out
    if platform.needed:
        needed = set(binary.needed)
        allowed = platform.needed | platform.needed_optional
        if platform.needed_exact:
            ok = platform.needed <= needed <= allowed
            expected = "exactly " + ", ".join(sorted(platform.needed))
            if platform.needed_optional:
                expected += " (and optionally " + ", ".join(sorted(platform.needed_optional)) + ")"
        else:
            ok, expected = needed <= allowed, "within " + ", ".join(sorted(allowed))
        extra = sorted(needed - allowed)
        fix = (
            f"remove the dependency on {', '.join(extra)}: the runtime reaches the platform only through the PAL"
            if extra
            else "link with the platform's stub libraries (//toolchains)"
        )
        out.append(FactCheck("DT_NEEDED", ok, expected, ", ".join(binary.needed) or "(none)", fix))
    if platform.flavor == "android":
        bad = [a for a in binary.load_alignments if a < ANDROID_PAGE_SIZE or a % ANDROID_PAGE_SIZE]
        out.append(
            FactCheck(
                "PT_LOAD alignment",
                bool(binary.load_alignments) and not bad,
                f"every PT_LOAD aligned to a multiple of {ANDROID_PAGE_SIZE} (16 KB pages)",
                ", ".join(str(a) for a in binary.load_alignments) or "(no PT_LOAD)",
                "link with -z max-page-size=16384 (the Android toolchain does)",
            )
        )
    if platform.flavor == "ios":
        version = ".".join(str(v) for v in binary.min_os) if binary.min_os else ""
        has_min = bool(binary.min_os) and any(binary.min_os)
        out.append(
            FactCheck(
                "LC_BUILD_VERSION",
                binary.build_platform == "ios" and has_min,
                "platform ios with a minimum version",
                f"platform {binary.build_platform}, minos {version}" if binary.build_platform else "(missing)",
                "link with -platform_version ios <min> <sdk> (the iOS toolchain does)",
            )
        )
    return out
