"""Build one library for several platforms in one `bazel build`.

The library is configured once per platform through a split transition; the
results are copied to stable paths:

    bazel-bin/<pkg>/<name>/<platform>/lib<lib>.so        (stripped; .dylib on iOS)
    bazel-bin/<pkg>/<name>/<platform>/lib<lib>.a         (iOS only)
    bazel-bin/<pkg>/<name>/<platform>/unstripped/lib<lib>.so
    bazel-bin/<pkg>/<name>/bundle.json                   (this list, for tools)
"""

load("//platforms:table.bzl", "SHIPPED_PLATFORMS")
load(":providers.bzl", "PareLibraryInfo", "PareMultiPlatformInfo")
load(":transitions.bzl", "ALLOWLIST_ATTRS", "check_platforms", "platform_transition", "platforms_split_transition")

def copy_file(ctx, src, dst_path, what):
    """Copies src to a declared output at dst_path (relative to the package)."""
    out = ctx.actions.declare_file(dst_path)
    ctx.actions.run_shell(
        command = 'cp -f "$1" "$2"',
        arguments = [src.path, out.path],
        inputs = [src],
        outputs = [out],
        mnemonic = "PareCopy",
        progress_message = "Placing %s %s" % (what, out.short_path),
    )
    return out

BUNDLE_SCHEMA = "pare.bundle"
BUNDLE_VERSION = 1

def collect_platform_libraries(ctx):
    """Copies each platform's PareLibraryInfo files to the stable layout.

    Args:
      ctx: a rule context whose split attribute `library` gives each
        platform's PareLibraryInfo.

    Returns:
      (dict platform -> PareLibraryInfo, dict platform -> tuple of files,
      dict platform -> struct(shared, unstripped, static)).
    """
    libraries = {}
    outputs = {}
    roles = {}
    for platform, dep in sorted(ctx.split_attr.library.items()):
        info = dep[PareLibraryInfo]
        base = "%s/%s/" % (ctx.label.name, platform)
        shared = copy_file(ctx, info.shared, base + info.shared.basename, "library")
        unstripped = copy_file(ctx, info.shared_unstripped, base + "unstripped/" + info.shared.basename, "unstripped library")
        static = copy_file(ctx, info.static, base + info.static.basename, "static library") if info.static else None
        libraries[platform] = info
        outputs[platform] = tuple([shared, unstripped] + ([static] if static else []))
        roles[platform] = struct(shared = shared, unstripped = unstripped, static = static)
    return libraries, outputs, roles

def _relative(ctx, f, root):
    if not f.path.startswith(root):
        fail("%s: %s is outside the bundle directory %s" % (ctx.label, f.path, root))
    return f.path[len(root):]

def write_bundle_index(ctx, roles, files = {}):
    """Writes <name>/bundle.json, the one description of a bundle's layout.

    tools/verify, tools/size_diff, tools/zoo and the main job read it
    (tools/bundle.py). Paths in it are relative to the bundle directory.

    Args:
      ctx: the bundle rule's context.
      roles: dict platform -> struct(shared, unstripped, static), from
        collect_platform_libraries.
      files: the bundle-wide files, dict role -> File.

    Returns:
      The File.
    """
    out = ctx.actions.declare_file(ctx.label.name + "/bundle.json")
    root = out.dirname + "/"
    platforms = {}
    for platform, r in sorted(roles.items()):
        entry = {"shared": _relative(ctx, r.shared, root), "unstripped": _relative(ctx, r.unstripped, root)}
        if r.static:
            entry["static"] = _relative(ctx, r.static, root)
        platforms[platform] = entry
    index = {
        "schema": BUNDLE_SCHEMA,
        "version": BUNDLE_VERSION,
        "target": str(ctx.label),
        "files": {role: _relative(ctx, f, root) for role, f in sorted(files.items())},
        "platforms": platforms,
    }
    ctx.actions.write(out, json.encode_indent(index, indent = "  ") + "\n")
    return out

def _impl(ctx):
    check_platforms(ctx.label, "platforms", ctx.attr.platforms)
    libraries, outputs, roles = collect_platform_libraries(ctx)
    index = write_bundle_index(ctx, roles)
    all_files = [f for files in outputs.values() for f in files] + [index]
    return [
        DefaultInfo(files = depset(all_files), runfiles = ctx.runfiles(files = all_files)),
        PareMultiPlatformInfo(label = ctx.label, libraries = libraries, outputs = outputs, files = roles, index = index),
    ]

pare_multi_platform_library = rule(
    implementation = _impl,
    attrs = dict({
        "library": attr.label(
            mandatory = True,
            providers = [PareLibraryInfo],
            cfg = platforms_split_transition,
            doc = "A pare_platform_library, built once per platform.",
        ),
        "platforms": attr.string_list(
            default = SHIPPED_PLATFORMS,
            doc = "Rows of //platforms:table.bzl to build for. Defaults to every shipped platform.",
        ),
    }, **ALLOWLIST_ATTRS),
    provides = [PareMultiPlatformInfo],
    doc = """A library built for several platforms in one build, at stable paths.

Example:
    pare_platform_library(name = "smoke_lib", deps = [":smoke"], lib_name = "pare_smoke")
    pare_multi_platform_library(
        name = "smoke",
        library = ":smoke_lib",
        platforms = ["android_arm64", "ios_arm64", "linux_x86_64"],
    )
    # bazel build //pkg:smoke ->
    #   bazel-bin/pkg/smoke/android_arm64/libpare_smoke.so, ...
""",
)

def _platform_files_impl(ctx):
    check_platforms(ctx.label, "platform", [ctx.attr.platform])
    outs = []
    for src in ctx.files.srcs:
        outs.append(copy_file(ctx, src, "%s/%s/%s" % (ctx.label.name, ctx.attr.platform, src.basename), "file"))
    return [DefaultInfo(files = depset(outs), runfiles = ctx.runfiles(files = outs))]

pare_platform_files = rule(
    implementation = _platform_files_impl,
    attrs = dict({
        "srcs": attr.label_list(
            mandatory = True,
            allow_files = True,
            cfg = platform_transition,
            doc = "Targets (binaries, libraries) to build for `platform`; their default outputs are copied.",
        ),
        "platform": attr.string(mandatory = True, doc = "Row of //platforms:table.bzl to build `srcs` for."),
    }, **ALLOWLIST_ATTRS),
    doc = """Targets built for one platform, with their outputs at <name>/<platform>/<file>.

Example:
    cc_binary(name = "harness_bin", srcs = ["harness.c"])
    pare_platform_files(name = "harness", srcs = [":harness_bin"], platform = "linux_arm64")
""",
)
