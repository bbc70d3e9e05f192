"""Channel importance: one score per logical channel of each prunable group.

- `l1` / `l2`: the norm of everything the channel owns across its group, every
  producer's filter and every consumer's input slice (as DepGraph's group
  norm does), so a channel that feeds a large weight counts too;
- `bn`: |gamma| of the batch norms the channel passes through (mean over
  them); a group without batch norm falls back to `l2` (reported);
- `taylor`: sum of |weight x gradient| over the same slices (first-order
  Taylor expansion of the loss), with gradients of cross entropy against the
  given labels, or against the model's own top-1 when there are none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from tools.prune.errors import PruneError
from tools.prune.graph import Analysis

KINDS = ("l1", "l2", "bn", "taylor")


def _per_index(tensor: torch.Tensor, dim: int, how: str) -> np.ndarray:
    t = tensor.detach().double().movedim(dim, 0).reshape(tensor.shape[dim], -1)
    return (t.abs().sum(1) if how == "l1" else t.square().sum(1)).numpy()


def scores(
    model: nn.Module,
    analysis: Analysis,
    kind: str,
    batches: Sequence[tuple] = (),
) -> tuple[dict[int, np.ndarray], list[str]]:
    """{group index: scores in group.channels order} for the prunable groups,
    and notes (fallbacks) for the report."""
    if kind not in KINDS:
        raise PruneError(f"unknown importance {kind!r}; choose one of {', '.join(KINDS)}")
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    grads: dict[str, torch.Tensor] = {}
    if kind == "taylor":
        grads = _gradients(model, batches)
    find = analysis.uf.find
    weight_total: dict[int, float] = defaultdict(float)
    norm_total: dict[int, float] = defaultdict(float)
    norm_count: dict[int, int] = defaultdict(int)
    for s in analysis.slices:
        tensor = state.get(s.name)
        if tensor is None:
            continue
        if s.role == "norm":
            if s.name.endswith(".weight"):
                for a, v in zip(s.atoms, tensor.detach().abs().double().numpy()):
                    if a >= 0:
                        norm_total[find(int(a))] += float(v)
                        norm_count[find(int(a))] += 1
            continue
        if s.role not in ("out", "in") or tensor.dim() < 2:
            continue
        if kind == "taylor":
            g = grads.get(s.name)
            if g is None:
                continue
            values = _per_index((tensor.detach() * g), s.dim, "l1")
        else:
            values = _per_index(tensor, s.dim, "l1" if kind == "l1" else "l2")
        for a, v in zip(s.atoms, values):
            if a >= 0:
                weight_total[find(int(a))] += float(v)
    result: dict[int, np.ndarray] = {}
    notes: list[str] = []
    fallbacks = 0
    for g in analysis.groups:
        if not g.prunable:
            continue
        if kind == "bn" and all(norm_count.get(r, 0) for r in g.channels):
            result[g.index] = np.array([norm_total[r] / norm_count[r] for r in g.channels])
            continue
        if kind == "bn":
            fallbacks += 1
        values = np.array([weight_total.get(r, 0.0) for r in g.channels])
        result[g.index] = np.sqrt(values) if kind in ("l2", "bn") else values
    if fallbacks:
        notes.append(f"bn importance: {fallbacks} groups have no batch norm and use l2")
    return result, notes


def _gradients(model: nn.Module, batches: Sequence[tuple]) -> dict[str, torch.Tensor]:
    if not batches:
        raise PruneError("taylor importance needs data: pass --data DATA.py (docs/prune.md)")
    was_training = model.training
    model.eval()
    model.zero_grad(set_to_none=True)
    try:
        for inputs, labels in batches:
            output = model(*inputs)
            if isinstance(output, (tuple, list)):
                output = output[0]
            if output.dim() < 2:
                raise PruneError("taylor importance needs a model whose first output is (batch, classes) logits")
            target = labels if labels is not None else output.detach().argmax(-1)
            nn.functional.cross_entropy(output.float().flatten(0, -2), target.flatten().long()).backward()
    finally:
        model.train(was_training)
    grads = {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def normalized(values: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Each group's scores over their mean: comparable across groups (global strategy)."""
    return {i: v / (float(v.mean()) or 1.0) for i, v in values.items()}
