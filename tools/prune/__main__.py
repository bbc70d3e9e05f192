"""`python -m tools.prune MODEL.py (--ratio R | --target-latency F | --target-params F) -o OUT/`:
structured channel pruning measured on Pare (docs/prune.md).

Exit status: 0 pruned (a latency target that could not be reached is said
so in the table and report, and still writes OUT/), 2 a user error (one
line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.cli_parser import tool_parser

PROG = "python -m tools.prune"


def _parser() -> argparse.ArgumentParser:
    from tools.prune.errors import PruneError
    from tools.prune.importance import KINDS
    from tools.prune.search import STRATEGIES

    p = tool_parser(
        PruneError,
        PROG,
        "Remove whole channels (filters, neurons) from a model spec, choosing them by importance "
        "and, with --target-latency, by latency measured on the Pare runtime; write the pruned model as a "
        "model spec, its weights and a report (params, MACs, Pare latency, agreement with the original).",
        (
            f"{PROG} models/bench/mobilenet_v2_224.py --target-latency 0.6 -o out/mbv2",
            f"{PROG} apps/demo/model.py --ratio 0.3 --strategy global -o out/demo",
        ),
    )
    p.add_argument("model", type=Path, help="model spec (docs/model_spec.md)")
    goal = p.add_mutually_exclusive_group(required=True)
    goal.add_argument("--ratio", type=float, help="fraction of channels to remove (see --strategy)")
    goal.add_argument("--target-latency", type=float, metavar="F", help="prune to F times the Pare latency")
    goal.add_argument("--target-params", type=float, metavar="F", help="prune to F times the parameters")
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="equal",
        help="with --ratio: the same fraction from every group (equal, default) or one importance "
        "threshold over all groups (global)",
    )
    p.add_argument(
        "--importance", choices=KINDS, default="l2", help="channel importance (default l2; taylor needs --data)"
    )
    p.add_argument("--runtime", type=Path, help="linux_x86_64 Pare runtime to time on (default: //runtime:full)")
    p.add_argument("--data", type=Path, help="DATA.py defining data() -> [(inputs, labels or None), ...]")
    p.add_argument("--finetune-steps", type=int, default=0, metavar="N", help="distillation steps after pruning")
    p.add_argument("--round-to", type=int, metavar="N", help="channel count unit (default: Pare's kernel tiles)")
    p.add_argument("--no-recalibrate", action="store_true", help="keep the batch-norm statistics as pruned")
    p.add_argument("--no-timing", action="store_true", help="do not time the models on Pare for the report")
    p.add_argument(
        "--no-size",
        action="store_true",
        help="do not trace both models and build their selective runtime (done when OUT is inside this workspace)",
    )
    p.add_argument("-o", "--out", type=Path, required=True, help="output directory")
    return p


def table(report: dict) -> str:
    def row(what: str, before, after, ratio: str = "") -> str:
        return f"| {what} | {before} | {after} | {ratio} |"

    def frac(a, b) -> str:
        return f"{a / b:.3f}" if b else ""

    lines = ["| | before | after | after / before |", "|---|---:|---:|---:|"]
    params, macs = report["params"], report["macs"]
    lines.append(
        row("params", f"{params['before']:,}", f"{params['after']:,}", frac(params["after"], params["before"]))
    )
    lines.append(row("MACs", f"{macs['before']:,}", f"{macs['after']:,}", frac(macs["after"], macs["before"])))
    latency = report.get("pare_latency_us")
    if latency:
        lines.append(row("Pare latency, median µs", latency["before"], latency["after"], f"{latency['ratio']:.3f}"))
    runtime = report.get("selective_runtime")
    if runtime and runtime.get("bytes"):
        for platform, after in sorted(runtime["bytes"]["after"].items()):
            before = runtime["bytes"]["before"][platform]
            lines.append(row(f"selective runtime, {platform} B", f"{before:,}", f"{after:,}", frac(after, before)))
    agreement = report["agreement"]
    lines.append("")
    lines.append(
        f"agreement with the unpruned model on {agreement['inputs']} inputs: cosine similarity "
        f"{agreement['cosine_similarity_mean']:.4f} (min {agreement['cosine_similarity_min']:.4f})"
        + (f", top-1 {agreement['top1_agreement']:.3f}" if agreement["top1_agreement"] is not None else "")
    )
    if "accuracy_on_data" in report:
        acc = report["accuracy_on_data"]
        lines.append(f"accuracy on --data: {acc['before']:.3f} -> {acc['after']:.3f}")
    lines.append(f"data: {report['data']}")
    if runtime:
        same = "the same operators and dtypes" if runtime["same_selection"] else "different operators or dtypes"
        lines.append(f"selective runtime: both models traced and checked against torch; they select {same}")
        if runtime.get("not_built"):
            lines.append(f"  not built: {runtime['not_built']}")
    groups = report["groups"]
    lines.append(f"groups: {len(groups['pruned'])} pruned, {len(groups['left_alone'])} left alone")
    for g in groups["left_alone"]:
        lines.append(f"  left alone: {g['width']} channels of {', '.join(g['producers'][:2])}: {g['reason']}")
    search = report.get("latency_search")
    if search and not search["reached"]:
        lines.append("latency target NOT reached: every group is at its floor or saves no measurable time")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from tools.prune.errors import PruneError

    try:
        args = _parser().parse_args(argv)
        from tools.prune.pruner import PruneOptions, prune

        options = PruneOptions(
            ratio=args.ratio,
            strategy=args.strategy,
            target_latency=args.target_latency,
            target_params=args.target_params,
            importance=args.importance,
            runtime=args.runtime,
            data=args.data,
            finetune_steps=args.finetune_steps,
            round_to=args.round_to,
            recalibrate=not args.no_recalibrate,
            measure=not args.no_timing,
        )
        options.check()

        def info(line: str) -> None:
            print(f"prune: {line}", file=sys.stderr, flush=True)

        result = prune(args.model, options, info)
        out = result.write(args.out, runtime_size=not args.no_size, info=info)
    except PruneError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table(result.report))
    extra = ", manifest.yaml, original_manifest.yaml" if "selective_runtime" in result.report else ""
    print(f"\nwrote {out}/model.py, pruned.pt, plan.json, report.json{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
