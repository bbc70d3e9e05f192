"""Where a graph node came from in the model's source: the line the
missing-operator report and the coverage report show (docs/tracer.md,
"Missing operators")."""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch
from torch.fx import Node

from tools.tracer.errors import OpUse

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n[ \t]*([^\n]*)')
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


def source_of(node: Node, model_file: Path | None) -> OpUse:
    """The model source line a node came from: the last frame of its stack
    trace in the model's file, else the last frame outside torch."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    chosen = None
    if model_file is not None:
        for path, line, code in frames:
            if _same_file(path, model_file):
                chosen = (path, line, code)
    if chosen is None:
        outside = [f for f in frames if not _is_torch_frame(f[0])]
        chosen = outside[-1] if outside else None
    module = _innermost_module(node)
    if chosen is None:
        return OpUse(None, None, module)
    path, line, code = chosen
    return OpUse(f"{_display_path(path)}:{line}", code.strip() or None, module)


def _innermost_module(node: Node) -> str | None:
    stack = node.meta.get("nn_module_stack") or {}
    for path, kind in reversed(list(stack.values())):
        if path and isinstance(path, str) and not path.startswith("_"):
            name = kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))
            return f"{path} ({name.rsplit('.', 1)[-1]})"
    return None


def _same_file(path: str, model_file: Path) -> bool:
    try:
        return Path(path).resolve() == model_file.resolve()
    except OSError:
        return False


def _is_torch_frame(path: str) -> bool:
    return not os.path.isabs(path) or path.startswith(_TORCH_DIR) or "site-packages" in path


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
