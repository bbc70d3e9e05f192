"""pare_app: one call wires an app's runtime, its checks and its packages.

    pare_app(
        name = "demo",
        model = "model.py",
        manifest = "manifest.yaml",
        android_package = "org.pare.demo",
        ios_framework_name = "PareDemo",
    )

declares, in the calling package (one app per package):

  runtime               selective_runtime for `manifest` on `platforms`, with
                        runtime_verify_<platform>_test per platform
  runtime_jni           runtime's compiled layers linked with the JNI bridge
                        as well (android_arm64 and linux_x86_64), with its
                        verify tests: links only, no second compile
  java_api              the Java API jar for host JVM tests (loads
                        libpare_runtime_jni)
  android_aar           the AAR (runtime_jni's android_arm64 library;
                        minSdkVersion: --//toolchains:android_api)
  ios_xcframework       the xcframework (runtime's ios_arm64 archive;
                        MinimumOSVersion: --//toolchains:ios_min_version)
  update_manifest       `bazel run :update_manifest` re-traces `model` into
                        `manifest` in the source tree (tools/tracer)
  size_budget_test      the runtime against its entry in `size_budgets`
                        (max_bytes, growth since recorded_bytes; the
                        presubmit checks against the base's budgets)
  <name>                everything above that ships, for `bazel build :<name>`
"""

load("//platforms:table.bzl", "SHIPPED_PLATFORMS")
load(":mobile.bzl", "pare_android_aar", "pare_ios_xcframework", "pare_java_library")
load(":providers.bzl", "PareMultiPlatformInfo", "multi_platform_attr")
load(":scripts.bzl", "script_info", "shell_command", "shell_quote", "write_script")
load(":selective_runtime.bzl", "selective_runtime", "selective_runtime_jni")

def _update_manifest_impl(ctx):
    tracer = ctx.attr._tracer[DefaultInfo].files_to_run.executable
    instrumentation = ctx.attr._instrumentation[PareMultiPlatformInfo].files["linux_x86_64"].shared

    # The same command as from a checkout, so the manifest's debug_info (the
    # model's path) is identical: python -m tools.tracer trace MODEL -o MANIFEST.
    args = ["trace", ctx.file.model.short_path, "-o", ctx.attr.manifest_path]
    script = write_script(ctx, "pare_app (rules/private/app.bzl): re-traces the app's model into its manifest", [
        'if [[ -z "${BUILD_WORKSPACE_DIRECTORY:-}" ]]; then',
        '  echo "%s: run it with bazel run (it writes %s in the workspace)" >&2' % (ctx.label, ctx.attr.manifest_path),
        "  exit 2",
        "fi",
        'runfiles="$PWD"',
        'cd "$BUILD_WORKSPACE_DIRECTORY"',
        'exec "$runfiles"/%s %s --runtime "$runfiles"/%s "$@"' % (
            shell_quote(tracer.short_path),
            shell_command(args),
            shell_quote(instrumentation.short_path),
        ),
    ])
    return [script_info(ctx, script, ctx.attr._tracer, [instrumentation])]

_update_manifest = rule(
    implementation = _update_manifest_impl,
    executable = True,
    attrs = {
        "model": attr.label(mandatory = True, allow_single_file = [".py"], doc = "The model spec."),
        "manifest_path": attr.string(mandatory = True, doc = "Workspace-relative manifest to write."),
        "_tracer": attr.label(default = Label("//tools/tracer"), executable = True, cfg = "target"),
        "_instrumentation": attr.label(default = Label("//runtime:instrumentation"), providers = [PareMultiPlatformInfo]),
    },
    doc = "`bazel run` re-traces a model spec into its checked-in manifest (tools/tracer trace).",
)

