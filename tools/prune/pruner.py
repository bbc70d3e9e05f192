"""The library API: prune a model spec and report what it bought.

    from tools.prune.pruner import PruneOptions, prune
    result = prune("models/bench/mobilenet_v2_224.py", PruneOptions(target_latency=0.6))
    result.write("out/")   # model.py, pruned.pt, plan.json, report.json

Steps: export and find the dependency groups (graph.py), score channels
(importance.py), choose what each group keeps (search.py; latency measured on
the Pare runtime), apply the plan (plan.py), recalibrate batch norm and
optionally distil (recover.py), then measure: params, MACs, Pare latency of
both models interleaved, and agreement with the unpruned model.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from tools import REPO_ROOT
from tools.prune import graph, importance, recover
from tools.prune.data import Batch, load_data
from tools.prune.errors import PruneError
from tools.prune.latency import PareTimer
from tools.prune.plan import Plan, make_plan
from tools.prune.recover import first_output
from tools.prune.search import ROUNDING, Search, count_params
from tools.tracer.errors import TracerError
from tools.tracer.model_spec import ModelSpec, load_model_spec


@dataclass(frozen=True)
class PruneOptions:
    ratio: float | None = None  # fraction of each group's channels removed (equal) or of all (global)
    strategy: str = "equal"
    target_latency: float | None = None  # fraction of the original's Pare latency
    target_params: float | None = None  # fraction of the original's parameters
    importance: str = "l2"
    runtime: Path | None = None  # Pare x86_64 runtime for latency; default: the full runtime
    data: Path | None = None  # DATA.py: data() -> [(inputs, labels or None), ...]
    finetune_steps: int = 0
    round_to: int | None = None  # channel rounding unit; None: Pare's kernel tiles (search.ROUNDING)
    recalibrate: bool = True
    measure: bool = True  # time both models on Pare for the report
    rounds: int = 7  # timing rounds per measurement

    def check(self) -> None:
        chosen = [x is not None for x in (self.ratio, self.target_latency, self.target_params)]
        if sum(chosen) != 1:
            raise PruneError("give exactly one of --ratio R, --target-latency F, --target-params F")
        if self.ratio is not None and not 0 <= self.ratio < 1:
            raise PruneError(f"--ratio {self.ratio}: must be in [0, 1) (the fraction of channels removed)")
        for flag, value in (("--target-latency", self.target_latency), ("--target-params", self.target_params)):
            if value is not None and not 0 < value <= 1:
                raise PruneError(f"{flag} {value}: must be in (0, 1] (a fraction of the original)")
        if self.finetune_steps < 0:
            raise PruneError(f"--finetune-steps {self.finetune_steps}: must be >= 0")
        if self.importance == "taylor" and self.data is None:
            raise PruneError("taylor importance needs data: pass --data DATA.py (docs/prune.md)")
        if self.round_to is not None and self.round_to < 1:
            raise PruneError(f"--round-to {self.round_to}: must be >= 1")


@dataclass
class PruneResult:
    spec: ModelSpec  # the original
    model: nn.Module  # pruned, eval mode
    plan: Plan
    report: dict = field(default_factory=dict)

    def write(
        self, out: str | Path, *, runtime_size: bool = False, info: Callable[[str], None] = lambda line: None
    ) -> Path:
        """OUT/model.py (a model spec), pruned.pt (weights), plan.json and
        report.json; with runtime_size, also both models' manifests and
        their selective runtime's size (runtime_size.py), in the report."""
        from tools.prune.runtime_size import runtime_sizes
        from tools.prune.saved import write_outputs, write_report

        out = write_outputs(Path(out), self)
        if runtime_size:
            self.report["selective_runtime"] = runtime_sizes(self.spec, out, info)
            write_report(out, self.report)
        return out


def agreement(original: nn.Module, pruned: nn.Module, inputs: Sequence[tuple]) -> dict:
    """Cosine similarity of the first outputs (mean and worst) and top-1 agreement for (batch, classes) logits."""
    cosines, agree, rows = [], 0, 0
    with torch.no_grad():
        for x in inputs:
            a, b = first_output(original(*x)).double(), first_output(pruned(*x)).double()
            cosines.append(float(nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0)))
            if a.dim() == 2 and a.shape[1] > 1:
                agree += int((a.argmax(1) == b.argmax(1)).sum())
                rows += a.shape[0]
    return {
        "cosine_similarity_mean": round(sum(cosines) / len(cosines), 6),
        "cosine_similarity_min": round(min(cosines), 6),
        "top1_agreement": round(agree / rows, 6) if rows else None,
        "inputs": len(inputs),
    }


def _accuracy(model: nn.Module, batches: Sequence[Batch]) -> float | None:
    right = total = 0
    with torch.no_grad():
        for x, labels in batches:
            if labels is None:
                return None
            right += int((first_output(model(*x)).argmax(-1) == labels).sum())
            total += labels.numel()
    return round(right / total, 6) if total else None


