"""OUT/: the pruned model as a model spec, and rebuilding it.

    OUT/model.py     a model spec: build() returns the pruned module and the
                     original spec's representative inputs
    OUT/pruned.pt    the pruned model's state_dict
    OUT/plan.json    the original spec (relative to OUT) and the plan
    OUT/report.json  what pruning measured (tools/prune/pruner.py)

model.py builds the original model with its spec's build(), applies the plan
(the same classes, smaller) and loads pruned.pt, so it needs the original
spec and this checkout, both found relative to OUT.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import torch

from tools import REPO_ROOT
from tools.prune.errors import PruneError
from tools.prune.plan import Plan, apply_plan

_MODEL_PY = '''"""{name}, pruned by tools.prune (docs/prune.md): the spec {original}
with the plan in plan.json applied and the weights in pruned.pt loaded.
Trace, check and benchmark it like any model spec. Written by tools.prune;
re-run it rather than editing this file."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str((_HERE / {pare_root!r}).resolve()))
from tools.prune.saved import build_pruned  # noqa: E402
{tolerance}

def build():
    return build_pruned(_HERE)
'''


def write_outputs(out: Path, result) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    out = out.resolve()
    original = Path(os.path.relpath(result.spec.path, out)).as_posix()
    plan = {"original": original, "plan": result.plan.to_json()}
    (out / "plan.json").write_text(json.dumps(plan) + "\n", encoding="utf-8")
    torch.save(result.model.state_dict(), out / "pruned.pt")
    override = result.spec.tolerance_override()
    tolerance = "" if override is None else f"\nTOLERANCE = {override!r}\n"
    (out / "model.py").write_text(
        _MODEL_PY.format(
            name=result.spec.path.stem,
            original=original,
            pare_root=Path(os.path.relpath(REPO_ROOT, out)).as_posix(),
            tolerance=tolerance,
        ),
        encoding="utf-8",
    )
    write_report(out, result.report)
    return out


def write_report(out: Path, report: dict) -> None:
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def build_pruned(out: str | Path):
    """(module, inputs) of the pruned model saved in `out`: model.py's build()."""
    from tools.tracer.errors import TracerError
    from tools.tracer.model_spec import load_model_spec

    out = Path(out)
    try:
        saved = json.loads((out / "plan.json").read_text(encoding="utf-8"))
        original = (out / saved["original"]).resolve()
        plan = Plan.from_json(saved["plan"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PruneError(f"{out}/plan.json is missing or malformed ({e}); re-run tools.prune") from None
    try:
        spec = load_model_spec(original)
    except TracerError as e:
        raise PruneError(f"the original model spec of {out}: {e}") from None
    module = apply_plan(spec.module, plan)
    try:
        state = torch.load(out / "pruned.pt", weights_only=True)
        module.load_state_dict(state)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as e:
        raise PruneError(
            f"{out}/pruned.pt does not load into the pruned model ({str(e).splitlines()[0]}); re-run tools.prune"
        ) from None
    return module.eval(), [tuple(x) for x in spec.inputs]
