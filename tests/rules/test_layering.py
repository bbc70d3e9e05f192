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


def test_pal_core_and_inventory_know_nothing_of_the_upper_layers():
    assert runtime_packages("//runtime/pal") == {"//runtime/pal"}
    assert runtime_packages("//runtime/core") == {"//runtime/core", "//runtime/pal"}
    assert runtime_packages("//runtime/inventory") == {"//runtime/inventory"}


def test_each_upper_layer_depends_only_on_the_layers_below():
    below = {"//runtime/registry", "//runtime/inventory", "//runtime/core", "//runtime/pal"}
    assert runtime_packages("//runtime/registry") == below
    assert runtime_packages("//runtime/kernels") == below | {"//runtime/kernels"}
    assert runtime_packages("//runtime/executor") == below | {"//runtime/executor"}
    assert runtime_packages("//runtime/c_api") == below | {"//runtime/executor", "//runtime/c_api"}


def test_no_layer_depends_on_a_manifest_only_the_apps_selection_unit_does():
    # Kernels compiled once per platform (docs/bazel.md): nothing below the
    # bitcode modules every app shares reads a selection; an app's own
    # selection unit is the one runtime library that does.
    shared = "//runtime/c_api:api_bitcode + //runtime/kernels:kernels_bitcode"
    assert not bazel("query", f"kind('pare_selection', deps({shared}))", "--output=label").stdout.split()
    assert bazel(
        "query", "kind('pare_selection', deps(//rules/tests:fixture_selection_unit))", "--output=label"
    ).stdout.split() == ["//rules/tests:fixture_selection"]
