"""Analysis tests for Pare's rules, on Bazel's native analysis-test support.

(bazel-skylib's analysistest does the same; it is not available offline to
Bazel 4 here, and these two helpers are all the rules need. Bazel 4 cannot
transition on --define, so `--define ops=` is tested by building with it:
tests/rules/test_selective_runtime.py.)

  analysis_failure_test: the target must FAIL analysis with a message
    containing `expected_message`.
  analysis_success_test: the target must analyse, with `expected_files`
    among its default outputs (path suffixes).
"""

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
