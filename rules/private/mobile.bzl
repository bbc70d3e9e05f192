"""App integration bundles: the Java API jar, an Android AAR, an iOS xcframework.

    pare_java_library   org.pare.* compiled with javac --release 8 for one
                        app's library name (System.loadLibrary target)
    pare_android_aar    classes.jar + AndroidManifest.xml + jni/arm64-v8a/
                        lib<runtime>.so (+ the program as an asset)
    pare_ios_xcframework <Name>.xcframework: Info.plist + ios-arm64 slice
                        (static library, C API header, module.modulemap)

The AAR's minSdkVersion and the xcframework's MinimumOSVersion are not
attributes: they are the values the runtime inside was compiled for,
--//toolchains:android_api and --//toolchains:ios_min_version, read from
those settings in the rule's own configuration (the runtime's platform
transitions leave both alone, so it is the runtime's configuration too).
"""

load("//toolchains:toolchains.bzl", "PareSettingInfo")
load(":providers.bzl", "PareMultiPlatformInfo", "multi_platform_attr")

_JAVA_SRCS = Label("//runtime/jni:java_srcs")

def _library_info(ctx, platform):
    """The runtime's files on `platform` by role (shared, unstripped, static).

    The same roles its bundle.json lists.
    """
    info = ctx.attr.runtime[PareMultiPlatformInfo]
    if platform not in info.files:
        fail("%s: runtime %s is not built for %s; add it to that selective_runtime's platforms" % (
            ctx.label,
            ctx.attr.runtime.label,
            platform,
        ))
    return info.files[platform]

def _java_jar(ctx, lib_name, out):
    args = ctx.actions.args()
    args.add("jar")
    args.add("--javac", ctx.executable._javac)
    args.add("--library-name", lib_name)
    args.add("--out", out)
    args.add_all(ctx.files._java_srcs)
    _run_package(
        ctx,
        args,
        ctx.files._java_srcs,
        out,
        "PareJavac",
        "Compiling the Java API for %s" % ctx.label,
        tools = [ctx.executable._javac],
    )

def _run_package(ctx, args, inputs, out, mnemonic, progress_message, tools = []):
    """Runs //tools/mobile:package with `args`, writing `out`."""
    ctx.actions.run(
        executable = ctx.executable._package,
        arguments = [args],
        inputs = inputs,
        tools = tools,
        outputs = [out],
        mnemonic = mnemonic,
        progress_message = progress_message,
    )

def _file_providers(ctx, out):
    """The rule's one output file `out`, as its files and runfiles."""
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

_COMMON_ATTRS = {
    "_package": attr.label(default = Label("//tools/mobile:package"), executable = True, cfg = "exec"),
    "_javac": attr.label(default = "@pare_jdk//:javac", executable = True, cfg = "exec", allow_single_file = True),
    "_java_srcs": attr.label(default = _JAVA_SRCS),
}

def _java_library_impl(ctx):
    out = ctx.actions.declare_file(ctx.label.name + ".jar")
    _java_jar(ctx, ctx.attr.library_name, out)
    return _file_providers(ctx, out)

pare_java_library = rule(
    implementation = _java_library_impl,
    attrs = dict({
        "library_name": attr.string(mandatory = True, doc = "Name System.loadLibrary loads (lib<name>.so)."),
    }, **_COMMON_ATTRS),
    doc = """The org.pare Java API as a jar (javac --release 8).

Example:
    pare_java_library(name = "pare_java", library_name = "pare_runtime_jni")
""",
)

def _aar_impl(ctx):
    lib = _library_info(ctx, "android_arm64")
    classes = ctx.actions.declare_file(ctx.label.name + "/classes.jar")
    _java_jar(ctx, ctx.attr.runtime[PareMultiPlatformInfo].libraries["android_arm64"].lib_name, classes)
    out = ctx.actions.declare_file(ctx.label.name + ".aar")
    args = ctx.actions.args()
    args.add("aar")
    args.add("--out", out)
    args.add("--package", ctx.attr.package)
    args.add("--min-sdk", str(ctx.attr._android_api[PareSettingInfo].value))
    args.add("--classes", classes)
    args.add("--jni", "arm64-v8a=" + lib.shared.path)
    inputs = [classes, lib.shared]
    for f in ctx.files.assets:
        args.add("--asset", f.basename + "=" + f.path)
        inputs.append(f)
    _run_package(ctx, args, inputs, out, "PareAar", "Assembling %s" % out.short_path)
    return _file_providers(ctx, out)

pare_android_aar = rule(
    implementation = _aar_impl,
    attrs = dict({
        "runtime": multi_platform_attr("A selective_runtime with jni = True, built for android_arm64."),
        "package": attr.string(mandatory = True, doc = "Android package name of the library (AndroidManifest.xml)."),
        "assets": attr.label_list(allow_files = True, doc = "Files bundled under assets/ (e.g. the program)."),
        "_android_api": attr.label(default = Label("//toolchains:android_api"), providers = [PareSettingInfo]),
    }, **_COMMON_ATTRS),
    doc = """An Android library (.aar) with the app's selective runtime and the Java API.

Layout: AndroidManifest.xml, classes.jar (org.pare.*), jni/arm64-v8a/lib<runtime>.so,
assets/<files>, proguard.txt, R.txt. The manifest's minSdkVersion is the API
level the runtime was compiled for, --//toolchains:android_api.

Example:
    selective_runtime(name = "runtime_jni", manifest = "manifest.yaml", jni = True)
    pare_android_aar(name = "android_aar", runtime = ":runtime_jni", package = "org.pare.demo")
""",
)

def _xcframework_impl(ctx):
    lib = _library_info(ctx, "ios_arm64")
    if not lib.static:
        fail("%s: runtime %s has no iOS static library" % (ctx.label, ctx.attr.runtime.label))
    out = ctx.actions.declare_directory(ctx.attr.framework_name + ".xcframework")
    args = ctx.actions.args()
    args.add("xcframework")
    args.add("--out", out.path)
    args.add("--name", ctx.attr.framework_name)
    args.add("--library", lib.static)
    args.add_all(ctx.files._headers, before_each = "--header")
    args.add("--min-ios", ctx.attr._ios_min_version[PareSettingInfo].value)
    _run_package(ctx, args, [lib.static] + ctx.files._headers, out, "PareXcframework", "Assembling %s" % out.short_path)
    return _file_providers(ctx, out)

pare_ios_xcframework = rule(
    implementation = _xcframework_impl,
    attrs = dict({
        "runtime": multi_platform_attr("A selective_runtime built for ios_arm64."),
        "framework_name": attr.string(mandatory = True, doc = "Module and bundle name, e.g. PareDemo."),
        "_headers": attr.label(default = Label("//runtime/c_api:pare.h"), allow_files = [".h"]),
        "_ios_min_version": attr.label(default = Label("//toolchains:ios_min_version"), providers = [PareSettingInfo]),
    }, **_COMMON_ATTRS),
    doc = """An iOS xcframework: Info.plist and an ios-arm64 slice with the static runtime,
the C API header and a module map (import it from Swift as `import <framework_name>`).
Info.plist's MinimumOSVersion is the one the runtime was compiled for,
--//toolchains:ios_min_version.

Example:
    pare_ios_xcframework(name = "ios_xcframework", runtime = ":runtime", framework_name = "PareDemo")
""",
)
