"""selective_runtime: one app's minimal Pare runtime, for every platform, in one build.

    manifest --codegen--> pare_selection/*.h --compile selection.cc--> per platform:
    fold into the shared bitcode --> link (--gc-sections / -dead_strip)
    --> strip --> stable paths + report.json

The runtime's layers (runtime/README.md) are compiled once per platform and
shared by every app: //runtime/c_api:api_bitcode (the C API, the executor, the
registry and the core) and //runtime/kernels:kernels_bitcode. The macro expands to:
  <name>_selection  pare_selection: codegen action (once, whatever the
                    platforms), headers as a C++ library
  <name>_selection_unit
                    runtime/registry/selection.cc compiled against them:
                    the app's selection as link-time constants
  <name>_code       pare_selected_code: the shared bitcode and the unit
                    merged, the selection folded, what it leaves out
                    deleted, machine code generated (select_link.bzl)
  <name>_library    pare_platform_library: link (with the PAL,
                    //runtime/pal), strip, (iOS) archive
  <name>            the bundle: split over `platforms`, outputs at
                    bazel-bin/<pkg>/<name>/<platform>/, plus report.json,
                    expected_symbols.json, the manifest used and
                    bundle.json (which lists them all, by role)
  <name>_verify_<platform>_test
                    tools/verify on that platform's library (docs/verify.md)

selective_runtime_jni links one selective_runtime's code again, with the
JNI bridge: the same selection, no second compile (pare_app's runtime_jni).
selective_runtime_test_double links them with the recording PAL instead
(//runtime:full_test_double).
"""

load("//platforms:table.bzl", "SHIPPED_PLATFORMS")
load(":cc.bzl", "pare_cc_library")
load(":link.bzl", "pare_platform_library")
load(":multi_platform.bzl", "collect_platform_libraries", "copy_file", "write_bundle_index")
load(":providers.bzl", "PareMultiPlatformInfo", "PareSelectionInfo")
load(":select_link.bzl", "pare_selected_code")
load(":selection.bzl", "pare_selection")
load(":transitions.bzl", "ALLOWLIST_ATTRS", "check_platforms", "platform_only_tags", "platforms_split_transition", "platforms_with_backends")
load(":verify.bzl", "pare_verify_test")

# What a JNI build exports (runtime/jni/pare_jni.c): Java calls nothing else.
JNI_EXPORTS = ["JNI_OnLoad", "Java_*"]

def _bundle_impl(ctx):
    check_platforms(ctx.label, "platforms", ctx.attr.platforms)
    libraries, outputs, roles = collect_platform_libraries(ctx)
    selection = ctx.attr.selection[PareSelectionInfo]

    expected = copy_file(ctx, selection.expected_symbols, ctx.label.name + "/expected_symbols.json", "expected symbols")
    manifest = copy_file(ctx, selection.manifest, ctx.label.name + "/manifest.yaml", "manifest")
    report = ctx.actions.declare_file(ctx.label.name + "/report.json")
    args = ctx.actions.args()
    args.add("--target", str(ctx.label))
    args.add("--manifest", selection.manifest)
    args.add("--manifest-label", selection.manifest_label)
    args.add("--out", report)
    inputs = [selection.manifest]
    for platform, info in sorted(libraries.items()):
        args.add_all("--binary", [platform, info.shared, info.shared_unstripped])
        inputs += [info.shared, info.shared_unstripped]
    ctx.actions.run(
        executable = ctx.executable._report,
        arguments = [args],
        inputs = inputs,
        outputs = [report],
        mnemonic = "PareSizeReport",
        progress_message = "Measuring %s" % ctx.label,
    )

    index = write_bundle_index(ctx, roles, files = {"expected_symbols": expected, "manifest": manifest, "report": report})
    all_files = [f for files in outputs.values() for f in files] + [expected, manifest, report, index]
    return [
        DefaultInfo(files = depset(all_files), runfiles = ctx.runfiles(files = all_files)),
        PareMultiPlatformInfo(label = ctx.label, libraries = libraries, outputs = outputs, files = roles, index = index),
        selection,
        OutputGroupInfo(report = depset([report]), expected_symbols = depset([expected])),
    ]

_selective_runtime_bundle = rule(
    implementation = _bundle_impl,
    attrs = dict({
        "library": attr.label(mandatory = True, cfg = platforms_split_transition, doc = "The <name>_library target."),
        "selection": attr.label(mandatory = True, providers = [PareSelectionInfo], doc = "The <name>_selection target."),
        "platforms": attr.string_list(doc = "Rows of //platforms:table.bzl."),
        "x86_64_isa": attr.string(
            values = ["", "auto", "baseline", "v3"],
            doc = "Pins --//runtime:x86_64_isa (auto, baseline or v3) for this runtime (rules/private/isa.bzl); \"\": the flag's.",
        ),
        "tracing": attr.bool(doc = "Sets --//runtime:tracing: the layers compiled as the instrumentation build."),
        "ubsan_trap": attr.bool(doc = "Sets --//runtime:ubsan_trap: the layers compiled with UBSan in trap mode (tests only)."),
        "error_messages": attr.bool(
            default = True,
            doc = "False sets --//runtime:error_messages=false: messages as identifiers (docs/errors.md).",
        ),
        "_report": attr.label(default = Label("//tools/size_diff:bundle_report"), executable = True, cfg = "exec"),
    }, **ALLOWLIST_ATTRS),
    provides = [PareMultiPlatformInfo, PareSelectionInfo],
)

