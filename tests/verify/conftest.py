"""Fixtures for the tools/verify and tools/size_diff tests: the synthetic runtimes of
tests/verify/fixture, built once per session with the real toolchains."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).absolute().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from tests.conftest import bazel_build  # noqa: E402

FIXTURE_PKG = "tests/verify/fixture"
FIXTURE_SRC = REPO_ROOT / FIXTURE_PKG
VARIANTS = ("clean", "grown", "leaky_kernel", "leaky_export")
PLATFORM_LIBS = {
    "android_arm64": "lib{}.so",
    "ios_arm64": "lib{}.dylib",
    "linux_x86_64": "lib{}.so",
}


class FixtureBuild:
    """Paths into bazel-bin/tests/verify/fixture/<variant>/ (selective_runtime's layout)."""

    def __init__(self, root: Path):
        self.root = root

    def bundle(self, variant: str) -> Path:
        return self.root / variant

    def lib(self, variant: str, platform: str, *, unstripped: bool = False) -> Path:
        name = PLATFORM_LIBS[platform].format("pare_" + variant)
        d = self.root / variant / platform
        return (d / "unstripped" / name) if unstripped else (d / name)

    def expected(self, variant: str) -> Path:
        return self.root / variant / "expected_symbols.json"

    def size_run(self, variant: str, platform: str):
        """tools/size_diff's Run of `variant` on `platform`: the shipped and
        unstripped libraries and the expected symbols."""
        from tools.size_diff.report import Run

        return Run(
            platform, self.lib(variant, platform), self.lib(variant, platform, unstripped=True), self.expected(variant)
        )

    def verify(self, variant: str, platform: str):
        """tools/verify's result for `variant` on `platform`, the shipped library included."""
        from tools.verify import verify

        return verify(
            self.lib(variant, platform, unstripped=True),
            self.expected(variant),
            platform=platform,
            stripped=self.lib(variant, platform),
        )


def synthetic_arm64_library(*, path="x.so", file_bytes=0, sections=(), symbols=(), exports=(), imports=()):
    """tools/verify's BinaryInfo of an arm64 ELF shared library that exists
    nowhere: the input of the unit tests of its checks and of attribution."""
    from tools.verify.binary import BinaryInfo

    return BinaryInfo(
        path=Path(path),
        format="elf",
        arch="arm64",
        is_shared_library=True,
        file_bytes=file_bytes,
        sections=tuple(sections),
        symbols=tuple(symbols),
        has_symbol_table=True,
        exports=tuple(exports),
        needed=(),
        load_alignments=(),
        imports=tuple(imports),
    )


@pytest.fixture(scope="session")
def fixture_build() -> FixtureBuild:
    bin_dir = bazel_build(*(f"//{FIXTURE_PKG}:{v}" for v in VARIANTS))
    return FixtureBuild(bin_dir / FIXTURE_PKG)


@pytest.fixture(scope="session")
def expected_clean() -> Path:
    return FIXTURE_SRC / "expected" / "clean.expected_symbols.json"


@pytest.fixture(scope="session")
def expected_grown() -> Path:
    return FIXTURE_SRC / "expected" / "grown.expected_symbols.json"
