"""pare_compile_info: the runtime's layers and compile flags, as JSON, for compiles outside Bazel.

tests/runtime/runtime_build.py compiles the runtime with clang directly (sanitized
builds, selections of the tests' own, the fuzz targets). This rule is where it
learns what to compile and how, so that the runtime is described once, in
Bazel: the house flags pare_cc_library applies (cc.bzl), the flags of each
x86_64 ISA level and of the copies of dispatched kernels (isa.bzl), and the
files of every pare_cc_library the runtime links, per layer (the layer is the
library's folder under runtime/, runtime/README.md).
"""

load(":cc.bzl", "BITCODE_COPTS", "RUNTIME_COPTS", "RUNTIME_CXXOPTS", "X86_64_COPY_TAG")
load(":isa.bzl", "X86_64_COPY_COPTS", "X86_64_ISA_LEVELS")

_RuntimeFilesInfo = provider(
    doc = "The files of a runtime library and of the libraries it reaches through deps or layers.",
    fields = {
        "library": "(string) this target's JSON object: label, package, srcs, hdrs and x86_64_copy",
        "libraries": "(depset[string]) the same for every library reached, dependencies first",
    },
)

def _paths(files):
    return sorted([f.path for f in files if f.owner.workspace_name == ""])

def _runtime_files_aspect_impl(target, ctx):
    rule_files = ctx.rule.files
    copies = [t[len(X86_64_COPY_TAG):] for t in getattr(ctx.rule.attr, "tags", []) if t.startswith(X86_64_COPY_TAG)]
    library = json.encode({
        "hdrs": _paths(getattr(rule_files, "hdrs", []) + getattr(rule_files, "textual_hdrs", [])),
        "label": str(target.label),
        "package": target.label.package,
        "srcs": _paths(getattr(rule_files, "srcs", [])),
        "x86_64_copy": copies[0] if copies else "",
    })
    reached = [
        dep[_RuntimeFilesInfo].libraries
        for attr in ("deps", "layers")
        for dep in getattr(ctx.rule.attr, attr, [])
        if _RuntimeFilesInfo in dep
    ]
    return [_RuntimeFilesInfo(
        library = library,
        libraries = depset([library], transitive = reached, order = "postorder"),
    )]

_runtime_files_aspect = aspect(
    implementation = _runtime_files_aspect_impl,
    attr_aspects = ["deps", "layers"],
    doc = "Collects the files of runtime libraries (pare_cc_library, filegroup, pare_bitcode_module's layers).",
)

def _layer(package):
    # runtime/kernels -> kernels: the layer is the folder (runtime/README.md).
    return package.split("/")[-1]

def _libraries(targets):
    """The runtime libraries `targets` reach, dependencies first."""
    libraries = depset(transitive = [t[_RuntimeFilesInfo].libraries for t in targets], order = "postorder")
    decoded = [json.decode(encoded) for encoded in libraries.to_list()]
    return [lib for lib in decoded if lib["package"].startswith("runtime/")]

def _sources(files):
    return [f for f in files if f.endswith((".c", ".cc"))]

def _layer_names(targets):
    """The layers (folders) with sources that `targets` reach, dependencies first."""
    names = []
    for lib in _libraries(targets):
        name = _layer(lib["package"])
        if _sources(lib["srcs"]) and name not in names:
            names.append(name)
    return names

def _compile_info_impl(ctx):
    pals = ctx.attr.pals.keys()
    everything = [ctx.attr.roots, ctx.attr.kernels] + ctx.attr.selection_unit + pals
    layers = {}
    copies = {}
    for lib in _libraries(everything):
        layer = layers.setdefault(_layer(lib["package"]), {"hdrs": [], "package": lib["package"], "srcs": []})
        layer["srcs"] = sorted({f: True for f in layer["srcs"] + lib["srcs"]}.keys())
        layer["hdrs"] = sorted({f: True for f in layer["hdrs"] + lib["hdrs"]}.keys())
        if lib["x86_64_copy"]:
            copies[lib["x86_64_copy"]] = {
                "copts": X86_64_COPY_COPTS[lib["x86_64_copy"]],
                "srcs": _sources(lib["srcs"]),
            }
    unit = [f for t in ctx.attr.selection_unit for f in _sources(json.decode(t[_RuntimeFilesInfo].library)["srcs"])]
    if len(unit) != 1:
        fail("pare_compile_info(%s): selection_unit = %s holds %d sources; list the one selection unit and its headers" % (
            ctx.label,
            [str(t.label) for t in ctx.attr.selection_unit],
            len(unit),
        ))
    roots = _layer_names([ctx.attr.roots])
    info = {
        "bitcode_copts": BITCODE_COPTS,
        # -std first, as a compile command spells it.
        "house_copts": RUNTIME_CXXOPTS + RUNTIME_COPTS,
        # What the kernels add to the layers they depend on.
        "kernel_layers": [name for name in _layer_names([ctx.attr.kernels]) if name not in roots],
        "layers": layers,
        "machine_code_layers": _layer_names(pals),
        "pals": {
            name: _sources(json.decode(target[_RuntimeFilesInfo].library)["srcs"])
            for target, name in ctx.attr.pals.items()
        },
        "root_layers": roots,
        "selection_unit": unit[0],
        "x86_64_copies": copies,
        "x86_64_isa_levels": X86_64_ISA_LEVELS,
    }
    out = ctx.actions.declare_file(ctx.label.name + ".json")
    ctx.actions.write(out, json.encode_indent(info, indent = "  ") + "\n")
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

def _runtime_files_attr(kind, doc):
    """A mandatory attribute of `kind` (attr.label, attr.label_list, ...) whose targets' files the aspect collects."""
    return kind(mandatory = True, aspects = [_runtime_files_aspect], doc = doc)

pare_compile_info = rule(
    implementation = _compile_info_impl,
    attrs = {
        "kernels": _runtime_files_attr(attr.label, "The pare_bitcode_module of the kernels, every ISA copy included: linked as far as the roots reach."),
        "pals": _runtime_files_attr(attr.label_keyed_string_dict, "Each PAL library, compiled to machine code, keyed to its name in runtime_build.build(pal = ...)."),
        "roots": _runtime_files_attr(attr.label, "The pare_bitcode_module an app links whole (the roots of its selection step)."),
        "selection_unit": _runtime_files_attr(attr.label_list, "The app's selection unit (selection.cc, compiled against a selection's headers) and its headers."),
    },
    doc = """Writes <name>.json: the runtime's layers, their files and the flags to compile them with.

The fields: house_copts (every unit), bitcode_copts (the layers an app's
selection step folds), x86_64_isa_levels (each --//runtime:x86_64_isa level's
flags), x86_64_copies (per level, the copy's sources and flags at level auto),
layers (per folder of runtime/: its package, srcs and hdrs), root_layers,
kernel_layers and machine_code_layers (dependencies first), pals (each PAL's
own sources) and selection_unit. Paths are from the workspace root.
tests/runtime/runtime_build.py reads it.

Example:

    pare_compile_info(
        name = "runtime_compile_info",
        kernels = "//runtime/kernels:kernels_bitcode",
        pals = {"//runtime/pal": "posix", "//runtime/pal:test_double": "test_double"},
        roots = "//runtime/c_api:api_bitcode",
        selection_unit = [
            "//runtime/registry:selection_unit_hdrs",
            "//runtime/registry:selection_unit_srcs",
        ],
    )
""",
)
