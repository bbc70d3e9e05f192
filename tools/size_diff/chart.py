"""A size report as a PNG: per platform, what the shipped file is made of and its largest items.

matplotlib (pinned in requirements.txt) is imported only here, so reports
and diffs work without it.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools.size_diff.attribution import BUCKETS, CORE, OTHER, SHARED_KERNELS, UNATTRIBUTED
from tools.size_diff.errors import SizeDiffError
from tools.size_diff.report import BUCKET_TITLES, bucket_total
from tools.verify.expected import KERNEL_DTYPE

_COLORS = {
    "op": "#1f77b4",
    "kernel_dtype": "#ff7f0e",
    "class": "#2ca02c",
    SHARED_KERNELS: "#17becf",
    CORE: "#9467bd",
    OTHER: "#8c564b",
    UNATTRIBUTED: "#bcbd22",
    "outside": "#c7c7c7",
}


def _bars(ax, items: list[tuple[int, str, str]], title: str) -> None:
    items = list(reversed(items))
    ax.barh(range(len(items)), [v for v, _, _ in items], color=[_COLORS[b] for _, _, b in items])
    ax.set_yticks(range(len(items)), [label for _, label, _ in items], fontsize=7)
    ax.set_xlabel("bytes")
    ax.set_title(title, fontsize=9)
    for i, (v, _, _) in enumerate(items):
        ax.text(v, i, f" {v:,}", va="center", fontsize=6)


def write_png(report: dict, path: str | os.PathLike[str], *, top: int = 12) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SizeDiffError("the PNG chart needs matplotlib: .venv/bin/pip install -r requirements.txt") from None

    platforms = list(report["platforms"].items())
    if not platforms:
        raise SizeDiffError("the report has no platforms to chart")
    fig, axes = plt.subplots(
        len(platforms),
        3,
        figsize=(18, 3.4 * len(platforms) + 0.8),
        squeeze=False,
        gridspec_kw={"width_ratios": [1, 1.2, 1.2]},
    )
    fig.suptitle(f"Pare size report: {report.get('target') or '(no target label)'}", fontsize=12)
    for row, (name, p) in enumerate(platforms):
        # 1: the shipped file, stacked by bucket, plus what lies outside sections.
        ax = axes[row][0]
        left = 0
        parts = [(b, bucket_total(p, b)) for b in BUCKETS] + [("outside", p["outside_sections_bytes"])]
        for bucket, value in parts:
            if value <= 0:
                continue
            label = BUCKET_TITLES.get(bucket, "outside sections")
            ax.barh([0], [value], left=left, color=_COLORS[bucket], label=f"{label} ({value:,})")
            left += value
        ax.set_yticks([0], [name])
        ax.set_xlabel("bytes")
        ax.set_title(f"{name}: {p['library']}, {p['file_bytes']:,} bytes shipped", fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3, frameon=False)

        # 2: what each op costs: its kernel plus the dtype cases instantiated from it.
        inclusive = p.get("op_inclusive") or p["attribution"]["op"]
        ops = sorted(((v, k, "op") for k, v in inclusive.items() if v > 0), key=lambda x: (-x[0], x[1]))[:top]
        _bars(axes[row][1], ops, f"{name}: ops, with the dtype cases of their own kernels")

        # 3: the rest, disjoint: dtype cases, classes, then core, other, unattributed.
        items = [
            (v, ("dtype " if b == KERNEL_DTYPE else "class ") + k, b)
            for b in (KERNEL_DTYPE, "class")
            for k, v in p["attribution"][b].items()
            if v > 0
        ]
        items = sorted(items, key=lambda x: (-x[0], x[1]))[:top]
        items += [
            (bucket_total(p, b), BUCKET_TITLES[b], b)
            for b in (SHARED_KERNELS, CORE, OTHER, UNATTRIBUTED)
            if bucket_total(p, b) > 0
        ]
        _bars(
            axes[row][2], items, f"{name}: dtype cases, classes, the rest (residual {p['attribution']['residual']} B)"
        )
    fig.tight_layout()
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # No timestamps in the file: identical reports give identical PNGs.
        fig.savefig(path, dpi=110, metadata={"Software": None})
    except OSError as e:
        raise SizeDiffError(f"{path}: cannot write ({e.strerror})") from None
    finally:
        plt.close(fig)