def selective_runtime(
        name,
        manifest = None,
        manifests = [],
        platforms = None,
        backends = [],
        tracing = False,
        jni = False,
        x86_64_isa = "",
        ubsan_trap = False,
        error_messages = True,
        allow_unknown_ops = False,
        build_features = [],
        visibility = None,
        tags = []):
    """The smallest Pare runtime that runs exactly what `manifest` selects.

    Args:
      name: target name; the library is lib pare_<name> (.so / .dylib / .a).
      manifest: the manifest (a .yaml file or an op_manifest target) used
        when no `--define ops=` is given.
      manifests: candidates `--define ops=<file>` may pick (by file name,
        path or label); a define naming anything else fails analysis, listing
        the candidates. Targets without candidates ignore the define.
      platforms: rows of //platforms:table.bzl to build; default: every
        shipped platform (android_arm64, ios_arm64, linux_x86_64) that has a
        driver for each of `backends`.
      backends: the delegate backends (docs/delegates.md) the manifest may
        select, e.g. ["vulkan"]: the default platforms leave out those
        without a driver for one (the row's lacks_backends: vulkan on
        ios_arm64), and `platforms` naming one fails analysis. A manifest
        selecting a backend that one of the platforms lacks, undeclared
        here, fails codegen in one line naming both attributes.
      tracing: build the instrumentation runtime (records ops, dtypes,
        classes; used by tools/tracer). Not for shipping.
      jni: also link the JNI bridge (runtime/jni), for pare_android_aar and
        host JVM tests. It exports JNI_OnLoad and Java_org_pare_Module_*
        only (JNI_EXPORTS); the C API functions the bridge does not call
        are dropped. Native code calls the C API of the plain runtime.
      x86_64_isa: "auto", "baseline" or "v3" pins the x86_64 ISA level of
        this runtime (rules/private/isa.bzl: auto chooses the GEMM's AVX2+FMA
        kernels at run time, baseline is SSE2 only, v3 AVX2+FMA throughout);
        "" (default) follows --//runtime:x86_64_isa, itself auto by default.
        arm64 platforms ignore it.
      ubsan_trap: compile the runtime's layers with UBSan in trap mode
        (-fsanitize=undefined -fsanitize-trap=undefined: no sanitizer runtime
        needed), for tests on platforms without one. Not for shipping.
      error_messages: False leaves the text of error messages out of every
        layer: each error keeps its code, and its message becomes a stable
        identifier with the message's arguments, `{#1a2b3c4d "forward" 3}`,
        that `python -m tools.tracer explain` (or the SDK) turns back into
        the full text (docs/errors.md). True (default) follows
        --//runtime:error_messages, itself true by default.
      allow_unknown_ops: drop manifest operators the runtime lacks, with a
        warning, instead of failing the build.
      build_features: build features to select on top of the manifest's
        (runtime/inventory/features.def), e.g. ["output_buffers"] for an app
        that hands the runtime its output buffers; a name the runtime lacks
        fails the build.
      visibility: the usual.
      tags: the usual.

    Example:
        load("//rules:defs.bzl", "selective_runtime")

        selective_runtime(
            name = "runtime",
            manifest = "manifest.yaml",
            manifests = ["manifest.yaml", "manifest_v2.yaml"],
        )
        # bazel build //apps/demo:runtime --define ops=manifest.yaml
        #   bazel-bin/apps/demo/runtime/android_arm64/libpare_runtime.so
        #   bazel-bin/apps/demo/runtime/ios_arm64/libpare_runtime.{a,dylib}
        #   bazel-bin/apps/demo/runtime/linux_x86_64/libpare_runtime.so
        #   bazel-bin/apps/demo/runtime/report.json
    """
    platforms = platforms_with_backends("//%s:%s" % (native.package_name(), name), platforms, backends)
    pare_selection(
        name = name + "_selection",
        manifest = manifest,
        manifests = manifests,
        allow_unknown_ops = allow_unknown_ops,
        build_features = build_features,
        platforms = platforms,
        runtime = "//%s:%s" % (native.package_name(), name),
        tags = tags,
        visibility = visibility,
    )

    # The runtime's layers (runtime/README.md) are compiled once per platform
    # and shared by every app: pal and core to machine code, the layers above
    # to bitcode. The app adds one unit, its selection (link-time constants,
    # runtime/registry/selection.h), and one step that folds them into the
    # shared bitcode and generates the machine code of what it selects
    # (rules/private/select_link.bzl).
    layer_tags = platform_only_tags(tags)
    pare_cc_library(
        name = name + "_selection_unit",
        srcs = [Label("//runtime/registry:selection_unit_srcs")],
        hdrs = [Label("//runtime/registry:selection_unit_hdrs")],
        bitcode = True,
        deps = [
            ":" + name + "_selection",
            Label("//runtime/core"),
            Label("//runtime/inventory:headers"),
            Label("//runtime/registry"),
        ],
        optimize = "size",
        tags = layer_tags,
        visibility = ["//visibility:private"],
    )
    pare_selected_code(
        name = name + "_code",
        roots = [Label("//runtime/c_api:api_bitcode")],
        lazy = [Label("//runtime/kernels:kernels_bitcode")],
        selection_unit = ":" + name + "_selection_unit",
        tags = layer_tags,
        visibility = ["//visibility:private"],
    )
    _link_bundle_and_verify(
        name = name,
        layers = name,
        jni = jni,
        platforms = platforms,
        x86_64_isa = x86_64_isa,
        tracing = tracing,
        ubsan_trap = ubsan_trap,
        error_messages = error_messages,
        visibility = visibility,
        tags = tags,
    )

