"""Dependency groups: which channels of a model must be removed together.

The model is exported with torch.export (ATen ops, parameters lifted to
placeholders), and every tensor in the graph gets a *channel map*
(tools/prune/channel_maps.py): ids of its channels, moved by each op the way
it moves data, and unified in a union-find where an op ties channels
together (a residual add, a squeeze-and-excitation scale, a depthwise
convolution, a channel shuffle). One union-find class is one *logical
channel*: removing it removes every slice of every parameter that touches
it. A *group* is the set of logical channels that one layer produces (a
convolution's or linear's output channels, with everything tied to them):
the unit a pruning ratio applies to.

What cannot be pruned safely is *pinned*, with the reason reported: the model's
inputs and outputs, parameters used by ops this analysis does not model
(a learned per-channel scale, say), ops it does not know, slices with literal
bounds, layer and group norms, depthwise convolutions with a channel
multiplier, chunks whose blocks cross groups. A group with a pinned channel is left
alone entirely.

Chunks along the channel dim and grouped convolutions constrain a group to
lose the same number of channels from each of their blocks.

This is the approach of torch-pruning's DepGraph, done on torch.export's graph
with channel maps instead of per-op pruning rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.export import ExportedProgram

from tools.prune.channel_maps import (  # noqa: F401 (re-exported: the parts of an Analysis)
    MAX_MAP_ELEMENTS,
    NO_CHANNEL,
    ChannelTracker,
    GroupedInput,
    Layer,
    ParamSlice,
    UnionFind,
)


@dataclass
class Group:
    """Logical channels pruned together: `channels` are union-find roots in the order the first producer has them."""

    index: int
    channels: list[int]
    producers: list[str]  # the modules whose output channels these are
    consumers: list[str] = field(default_factory=list)
    width: int = 0  # output channels of the first producer (more than len(channels) where a shuffle ties them)
    blocks: list[list[int]] | None = None  # each block must lose the same number of channels
    pinned: str | None = None  # why the group is left alone

    @property
    def prunable(self) -> bool:
        return self.pinned is None


@dataclass
class Analysis:
    """The dependency groups of one model (see the module docstring)."""

    uf: UnionFind
    slices: list[ParamSlice]
    grouped_inputs: list[GroupedInput]
    depthwise: set[str]  # modules whose `groups` follows their channel count
    layers: dict[str, Layer]
    groups: list[Group]
    notes: list[str]  # pins that are not about one group

    @property
    def macs(self) -> int:
        return sum(layer.macs for layer in self.layers.values())


def analyze(ep: ExportedProgram) -> Analysis:
    """The dependency groups of an exported model."""
    t = ChannelTracker(ep)
    t.run()
    uf = t.uf
    # Groups: the logical channels each producer ("out" slice) makes, joined where they overlap.
    owner: dict[int, int] = {}  # root -> group index
    groups: list[Group] = []
    for s in t.slices:
        if s.role != "out":
            continue
        roots = [uf.find(int(a)) for a in s.atoms]
        module = s.name.rpartition(".")[0]
        found = sorted({owner[r] for r in roots if r in owner})
        if not found:
            g = Group(len(groups), [], [], width=len(s.atoms))
            groups.append(g)
        else:
            g = groups[found[0]]
            for other_index in found[1:]:  # two producers' channels are tied: one group
                other = groups[other_index]
                for r in other.channels:
                    owner[r] = g.index
                g.channels.extend(r for r in other.channels if r not in g.channels)
                g.producers.extend(p for p in other.producers if p not in g.producers)
                other.channels, other.producers = [], []
        for r in roots:
            if owner.get(r) != g.index:
                owner[r] = g.index
                g.channels.append(r)
        if module not in g.producers:
            g.producers.append(module)
    groups = [g for g in groups if g.channels]
    for i, g in enumerate(groups):
        g.index = i
    by_root = {r: g for g in groups for r in g.channels}
    for s in t.slices:
        if s.role == "in":
            module = s.name.rpartition(".")[0]
            for g in {id(by_root[r]): by_root[r] for r in (uf.find(int(a)) for a in s.atoms) if r in by_root}.values():
                if module not in g.consumers:
                    g.consumers.append(module)
    notes = []
    for blocks, what in t.partitions:
        root_blocks = [sorted({uf.find(int(a)) for a in b if a >= 0}) for b in blocks]
        touched = {id(by_root[r]): by_root[r] for b in root_blocks for r in b if r in by_root}
        if len(touched) != 1:
            for g in touched.values():
                g.pinned = g.pinned or f"{what} across {len(touched)} groups"
            if not touched:
                notes.append(what)
            continue
        (g,) = touched.values()
        if sum(map(len, root_blocks)) != len(set().union(*map(set, root_blocks))):
            g.pinned = g.pinned or f"{what}: its blocks share channels"
        elif set().union(*map(set, root_blocks)) != set(g.channels) or len({len(b) for b in root_blocks}) != 1:
            g.pinned = g.pinned or f"{what} covers part of the group"
        elif g.blocks is None:
            g.blocks = root_blocks
        elif sorted(map(tuple, g.blocks)) != sorted(map(tuple, root_blocks)):
            g.pinned = g.pinned or f"{what} conflicts with another block structure"
    for g in groups:
        for r in g.channels:
            if r in uf.pinned:
                g.pinned = g.pinned or uf.pinned[r]
                break
    # A parameter sliced by a channel rule and also read as a plain tensor (a
    # shared weight used functionally, say) keeps its shape: its groups stay.
    for s in t.slices:
        if s.name in t.tensor_reads:
            for r in {uf.find(int(a)) for a in s.atoms if a >= 0}:
                if r in by_root:
                    by_root[r].pinned = by_root[r].pinned or f"{s.name} is also read outside a layer tools/prune models"
    return Analysis(uf, t.slices, t.grouped_inputs, t.depthwise, t.layers, groups, notes)


def export(module: torch.nn.Module, example: tuple[torch.Tensor, ...]) -> ExportedProgram:
    """torch.export of the model in eval mode, for analysis (no decompositions)."""
    return torch.export.export(module.eval(), tuple(example))
