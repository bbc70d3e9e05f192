"""Platform transitions: build one target for several platforms in one build.

A split transition over //command_line_option:platforms gives each platform
its own configuration, and so its own output directory (Bazel adds an
-ST-<hash> suffix), so platforms never overwrite each other's outputs.
"""

load("//platforms:table.bzl", "PLATFORMS_BY_NAME", "SHIPPED_PLATFORMS", "platform_label")

def check_platforms(label, attr_name, names):
    """Fails naming the attribute and the bad value unless every name is a platform row."""
    for name in names:
        if name not in PLATFORMS_BY_NAME:
            fail("%s: %s contains unknown platform %r; use one of %s (rows of //platforms:table.bzl)" % (
                label,
                attr_name,
                name,
                ", ".join(sorted(PLATFORMS_BY_NAME.keys())),
            ))

def platforms_with_backends(label, platforms, backends):
    """The platforms a runtime that may select delegate backends is built for.

    Args:
      label: the runtime, for messages.
      platforms: rows of //platforms:table.bzl, or None for every shipped
        platform.
      backends: the delegate backends the runtime's manifest may select.

    Returns:
      `platforms`, or by default every shipped platform that has a driver
      for each backend (its row's lacks_backends: vulkan on ios_arm64).
      A `platforms` naming a platform that lacks one fails.
    """
    if platforms == None:
        return [p for p in SHIPPED_PLATFORMS if not [b for b in backends if b in PLATFORMS_BY_NAME[p].lacks_backends]]
    check_platforms(label, "platforms", platforms)
    for p in platforms:
        for b in backends:
            if b in PLATFORMS_BY_NAME[p].lacks_backends:
                fail("%s: platforms contains %s, which has no driver for backend '%s' (the backends attribute): leave %s out of the platforms attribute" % (label, p, b, p))
    return platforms

# The x86_64 ISA level (rules/private/isa.bzl). A rule with an `x86_64_isa`
# attribute pins it for its split; "" (and rules without the attribute)
# keep the command line's --//runtime:x86_64_isa.
X86_64_ISA_SETTING = str(Label("//runtime:x86_64_isa"))

# The instrumentation build (//runtime:tracing): a rule's `tracing` attribute
# sets it for its split; rules without the attribute keep the command line's.
TRACING_SETTING = str(Label("//runtime:tracing"))

# UBSan in trap mode (//runtime:ubsan_trap): a rule's `ubsan_trap` attribute
# sets it for its split; rules without the attribute keep the command line's.
UBSAN_TRAP_SETTING = str(Label("//runtime:ubsan_trap"))

# Error messages as text (//runtime:error_messages): a rule's
# `error_messages = False` turns them off for its split; otherwise the
# command line's value holds.
ERROR_MESSAGES_SETTING = str(Label("//runtime:error_messages"))

_SETTINGS = ["//command_line_option:platforms", X86_64_ISA_SETTING, TRACING_SETTING, UBSAN_TRAP_SETTING, ERROR_MESSAGES_SETTING]

def _split_impl(settings, attr):
    isa = getattr(attr, "x86_64_isa", "") or settings[X86_64_ISA_SETTING]
    tracing = getattr(attr, "tracing", False) or settings[TRACING_SETTING]
    return {
        name: {
            "//command_line_option:platforms": platform_label(name),
            X86_64_ISA_SETTING: isa,
            TRACING_SETTING: tracing,
            UBSAN_TRAP_SETTING: getattr(attr, "ubsan_trap", False) or settings[UBSAN_TRAP_SETTING],
            ERROR_MESSAGES_SETTING: getattr(attr, "error_messages", True) and settings[ERROR_MESSAGES_SETTING],
        }
        for name in attr.platforms
    }

platforms_split_transition = transition(
    implementation = _split_impl,
    inputs = [X86_64_ISA_SETTING, TRACING_SETTING, UBSAN_TRAP_SETTING, ERROR_MESSAGES_SETTING],
    outputs = _SETTINGS,
)

def _fixed_impl(_settings, _attr):
    return {
        "//command_line_option:platforms": platform_label("linux_x86_64"),
        X86_64_ISA_SETTING: "baseline",
        TRACING_SETTING: False,
        UBSAN_TRAP_SETTING: False,
        ERROR_MESSAGES_SETTING: True,
    }

# For what is the same for every platform (a manifest's codegen): one fixed
# configuration, so the action runs once however many platforms, ISA levels
# or instrumentation settings ask for its outputs.
platform_independent_transition = transition(
    implementation = _fixed_impl,
    inputs = [],
    outputs = _SETTINGS,
)

def _single_impl(settings, attr):
    # The same five settings as platforms_split_transition, from the
    # command line: a target reached both ways is built once, in one
    # configuration (Bazel 4 names a configuration after the settings its
    # transitions wrote, not only their values).
    return {
        "//command_line_option:platforms": platform_label(attr.platform),
        X86_64_ISA_SETTING: settings[X86_64_ISA_SETTING],
        TRACING_SETTING: settings[TRACING_SETTING],
        UBSAN_TRAP_SETTING: settings[UBSAN_TRAP_SETTING],
        ERROR_MESSAGES_SETTING: settings[ERROR_MESSAGES_SETTING],
    }

platform_transition = transition(
    implementation = _single_impl,
    inputs = [X86_64_ISA_SETTING, TRACING_SETTING, UBSAN_TRAP_SETTING, ERROR_MESSAGES_SETTING],
    outputs = _SETTINGS,
)

def _plain_kernels_impl(settings, _attr):
    # The same five settings, so a plain runtime's kernels and these are
    # one configuration (Bazel 4 names it after the settings written).
    plain = {name: settings[name] for name in _SETTINGS}
    plain[TRACING_SETTING] = False
    return plain

# For the kernels of an instrumentation runtime: the plain build's. No
# kernel's code reads PARE_TRACING (the observer's hooks are out of line in
# the executor; tests/runtime/test_portability.py keeps it so), so the
# instrumentation build compiles only the layers that record, and a
# `bazel test //...` compiles the kernels once less.
plain_kernels_transition = transition(
    implementation = _plain_kernels_impl,
    inputs = _SETTINGS,
    outputs = _SETTINGS,
)

ALLOWLIST_ATTRS = {
    "_allowlist_function_transition": attr.label(
        default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
    ),
}

def platform_only_tags(tags):
    """`tags` plus "manual", for targets that only mean something under the split.

    A layer library or a platform link is built for a platform through a
    bundle's platforms_split_transition. Left without "manual", `bazel build
    //...` and `bazel test //...` also build it as a top-level target in the
    host configuration: every kernel compiled once more for no platform
    shipped (a cold `bazel test //...` ran 1,855 actions before this tag,
    1,184 after). Manual targets still build whenever something depends on them, and
    by name (`bazel build //runtime/kernels`).
    """
    return tags if "manual" in tags else tags + ["manual"]
