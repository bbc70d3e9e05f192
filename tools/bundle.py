"""A runtime bundle's index: bundle.json, read by every tool that opens a bundle.

A bundle is the output directory of a `selective_runtime` or
`pare_multi_platform_library`, bazel-bin/<pkg>/<name>/. Its rule writes
bundle.json (rules/private/multi_platform.bzl, `write_bundle_index`), the one
description of the layout: for each platform the files by role (`shared`, the
stripped library that ships; `unstripped`, its twin with the symbol table;
`static`, the iOS archive), and the bundle-wide files by role
(`expected_symbols`, `manifest`, `report` for a selective runtime). Paths are
relative to the bundle directory. tools/verify, tools/size_diff, tools/zoo
and the main job find files through it instead of knowing the layout.

    bundle = load_bundle("bazel-bin/apps/demo/runtime")
    bundle.target                               # "//apps/demo:runtime"
    bundle.platform("android_arm64").shared     # Path of the shipped .so
    bundle.file("report")                       # Path of report.json

From a shell (tools/run_tests.sh does this):

    python -m tools.bundle bazel-bin/runtime/full linux_x86_64 shared
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

SCHEMA = "pare.bundle"
VERSION = 1
INDEX = "bundle.json"
PLATFORM_ROLES = ("shared", "unstripped", "static")  # static: iOS only


class BundleError(ValueError):
    """A directory that is not a readable bundle; the message names the fix."""


@dataclass(frozen=True)
class PlatformFiles:
    shared: Path  # the stripped library: what ships
    unstripped: Path  # the same library with its symbol table
    static: Path | None  # the static archive (iOS)


@dataclass(frozen=True)
class Bundle:
    root: Path
    target: str  # the Bazel label that built it
    files: dict[str, Path]  # bundle-wide files by role
    platforms: dict[str, PlatformFiles]

    def platform(self, name: str) -> PlatformFiles:
        if name not in self.platforms:
            raise BundleError(
                f"{self.root}: not built for {name} (it has {', '.join(self.platforms) or 'none'}); "
                f"add {name} to the platforms of {self.target}"
            )
        return self.platforms[name]

    def file(self, role: str) -> Path:
        if role not in self.files:
            have = ", ".join(sorted(self.files)) or "none"
            raise BundleError(
                f"{self.root}: {self.target} has no {role} file (it has {have}); "
                f"only a selective_runtime bundle has expected_symbols, manifest and report"
            )
        return self.files[role]

    def shipped_bytes(self) -> dict[str, int]:
        """Bytes an app pays per platform, from the bundle's size report: the
        stripped library; for iOS the Mach-O's section bytes (the dylib file
        is padded to 16 KB pages, and an app links the static archive, so its
        sections are what the app pays)."""
        report = json.loads(self.file("report").read_text(encoding="utf-8"))["platforms"]
        return {p: row["section_bytes" if p == "ios_arm64" else "stripped_bytes"] for p, row in report.items()}


def load_bundle(root: str | os.PathLike[str]) -> Bundle:
    """Reads root/bundle.json; BundleError (naming the problem and the fix) for
    a missing directory, a directory without an index, or a malformed one."""
    root = Path(root)
    if not root.is_dir():
        raise BundleError(f"{root}: no such directory; build the target first (tools/bazel build <target>)")
    index = root / INDEX
    if not index.is_file() and any((p / "unstripped").is_dir() for p in root.iterdir()):
        return _unindexed_bundle(root)
    if not index.is_file():
        raise BundleError(
            f"{root}: no {INDEX}, so not a Pare bundle: pass the output directory of a selective_runtime "
            "or pare_multi_platform_library (bazel-bin/<pkg>/<name>), built by this checkout's rules"
        )
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BundleError(f"{index}: not valid JSON ({e}); rebuild the bundle") from None

    def bad(what: str) -> BundleError:
        return BundleError(f"{index}: {what}; rebuild the bundle with this checkout's rules")

    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise bad(f'not a bundle index (want "schema": "{SCHEMA}")')
    if data.get("version") != VERSION:
        raise bad(f"version {data.get('version')!r}; this checkout reads version {VERSION}")
    target = data.get("target")
    if not isinstance(target, str) or not target:
        raise bad("no target label")

    def path(value: object, where: str) -> Path:
        if not isinstance(value, str) or not value:
            raise bad(f"{where} is not a path")
        rel = PurePosixPath(value)
        if rel.is_absolute() or ".." in rel.parts:
            raise bad(f"{where} = {value!r} leaves the bundle directory")
        return root / rel

    files_in = data.get("files", {})
    platforms_in = data.get("platforms")
    if not isinstance(files_in, dict):
        raise bad("files is not an object")
    if not isinstance(platforms_in, dict) or not platforms_in:
        raise bad("no platforms")
    files = {role: path(v, f"files.{role}") for role, v in files_in.items()}
    platforms = {}
    for name, entry in sorted(platforms_in.items()):
        if not isinstance(entry, dict):
            raise bad(f"platforms.{name} is not an object")
        unknown = sorted(set(entry) - set(PLATFORM_ROLES))
        if unknown:
            raise bad(f"platforms.{name} has unknown roles {unknown} (known: {', '.join(PLATFORM_ROLES)})")
        for role in ("shared", "unstripped"):
            if role not in entry:
                raise bad(f"platforms.{name} has no {role} library")
        platforms[name] = PlatformFiles(
            shared=path(entry["shared"], f"platforms.{name}.shared"),
            unstripped=path(entry["unstripped"], f"platforms.{name}.unstripped"),
            static=path(entry["static"], f"platforms.{name}.static") if "static" in entry else None,
        )
    return Bundle(root, target, files, platforms)


def _unindexed_bundle(root: Path) -> Bundle:
    """A bundle built before rules wrote bundle.json (the size presubmit
    measures its base commit's bundles with this checkout's tools): the
    layout those rules used, <platform>/[unstripped/]lib*, and the bundle-wide
    files beside them. Nothing else reads that layout."""
    platforms = {}
    for pdir in sorted(p for p in root.iterdir() if (p / "unstripped").is_dir()):
        libs = sorted(p for p in (pdir / "unstripped").iterdir() if p.suffix in (".so", ".dylib"))
        if len(libs) != 1:
            raise BundleError(
                f"{pdir / 'unstripped'}: expected one .so or .dylib, found {len(libs)}; rebuild the bundle"
            )
        static = pdir / (libs[0].stem + ".a")
        platforms[pdir.name] = PlatformFiles(pdir / libs[0].name, libs[0], static if static.is_file() else None)
    files = {
        role: root / name
        for role, name in (
            ("expected_symbols", "expected_symbols.json"),
            ("manifest", "manifest.yaml"),
            ("report", "report.json"),
        )
        if (root / name).is_file()
    }
    parts = Path(os.path.abspath(root)).parts
    target = (
        f"//{'/'.join(parts[parts.index('bazel-bin') + 1 : -1])}:{parts[-1]}"
        if "bazel-bin" in parts[:-1]
        else str(root)
    )
    return Bundle(root, target, files, platforms)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    p = argparse.ArgumentParser(
        prog="python -m tools.bundle", description="Print the path of one file of a bundle, from its bundle.json."
    )
    p.add_argument("bundle", metavar="DIR", help="the bundle directory, bazel-bin/<pkg>/<name>")
    p.add_argument(
        "what",
        nargs="+",
        metavar="ROLE",
        help=f"PLATFORM ROLE ({', '.join(PLATFORM_ROLES)}) or a bundle-wide ROLE (e.g. report)",
    )
    args = p.parse_args(argv)
    try:
        bundle = load_bundle(args.bundle)
        if len(args.what) == 1:
            path = bundle.file(args.what[0])
        elif len(args.what) == 2:
            platform, role = args.what
            if role not in PLATFORM_ROLES:
                raise BundleError(f"{role}: not a platform role; use one of {', '.join(PLATFORM_ROLES)}")
            path = getattr(bundle.platform(platform), role)
            if path is None:
                raise BundleError(f"{args.bundle}: {platform} has no {role} file")
        else:
            raise BundleError("give PLATFORM ROLE or one bundle-wide ROLE")
    except BundleError as e:
        print(f"tools.bundle: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


__all__ = ["Bundle", "BundleError", "INDEX", "PlatformFiles", "SCHEMA", "VERSION", "load_bundle"]


if __name__ == "__main__":
    raise SystemExit(main())
