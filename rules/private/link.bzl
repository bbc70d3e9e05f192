"""Link a Pare library for the current platform: shared, stripped, static.

`pare_platform_library` runs inside one platform's configuration (the split
transition in multi_platform.bzl puts it there) and produces what that
platform ships: a shared library (`.so` on ELF platforms, `.dylib` on iOS)
with a SONAME or @rpath install name, its stripped form, and on iOS a single
static archive of all its code for xcframeworks.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load(":providers.bzl", "PareLibraryInfo")

def _static_libraries(linking_contexts):
    # One depset over every dep's inputs: the runtime's layers share their
    # lower layers (runtime/README.md), which must be archived once.
    linker_inputs = depset(transitive = [lc.linker_inputs for lc in linking_contexts], order = "topological")
    libs = []
    for linker_input in linker_inputs.to_list():
        for lib in linker_input.libraries:
            archive = lib.pic_static_library or lib.static_library
            if archive:
                libs.append(archive)
    return libs

def configured_cc_toolchain(ctx, unsupported_features = []):
    """The C++ toolchain and its feature configuration for a rule.

    The rule's features, less its disabled ones and `unsupported_features`.

    Args:
      ctx: the rule's context.
      unsupported_features: features to turn off besides ctx.disabled_features.

    Returns:
      (cc_toolchain, feature_configuration).
    """
    cc_toolchain = find_cpp_toolchain(ctx)
    features = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features + unsupported_features,
    )
    return cc_toolchain, features

def _impl(ctx):
    cc_toolchain, features = configured_cc_toolchain(ctx)
    is_darwin = cc_toolchain.libc == "darwin"
    lib_name = ctx.attr.lib_name or ctx.label.name
    file_name = "lib%s%s" % (lib_name, ".dylib" if is_darwin else ".so")
    if is_darwin:
        link_flags = ["-Wl,-install_name,@rpath/" + file_name]
    else:
        link_flags = ["-Wl,-soname," + file_name]
    link_flags += ctx.attr.linkopts
    additional_inputs = list(ctx.files.additional_linker_inputs)
    if ctx.attr.export_patterns:
        # Only these symbols stay exported; every other default-visibility
        # symbol becomes local, so --gc-sections / -dead_strip drop what
        # the exported ones do not reach.
        exports = ctx.actions.declare_file("%s_exports/%s" % (ctx.label.name, "symbols.txt" if is_darwin else "symbols.map"))
        if is_darwin:
            ctx.actions.write(exports, "".join(["_%s\n" % p for p in ctx.attr.export_patterns]))
            link_flags.append("-Wl,-exported_symbols_list," + exports.path)
        else:
            ctx.actions.write(exports, "{\n  global: %s;\n  local: *;\n};\n" % "; ".join(ctx.attr.export_patterns))
            link_flags.append("-Wl,--version-script=" + exports.path)
        additional_inputs.append(exports)
    linking_contexts = [dep[CcInfo].linking_context for dep in ctx.attr.deps]

    linking_outputs = cc_common.link(
        name = "%s_unstripped/%s" % (ctx.label.name, lib_name),
        actions = ctx.actions,
        feature_configuration = features,
        cc_toolchain = cc_toolchain,
        linking_contexts = linking_contexts,
        user_link_flags = link_flags,
        output_type = "dynamic_library",
        link_deps_statically = True,
        additional_inputs = additional_inputs,
    )
    unstripped = linking_outputs.library_to_link.dynamic_library

    stripped = ctx.actions.declare_file("%s_stripped/%s" % (ctx.label.name, file_name))
    ctx.actions.run(
        executable = cc_toolchain.strip_executable,
        # Mach-O: drop local and debug symbols but keep the export trie;
        # ELF: drop everything but .dynsym.
        arguments = (["-x", "-S"] if is_darwin else ["--strip-all"]) + ["-o", stripped.path, unstripped.path],
        inputs = depset([unstripped], transitive = [cc_toolchain.all_files]),
        outputs = [stripped],
        mnemonic = "PareStrip",
        progress_message = "Stripping %s for %s" % (file_name, ctx.label),
    )

    static = None
    if is_darwin:
        static = ctx.actions.declare_file("%s_static/lib%s.a" % (ctx.label.name, lib_name))
        archives = _static_libraries(linking_contexts)
        args = ctx.actions.args()
        args.add(cc_toolchain.ar_executable)
        args.add(static)
        args.add_all(archives)
        ctx.actions.run_shell(
            # Merge the dependency archives into one (llvm-ar's L modifier
            # adds an archive's members, not the archive), darwin format,
            # deterministic (D), with a symbol table (s).
            command = 'ar="$1"; out="$2"; shift 2; "$ar" qcLD --format=darwin "$out" "$@" && "$ar" sD "$out"',
            arguments = [args],
            inputs = depset(archives, transitive = [cc_toolchain.all_files]),
            outputs = [static],
            mnemonic = "PareArchive",
            progress_message = "Archiving lib%s.a for %s" % (lib_name, ctx.label),
        )

    files = [stripped, unstripped] + ([static] if static else [])
    return [
        DefaultInfo(files = depset(files)),
        PareLibraryInfo(
            label = ctx.label,
            lib_name = lib_name,
            shared = stripped,
            shared_unstripped = unstripped,
            static = static,
        ),
    ]

pare_platform_library = rule(
    implementation = _impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo], doc = "cc_library targets linked into the library."),
        "lib_name": attr.string(doc = "Base name: lib<lib_name>.so / .dylib. Defaults to the target name."),
        "linkopts": attr.string_list(doc = "Extra linker flags (rarely needed; the toolchain owns the platform's)."),
        "additional_linker_inputs": attr.label_list(allow_files = True, doc = "Files the linkopts refer to."),
        "export_patterns": attr.string_list(
            doc = "When set, the only symbols the shared library exports (glob patterns, C names, e.g. Java_*); " +
                  "the rest of the default-visibility symbols become local. Empty: every default-visibility symbol.",
        ),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    provides = [PareLibraryInfo],
    doc = """Links deps into one platform's shared library (+ stripped form, + iOS archive).

Use through pare_multi_platform_library, which builds it for several
platforms at once.

Example:
    pare_platform_library(name = "pare_smoke_lib", deps = [":smoke"], lib_name = "pare_smoke")
""",
)
