"""docs/manifest.md and docs/selection.md cannot drift from the code."""

from __future__ import annotations

import json
import re

from codegen_testlib import MANIFESTS, REPO_ROOT

import codegen
from codegen import cli
from codegen.manifest import OPERATOR_KEYS, TOP_LEVEL_KEYS

MANIFEST_MD = (REPO_ROOT / "docs" / "manifest.md").read_text()
SELECTION_MD = (REPO_ROOT / "docs" / "selection.md").read_text()


def table_keys(section_title: str) -> list[str]:
    section = MANIFEST_MD.split(section_title, 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def test_field_tables_list_every_key():
    assert sorted(table_keys("### Top level")) == sorted(TOP_LEVEL_KEYS)
    assert sorted(table_keys("### Operator entries")) == sorted(OPERATOR_KEYS)


def test_cli_options_are_documented():
    parser = cli._parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():
        assert f"python -m codegen {name}" in MANIFEST_MD
        for action in sp._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in MANIFEST_MD, (name, option)


def test_expected_symbols_example_has_the_real_shape(inventory):
    block = SELECTION_MD.split("## `expected_symbols.json`", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    example = json.loads(block.replace('"macho": "..."', '"macho": ""'))
    real = codegen.expected_symbols(codegen.resolve(codegen.load(MANIFESTS / "pytorch_tracer.yaml"), inventory))
    assert list(example) == list(real)
    for key in ("operators", "kernel_dtypes", "custom_classes", "build_features"):
        assert list(example[key][0]) == list(real[key][0]), key
    # The documented entries are literally what codegen writes for the fixtures.
    by_name = {o["name"]: o for o in real["operators"]}
    assert example["operators"][0] == by_name["aten::add.Tensor"]
    pairs = {(k["tag"], k["dtype"]): k for k in real["kernel_dtypes"]}
    assert example["kernel_dtypes"][0] == pairs[("add_kernel", "Long")]
    cls = next(c for c in real["custom_classes"] if c["name"] == "LinearPackedParams")
    assert example["custom_classes"][0]["match"]["elf"] == cls["match"]["elf"]
