"""docs/verify.md and docs/size.md cannot drift from the CLIs, the budget schema and the rule."""

from __future__ import annotations

import re

import pytest

from tests.verify.conftest import REPO_ROOT
from tools.size_diff import budgets as budgets_mod
from tools.size_diff import cli as size_cli
from tools.verify import cli as verify_cli

VERIFY_MD = (REPO_ROOT / "docs" / "verify.md").read_text()
SIZE_MD = (REPO_ROOT / "docs" / "size.md").read_text()


def _options(parser):
    for action in parser._actions:
        for option in action.option_strings:
            if option not in ("-h", "--help"):
                yield option


def test_verify_cli_options_are_documented():
    for option in _options(verify_cli._parser()):
        assert f"`{option}" in VERIFY_MD, option


def test_size_diff_cli_is_documented():
    parser = size_cli._parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():
        assert f"python -m tools.size_diff {name}" in SIZE_MD, name
        for option in _options(sp):
            assert option in SIZE_MD, (name, option)


def test_budget_keys_are_documented():
    documented = set(re.findall(r"^\| `(\w+)` \|", SIZE_MD.split("## Budgets", 1)[1].split("\n## ", 1)[0], re.M))
    assert documented == set(budgets_mod.PLATFORM_KEYS) | {"comment", "expected_symbols"}


def test_presubmit_options_are_documented():
    script = (REPO_ROOT / "tools" / "size_diff" / "presubmit.sh").read_text()
    for option in sorted(set(re.findall(r"^\s+(--[a-z-]+)\)", script, re.M))):
        assert f"`{option}" in SIZE_MD or f"{option} " in SIZE_MD, option


@pytest.mark.parametrize("attr", ["runtime", "platform", "expected_symbols", "jni", "size"])
def test_verify_rule_attributes_are_documented(attr):
    rule = (REPO_ROOT / "rules" / "private" / "verify.bzl").read_text()
    assert re.search(rf"\b{attr}\b", rule)
    assert f"| `{attr}` |" in VERIFY_MD
