"""atheris targets for the Python side: the manifest reader and codegen's
input path (manifest text -> loads -> resolve -> render, merge, diff).

    .venv/bin/python -m fuzz.codegen_targets manifest CORPUS_DIR -max_total_time=30
    .venv/bin/python -m fuzz.codegen_targets codegen  CORPUS_DIR -max_total_time=30

Arguments after the target name are libFuzzer's (atheris embeds libFuzzer).
The checks themselves are in codegen_checks.py (tests/fuzz replays saved
inputs through them): any exception they let out is a crash.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["codegen", "yaml", "fuzz.codegen_checks"]):
    from fuzz.codegen_checks import codegen_target, manifest_target

TARGETS = {"manifest": manifest_target, "codegen": codegen_target}


def main() -> None:
    usage = f"usage: python -m fuzz.codegen_targets {{{'|'.join(TARGETS)}}} [libFuzzer arguments]"
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(f"{usage}\n{__doc__.strip().splitlines()[0]}")
        return
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(usage)
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
