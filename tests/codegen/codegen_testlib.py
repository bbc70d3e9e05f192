"""Paths and helpers shared by the codegen tests (a uniquely named module, so
it cannot collide with other suites' conftest.py when all tests run together)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).absolute().parents[2]
FIXTURES = Path(__file__).absolute().parent / "fixtures"
MANIFESTS = FIXTURES / "manifests"
INVENTORY_DIR = FIXTURES / "inventory"
RUNTIME_STUB = FIXTURES / "runtime_stub"


def manifest_paths() -> list[Path]:
    return sorted(MANIFESTS.glob("*.yaml"))
