"""pare_selection: run codegen on a manifest, as a C++ header library.

Its headers (pare_selection/selected_ops.h, selected_kernel_dtypes.h,
selected_classes.h) go on the include path of everything that depends on it;
the app's selection unit includes them (runtime/registry/selection.cc,
docs/selection.md). Headers are the same for every platform, so the rule
builds in one fixed configuration (platform_independent_transition): one
codegen action per manifest, whatever the platforms of the runtime.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//platforms:table.bzl", "PLATFORMS_BY_NAME")
load(":manifest.bzl", "choose_manifest")
load(":providers.bzl", "PareSelectionInfo")
load(":transitions.bzl", "ALLOWLIST_ATTRS", "platform_independent_transition")

_HEADERS = ["selected_ops.h", "selected_kernel_dtypes.h", "selected_classes.h"]

def _impl(ctx):
    manifest, manifest_label = choose_manifest(ctx)
    out_root = ctx.label.name
    headers = [ctx.actions.declare_file("%s/pare_selection/%s" % (out_root, h)) for h in _HEADERS]
    expected = ctx.actions.declare_file(out_root + "/expected_symbols.json")

    # The inventory's root, wherever the runtime's repository sits
    # (runtime/inventory here, external/pare/runtime/inventory when Pare is
    # @pare): the directory of inventory.inc, above the families' folders.
    inventory_dir = [f for f in ctx.files._inventory if f.basename == "inventory.inc"][0].dirname

    args = ctx.actions.args()
    args.add("generate")
    args.add("--manifest", manifest)
    args.add("--out", expected.dirname)
    args.add("--inventory", inventory_dir)
    args.add("--manifest-name", manifest_label)
    if ctx.attr.allow_unknown_ops:
        args.add("--allow-unknown-ops")
    args.add_all(ctx.attr.build_features, before_each = "--build-feature")

    # The backends the runtime's platforms have no driver for: the manifest
    # is only known here, at execution, so codegen refuses a manifest that
    # selects one (Starlark cannot read it to drop the platform).
    for platform in ctx.attr.platforms:
        for backend in PLATFORMS_BY_NAME[platform].lacks_backends:
            args.add("--platform-lacks", "%s:%s" % (platform, backend))
    if ctx.attr.runtime:
        args.add("--runtime", ctx.attr.runtime)
    ctx.actions.run(
        executable = ctx.executable._codegen,
        arguments = [args],
        inputs = [manifest] + ctx.files._inventory,
        outputs = headers + [expected],
        mnemonic = "PareCodegen",
        progress_message = "Generating selection headers for %s from %s" % (ctx.label, manifest.short_path),
    )

    cc_toolchain = find_cpp_toolchain(ctx)
    features = cc_common.configure_features(ctx = ctx, cc_toolchain = cc_toolchain)
    compilation_context, _ = cc_common.compile(
        name = ctx.label.name,
        actions = ctx.actions,
        feature_configuration = features,
        cc_toolchain = cc_toolchain,
        public_hdrs = headers,
        includes = [headers[0].dirname.rsplit("/", 1)[0]],
        compilation_contexts = [dep[CcInfo].compilation_context for dep in ctx.attr._runtime_headers],
    )
    return [
        DefaultInfo(files = depset(headers + [expected])),
        CcInfo(compilation_context = compilation_context),
        PareSelectionInfo(
            label = ctx.label,
            manifest = manifest,
            manifest_label = manifest_label,
            headers = depset(headers),
            expected_symbols = expected,
        ),
        OutputGroupInfo(expected_symbols = depset([expected])),
    ]

pare_selection = rule(
    implementation = _impl,
    cfg = platform_independent_transition,
    attrs = dict({
        "manifest": attr.label(allow_files = [".yaml", ".yml"], doc = "Default manifest (a .yaml or op_manifest)."),
        "manifests": attr.label_list(allow_files = [".yaml", ".yml"], doc = "Candidates for --define ops=<file>."),
        "allow_unknown_ops": attr.bool(doc = "Drop operators the runtime lacks (with a warning) instead of failing."),
        "build_features": attr.string_list(doc = "Build features selected on top of the manifest's (runtime/inventory/features.def)."),
        "platforms": attr.string_list(
            doc = "The platforms of the runtime this selection is for: a manifest selecting a backend one of them lacks (platforms/table.bzl's lacks_backends) fails.",
        ),
        "runtime": attr.string(doc = "The runtime's label, for that failure's message."),
        "_inventory": attr.label(default = Label("//runtime/inventory")),
        "_runtime_headers": attr.label_list(default = [Label("//runtime/core")]),
        "_codegen": attr.label(default = Label("//codegen"), executable = True, cfg = "exec"),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    }, **ALLOWLIST_ATTRS),
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    provides = [CcInfo, PareSelectionInfo],
    doc = """Selection headers generated from a manifest by codegen, as a header-only C++ library.

Example:
    pare_selection(name = "demo_selection", manifest = "manifest.yaml")
""",
)
