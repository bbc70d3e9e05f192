"""pare_selected_code: one app's runtime code for one platform, from code compiled once.

The runtime's layers above the PAL (//runtime/core, //runtime/registry,
//runtime/kernels, //runtime/executor, //runtime/c_api) are compiled once per
platform, ISA level and instrumentation setting, to LLVM bitcode, with every
kernel and every dtype body, and merged into two modules per platform by
pare_bitcode_module (//runtime/c_api:api_bitcode, linked whole, and
//runtime/kernels:kernels_bitcode, linked as far as the rest reaches). They ask what
the app selects through link-time constants (runtime/registry/selection.h).
An app adds one small unit, its selection (runtime/registry/selection.cc
compiled against its generated headers). pare_selected_code merges the
three, folds the constants, deletes what the app does not select and
generates machine code for what is left (rules/private/select_link.sh), so:

  * a manifest edit recompiles one unit and reruns this step, never a kernel;
  * an unselected operator, (kernel tag, dtype) body, class or feature never
    becomes machine code, as when selection was a compile-time switch, and
    tools/verify proves it the same way.

The output is a static library with one object, which pare_platform_library
links with a PAL (machine code, compiled once).
"""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load(":link.bzl", "configured_cc_toolchain")
load(":providers.bzl", "PareBitcodeInfo")
load(":transitions.bzl", "ALLOWLIST_ATTRS", "plain_kernels_transition")

def _own_objects(target):
    """The object files `target` itself compiled (not its deps')."""
    objects = []
    for linker_input in target[CcInfo].linking_context.linker_inputs.to_list():
        if linker_input.owner != target.label:
            continue
        for library in linker_input.libraries:
            files = library.pic_objects or library.objects
            if files:
                objects.extend(files)
            elif library.pic_static_library or library.static_library:
                objects.append(library.pic_static_library or library.static_library)
    if not objects:
        fail("%s compiled no object files; Pare's selection step needs the bitcode of every runtime layer" % target.label)
    return objects

_LLVM_TOOL_ATTRS = {
    "_llvm_link": attr.label(default = Label("@pare_llvm//:bin/llvm-link"), executable = True, cfg = "exec", allow_single_file = True),
}

def _module_impl(ctx):
    objects = []
    for layer in ctx.attr.layers:
        objects.extend(_own_objects(layer))
    module = ctx.actions.declare_file(ctx.label.name + ".bc")
    args = ctx.actions.args()
    args.add_all(objects)
    args.add("-o", module)
    ctx.actions.run(
        executable = ctx.executable._llvm_link,
        arguments = [args],
        inputs = objects,
        outputs = [module],
        mnemonic = "PareBitcodeModule",
        progress_message = "Merging the bitcode of %s" % ctx.label,
    )
    return [DefaultInfo(files = depset([module])), PareBitcodeInfo(label = ctx.label, module = module)]

pare_bitcode_module = rule(
    implementation = _module_impl,
    attrs = dict({
        "layers": attr.label_list(
            providers = [CcInfo],
            mandatory = True,
            doc = "Runtime layers compiled to bitcode (pare_cc_library(bitcode = True)); their own objects only.",
        ),
    }, **_LLVM_TOOL_ATTRS),
    provides = [PareBitcodeInfo],
    doc = """Merges runtime layers' bitcode into one module, once per platform, for every app's selection step.

Example:
    pare_bitcode_module(name = "kernels_bitcode", layers = [":kernels"])
""",
)

def _impl(ctx):
    cc_toolchain, features = configured_cc_toolchain(ctx, ["layering_check", "module_maps"])

    # The toolchain's own compile flags (target triple, PIC, optimisation
    # level of the compilation mode), for generating this platform's code.
    compile_flags = cc_common.get_memory_inefficient_command_line(
        feature_configuration = features,
        action_name = ACTION_NAMES.cpp_compile,
        variables = cc_common.create_compile_variables(
            feature_configuration = features,
            cc_toolchain = cc_toolchain,
            user_compile_flags = ["-fPIC", "-ffunction-sections", "-fdata-sections"],
        ),
    )
    roots = [m[PareBitcodeInfo].module for m in ctx.attr.roots] + _own_objects(ctx.attr.selection_unit)
    lazy = [m[PareBitcodeInfo].module for m in ctx.attr.lazy]

    archive = ctx.actions.declare_file("lib%s.a" % ctx.label.name)
    args = ctx.actions.args()
    args.add(archive)
    args.add_all([ctx.executable._llvm_link, ctx.executable._opt, ctx.executable._llvm_nm])
    args.add(cc_toolchain.ar_executable)
    args.add("darwin" if cc_toolchain.libc == "darwin" else "gnu")
    args.add(cc_toolchain.compiler_executable)
    args.add_all(compile_flags)
    args.add("--")
    args.add_all(roots)
    args.add("--")
    args.add_all(lazy)
    ctx.actions.run(
        executable = ctx.executable._script,
        arguments = [args],
        inputs = depset(roots + lazy, transitive = [cc_toolchain.all_files]),
        tools = [ctx.executable._llvm_link, ctx.executable._opt, ctx.executable._llvm_nm],
        outputs = [archive],
        mnemonic = "PareSelectLink",
        progress_message = "Selecting and generating the runtime code of %s" % ctx.label,
    )

    library = cc_common.create_library_to_link(
        actions = ctx.actions,
        feature_configuration = features,
        cc_toolchain = cc_toolchain,
        pic_static_library = archive,
        alwayslink = True,
    )
    linker_input = cc_common.create_linker_input(owner = ctx.label, libraries = depset([library]))
    return [
        DefaultInfo(files = depset([archive])),
        CcInfo(linking_context = cc_common.create_linking_context(linker_inputs = depset([linker_input]))),
    ]

pare_selected_code = rule(
    implementation = _impl,
    attrs = dict({
        "roots": attr.label_list(
            providers = [PareBitcodeInfo],
            mandatory = True,
            doc = "Merged bitcode linked whole: the C API, the executor and the registry.",
        ),
        "lazy": attr.label_list(
            providers = [PareBitcodeInfo],
            mandatory = True,
            # An instrumentation runtime's kernels are the plain build's.
            cfg = plain_kernels_transition,
            doc = "Merged bitcode linked only as far as the roots reach: the kernels.",
        ),
        "selection_unit": attr.label(
            providers = [CcInfo],
            mandatory = True,
            doc = "The app's selection unit: runtime/registry/selection.cc compiled against its headers.",
        ),
        "_script": attr.label(
            default = Label("//rules/private:select_link.sh"),
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
        "_opt": attr.label(default = Label("@pare_llvm//:bin/opt"), executable = True, cfg = "exec", allow_single_file = True),
        "_llvm_nm": attr.label(default = Label("@pare_llvm//:bin/llvm-nm"), executable = True, cfg = "exec", allow_single_file = True),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    }, **dict(_LLVM_TOOL_ATTRS, **ALLOWLIST_ATTRS)),
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    doc = """One app's runtime code for the current platform: shared bitcode + its selection, folded.

Used by selective_runtime; not for direct use.

Example:
    pare_selected_code(
        name = "runtime_code",
        roots = ["//runtime/c_api:api_bitcode"],
        lazy = ["//runtime/kernels:kernels_bitcode"],
        selection_unit = ":runtime_selection_unit",
    )
""",
)
