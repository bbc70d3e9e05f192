"""atheris targets for the Python side: the manifest reader and codegen's
input path (manifest text -> loads -> resolve -> render, merge, diff).

    .venv/bin/python fuzz/codegen_targets.py manifest CORPUS_DIR -max_total_time=30
    .venv/bin/python fuzz/codegen_targets.py codegen  CORPUS_DIR -max_total_time=30

Arguments after the target name are libFuzzer's (atheris embeds libFuzzer).
The checks themselves are in codegen_checks.py (tests/fuzz replays saved
inputs through them): any exception they let out is a crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "fuzz")]

with atheris.instrument_imports(include=["codegen", "yaml", "codegen_checks"]):
    from codegen_checks import codegen_target, manifest_target

TARGETS = {"manifest": manifest_target, "codegen": codegen_target}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(TARGETS)}}} [libFuzzer arguments]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
