"""The runtime's layers (runtime/README.md) are enforced by the build: every
pare_cc_library compiles with clang's layering check, so an #include of a
header no direct dep provides fails, and the layers' deps point one way.
"""

from __future__ import annotations

from tests.conftest import bazel

FIXTURE = "//rules/tests/layering"


def test_a_header_from_a_direct_dep_builds():
    bazel("build", f"{FIXTURE}:top_direct")


def test_a_header_from_a_transitive_dep_fails_the_build():
    proc = bazel("build", f"{FIXTURE}:top_transitive", check=False)
    assert proc.returncode != 0
    assert (
        f"module {FIXTURE}:top_transitive does not depend on a module exporting 'rules/tests/layering/bottom.h'"
        in proc.stderr
    )


def runtime_packages(target: str) -> set[str]:
    """The runtime packages whose source files `target` is built from, transitively."""
    labels = bazel("query", f"kind('source file', deps({target}))", "--output=label").stdout.split()
    return {label.split(":")[0] for label in labels if label.startswith("//runtime")}


def test_pal_and_core_know_nothing_of_the_upper_layers():
    assert runtime_packages("//runtime/pal") == {"//runtime/pal"}
    assert runtime_packages("//runtime/core") == {"//runtime/core", "//runtime/pal"}


def test_each_upper_layer_depends_only_on_the_layers_below():
    # selective_runtime's per-app layers, on the rules' own test fixture. The
    # registry reads the kernels' inventory (runtime/kernels/*.def); the
    # kernels reach the registry's kernel API, never the executor or C API.
    below = {"//runtime/registry", "//runtime/kernels", "//runtime/core", "//runtime/pal"}
    assert runtime_packages("//rules/tests:fixture_registry") == below
    assert runtime_packages("//rules/tests:fixture_kernels") == below
    assert runtime_packages("//rules/tests:fixture_executor") == below | {"//runtime/executor"}
    assert runtime_packages("//rules/tests:fixture_c_api") == below | {"//runtime/executor", "//runtime/c_api"}
