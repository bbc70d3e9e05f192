"""Fixtures for the codegen tests. Works from any working directory and with
any pytest import mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).absolute().parent
for path in (str(_HERE.parents[1]), str(_HERE)):  # the repo root (codegen/), and codegen_testlib
    if path not in sys.path:
        sys.path.insert(0, path)

from codegen_testlib import INVENTORY_DIR  # noqa: E402

import codegen  # noqa: E402


@pytest.fixture(scope="session")
def inventory() -> codegen.Inventory:
    return codegen.load_inventory(INVENTORY_DIR)
