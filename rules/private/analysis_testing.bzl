"""Analysis tests for Pare's rules, on Bazel's native analysis-test support.

(bazel-skylib's analysistest does the same; it is not available offline to
Bazel 4 here, and these two helpers are all the rules need. Bazel 4 cannot
transition on --define, so `--define ops=` is tested by building with it:
tests/rules/test_selective_runtime.py.)

  analysis_failure_test: the target must FAIL analysis with a message
    containing `expected_message`.
  analysis_success_test: the target must analyse, with `expected_files`
    among its default outputs (path suffixes).
  analysis_args_test: the target's action of one mnemonic must pass the
    expected flag values, with the toolchain settings set for the target.
"""

load("//toolchains:toolchains.bzl", "PareSettingInfo")

def _failure_transition_impl(_settings, _attr):
    return {
        "//command_line_option:allow_analysis_failures": True,
    }

_failure_transition = transition(
    implementation = _failure_transition_impl,
    inputs = [],
    outputs = [
        "//command_line_option:allow_analysis_failures",
    ],
)

def _result(errors):
    return [
        AnalysisTestResultInfo(success = not errors, message = "\n".join(errors)),
    ]

def _failure_impl(ctx):
    target = ctx.attr.target[0]
    if AnalysisFailureInfo not in target:
        return _result(["%s analysed successfully; expected a failure containing %r" % (target.label, ctx.attr.expected_message)])
    messages = [cause.message for cause in target[AnalysisFailureInfo].causes.to_list()]
    if not [m for m in messages if ctx.attr.expected_message in m]:
        return _result(["no failure of %s contains %r; failures were:\n%s" % (target.label, ctx.attr.expected_message, "\n".join(messages))])
    return _result([])

analysis_failure_test = rule(
    implementation = _failure_impl,
    attrs = {
        "target": attr.label(mandatory = True, cfg = _failure_transition, doc = "Target expected to fail analysis."),
        "expected_message": attr.string(mandatory = True, doc = "Substring of the expected failure message."),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    analysis_test = True,
    doc = """Passes when `target` fails analysis with `expected_message`.

Example:
    analysis_failure_test(
        name = "bad_define_test",
        target = ":runtime",
        expected_message = "contains unknown platform",
    )
""",
)

def _success_impl(ctx):
    target = ctx.attr.target
    paths = [f.short_path for f in target[DefaultInfo].files.to_list()]
    errors = []
    for suffix in ctx.attr.expected_files:
        if not [p for p in paths if p.endswith(suffix)]:
            errors.append("%s has no output ending in %r; outputs: %s" % (target.label, suffix, ", ".join(sorted(paths))))
    for suffix in ctx.attr.unexpected_files:
        if [p for p in paths if p.endswith(suffix)]:
            errors.append("%s unexpectedly outputs %r" % (target.label, suffix))
    return _result(errors)

analysis_success_test = rule(
    implementation = _success_impl,
    attrs = {
        "target": attr.label(mandatory = True, doc = "Target expected to analyse."),
        "expected_files": attr.string_list(doc = "Suffixes of paths that must be among its outputs."),
        "unexpected_files": attr.string_list(doc = "Suffixes of paths that must not be."),
    },
    analysis_test = True,
    doc = """Passes when `target` analyses and declares `expected_files`.

Example:
    analysis_success_test(
        name = "outputs_test",
        target = ":runtime",
        expected_files = ["runtime/android_arm64/libpare_runtime.so"],
    )
""",
)

_ANDROID_API = str(Label("//toolchains:android_api"))
_IOS_MIN_VERSION = str(Label("//toolchains:ios_min_version"))

def _toolchain_settings_transition_impl(settings, attr):
    # 0 and "" keep the command line's value (whatever it is: the defaults
    # in toolchains/BUILD.bazel unless the test is run with the flags).
    return {
        _ANDROID_API: attr.android_api or settings[_ANDROID_API],
        _IOS_MIN_VERSION: attr.ios_min_version or settings[_IOS_MIN_VERSION],
    }

_toolchain_settings_transition = transition(
    implementation = _toolchain_settings_transition_impl,
    inputs = [_ANDROID_API, _IOS_MIN_VERSION],
    outputs = [_ANDROID_API, _IOS_MIN_VERSION],
)

def _flag_value(argv, flag):
    """The argument after `flag` in argv, or None."""
    for i in range(len(argv) - 1):
        if argv[i] == flag:
            return argv[i + 1]
    return None

def _args_impl(ctx):
    target = ctx.attr.target[0]
    actions = [a for a in target.actions if a.mnemonic == ctx.attr.mnemonic]
    if len(actions) != 1:
        return _result(["%s has %d %s actions; expected one" % (target.label, len(actions), ctx.attr.mnemonic)])
    argv = actions[0].argv
    expected = dict(ctx.attr.expected_args)
    for setting, flag in ctx.attr.expected_setting_args.items():
        expected[flag] = str(setting[PareSettingInfo].value)
    errors = []
    for flag, value in sorted(expected.items()):
        actual = _flag_value(argv, flag)
        if actual != value:
            errors.append("%s's %s action passes %s %r; expected %r" % (target.label, ctx.attr.mnemonic, flag, actual, value))
    return _result(errors)

analysis_args_test = rule(
    implementation = _args_impl,
    attrs = {
        "target": attr.label(mandatory = True, cfg = _toolchain_settings_transition, doc = "Target whose action is checked."),
        "mnemonic": attr.string(mandatory = True, doc = "Mnemonic of the one action to check, e.g. PareAar."),
        "expected_args": attr.string_dict(doc = "Flag -> the value that must follow it in the action's argv."),
        "expected_setting_args": attr.label_keyed_string_dict(
            providers = [PareSettingInfo],
            doc = "Build setting -> flag whose value must be the setting's, as the test itself is configured " +
                  "(the command line's, so its default in a plain `bazel test`).",
        ),
        "android_api": attr.int(doc = "--//toolchains:android_api for `target`; 0 keeps the command line's."),
        "ios_min_version": attr.string(doc = "--//toolchains:ios_min_version for `target`; empty keeps the command line's."),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    analysis_test = True,
    doc = """Passes when `target`'s `mnemonic` action passes the expected flag values.

Example:
    analysis_args_test(
        name = "aar_min_sdk_test",
        target = ":aar",
        mnemonic = "PareAar",
        android_api = 28,
        expected_args = {"--min-sdk": "28"},
    )
""",
)

def toolchain_setting_args_tests(name, target, mnemonic, setting, flag, value):
    """Two analysis_args_tests: `target`'s `mnemonic` action passes //toolchains:<setting> after `flag`.

    <name>_is_<setting>_test checks the setting as the test is configured
    (whatever it is); <name>_follows_<setting>_test sets it to `value` first.

    Args:
      name: the tests' name prefix, e.g. aar_min_sdk.
      target: the target whose action is checked.
      mnemonic: that action's mnemonic, e.g. PareAar.
      setting: android_api or ios_min_version (the analysis_args_test attribute that sets it).
      flag: the flag the setting's value follows, e.g. --min-sdk.
      value: the value the second test sets.
    """
    analysis_args_test(
        name = "%s_is_%s_test" % (name, setting),
        expected_setting_args = {"//toolchains:" + setting: flag},
        mnemonic = mnemonic,
        target = target,
    )
    analysis_args_test(
        name = "%s_follows_%s_test" % (name, setting),
        expected_args = {flag: str(value)},
        mnemonic = mnemonic,
        target = target,
        **{setting: value}
    )