def _size_budget_test_impl(ctx):
    size_diff = ctx.attr._size_diff[DefaultInfo].files_to_run.executable
    runtime = ctx.attr.runtime[PareMultiPlatformInfo]
    bundle_dir = runtime.index.short_path.rsplit("/", 1)[0]

    # As size_budgets.json spells it: //pkg:name for the main repository.
    label = ctx.attr.runtime.label
    target = "//%s:%s" % (label.package, label.name) if not label.workspace_name else str(label)
    report = [
        size_diff.short_path,
        "report",
        "-q",
        "--bundle",
        bundle_dir,
        "--target",
        target,
        "--cxxfilt",
        ctx.executable._cxxfilt.short_path,
    ]
    check = [size_diff.short_path, "check", "--budgets", ctx.file.budgets.short_path, "--target", target]
    script = write_script(ctx, "pare_app (rules/private/app.bzl): the runtime's size against its budget", [
        'head="${TEST_TMPDIR:-$(mktemp -d)}/head.json"',
        shell_command(report) + ' --json "$head"',
        "exec " + shell_command(check) + ' "$head"',
    ])

    # The runtime's default outputs are its whole bundle (bundle.json and
    # every file it lists).
    return [script_info(
        ctx,
        script,
        ctx.attr._size_diff,
        [ctx.file.budgets, ctx.executable._cxxfilt],
        transitive_files = ctx.attr.runtime[DefaultInfo].files,
    )]

_size_budget_test = rule(
    implementation = _size_budget_test_impl,
    test = True,
    attrs = {
        "runtime": multi_platform_attr("A selective_runtime."),
        "budgets": attr.label(mandatory = True, allow_single_file = [".json"], doc = "The size budgets file (docs/size.md)."),
        "_size_diff": attr.label(default = Label("//tools/size_diff"), executable = True, cfg = "target"),
        "_cxxfilt": attr.label(default = "@pare_llvm//:bin/llvm-cxxfilt", executable = True, cfg = "exec", allow_single_file = True),
    },
    doc = "Fails when the runtime has no budget in `budgets`, or a platform is over its max_bytes or has grown past its growth limits since its recorded_bytes.",
)

def pare_app(
        name,
        model,
        manifest,
        android_package,
        ios_framework_name,
        platforms = SHIPPED_PLATFORMS,
        build_features = [],
        size_budgets = "//:size_budgets.json",
        visibility = None,
        tags = []):
    """Wires one app: its runtime per platform, verify and size tests, manifest refresh, AAR and xcframework.

    Args:
      name: the app; `bazel build :<name>` builds everything that ships.
      model: the model spec (docs/model_spec.md) the manifest is traced from.
      manifest: the checked-in manifest (refresh: `bazel run :update_manifest`).
      android_package: the AAR's Android package, e.g. "org.pare.demo".
      ios_framework_name: the xcframework's module name, e.g. "PareDemo".
      platforms: rows of //platforms:table.bzl for `runtime` (default: every
        shipped platform).
      build_features: build features on top of the manifest's, for every
        runtime of the app (selective_runtime's attribute of that name).
      size_budgets: the budgets file; it must have an entry for
        //<package>:runtime (docs/size.md), or size_budget_test fails.
      visibility: of every target.
      tags: of every target.
    """
    native.exports_files([model, manifest], visibility = visibility)
    selective_runtime(
        name = "runtime",
        manifest = manifest,
        manifests = [manifest],
        platforms = platforms,
        build_features = build_features,
        visibility = visibility,
        tags = tags,
    )
    selective_runtime_jni(
        name = "runtime_jni",
        runtime = "runtime",
        platforms = ["android_arm64", "linux_x86_64"],
        visibility = visibility,
        tags = tags,
    )
    pare_java_library(
        name = "java_api",
        library_name = "pare_runtime_jni",
        visibility = visibility,
        tags = tags,
    )
    pare_android_aar(
        name = "android_aar",
        package = android_package,
        runtime = ":runtime_jni",
        visibility = visibility,
        tags = tags,
    )
    pare_ios_xcframework(
        name = "ios_xcframework",
        framework_name = ios_framework_name,
        runtime = ":runtime",
        visibility = visibility,
        tags = tags,
    )
    _update_manifest(
        name = "update_manifest",
        model = model,
        manifest_path = (native.package_name() + "/" if native.package_name() else "") + manifest,
        visibility = visibility,
        tags = tags,
    )
    _size_budget_test(
        name = "size_budget_test",
        runtime = ":runtime",
        budgets = size_budgets,
        visibility = visibility,
        tags = tags,
    )
    native.filegroup(
        name = name,
        srcs = [":runtime", ":android_aar", ":ios_xcframework"],
        visibility = visibility,
        tags = tags,
    )
