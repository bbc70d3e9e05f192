"""Helpers shared by the tracer tests (a uniquely named module, so it cannot
collide with other suites' conftest.py when all tests run together)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).absolute().parent
REPO = HERE.parents[1]
MODELS = HERE / "models"
for path in (str(REPO), str(REPO / "tests" / "runtime")):
    if path not in sys.path:
        sys.path.insert(0, path)

import torch  # noqa: E402

from tools.tracer import exporter, model_spec  # noqa: E402

_specs: dict[str, model_spec.ModelSpec] = {}
_exports: dict[tuple[str, bool], exporter.ExportedModel] = {}


def spec_of(name: str) -> model_spec.ModelSpec:
    """The model spec tests/tracer/models/<name>.py (loaded once)."""
    if name not in _specs:
        _specs[name] = model_spec.load_model_spec(MODELS / f"{name}.py")
    return _specs[name]


def exported(name: str, passes: str = "default") -> exporter.ExportedModel:
    """export_model of a test model (once per session and pass selection):
    torch.export is the slow part of every test."""
    key = (name, passes)
    if key not in _exports:
        _exports[key] = exporter.export_model(spec_of(name), passes=passes)
    return _exports[key]


def spec_from(module: torch.nn.Module, inputs, name: str = "inline.py") -> model_spec.ModelSpec:
    """A model spec for a module defined in a test (named as if in models/)."""
    return model_spec.ModelSpec(MODELS / name, module.eval(), tuple(tuple(i) for i in inputs))


def counts_of(exported: exporter.ExportedModel) -> dict[str, dict[str, int]]:
    """What each graph pass that ran changed, by pass name: {"fuse_clamp": {"fused": 1}, ...}."""
    return {run.name: dict(run.changes) for run in exported.passes}
