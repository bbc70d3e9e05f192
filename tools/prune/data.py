"""--data DATA.py: inputs (and labels) for Taylor importance, recalibration, fine-tuning and accuracy.

DATA.py defines `data()`, returning a non-empty list of `(inputs, labels)`
pairs: `inputs` a tuple of tensors (one per argument of forward(), as a model
spec's inputs) or a bare tensor, `labels` a tensor of class indices per batch
row, or None. Either every pair has labels or none does.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from tools.prune.errors import PruneError

Batch = tuple[tuple[torch.Tensor, ...], "torch.Tensor | None"]


def load_data(path: str | Path) -> list[Batch]:
    path = Path(path).resolve()
    if not path.is_file():
        raise PruneError(f"--data {path}: no such file; pass a .py file defining data()")
    spec = importlib.util.spec_from_file_location("pare_prune_data", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
        if not callable(getattr(module, "data", None)):
            raise PruneError(f"{path}: defines no data(); add `def data(): return [(inputs, labels), ...]`")
        items = module.data()
    except PruneError:
        raise
    except Exception as e:  # the user's code
        raise PruneError(f"{path}: data() raised {type(e).__name__}: {e}; fix the file") from None
    finally:
        sys.path.remove(str(path.parent))
    if not isinstance(items, (list, tuple)) or not items:
        raise PruneError(f"{path}: data() must return a non-empty list of (inputs, labels) pairs")
    batches: list[Batch] = []
    for i, item in enumerate(items):
        if not (isinstance(item, (list, tuple)) and len(item) == 2):
            raise PruneError(f"{path}: data()[{i}] is not an (inputs, labels) pair; use (inputs, None) without labels")
        inputs, labels = item
        if isinstance(inputs, torch.Tensor):
            inputs = (inputs,)
        if not isinstance(inputs, (list, tuple)) or not all(isinstance(t, torch.Tensor) for t in inputs):
            raise PruneError(f"{path}: data()[{i}]'s inputs must be a tensor or a tuple of tensors")
        if labels is not None and not isinstance(labels, torch.Tensor):
            raise PruneError(f"{path}: data()[{i}]'s labels must be a tensor of class indices or None")
        batches.append((tuple(inputs), labels))
    if len({b[1] is None for b in batches}) > 1:
        raise PruneError(f"{path}: some pairs of data() have labels and some do not; give labels for all or none")
    return batches
