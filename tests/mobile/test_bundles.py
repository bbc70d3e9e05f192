"""The app bundles' structure (issue 7): the demo's Android AAR and iOS
xcframework, as Gradle and Xcode expect them."""

from __future__ import annotations

import io
import plistlib
import subprocess
import zipfile

import lief
import pytest

from tests.conftest import bazel_build


@pytest.fixture(scope="module")
def bundles():
    bin_dir = bazel_build("//apps/demo:android_aar", "//apps/demo:ios_xcframework")
    return bin_dir / "apps/demo/android_aar.aar", bin_dir / "apps/demo/PareDemo.xcframework"


def test_aar_layout(bundles):
    aar, _ = bundles
    with zipfile.ZipFile(aar) as z:
        names = set(z.namelist())
        assert {
            "AndroidManifest.xml",
            "classes.jar",
            "jni/arm64-v8a/libpare_runtime_jni.so",
            "proguard.txt",
            "R.txt",
        } <= names
        manifest = z.read("AndroidManifest.xml").decode()
        # minSdkVersion: --//toolchains:android_api's default (rules/tests checks it follows the setting).
        assert 'package="org.pare.demo"' in manifest and 'android:minSdkVersion="24"' in manifest
        with zipfile.ZipFile(io.BytesIO(z.read("classes.jar"))) as jar:
            classes = set(jar.namelist())
        assert {
            "org/pare/Module.class",
            "org/pare/Tensor.class",
            "org/pare/PareException.class",
            "org/pare/LibraryName.class",
        } <= classes
        so = z.read("jni/arm64-v8a/libpare_runtime_jni.so")
        # Deterministic: every entry carries the same fixed timestamp.
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    elf = lief.ELF.parse(list(so))
    assert elf.header.machine_type == lief.ELF.ARCH.AARCH64
    exported = {s.name for s in elf.dynamic_symbols if s.exported and s.name}
    jni = {s for s in exported if s.startswith("Java_") or s == "JNI_OnLoad"}
    assert "JNI_OnLoad" in jni and "Java_org_pare_Module_nativeLoad" in jni
    # Java reaches the runtime through the bridge only: no C API function is exported, so the ones the bridge does
    # not call are dropped (rules/private/selective_runtime.bzl, JNI_EXPORTS).
    assert exported == jni, f"a JNI build exports its JNI entry points only, not {sorted(exported - jni)}"


def test_jni_build_keeps_only_the_c_api_the_bridge_calls():
    bin_dir = bazel_build("//apps/demo:runtime", "//apps/demo:runtime_jni")

    def c_api(path):
        binary = lief.ELF.parse(str(path))  # alive while its symbols are read
        return {s.name for s in binary.symbols if s.name.startswith("pare_") and s.value}

    plain = c_api(bin_dir / "apps/demo/runtime/android_arm64/unstripped/libpare_runtime.so")
    jni = c_api(bin_dir / "apps/demo/runtime_jni/android_arm64/unstripped/libpare_runtime_jni.so")
    assert {"pare_program_load", "pare_method_execute", "pare_method_set_state"} <= jni  # the bridge calls these
    assert jni < plain and {"pare_trace_op_count", "pare_isa", "pare_kernel_isa"} <= plain - jni


def test_java_classes_target_java_8(bundles):
    aar, _ = bundles
    with zipfile.ZipFile(aar) as z, zipfile.ZipFile(io.BytesIO(z.read("classes.jar"))) as jar:
        major = int.from_bytes(jar.read("org/pare/Module.class")[6:8], "big")
    assert major == 52  # Java 8


def test_xcframework_layout(bundles, tmp_path):
    _, xcf = bundles
    info = plistlib.loads((xcf / "Info.plist").read_bytes())
    assert info["CFBundlePackageType"] == "XFWK"
    [lib] = info["AvailableLibraries"]
    assert lib["LibraryIdentifier"] == "ios-arm64" and lib["SupportedPlatform"] == "ios"
    assert lib["SupportedArchitectures"] == ["arm64"]
    slice_dir = xcf / lib["LibraryIdentifier"]
    archive = slice_dir / lib["LibraryPath"]
    assert archive.name == "libpare_runtime.a"
    headers = slice_dir / lib["HeadersPath"]
    assert (headers / "pare.h").is_file()
    modulemap = (headers / "module.modulemap").read_text()
    assert modulemap.startswith("module PareDemo {") and 'header "pare.h"' in modulemap

    # Every member of the static library is an arm64 Mach-O object for iOS,
    # compiled for the minimum iOS version Info.plist declares (both are
    # --//toolchains:ios_min_version; rules/tests checks other values).
    subprocess.run(["llvm-ar-16", "x", str(archive)], cwd=tmp_path, check=True)
    members = sorted(tmp_path.glob("*.o"))
    assert members
    declared = [int(part) for part in lib["MinimumOSVersion"].split(".")]
    declared += [0] * (3 - len(declared))
    for member in members:
        macho = lief.MachO.parse(str(member)).at(0)
        assert macho.header.cpu_type == lief.MachO.Header.CPU_TYPE.ARM64
        assert macho.build_version.platform == lief.MachO.BuildVersion.PLATFORMS.IOS
        assert list(macho.build_version.minos) == declared, member.name
