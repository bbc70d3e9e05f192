"""Pare's public Bazel API. Load rules from here only; rules/private/ is internal."""

load("//rules/private:cc.bzl", _pare_cc_library = "pare_cc_library")
load("//rules/private:link.bzl", _pare_platform_library = "pare_platform_library")
load(
    "//rules/private:multi_platform.bzl",
    _pare_multi_platform_library = "pare_multi_platform_library",
    _pare_platform_files = "pare_platform_files",
)
load(
    "//rules/private:providers.bzl",
    _PareLibraryInfo = "PareLibraryInfo",
    _PareMultiPlatformInfo = "PareMultiPlatformInfo",
)

pare_cc_library = _pare_cc_library
pare_platform_library = _pare_platform_library
pare_multi_platform_library = _pare_multi_platform_library
pare_platform_files = _pare_platform_files
PareLibraryInfo = _PareLibraryInfo
PareMultiPlatformInfo = _PareMultiPlatformInfo
