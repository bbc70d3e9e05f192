"""The properties the codegen fuzz targets check (fuzz/codegen_targets.py
runs them under atheris; tests/fuzz replays saved inputs through them).

The contract is the house rule for user errors: any manifest text either
works or raises the tool's own error (CodegenError) with one line of text;
anything else (another exception type, a multi-line message, output that is
not deterministic or does not read back) is a bug.
"""

from __future__ import annotations

import json
from pathlib import Path

import codegen
from codegen import CodegenError

REPO = Path(__file__).absolute().parents[1]
INVENTORY = codegen.load_inventory(REPO / "runtime" / "inventory")
# A real manifest to merge and diff each input against.
BASE = codegen.load(REPO / "apps" / "demo" / "manifest.yaml")


def _text(data: bytes) -> str:
    # Manifests are UTF-8 files (codegen.load decodes them); invalid bytes
    # become U+FFFD here, which the reader must reject or accept cleanly.
    return data.decode("utf-8", errors="replace")


def check_clean_error(e: CodegenError) -> None:
    message = str(e)
    if not message or "\n" in message:
        raise AssertionError(f"a user error must be one line of text, got {message!r}")


def manifest_target(data: bytes) -> None:
    """loads() accepts or raises ManifestError; what it accepts dumps to
    YAML that reads back as the same manifest."""
    try:
        manifest = codegen.loads(_text(data), source="fuzz.yaml")
    except CodegenError as e:
        check_clean_error(e)
        return
    again = codegen.loads(manifest.dump(), source="dumped.yaml")
    if again != manifest:
        raise AssertionError(f"dump() does not read back:\n{manifest!r}\n!=\n{again!r}")


def codegen_target(data: bytes) -> None:
    """The codegen input path on one manifest: resolve against the real
    inventory, render every output (twice: byte-identical), merge and diff
    with a real manifest."""
    if not data:
        return
    allow_unknown_ops = bool(data[0] & 1)
    try:
        manifest = codegen.loads(_text(data[1:]), source="fuzz.yaml")
        selection = codegen.resolve(manifest, INVENTORY, allow_unknown_ops=allow_unknown_ops)
    except CodegenError as e:
        check_clean_error(e)
        return
    files = codegen.render(selection)
    if codegen.render(selection) != files:
        raise AssertionError("render() is not deterministic")
    json.loads(files[codegen.EXPECTED_SYMBOLS_JSON])
    for path, text in files.items():
        if path.endswith(".h") and any(line.count('"') % 2 for line in text.splitlines()):
            raise AssertionError(f"{path}: a string literal is broken across lines:\n{text}")
    merged = codegen.merge([manifest, BASE])
    codegen.diff(manifest, merged.manifest, INVENTORY).to_text()
