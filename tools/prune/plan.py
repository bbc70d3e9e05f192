"""A pruning plan: which channels go, and applying it to an nn.Module.

A plan is plain data (JSON in OUT/plan.json): for every parameter or buffer
that loses entries, the indices kept along each dim, plus the kept input
columns of each grouped convolution's row blocks. Applying it slices the
tensors in place and updates the modules' size attributes (in_channels,
num_features, ...), so the result is an ordinary, smaller nn.Module of the
same classes. The same plan applied to a freshly built original model gives
the pruned architecture again, which is how OUT/model.py rebuilds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from tools.prune.errors import PruneError
from tools.prune.graph import Analysis, Group


@dataclass
class Plan:
    keep: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # name -> dim -> kept indices
    grouped: dict[str, list[list[int]]] = field(default_factory=dict)  # grouped conv weight -> kept cols per block
    depthwise: list[str] = field(default_factory=list)  # modules whose groups follow their channels

    def to_json(self) -> dict:
        return {
            "keep": {name: {str(d): idx for d, idx in dims.items()} for name, dims in sorted(self.keep.items())},
            "grouped": dict(sorted(self.grouped.items())),
            "depthwise": sorted(self.depthwise),
        }

    @classmethod
    def from_json(cls, data: dict) -> Plan:
        try:
            return cls(
                keep={
                    name: {int(d): list(map(int, idx)) for d, idx in dims.items()}
                    for name, dims in data["keep"].items()
                },
                grouped={name: [list(map(int, b)) for b in blocks] for name, blocks in data["grouped"].items()},
                depthwise=list(data["depthwise"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise PruneError(
                f"malformed pruning plan ({type(e).__name__}: {e}); re-run tools.prune to write it"
            ) from None


def make_plan(analysis: Analysis, removed: set[int]) -> Plan:
    """The plan that removes the logical channels `removed` (union-find roots)."""
    find = analysis.uf.find
    plan = Plan(depthwise=sorted(analysis.depthwise))
    for s in analysis.slices:
        keep = [i for i, a in enumerate(s.atoms) if a < 0 or find(int(a)) not in removed]
        if len(keep) < len(s.atoms):
            plan.keep.setdefault(s.name, {})[s.dim] = keep
    for gi in analysis.grouped_inputs:
        cols = [[t for t, a in enumerate(block) if find(int(a)) not in removed] for block in gi.atoms]
        if any(len(c) < gi.atoms.shape[1] for c in cols):
            plan.grouped[gi.name] = cols
    return plan


def select(group: Group, scores, keep: int) -> set[int]:
    """The channels of `group` to remove so that `keep` stay: the lowest scores
    (per block, equally, when the group has blocks)."""
    order = {root: float(s) for root, s in zip(group.channels, scores)}
    if not group.blocks:
        ranked = sorted(group.channels, key=lambda r: (order[r], r))
        return set(ranked[: len(group.channels) - keep])
    per_block = keep // len(group.blocks)
    removed = set()
    for block in group.blocks:
        ranked = sorted(block, key=lambda r: (order[r], r))
        removed.update(ranked[: len(block) - per_block])
    return removed


def _owner(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    prefix, _, attr = name.rpartition(".")
    try:
        return (model.get_submodule(prefix) if prefix else model), attr
    except AttributeError:
        raise PruneError(
            f"the plan names {name}, which this model does not have; was it pruned from another model?"
        ) from None


def _set(module: nn.Module, attr: str, value: torch.Tensor) -> None:
    old = getattr(module, attr)
    if isinstance(old, nn.Parameter):
        setattr(module, attr, nn.Parameter(value, requires_grad=old.requires_grad))
    else:
        module._buffers[attr] = value


def apply_plan(model: nn.Module, plan: Plan) -> nn.Module:
    """Slices `model` in place as the plan says and fixes its modules' sizes; returns it."""
    touched: set[str] = set()
    with torch.no_grad():
        for name, dims in plan.keep.items():
            module, attr = _owner(model, name)
            tensor = getattr(module, attr)
            if tensor is None:
                raise PruneError(f"{name} is None in this model; the plan was made for another model")
            for dim, idx in sorted(dims.items()):
                if idx and max(idx) >= tensor.shape[dim]:
                    raise PruneError(
                        f"the plan keeps index {max(idx)} of {name} dim {dim}, which has {tensor.shape[dim]}"
                    )
                tensor = tensor.index_select(dim, torch.tensor(idx, dtype=torch.long))
            _set(module, attr, tensor.clone())
            touched.add(name.rpartition(".")[0])
        for name, cols in plan.grouped.items():
            module, attr = _owner(model, name)
            weight = getattr(module, attr)
            rows = weight.shape[0] // len(cols)
            blocks = [
                weight[j * rows : (j + 1) * rows].index_select(1, torch.tensor(c, dtype=torch.long))
                for j, c in enumerate(cols)
            ]
            _set(module, attr, torch.cat(blocks).clone())
            touched.add(name.rpartition(".")[0])
    depthwise = set(plan.depthwise)
    for path in touched:
        _fix_sizes(model.get_submodule(path) if path else model, path in depthwise)
    return model


def _fix_sizes(module: nn.Module, depthwise: bool) -> None:
    if isinstance(module, nn.modules.conv._ConvNd):
        weight = module.weight
        module.out_channels = weight.shape[0]
        if depthwise:
            module.groups = weight.shape[0]
        module.in_channels = weight.shape[1] * module.groups
    elif isinstance(module, nn.modules.batchnorm._NormBase):
        stats = module.running_mean if module.running_mean is not None else module.weight
        module.num_features = stats.shape[0]
    elif isinstance(module, nn.Linear):
        module.out_features, module.in_features = module.weight.shape
