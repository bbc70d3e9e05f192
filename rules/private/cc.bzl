"""pare_cc_library: the one place that owns the runtime's compile flags.

Every runtime target goes through this macro, so no target sets its own
copts; the tests' direct compiles (tests/runtime/runtime_build.py) get the
same flags through pare_compile_info (compile_info.bzl), which loads them
from here. See docs/portable_cpp.md for what the flags forbid and why.
"""

load(":isa.bzl", "x86_64_copy_copts", "x86_64_isa_copts")

# Freestanding C++17 for every platform: no exceptions, no RTTI, hidden
# symbols (only the C API is exported), one section per function and datum
# so --gc-sections / -dead_strip can drop what selection leaves unreferenced.
RUNTIME_COPTS = [
    "-ffreestanding",
    "-fno-exceptions",
    "-fno-rtti",
    "-fno-threadsafe-statics",
    "-fno-asynchronous-unwind-tables",
    "-fno-unwind-tables",
    "-fno-stack-protector",
    "-fvisibility=hidden",
    "-fvisibility-inlines-hidden",
    "-ffunction-sections",
    "-fdata-sections",
    "-fPIC",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
]

RUNTIME_CXXOPTS = ["-std=c++17"]

# The x86_64 ISA level (--//runtime:x86_64_isa, rules/private/isa.bzl).
ISA_COPTS = x86_64_isa_copts()

# --//runtime:ubsan_trap (runtime/BUILD.bazel): UBSan whose checks trap, so
# it needs no sanitizer runtime (none is installed here for arm64). Tests
# only; never shipped.
UBSAN_TRAP_COPTS = select({
    str(Label("//runtime:ubsan_trap_build")): ["-fsanitize=undefined", "-fsanitize-trap=undefined"],
    "//conditions:default": [],
})

# --//runtime:error_messages=false (runtime/BUILD.bazel): messages as
# identifiers (runtime/core/error.h, docs/errors.md).
ERROR_MESSAGES_COPTS = select({
    str(Label("//runtime:no_error_messages_build")): ["-DPARE_ENABLE_ERROR_MESSAGES=0"],
    "//conditions:default": [],
})

# Compiled to LLVM bitcode, for the layers an app's selection step folds
# (rules/private/select_link.bzl): full LTO's per-unit pipeline, so every
# unit is optimised before the app's step, which only folds and deletes.
BITCODE_COPTS = ["-flto=full"]

# The tag that marks a library holding a copy of dispatched kernels
# (x86_64_copy below): pare_compile_info finds the copies by it.
X86_64_COPY_TAG = "pare_x86_64_copy="

def pare_cc_library(name, srcs = [], hdrs = [], deps = [], defines = [], local_defines = [], textual_hdrs = [], optimize = "speed", bitcode = False, x86_64_copy = None, visibility = None, **kwargs):
    """A freestanding runtime library compiled with the house flags.

    Args:
      name: target name.
      srcs: C and C++ sources and private headers.
      hdrs: public headers.
      deps: other pare_cc_library targets.
      defines: preprocessor defines that propagate to dependants.
      local_defines: preprocessor defines for this target only.
      textual_hdrs: headers included textually (X-macro .def files).
      optimize: "speed" (the compilation mode's -O2) or "size" (-Os: for
        code off the hot path, such as the loader and the C API).
      bitcode: compile to LLVM bitcode for pare_selected_code (the runtime
        layers above the core), not to machine code.
      x86_64_copy: "v3" or "v4" when the target holds that level's copy of
        kernels that a runtime at --//runtime:x86_64_isa=auto chooses at run
        time: its sources are also compiled with -march=x86-64-<level> at
        that level (rules/private/isa.bzl).
      visibility: the usual.
      **kwargs: passed to cc_library (tags, testonly, ...); copts are not accepted.
    """
    if optimize not in ("speed", "size"):
        fail("pare_cc_library(%s): optimize = %r; use \"speed\" or \"size\"" % (name, optimize))
    if "copts" in kwargs:
        fail("pare_cc_library(%s): copts is owned by //rules/private:cc.bzl; add flags there, not per target" % name)
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        deps = deps,
        defines = defines,
        local_defines = local_defines,
        textual_hdrs = textual_hdrs,
        copts = RUNTIME_COPTS + (["-Os"] if optimize == "size" else []) + (BITCODE_COPTS if bitcode else []) + ISA_COPTS +
                (x86_64_copy_copts(x86_64_copy) if x86_64_copy else []) + UBSAN_TRAP_COPTS + ERROR_MESSAGES_COPTS,
        # Link every object: --gc-sections / -dead_strip, rooted at the
        # exported C API, decide what stays, not archive member selection.
        alwayslink = True,
        # An #include of a header that no direct dep provides fails the
        # build (clang's module maps; toolchains/toolchains.bzl), so the
        # runtime's layers (runtime/README.md) stay as their deps say.
        features = ["layering_check"] + kwargs.pop("features", []),
        tags = kwargs.pop("tags", []) + ([X86_64_COPY_TAG + x86_64_copy] if x86_64_copy else []),
        visibility = visibility,
        **kwargs
    )
