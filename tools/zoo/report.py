"""The zoo's checked-in record (models/zoo/results.json) and its table in docs/model_zoo.md.

A run with --only updates those models' rows and keeps the others, so the
table always covers the whole zoo; rows of models no longer in the zoo are
dropped.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict
from pathlib import Path

from tools.doc_tables import replace_between
from tools.zoo.zoo import PLATFORMS, ModelResult, ZooError

BEGIN = "<!-- zoo-table:begin (written by python -m tools.zoo) -->"
END = "<!-- zoo-table:end -->"


def load_record(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"models": {}}


def merge(record: dict, results: list[ModelResult], zoo_models: list[str]) -> dict:
    models = {k: v for k, v in record.get("models", {}).items() if k in zoo_models}
    for r in results:
        row = asdict(r)
        row.pop("seconds")
        row.pop("manifest_changed")
        # The arm64 estimate is python -m tools.bench.arm64_cost --record's: kept.
        if models.get(r.model, {}).get("arm64"):
            row["arm64"] = models[r.model]["arm64"]
        models[r.model] = row
    return {"cpu": cpu_name(), "models": dict(sorted(models.items()))}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _bytes(n: int | None) -> str:
    return f"{n:,}" if n is not None else "–"


def table(record: dict) -> str:
    rows = list(record["models"].values())
    ok = [r for r in rows if r["status"] == "ok"]
    lines = [
        (
            f"{len(rows)} models: {len(ok)} trace, build for {len(PLATFORMS)} platforms and match torch eager on "
            f"linux_x86_64 and android_arm64 (qemu); {len(rows) - len(ok)} fail."
        ),
        "",
        "| model | kind | ops | status | android_arm64 B | ios_arm64 B | linux_x86_64 B | x86_64 ms |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        status = r["status"] if r["status"] == "ok" else f"**{r['status']}**"
        ms = f"{r['median_ms']:.2f}" if r.get("median_ms") is not None else "–"
        sizes = r.get("sizes") or {}
        lines.append(
            f"| {r['model']} | {r['kind']} | {r['operators'] if r['operators'] is not None else '–'} | "
            f"{status} | {' | '.join(_bytes(sizes.get(p)) for p in PLATFORMS)} | {ms} |"
        )
    failures = [r for r in rows if r["status"] != "ok"]
    if failures:
        lines += ["", "Failures:", ""]
        lines += [f"- `{r['model']}`: {r['status']}: {' '.join(r['error'].split())}" for r in failures]
    lines += [
        "",
        (
            f"x86_64 ms: median `execute()` of the model's first input on its own linux_x86_64 runtime, one "
            f"thread pinned to one CPU ({record.get('cpu', '?')}); sizes in bytes: the stripped .so for "
            "Android and Linux, the Mach-O section bytes for iOS (what linking the archive adds to an app)."
        ),
    ]
    return "\n".join(lines)


def update_doc(doc: Path, record: dict) -> None:
    replace_between(doc, BEGIN, END, table(record), ZooError)


def json_text(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True) + "\n"