def selective_runtime_jni(name, runtime, platforms = SHIPPED_PLATFORMS, visibility = None, tags = []):
    """The selective_runtime `runtime` linked with the JNI bridge as well.

    The runtime's compiled layers and selection are reused, so the variant
    costs its links only (no kernel is compiled twice), and it follows the
    runtime's `--define ops=` choice. Outputs and verify tests as
    selective_runtime(jni = True): lib pare_<name>, exporting JNI_OnLoad and
    Java_org_pare_Module_* only. pare_app's runtime_jni.

    Args:
      name: target name.
      runtime: the name of a selective_runtime in this package (not a label).
      platforms: rows of //platforms:table.bzl, among the runtime's.
      visibility: the usual.
      tags: the usual.
    """
    _runtime_variant(name, runtime, platforms, visibility, tags, jni = True)

def selective_runtime_test_double(name, runtime, platforms = ["linux_x86_64"], visibility = None, tags = []):
    """The selective_runtime `runtime` linked with the recording PAL, for tests.

    The runtime's compiled layers, linked with //runtime/pal:test_double
    instead of //runtime/pal: the tests' memory and failure contracts read
    its counters (tests/runtime/runtime_testing.py). testonly, and without
    verify tests: it exports the pare_test_pal_* functions besides the C API.

    Args:
      name: target name.
      runtime: the name of a selective_runtime in this package (not a label).
      platforms: rows of //platforms:table.bzl, among the runtime's.
      visibility: the usual.
      tags: the usual.
    """
    _runtime_variant(
        name,
        runtime,
        platforms,
        visibility,
        tags,
        jni = False,
        pal = Label("//runtime/pal:test_double"),
        testonly = True,
    )

def _runtime_variant(name, runtime, platforms, visibility, tags, **kwargs):
    """The selective_runtime `runtime`'s layers linked again as `name`.

    selective_runtime_jni and selective_runtime_test_double, with
    _link_bundle_and_verify's `kwargs`.
    """
    check_platforms("//%s:%s" % (native.package_name(), name), "platforms", platforms)
    _link_bundle_and_verify(
        name = name,
        layers = runtime,
        platforms = platforms,
        x86_64_isa = "",
        tracing = False,
        visibility = visibility,
        tags = tags,
        **kwargs
    )

def _link_bundle_and_verify(
        name,
        layers,
        jni,
        platforms,
        x86_64_isa,
        tracing,
        visibility,
        tags,
        ubsan_trap = False,
        error_messages = True,
        pal = Label("//runtime/pal"),
        testonly = False):
    """<name>_library, the bundle <name> and (unless testonly) its verify tests.

    They link the layers and selection of the selective_runtime `layers`,
    with the PAL `pal`.
    """
    pare_platform_library(
        name = name + "_library",
        deps = [
            ":" + layers + "_code",
            pal,
        ] + ([Label("//runtime/jni:jni_bridge")] if jni else []),
        lib_name = "pare_" + name,
        # A JNI build is reached through Java only (docs/mobile.md): it
        # exports the JNI entry points, and the C API functions the bridge
        # does not call are dropped.
        export_patterns = JNI_EXPORTS if jni else [],
        tags = platform_only_tags(tags),
        testonly = testonly,
        visibility = ["//visibility:private"],
    )
    _selective_runtime_bundle(
        name = name,
        library = ":" + name + "_library",
        selection = ":" + layers + "_selection",
        platforms = platforms,
        x86_64_isa = x86_64_isa,
        tracing = tracing,
        ubsan_trap = ubsan_trap,
        error_messages = error_messages,
        tags = tags,
        testonly = testonly,
        visibility = visibility,
    )
    if testonly:
        return

    # tools/verify, per platform: selected symbols present, the rest gone,
    # only the C API (and JNI entry points) exported, platform facts.
    for platform in platforms:
        pare_verify_test(
            name = "%s_verify_%s_test" % (name, platform),
            runtime = ":" + name,
            platform = platform,
            jni = jni,
            tags = tags,
            visibility = visibility,
        )
