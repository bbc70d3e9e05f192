"""The one table of Pare's target platforms.

Every `platform()`, C++ toolchain and `toolchain()` is generated from a row
here, so adding a platform is a one-row change. Each row is a struct:

  name          the platform's name: //platforms:<name>, and the directory
                its outputs land in (bazel-bin/<pkg>/<target>/<name>/).
  constraints   @platforms constraint values: its os (the flavor) and cpu.
  flavor        how to compile and link for it: "android" (ld.lld, Bionic
                stub libraries), "ios" (ld64.lld, a libSystem .tbd stub) or
                "linux" (ld.lld, the host's or a cross glibc).
  triple        the clang target triple; Android and iOS append the API level
                or minimum OS version from //toolchains:android_api and
                //toolchains:ios_min_version.
  shared_ext    file extension of a shared library (".dylib" on iOS, else
                ".so").
  ship          True when the platform is a product target (built by
                selective runtimes by default); False for helper platforms
                such as the glibc aarch64 the Android emulator harness uses.
  lacks_backends
                delegate backends (docs/delegates.md) the platform has no
                driver for: a selective runtime whose manifest selects one
                is not built for it (codegen fails naming the runtime's
                `platforms` attribute).
"""

def _row(name, flavor, cpu, triple, ship = True, lacks_backends = []):
    return struct(
        name = name,
        constraints = ["@platforms//os:" + flavor, "@platforms//cpu:" + cpu],
        flavor = flavor,
        triple = triple,
        shared_ext = ".dylib" if flavor == "ios" else ".so",
        ship = ship,
        lacks_backends = lacks_backends,
    )

PLATFORMS = [
    _row(name = "android_arm64", flavor = "android", cpu = "arm64", triple = "aarch64-linux-android"),
    # No Vulkan on Apple platforms (Metal would be a backend of its own).
    _row(name = "ios_arm64", flavor = "ios", cpu = "arm64", triple = "arm64-apple-ios", lacks_backends = ["vulkan"]),
    _row(name = "linux_x86_64", flavor = "linux", cpu = "x86_64", triple = "x86_64-linux-gnu"),
    _row(name = "linux_arm64", flavor = "linux", cpu = "aarch64", triple = "aarch64-linux-gnu", ship = False),
]

PLATFORMS_BY_NAME = {p.name: p for p in PLATFORMS}

# The platforms a product build targets by default.
SHIPPED_PLATFORMS = [p.name for p in PLATFORMS if p.ship]

def platform_label(name):
    return str(Label("//platforms:" + name))
