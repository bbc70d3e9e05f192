"""The one table of Pare's target platforms.

Every `platform()`, C++ toolchain and `toolchain()` is generated from a row
here, so adding a platform is a one-row change. Each row:

  name          the platform's name: //platforms:<name>, and the directory
                its outputs land in (bazel-bin/<pkg>/<target>/<name>/).
  constraints   @platforms constraint values.
  flavor        how to compile and link for it: "android" (ld.lld, Bionic
                stub libraries), "ios" (ld64.lld, a libSystem .tbd stub) or
                "linux" (ld.lld, the host's or a cross glibc).
  triple        the clang target triple; Android and iOS append the API level
                or minimum OS version from //toolchains:android_api and
                //toolchains:ios_min_version.
  shared_ext    file extension of a shared library.
  ship          True when the platform is a product target (built by
                selective runtimes by default); False for helper platforms
                such as the glibc aarch64 the Android emulator harness uses.
  lacks_backends
                delegate backends (docs/delegates.md) the platform has no
                driver for: a selective runtime whose manifest selects one
                is not built for it (codegen fails naming the runtime's
                `platforms` attribute).
"""

PLATFORMS = [
    struct(
        name = "android_arm64",
        constraints = ["@platforms//os:android", "@platforms//cpu:arm64"],
        flavor = "android",
        triple = "aarch64-linux-android",
        shared_ext = ".so",
        ship = True,
        lacks_backends = [],
    ),
    struct(
        name = "ios_arm64",
        constraints = ["@platforms//os:ios", "@platforms//cpu:arm64"],
        flavor = "ios",
        triple = "arm64-apple-ios",
        shared_ext = ".dylib",
        ship = True,
        # No Vulkan on Apple platforms (Metal would be a backend of its own).
        lacks_backends = ["vulkan"],
    ),
    struct(
        name = "linux_x86_64",
        constraints = ["@platforms//os:linux", "@platforms//cpu:x86_64"],
        flavor = "linux",
        triple = "x86_64-linux-gnu",
        shared_ext = ".so",
        ship = True,
        lacks_backends = [],
    ),
    struct(
        name = "linux_arm64",
        constraints = ["@platforms//os:linux", "@platforms//cpu:aarch64"],
        flavor = "linux",
        triple = "aarch64-linux-gnu",
        shared_ext = ".so",
        ship = False,
        lacks_backends = [],
    ),
]

PLATFORMS_BY_NAME = {p.name: p for p in PLATFORMS}

# The platforms a product build targets by default.
SHIPPED_PLATFORMS = [p.name for p in PLATFORMS if p.ship]

def platform_label(name):
    return str(Label("//platforms:" + name))
