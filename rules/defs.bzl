"""Pare's public Bazel API. Load rules from here only; rules/private/ is internal."""

load("//rules/private:app.bzl", _pare_app = "pare_app")
load("//rules/private:cc.bzl", _pare_cc_library = "pare_cc_library")
load("//rules/private:link.bzl", _pare_platform_library = "pare_platform_library")
load("//rules/private:manifest.bzl", _op_manifest = "op_manifest")
load(
    "//rules/private:mobile.bzl",
    _pare_android_aar = "pare_android_aar",
    _pare_ios_xcframework = "pare_ios_xcframework",
    _pare_java_library = "pare_java_library",
)
load(
    "//rules/private:multi_platform.bzl",
    _pare_multi_platform_library = "pare_multi_platform_library",
    _pare_platform_files = "pare_platform_files",
)
load(
    "//rules/private:providers.bzl",
    _OpManifestInfo = "OpManifestInfo",
    _PareLibraryInfo = "PareLibraryInfo",
    _PareMultiPlatformInfo = "PareMultiPlatformInfo",
    _PareSelectionInfo = "PareSelectionInfo",
)
load("//rules/private:selection.bzl", _pare_selection = "pare_selection")
load("//rules/private:selective_runtime.bzl", _selective_runtime = "selective_runtime")
load("//rules/private:transitions.bzl", _platform_only_tags = "platform_only_tags")
load("//rules/private:verify.bzl", _pare_verify_test = "pare_verify_test")

pare_app = _pare_app
pare_cc_library = _pare_cc_library
pare_platform_library = _pare_platform_library
pare_multi_platform_library = _pare_multi_platform_library
pare_platform_files = _pare_platform_files
PareLibraryInfo = _PareLibraryInfo
PareMultiPlatformInfo = _PareMultiPlatformInfo
op_manifest = _op_manifest
pare_selection = _pare_selection
selective_runtime = _selective_runtime
OpManifestInfo = _OpManifestInfo
PareSelectionInfo = _PareSelectionInfo
pare_android_aar = _pare_android_aar
pare_ios_xcframework = _pare_ios_xcframework
pare_java_library = _pare_java_library
pare_verify_test = _pare_verify_test
platform_only_tags = _platform_only_tags
