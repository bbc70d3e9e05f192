"""x86_64_isa: the instruction-set level x86_64 runtimes are compiled for.

    bazel build //apps/demo:runtime --//runtime:x86_64_isa=v3

  auto      (the default) baseline code, plus a copy of the float GEMM's
            kernels compiled for v3 (runtime/kernels/common/
            kernels_x86_64_v3.cc) and an AVX-512 register tile for v4
            (gemm_tile_x86_64_v4.cc), the best of which the library runs on
            the CPU it finds (CPUID, at run time; runtime/core/cpu.h). Runs
            on every x86_64 CPU; pare_set_max_isa() caps it.
  baseline  x86-64 with SSE2: runs on every x86_64 CPU, and carries no AVX
            instruction.
  v3        x86-64-v3: AVX2, FMA, BMI1/2, F16C (Intel Haswell, 2013; AMD
            Excavator/Zen): 8-lane vectors and fused multiply-add in every
            kernel, and the 6x16 GEMM tile (runtime/kernels/common/gemm.h).
            The library dies with SIGILL on an older CPU; pare.runtime refuses
            to load it there with a message instead.

arm64 runtimes always use NEON and ignore the setting. docs/performance.md
gives the speed and size each level costs.
"""

X86_64_ISA_LEVELS = {
    "auto": ["-DPARE_X86_64_DISPATCH=1"],
    "baseline": [],
    "v3": ["-march=x86-64-v3"],
}

# What a copy of the dispatched kernels for a higher level adds at level
# auto (on top of the level's own flags): that level's code, for that one
# target (//runtime/kernels:kernels_v3, :kernels_v4).
X86_64_COPY_COPTS = {
    "v3": X86_64_ISA_LEVELS["v3"],
    "v4": ["-march=x86-64-v4"],
}

def _x86_64_isa_impl(ctx):
    value = ctx.build_setting_value
    if value not in X86_64_ISA_LEVELS:
        fail("--%s=%s: unknown x86_64 ISA level; use one of %s" % (
            ctx.label,
            value,
            ", ".join(X86_64_ISA_LEVELS.keys()),
        ))
    return []

x86_64_isa_flag = rule(
    implementation = _x86_64_isa_impl,
    build_setting = config.string(flag = True),
    doc = "The x86_64 ISA level (see rules/private/isa.bzl).",
)

def x86_64_isa_setting(name, default = "auto"):
    """The flag `name` and a config_setting `<name>_<level>` per level.

    Each config_setting is true when building for x86_64 at that level.

    Args:
      name: the flag's name.
      default: the level when the flag is not set.
    """
    x86_64_isa_flag(name = name, build_setting_default = default, visibility = ["//visibility:public"])
    for level in X86_64_ISA_LEVELS:
        native.config_setting(
            name = "%s_%s" % (name, level),
            flag_values = {":" + name: level},
            constraint_values = ["@platforms//cpu:x86_64"],
            visibility = ["//visibility:public"],
        )

def x86_64_isa_copts():
    """The compile flags of the level --//runtime:x86_64_isa selects (none off x86_64).

    Labels are resolved here, so the select also works when Pare is an
    external repository.

    Returns:
      A select() of compile flags.
    """
    return select(dict(
        [(str(Label("//runtime:x86_64_isa_" + level)), flags) for level, flags in X86_64_ISA_LEVELS.items()],
        **{"//conditions:default": []}
    ))

def x86_64_copy_copts(level):
    """The flags of a target that holds the `level` copy of dispatched kernels.

    -march=x86-64-<level> at level auto on x86_64; none otherwise, where the
    copy's sources compile to nothing (runtime/kernels/common/
    kernels_x86_64_v3.cc, gemm_tile_x86_64_v4.cc).

    Args:
      level: "v3" or "v4".

    Returns:
      A select() of compile flags.
    """
    if level not in X86_64_COPY_COPTS:
        fail("x86_64_copy_copts(%r): use one of %s" % (level, ", ".join(X86_64_COPY_COPTS.keys())))
    return select({
        str(Label("//runtime:x86_64_isa_auto")): X86_64_COPY_COPTS[level],
        "//conditions:default": [],
    })
