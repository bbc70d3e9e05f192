"""pare_verify_test: `bazel test` proof that one platform's runtime holds what its manifest selects.

The test runs tools/verify (docs/verify.md) on the platform's unstripped
library (symbols) and stripped library (exports, platform facts) against the
runtime's expected_symbols.json: every selected kernel, dtype case and class
present, every unselected one gone, only the C API exported, and the
platform's loader facts (Android DT_NEEDED and 16 KB alignment, iOS
LC_BUILD_VERSION, architecture).
"""

load("//platforms:table.bzl", "PLATFORMS_BY_NAME")
load(":providers.bzl", "PareMultiPlatformInfo", "PareSelectionInfo", "multi_platform_attr")
load(":scripts.bzl", "script_info", "shell_command", "write_script")

def _impl(ctx):
    platform = ctx.attr.platform
    if platform not in PLATFORMS_BY_NAME:
        fail("pare_verify_test(%s): platform = %r is not a row of //platforms:table.bzl; use one of %s" % (
            ctx.label.name,
            platform,
            ", ".join(sorted(PLATFORMS_BY_NAME.keys())),
        ))
    runtime = ctx.attr.runtime[PareMultiPlatformInfo]
    if platform not in runtime.libraries:
        fail("pare_verify_test(%s): runtime = %s is not built for platform = %r (it has %s); add the platform to its `platforms` or drop this test" % (
            ctx.label.name,
            runtime.label,
            platform,
            ", ".join(sorted(runtime.libraries.keys())) or "none",
        ))

    # The stable paths (<name>/<platform>/[unstripped/]), so reports name
    # readable paths.
    shipped, unstripped = runtime.files[platform].shared, runtime.files[platform].unstripped

    expected = ctx.file.expected_symbols
    if expected == None:
        if PareSelectionInfo not in ctx.attr.runtime:
            fail("pare_verify_test(%s): runtime = %s has no selection (it is not a selective_runtime); set expected_symbols to its expected_symbols.json" % (
                ctx.label.name,
                runtime.label,
            ))
        expected = ctx.attr.runtime[PareSelectionInfo].expected_symbols

    verify = ctx.attr._verify[DefaultInfo].files_to_run.executable
    args = [
        verify.short_path,
        "--platform",
        platform,
        "--expected",
        expected.short_path,
        "--stripped",
        shipped.short_path,
    ]

    # The toolchain's demangler, so the test does not depend on the host PATH.
    args += ["--cxxfilt", ctx.executable._cxxfilt.short_path]
    if ctx.attr.jni:
        args.append("--jni")
    args.append(unstripped.short_path)

    script = write_script(ctx, "pare_verify_test (//rules/private:verify.bzl)", [
        # Failures print the human report; the JSON goes to the test's
        # undeclared outputs for CI to collect.
        'json_args=(); if [[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]]; then json_args=(--json-out "$TEST_UNDECLARED_OUTPUTS_DIR/verify.json"); fi',
        "exec " + shell_command(args) + ' "${json_args[@]}" "$@"',
    ])
    return [script_info(ctx, script, ctx.attr._verify, [expected, shipped, unstripped, ctx.executable._cxxfilt])]

_pare_verify_test = rule(
    implementation = _impl,
    test = True,
    attrs = {
        "runtime": multi_platform_attr("A selective_runtime (or any target with PareMultiPlatformInfo; then set expected_symbols)."),
        "platform": attr.string(
            mandatory = True,
            doc = "The row of //platforms:table.bzl whose library to verify, e.g. \"android_arm64\".",
        ),
        "expected_symbols": attr.label(
            allow_single_file = [".json"],
            doc = "expected_symbols.json to verify against. Default: the runtime's own (PareSelectionInfo).",
        ),
        "jni": attr.bool(
            default = False,
            doc = "The library is a JNI build: JNI_OnLoad, JNI_OnUnload and Java_* may be exported beside the C API.",
        ),
        "_cxxfilt": attr.label(
            default = "@pare_llvm//:bin/llvm-cxxfilt",
            executable = True,
            cfg = "target",
            allow_single_file = True,
        ),
        "_verify": attr.label(
            default = Label("//tools/verify"),
            executable = True,
            cfg = "target",
        ),
    },
    doc = """Verifies one platform's build of a Pare runtime with tools/verify (docs/verify.md).

Passes when every selected kernel, (tag, dtype) case and custom class has a
symbol, no unselected one does, the library exports only the C API (pare_*)
and the platform facts hold. A failure prints the report naming each leak by
op / kernel tag / dtype / class with its symbols; the JSON result lands in the
test's undeclared outputs (verify.json).

Example:
    load("//rules:defs.bzl", "selective_runtime")
    load("//rules/private:verify.bzl", "pare_verify_test")

    selective_runtime(name = "runtime", manifest = "manifest.yaml")

    [pare_verify_test(name = "runtime_verify_%s_test" % p, runtime = ":runtime", platform = p)
     for p in ["android_arm64", "ios_arm64", "linux_x86_64"]]
    # bazel test //apps/demo:runtime_verify_android_arm64_test
""",
)

def pare_verify_test(*, name, runtime, platform, expected_symbols = None, jni = False, size = "small", **kwargs):
    """One platform's verification test of a Pare runtime; see _pare_verify_test's doc.

    Args:
      name: test name, e.g. "<runtime>_verify_<platform>_test".
      runtime: a selective_runtime (or a target with PareMultiPlatformInfo plus expected_symbols).
      platform: row of //platforms:table.bzl to verify.
      expected_symbols: expected_symbols.json; default: the runtime's own.
      jni: the library is a JNI build (JNI_OnLoad / Java_* exports allowed).
      size: test size; verification reads two small files, so "small".
      **kwargs: tags, visibility, ... as for any test.
    """
    _pare_verify_test(
        name = name,
        runtime = runtime,
        platform = platform,
        expected_symbols = expected_symbols,
        jni = jni,
        size = size,
        **kwargs
    )
