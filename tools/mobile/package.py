"""Packaging for app integration: classes.jar, Android AAR, iOS xcframework.

Called by the Bazel rules in rules/private/mobile.bzl; every output is
deterministic (sorted entries, fixed timestamps, no absolute paths).

    package.py jar --javac JAVAC --library-name NAME --out classes.jar SRC.java...
    package.py aar --out X.aar --package P --min-sdk N --classes classes.jar \
        --jni ABI=lib.so [--asset NAME=FILE ...]
    package.py xcframework --out DIR --name NAME --library lib.a --header pare.h \
        --min-ios 15.0
"""

from __future__ import annotations

import argparse
import plistlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# Zip entries get this timestamp: the earliest zip allows (two builds, same bytes).
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _zip(out: Path, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, entries[name])


def build_jar(javac: str, library_name: str, sources: list[Path], out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="pare-jar-") as tmp:
        tmp_path = Path(tmp)
        gen = tmp_path / "gen" / "org" / "pare"
        gen.mkdir(parents=True)
        (gen / "LibraryName.java").write_text(
            "package org.pare;\n\n"
            "/** Generated: the name System.loadLibrary uses for this app's Pare runtime. */\n"
            "final class LibraryName {\n"
            f'  static final String NAME = "{library_name}";\n\n'
            "  private LibraryName() {}\n"
            "}\n"
        )
        classes = tmp_path / "classes"
        classes.mkdir()
        cmd = [
            javac,
            "--release",
            "8",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-d",
            str(classes),
            str(gen / "LibraryName.java"),
            *map(str, sources),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"javac failed ({proc.returncode})")
        entries = {"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\r\nCreated-By: pare\r\n\r\n"}
        for f in classes.rglob("*.class"):
            entries[f.relative_to(classes).as_posix()] = f.read_bytes()
        _zip(out, entries)


def android_manifest(package: str, min_sdk: int) -> bytes:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<manifest xmlns:android="http://schemas.android.com/apk/res/android"\n'
        f'    package="{package}">\n'
        f'    <uses-sdk android:minSdkVersion="{min_sdk}" />\n'
        "</manifest>\n"
    ).encode()


def build_aar(out: Path, package: str, min_sdk: int, classes: Path, jni: list[str], assets: list[str]) -> None:
    entries = {
        "AndroidManifest.xml": android_manifest(package, min_sdk),
        "classes.jar": classes.read_bytes(),
        "R.txt": b"",
        # Keep the bridge's native entry points: apps shrink with R8/ProGuard.
        "proguard.txt": b"-keep class org.pare.** { native <methods>; *; }\n",
    }
    for spec in jni:
        abi, _, lib = spec.partition("=")
        entries[f"jni/{abi}/{Path(lib).name}"] = Path(lib).read_bytes()
    for spec in assets:
        name, _, path = spec.partition("=")
        entries[f"assets/{name}"] = Path(path).read_bytes()
    _zip(out, entries)


def build_xcframework(out: Path, name: str, library: Path, headers: list[Path], min_ios: str) -> None:
    if out.exists():
        shutil.rmtree(out)
    slice_dir = out / "ios-arm64"
    (slice_dir / "Headers").mkdir(parents=True)
    shutil.copyfile(library, slice_dir / library.name)
    for h in headers:
        shutil.copyfile(h, slice_dir / "Headers" / h.name)
    umbrella = "\n".join(f'  header "{h.name}"' for h in headers)
    (slice_dir / "Headers" / "module.modulemap").write_text(f"module {name} {{\n{umbrella}\n  export *\n}}\n")
    info = {
        "AvailableLibraries": [
            {
                "HeadersPath": "Headers",
                "LibraryIdentifier": "ios-arm64",
                "LibraryPath": library.name,
                "SupportedArchitectures": ["arm64"],
                "SupportedPlatform": "ios",
                "MinimumOSVersion": min_ios,
            }
        ],
        "CFBundlePackageType": "XFWK",
        "XCFrameworkFormatVersion": "1.0",
    }
    (out / "Info.plist").write_bytes(plistlib.dumps(info, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    j = sub.add_parser("jar")
    j.add_argument("--javac", required=True)
    j.add_argument("--library-name", required=True)
    j.add_argument("--out", required=True, type=Path)
    j.add_argument("sources", nargs="+", type=Path)
    a = sub.add_parser("aar")
    a.add_argument("--out", required=True, type=Path)
    a.add_argument("--package", required=True)
    a.add_argument("--min-sdk", required=True, type=int)
    a.add_argument("--classes", required=True, type=Path)
    a.add_argument("--jni", action="append", default=[], metavar="ABI=LIB")
    a.add_argument("--asset", action="append", default=[], metavar="NAME=FILE")
    x = sub.add_parser("xcframework")
    x.add_argument("--out", required=True, type=Path)
    x.add_argument("--name", required=True)
    x.add_argument("--library", required=True, type=Path)
    x.add_argument("--header", action="append", required=True, type=Path)
    x.add_argument("--min-ios", required=True)
    args = p.parse_args(argv)
    if args.cmd == "jar":
        build_jar(args.javac, args.library_name, args.sources, args.out)
    elif args.cmd == "aar":
        build_aar(args.out, args.package, args.min_sdk, args.classes, args.jni, args.asset)
    else:
        build_xcframework(args.out, args.name, args.library, args.header, args.min_ios)
    return 0


if __name__ == "__main__":
    sys.exit(main())
