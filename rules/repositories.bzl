"""Pare's WORKSPACE setup: one call declares what Pare's rules need.

In a repository that uses Pare as `@pare` (docs/bazel.md, "Using Pare from
another repository"):

    local_repository(name = "pare", path = "third_party/pare")  # or http_archive
    load("@pare//rules:repositories.bzl", "pare_dependencies")
    pare_dependencies()

Pare's own WORKSPACE makes the same call.
"""

load(
    "//toolchains:repositories.bzl",
    "pare_host_cpu_repository",
    "pare_jdk_repository",
    "pare_llvm_repository",
    "pare_python_repository",
)

def pare_dependencies(register_toolchains = True):  # buildifier: disable=unnamed-macro (a WORKSPACE macro)
    """Declares @pare_llvm, @pare_python, @pare_jdk and @pare_host_cpu and registers Pare's toolchains.

    A repository already declared under one of those names is left alone.

    Args:
      register_toolchains: also register the clang C++ toolchains of every
        platform in //platforms:table.bzl and the Python toolchain Pare's
        build tools (codegen, verify, size report) run on. Set it to False
        to register them yourself (for example after your own, which then
        win): "@pare_llvm//:all", "@pare_python//:python_toolchain".
    """
    existing = native.existing_rules()
    for name, rule in [
        ("pare_llvm", pare_llvm_repository),
        ("pare_python", pare_python_repository),
        ("pare_jdk", pare_jdk_repository),
        ("pare_host_cpu", pare_host_cpu_repository),
    ]:
        if name not in existing:
            rule(name = name)
    if register_toolchains:
        native.register_toolchains(
            "@pare_llvm//:all",
            "@pare_python//:python_toolchain",
        )
