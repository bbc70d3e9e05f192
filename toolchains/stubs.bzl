"""Rules that generate SDK-free link stubs from symbol lists.

Android's libc.so, libm.so and liblog.so become ELF stub libraries through
llvm-ifs (the `.ifs` text is written from the lists, then llvm-ifs emits an
ELF with just a dynamic symbol table and a SONAME, like the NDK's stubs).
iOS's libSystem becomes a TAPI `.tbd` text stub, which ld64.lld reads
directly. Either way the real library is only needed on the device.
"""

def _ifs_text(soname, target, functions, objects):
    lines = [
        "--- !ifs-v1",
        "IfsVersion: 3.0",
        "SoName: " + soname,
        "Target: " + target,
        "Symbols:",
    ]
    for name in sorted(functions):
        lines.append("  - { Name: %s, Type: Func }" % name)
    for name in sorted(objects):
        lines.append("  - { Name: %s, Type: Object, Size: 8 }" % name)
    lines.append("...")
    return "\n".join(lines) + "\n"

def _elf_stub_libraries_impl(ctx):
    outs = []
    for soname, symbols in sorted(ctx.attr.libraries.items()):
        functions = [s for s in symbols if s not in ctx.attr.objects]
        objects = [s for s in symbols if s in ctx.attr.objects]
        ifs = ctx.actions.declare_file(ctx.label.name + "/" + soname + ".ifs")
        ctx.actions.write(ifs, _ifs_text(soname, ctx.attr.target, functions, objects))
        out = ctx.actions.declare_file(ctx.label.name + "/" + soname)
        ctx.actions.run(
            executable = ctx.executable._llvm_ifs,
            arguments = ["--output-elf=" + out.path, ifs.path],
            inputs = [ifs],
            outputs = [out],
            mnemonic = "ElfStub",
            progress_message = "Generating stub %s for %s" % (soname, ctx.label),
        )
        outs.append(out)
    return [DefaultInfo(files = depset(outs))]

elf_stub_libraries = rule(
    implementation = _elf_stub_libraries_impl,
    attrs = {
        "libraries": attr.string_list_dict(
            mandatory = True,
            doc = "SONAME (also the output file name) -> its exported symbols.",
        ),
        "objects": attr.string_list(doc = "Which of the symbols are data, not functions."),
        "target": attr.string(mandatory = True, doc = "Target triple of the stubs (e.g. aarch64-linux-android)."),
        "_llvm_ifs": attr.label(
            default = "@pare_llvm//:bin/llvm-ifs",
            executable = True,
            cfg = "exec",
            allow_single_file = True,
        ),
    },
    doc = """ELF stub shared libraries generated from symbol lists with llvm-ifs.

All land in one directory, `<name>/`, so a linker needs one -L.

Example:
    elf_stub_libraries(
        name = "system_stubs",
        target = "aarch64-linux-android",
        libraries = {"libc.so": ["malloc", "free"], "liblog.so": ["__android_log_write"]},
    )
""",
)

def _tbd_stub_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + "/" + ctx.attr.file_name)
    symbols = sorted(["_" + s for s in ctx.attr.functions + ctx.attr.objects] + ["dyld_stub_binder"])
    text = "\n".join([
        "--- !tapi-tbd",
        "tbd-version: 4",
        "targets: [ %s ]" % ", ".join(ctx.attr.targets),
        "install-name: '%s'" % ctx.attr.install_name,
        "current-version: %s" % ctx.attr.current_version,
        "exports:",
        "  - targets: [ %s ]" % ", ".join(ctx.attr.targets),
        "    symbols: [ %s ]" % ", ".join(symbols),
        "...",
        "",
    ])
    ctx.actions.write(out, text)
    return [DefaultInfo(files = depset([out]))]

tbd_stub = rule(
    implementation = _tbd_stub_impl,
    attrs = {
        "file_name": attr.string(mandatory = True, doc = "Output file name (e.g. libSystem.tbd)."),
        "install_name": attr.string(mandatory = True, doc = "The dylib's install name on the device."),
        "current_version": attr.string(default = "1311", doc = "The dylib's current version."),
        "targets": attr.string_list(mandatory = True, doc = "TAPI targets, e.g. arm64-ios."),
        "functions": attr.string_list(doc = "Exported C functions, without the leading underscore."),
        "objects": attr.string_list(doc = "Exported C data symbols, without the leading underscore."),
    },
    doc = """A TAPI .tbd text stub of a Darwin dylib, written from a symbol list.

Example:
    tbd_stub(
        name = "libsystem",
        file_name = "libSystem.tbd",
        install_name = "/usr/lib/libSystem.B.dylib",
        targets = ["arm64-ios"],
        functions = ["malloc", "free"],
    )
""",
)
