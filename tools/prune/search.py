"""Strategies: how many channels each group keeps, and which.

- `equal`: every prunable group loses the same fraction of its channels;
- `global`: one threshold on importance normalised per group (each group's
  scores over their mean), so groups of unimportant channels lose more;
- `--target-params F`: the global strategy with the ratio found by bisection
  so that the pruned model has at most F times the parameters;
- `--target-latency F`: a search measured on the Pare runtime. Each group's
  latency slope (µs saved per channel removed) is measured by timing the model
  with that group halved against the unpruned model, in the same rounds; then
  channels are removed one rounding unit at a time where they buy the most
  latency per unit of importance lost, until the predicted latency reaches
  F; the pruned model is measured, and the search goes on from there with
  its prediction corrected by what was measured, until the measured
  latency is at most F times the original's.

Channel counts are rounded to a unit that suits Pare's kernels (ROUNDING):
a convolution's output channels are the rows of its GEMM, packed in panels
of gemm::kMR = 6 rows, and a linear's output features are its columns, in
panels of gemm::kPanelCols = 8 (runtime/kernels/common/gemm.h); a count
between multiples pays for the padded panel anyway. Groups with block
structure (grouped convolutions, chunks) round to a multiple of their block
count instead. Every group keeps at least MIN_KEEP of its channels.
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from torch import nn

from tools.prune import importance
from tools.prune.errors import PruneError
from tools.prune.graph import Analysis, Group
from tools.prune.plan import Plan, apply_plan, make_plan, select

# Kernel tile widths (runtime/kernels/common/gemm.h): kMR rows for convolution
# outputs, kPanelCols columns for linear outputs.
ROUNDING = {"conv": 6, "linear": 8}
MIN_KEEP = 0.1  # no group loses more than 90% of its channels
MAX_LATENCY_ROUNDS = 8
STRATEGIES = ("equal", "global")


@dataclass
class Search:
    model: nn.Module  # the original, untouched
    analysis: Analysis
    scores: dict[int, np.ndarray]  # group index -> importance, group.channels order
    round_to: int | None = None  # None: ROUNDING by the group's producers

    def __post_init__(self) -> None:
        self.normalized = importance.normalized(self.scores)  # comparable across groups

    @property
    def prunable(self) -> list[Group]:
        return [g for g in self.analysis.groups if g.prunable and g.index in self.scores]

    def unit(self, group: Group) -> int:
        if group.blocks:
            return len(group.blocks)
        if self.round_to:
            return self.round_to
        kinds = {self.analysis.layers[p].kind for p in group.producers if p in self.analysis.layers}
        return ROUNDING["linear"] if kinds == {"linear"} else ROUNDING["conv"]

    def floor(self, group: Group) -> int:
        unit = self.unit(group)
        return min(len(group.channels), max(unit, math.ceil(len(group.channels) * MIN_KEEP / unit) * unit))

    def round_keep(self, group: Group, want: float) -> int:
        n = len(group.channels)
        if want >= n:
            return n
        unit = self.unit(group)
        return min(n, max(self.floor(group), int(round(want / unit)) * unit))

    def removed(self, keeps: dict[int, int]) -> set[int]:
        out: set[int] = set()
        for g in self.prunable:
            keep = keeps.get(g.index, len(g.channels))
            if keep < len(g.channels):
                out |= select(g, self.scores[g.index], keep)
        return out

    def pruned(self, keeps: dict[int, int]) -> tuple[nn.Module, Plan]:
        plan = make_plan(self.analysis, self.removed(keeps))
        return apply_plan(copy.deepcopy(self.model), plan), plan

    # --- ratio strategies ------------------------------------------------

    def equal(self, ratio: float) -> dict[int, int]:
        return {g.index: self.round_keep(g, len(g.channels) * (1 - ratio)) for g in self.prunable}

    def global_threshold(self, ratio: float) -> dict[int, int]:
        normalized = {g.index: self.normalized[g.index] for g in self.prunable}
        everything = np.sort(np.concatenate(list(normalized.values()))) if normalized else np.zeros(0)
        count = int(round(len(everything) * ratio))
        if count == 0:
            return {g.index: len(g.channels) for g in self.prunable}
        threshold = everything[count - 1]
        return {g.index: self.round_keep(g, int((normalized[g.index] > threshold).sum())) for g in self.prunable}

    def by_ratio(self, strategy: str, ratio: float) -> dict[int, int]:
        if strategy == "equal":
            return self.equal(ratio)
        if strategy == "global":
            return self.global_threshold(ratio)
        raise PruneError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")

    def target_params(self, fraction: float) -> dict[int, int]:
        """The global ratio whose pruned model has the most parameters at most `fraction` of the original's."""
        total = count_params(self.model)
        low, high = 0.0, 1.0 - MIN_KEEP
        best = self.global_threshold(high)
        smallest = count_params(self.pruned(best)[0])
        if smallest > fraction * total:
            raise PruneError(
                f"--target-params {fraction} cannot be reached: pruning every group to {MIN_KEEP:.0%} leaves "
                f"{smallest / total:.3f} of the parameters (the rest are in layers left alone)"
            )
        for _ in range(14):
            mid = (low + high) / 2
            keeps = self.global_threshold(mid)
            if count_params(self.pruned(keeps)[0]) <= fraction * total:
                high, best = mid, keeps
            else:
                low = mid
        return best

    # --- latency ---------------------------------------------------------

    def target_latency(
        self, fraction: float, time_us: Callable[[dict[str, nn.Module]], dict[str, float]], info
    ) -> tuple[dict[int, int], dict]:
        """Measured search (module docstring). time_us(models) -> median µs of each, interleaved."""
        candidates = [g for g in self.prunable if self.floor(g) < len(g.channels)]
        probes = {}
        for g in candidates:
            keep = self.round_keep(g, len(g.channels) / 2)
            if keep < len(g.channels):
                probes[g.index] = keep
        info(f"measuring the latency slope of {len(probes)} groups on Pare (each halved, timed against the original)")
        models = {"original": self.model}
        models.update({f"group{i}": self.pruned({i: keep})[0] for i, keep in probes.items()})
        times = time_us(models)
        base = times["original"]
        slopes = {}
        for i, keep in probes.items():
            n = len(self.analysis.groups[i].channels)
            slopes[i] = (base - times[f"group{i}"]) / (n - keep)
        useful = {i: s for i, s in slopes.items() if s > 0}
        info(
            f"original: {base:.0f} µs; {len(useful)} of {len(slopes)} groups save time when pruned "
            f"(best {max(useful.values(), default=0):.2f} µs per channel)"
        )
        target = fraction * base
        keeps = {g.index: len(g.channels) for g in self.prunable}
        order = {g.index: self._removal_order(g) for g in self.prunable}
        heap: list[tuple[float, int]] = []

        def push(i: int) -> None:
            g = self.analysis.groups[i]
            nxt = self._next_keep(g, keeps[i])
            if nxt is None:
                return
            cost = float(sum(order[i][len(g.channels) - keeps[i] : len(g.channels) - nxt]))
            gain = useful[i] * (keeps[i] - nxt)
            heapq.heappush(heap, (cost / gain, i))

        for i in useful:
            push(i)
        predicted = base
        correction = 1.0
        rounds = []
        measured = base
        for round_index in range(MAX_LATENCY_ROUNDS):
            goal = measured - (measured - target) / correction if round_index else target
            while predicted > goal and heap:
                _, i = heapq.heappop(heap)
                g = self.analysis.groups[i]
                nxt = self._next_keep(g, keeps[i])
                predicted -= useful[i] * (keeps[i] - nxt)
                keeps[i] = nxt
                push(i)
            times = time_us({"original": self.model, "pruned": self.pruned(keeps)[0]})
            before, measured_abs = times["original"], times["pruned"]
            measured = measured_abs / before * base  # in the first measurement's scale
            rounds.append({"predicted_us": round(predicted, 1), "measured_us": round(measured, 1)})
            info(
                f"round {round_index + 1}: predicted {predicted / base:.3f}, measured {measured_abs / before:.3f} "
                f"of the original ({measured_abs:.0f} / {before:.0f} µs)"
            )
            if measured <= target:
                break
            if not heap:
                info(f"cannot reach {fraction}: every group is at its floor ({MIN_KEEP:.0%} kept) or saves no time")
                break
            saved_predicted = base - predicted
            saved_measured = base - measured
            correction = max(0.2, min(5.0, saved_measured / saved_predicted)) if saved_predicted > 0 else 1.0
            predicted = measured
        details = {
            "original_us": round(base, 1),
            "slopes_us_per_channel": {str(i): round(s, 4) for i, s in sorted(slopes.items())},
            "rounds": rounds,
            "reached": measured <= target,
        }
        return keeps, details

    def _removal_order(self, group: Group) -> list[float]:
        """The normalized scores of the group's channels in the order they go (lowest first; per block, round-robin)."""
        score = dict(zip(group.channels, self.normalized[group.index]))
        if not group.blocks:
            return sorted(score.values())
        ranked = [sorted(score[r] for r in block) for block in group.blocks]
        return [ranked[b][k] for k in range(len(ranked[0])) for b in range(len(ranked))]

    def _next_keep(self, group: Group, keep: int) -> int | None:
        nxt = self.round_keep(group, keep - self.unit(group))
        return nxt if nxt < keep else None


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
