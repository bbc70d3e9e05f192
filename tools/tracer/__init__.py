"""Pare's tracer: PyTorch models -> Pare programs -> manifests (docs/tracer.md).

Library API (the CLI in `tools.tracer.cli` is a thin layer over it)::

    from tools.tracer import load_model_spec, export_model, trace_model, check_model

    spec = load_model_spec("apps/demo/model.py")
    exported = export_model(spec)                       # .program (bytes), .groups (methods)
    result = trace_model(spec)                          # .manifest (codegen.Manifest), .checks
    checks = check_model(spec, "libpare_full.so")       # raises NumericMismatchError on a mismatch

Errors a user can fix are TracerError (MissingOpsError, NumericMismatchError).
Names are imported on first use, so `merge` and `diff` never import torch.
"""

import importlib

_EXPORTS = {
    "TracerError": "errors",
    "MissingOpsError": "errors",
    "ExportedModel": "exporter",
    "MethodGroup": "exporter",
    "export_model": "exporter",
    "group_inputs": "exporter",
    "ModelSpec": "model_spec",
    "load_model_spec": "model_spec",
    "Tolerance": "numerics",
    "NumericMismatchError": "errors",
    "TraceResult": "tracing",
    "build_manifest": "tracing",
    "check_model": "tracing",
    "trace_model": "tracing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tools.tracer' has no attribute {name!r}")
    return getattr(importlib.import_module(f"tools.tracer.{_EXPORTS[name]}"), name)