def prune(
    spec: str | Path | ModelSpec,
    options: PruneOptions,
    info: Callable[[str], None] = lambda line: None,
) -> PruneResult:
    """Prunes a model spec as `options` say (module docstring)."""
    options.check()
    if not isinstance(spec, ModelSpec):
        try:
            spec = load_model_spec(spec)
        except TracerError as e:
            raise PruneError(str(e)) from None
    original = spec.module.eval()
    batches = load_data(options.data) if options.data else []
    used_inputs = list(spec.inputs) + [x for x, _ in batches]
    info(f"exporting {spec.path.name} and finding dependency groups")
    try:
        analysis = graph.analyze(graph.export(original, spec.inputs[0]))
    except Exception as e:  # torch.export's many failure types: the user's model
        raise PruneError(f"{spec.path}: torch.export failed ({type(e).__name__}: {str(e).splitlines()[0]})") from None
    prunable = [g for g in analysis.groups if g.prunable]
    if not prunable:
        reasons = sorted({g.pinned for g in analysis.groups})
        raise PruneError(
            f"{spec.path}: no group of channels can be pruned safely ({'; '.join(reasons) or 'no layers'})"
        )
    info(f"{len(analysis.groups)} dependency groups, {len(prunable)} prunable")
    scores, notes = importance.scores(original, analysis, options.importance, batches)
    search = Search(original, analysis, scores, options.round_to)
    timer = None
    latency_search = None
    if options.target_latency is not None or options.measure:
        timer = PareTimer(options.runtime, spec, rounds=options.rounds)
    if options.target_latency is not None:
        keeps, latency_search = search.target_latency(options.target_latency, timer.median_us, info)
    elif options.target_params is not None:
        keeps = search.target_params(options.target_params)
    else:
        keeps = search.by_ratio(options.strategy, options.ratio)
    plan = make_plan(analysis, search.removed(keeps))
    pruned, _ = search.pruned(keeps)
    recalibrated = 0
    if options.finetune_steps:
        info(f"fine-tuning by distillation from the unpruned model, {options.finetune_steps} steps")
        losses = recover.distill(pruned, copy.deepcopy(original), used_inputs, options.finetune_steps, info)
    else:
        losses = []
    if options.recalibrate:
        recalibrated = recover.recalibrate_batch_norm(pruned, used_inputs)
    pruned.eval()
    after = graph.analyze(graph.export(pruned, spec.inputs[0]))
    report = {
        "model": os.path.relpath(spec.path, REPO_ROOT) if spec.path.is_relative_to(REPO_ROOT) else str(spec.path),
        "strategy": _strategy(options),
        "importance": options.importance,
        "rounding": (
            {"unit": options.round_to}
            if options.round_to
            else {"conv_out_channels": ROUNDING["conv"], "linear_out_features": ROUNDING["linear"]}
        ),
        "params": {"before": count_params(original), "after": count_params(pruned)},
        "macs": {"before": analysis.macs, "after": after.macs},
        "groups": _groups(analysis, keeps, search),
        "notes": notes,
        "recovery": {
            "batch_norm_recalibrated": recalibrated,
            "recalibration_inputs": len(used_inputs) if recalibrated else 0,
            "finetune_steps": options.finetune_steps,
            "distillation_loss_first_last": losses,
        },
        "data": _data_note(options, batches, spec),
        "agreement": agreement(original, pruned, used_inputs),
    }
    if batches and batches[0][1] is not None:
        report["accuracy_on_data"] = {"before": _accuracy(original, batches), "after": _accuracy(pruned, batches)}
    if latency_search is not None:
        report["latency_search"] = latency_search
    if timer is not None and options.measure:
        info("timing the original and the pruned model on Pare, interleaved")
        times = timer.median_us({"before": original, "after": pruned})
        report["pare_latency_us"] = {
            "runtime": str(timer.path),
            "before": round(times["before"], 1),
            "after": round(times["after"], 1),
            "ratio": round(times["after"] / times["before"], 4),
        }
    return PruneResult(spec, pruned, plan, report)


def _strategy(options: PruneOptions) -> dict:
    if options.target_latency is not None:
        return {"target_latency": options.target_latency}
    if options.target_params is not None:
        return {"target_params": options.target_params}
    return {"ratio": options.ratio, "strategy": options.strategy}


def _data_note(options: PruneOptions, batches: Sequence[Batch], spec: ModelSpec) -> str:
    if not batches:
        return (
            f"no data: importance from weights only; recalibration and agreement on the spec's "
            f"{len(spec.inputs)} representative inputs; no accuracy measured"
        )
    labelled = "with labels" if batches[0][1] is not None else "without labels"
    return (
        f"{options.data}: {len(batches)} batches {labelled}, plus the spec's {len(spec.inputs)} representative inputs"
    )


def _groups(analysis: graph.Analysis, keeps: dict[int, int], search: Search) -> dict:
    pruned, alone = [], []
    for g in analysis.groups:
        # channels: logical ones, what pruning counts; width: the first producer's output channels
        row = {"producers": g.producers, "channels": len(g.channels), "width": g.width}
        if g.prunable:
            row["kept"] = keeps.get(g.index, len(g.channels))
            row["unit"] = search.unit(g)
            pruned.append(row)
        else:
            alone.append({**row, "reason": g.pinned})
    return {"pruned": pruned, "left_alone": alone}
