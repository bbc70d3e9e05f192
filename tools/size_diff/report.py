"""Size reports (schema pare.size_report, version 1): one target, every platform it was built for.

    report = build_report("//apps/demo:runtime", bundle_runs("bazel-bin/apps/demo/runtime"))
    write_json(report, "demo.json"); print(render_markdown(report))

Per platform: the shipped file's size, its allocated sections, the bytes
outside them (headers, segment padding, Mach-O link-edit data), and the
attribution of the section bytes (tools/size_diff/attribution.py) with the
residual stated. Reports hold no absolute paths or times, so two builds of the
same sources give identical reports.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.bundle import BundleError, load_bundle
from tools.size_diff.attribution import (
    BUCKETS,
    CORE,
    KEYED_BUCKETS,
    OTHER,
    SHARED_KERNELS,
    UNATTRIBUTED,
    attribute,
    check_twins,
)
from tools.size_diff.causes import SYMBOL, GapExplainer, LibraryBytes, SourceOwners
from tools.size_diff.errors import SizeDiffError
from tools.verify.binary import read_binary
from tools.verify.expected import CLASS, KERNEL_DTYPE, OP, Expected, load_expected
from tools.verify.platforms import get_platform, infer_platform
from tools.verify.verify import bundle_paths, bundle_platforms

SCHEMA = "pare.size_report"
VERSION = 1

BUCKET_TITLES = {
    OP: "ops",
    KERNEL_DTYPE: "kernel dtypes",
    CLASS: "classes",
    SHARED_KERNELS: "shared kernels",
    CORE: "core",
    OTHER: "other",
    UNATTRIBUTED: "unattributed",
}


@dataclass(frozen=True)
class Run:
    """One platform's library pair to measure."""

    platform: str | None  # None: infer from the binary
    stripped: Path | None  # the shipped library; None: measure the unstripped one's file
    unstripped: Path
    expected: Path | None


def progress(msg: str) -> None:
    print(f"size_diff: {msg}", file=sys.stderr, flush=True)


def _display(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


def measure(
    run: Run,
    *,
    expected: Expected | None = None,
    cxxfilt: str | None = None,
    sources: SourceOwners | None = None,
) -> tuple[str, dict]:
    """(platform, that platform's report entry). `sources` (default: this checkout's runtime/) says who owns
    the string literals between symbols."""
    unstripped = read_binary(run.unstripped, cxxfilt=cxxfilt)
    if not unstripped.has_symbol_table:
        raise SizeDiffError(
            f"{run.unstripped}: has no full symbol table (it is stripped); pass its unstripped twin with --unstripped "
            "(bazel-bin/<pkg>/<name>/<platform>/unstripped/<lib>)"
        )
    shipped = unstripped
    if run.stripped is not None:
        shipped = read_binary(run.stripped, demangle=False)
        check_twins(shipped, unstripped)
    platform = get_platform(run.platform).name if run.platform else infer_platform(shipped).name
    if expected is None and run.expected is not None:
        expected = load_expected(run.expected)
    if sources is None:
        sources = SourceOwners(expected)
    attr = attribute(unstripped, expected, shipped.sections, gaps=GapExplainer(LibraryBytes(run.unstripped), sources))
    file_section_bytes = sum(s.bytes for s in attr.sections if s.file_backed)
    entry = {
        "library": shipped.path.name,
        "format": shipped.format,
        "arch": shipped.arch,
        "file_bytes": shipped.file_bytes,
        "unstripped_file_bytes": unstripped.file_bytes,
        "stripped": run.stripped is not None,
        "section_bytes": attr.section_bytes,
        "file_section_bytes": file_section_bytes,
        "outside_sections_bytes": shipped.file_bytes - file_section_bytes,
        "expected_symbols": (
            {"file": expected.path.name, "manifest_sha256": expected.manifest_sha256} if expected else None
        ),
        "sections": [
            {
                "name": s.name,
                "bytes": s.bytes,
                "file_backed": s.file_backed,
                "attributed": s.attributed,
                "unattributed": s.unattributed,
            }
            for s in attr.sections
        ],
        "attribution": {
            **{b: attr.keyed[b] for b in KEYED_BUCKETS},
            SHARED_KERNELS: attr.shared_kernels,
            CORE: attr.core,
            OTHER: attr.other,
            UNATTRIBUTED: attr.unattributed,
            "residual": attr.residual,
        },
        "op_inclusive": attr.op_inclusive,
        # Symbols, and the rows for bytes between them ("kind": string, relocations, linker table,
        # padding; with the "reason" they are there).
        "symbols": [
            {"name": a.name, "bytes": a.bytes, "section": a.section, "bucket": a.bucket, "key": a.key}
            | ({"kind": a.kind, "reason": a.reason} if a.kind != SYMBOL else {})
            for a in attr.symbols
            if a.bytes
        ],
    }
    return platform, entry


def build_report(
    target: str | None,
    runs: list[Run],
    *,
    cxxfilt: str | None = None,
    runtime_dir: str | os.PathLike[str] | None = None,
) -> dict:
    """The report of `runs`; string literals are looked up in `runtime_dir` (default: this checkout's runtime/)."""
    platforms = {}
    cache: dict[Path, Expected] = {}
    owners: dict[Path | None, SourceOwners] = {}
    for run in runs:
        what = run.platform or run.unstripped.name
        progress(f"measuring {what} ({_display(run.stripped or run.unstripped)})")
        expected = None
        if run.expected is not None:
            expected = cache.get(run.expected) or cache.setdefault(run.expected, load_expected(run.expected))
        if run.expected not in owners:
            owners[run.expected] = SourceOwners(expected, runtime_dir)
        platform, entry = measure(run, expected=expected, cxxfilt=cxxfilt, sources=owners[run.expected])
        if platform in platforms:
            raise SizeDiffError(f"two libraries for platform {platform}; give each platform once")
        platforms[platform] = entry
    return {"schema": SCHEMA, "version": VERSION, "target": target, "platforms": dict(sorted(platforms.items()))}


def bundle_runs(
    bundle: str | os.PathLike[str],
    *,
    expected: str | os.PathLike[str] | None = None,
    platforms: list[str] | None = None,
) -> list[Run]:
    """The runs of a bundle, bazel-bin/<pkg>/<name> (its bundle.json: tools/bundle.py)."""
    runs = []
    for p in platforms or bundle_platforms(bundle):
        unstripped, stripped, own_expected = bundle_paths(bundle, p)
        exp = Path(expected) if expected else own_expected
        if exp is None or not exp.is_file():
            if expected:
                raise SizeDiffError(f"--expected {exp}: no such file")
            raise SizeDiffError(
                f"{bundle}: no expected_symbols.json (not a selective_runtime output?); pass --expected FILE"
            )
        runs.append(Run(p, stripped if stripped.is_file() else None, unstripped, exp))
    return runs


def target_from_bundle(bundle: str | os.PathLike[str]) -> str | None:
    """The label that built the bundle (its bundle.json), else None."""
    try:
        return load_bundle(bundle).target
    except BundleError:
        return None


# --- reading ---


def load_report(path: str | os.PathLike[str]) -> dict:
    path = Path(path)
    if not path.is_file():
        raise SizeDiffError(
            f"{path}: no such file; write one with `python -m tools.size_diff report ... --json {path}`"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SizeDiffError(
            f"{path}: not valid JSON ({e}); regenerate it with `python -m tools.size_diff report`"
        ) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SizeDiffError(
            f'{path}: not a size report (want "schema": "{SCHEMA}"); make one with `python -m tools.size_diff report`'
        )
    if data.get("version") != VERSION:
        raise SizeDiffError(
            f"{path}: size report version {data.get('version')!r}; this tool reads {VERSION}: regenerate it"
        )
    plats = data.get("platforms")
    if not isinstance(plats, dict):
        raise SizeDiffError(f"{path}: `platforms` must be an object; regenerate the report")
    for name, p in plats.items():
        for key in ("file_bytes", "section_bytes", "attribution", "symbols", "sections"):
            if key not in p:
                raise SizeDiffError(f"{path}: platform {name} lacks `{key}`; regenerate the report")
    return data


def write_json(report: dict, path: str | os.PathLike[str]) -> None:
    _write(path, json.dumps(report, indent=2, sort_keys=False) + "\n")


def _write(path: str | os.PathLike[str], text: str) -> None:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise SizeDiffError(f"{path}: cannot write ({e.strerror})") from None


# --- markdown ---


def n(x: int) -> str:
    return f"{x:,}"


def signed(x: int) -> str:
    return f"{x:+,}"


def bucket_total(p: dict, bucket: str) -> int:
    v = p["attribution"].get(bucket, 0)  # a report from before a bucket existed has none of it
    return sum(v.values()) if isinstance(v, dict) else v


def render_markdown(report: dict, *, top: int = 10) -> str:
    target = report.get("target") or "(no target label)"
    out = [f"## Size report: {target}", ""]
    head = ["platform", "shipped file", "sections"] + [BUCKET_TITLES[b] for b in BUCKETS] + ["outside sections"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|---" + "|---:" * (len(head) - 1) + "|")
    for name, p in report["platforms"].items():
        cells = [name, n(p["file_bytes"]), n(p["section_bytes"])] + [n(bucket_total(p, b)) for b in BUCKETS]
        cells.append(n(p["outside_sections_bytes"]))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for name, p in report["platforms"].items():
        residual = p["attribution"]["residual"]
        un = bucket_total(p, UNATTRIBUTED)
        pct = 100.0 * un / p["section_bytes"] if p["section_bytes"] else 0.0
        out.append(
            f"- {name}: residual {n(residual)} bytes (sections = ops + kernel dtypes + classes + shared kernels + core + other + "
            f"unattributed); unattributed {n(un)} bytes ({pct:.1f}% of section bytes: what neither a symbol nor a rule of docs/size.md explains, e.g. jump tables and constants)."
        )
    out.append("")
    out.append(
        "Bytes. `shipped file` = sections + outside sections (ELF/Mach-O headers, segment alignment padding, "
        "Mach-O link-edit data); `.bss`/zerofill sections count in `sections` but not in the file."
    )
    for name, p in report["platforms"].items():
        out += ["", f"### {name}: {p['library']} ({p['format']}, {p['arch']})", ""]
        inclusive = p.get("op_inclusive", {})
        ops = sorted(
            ((k, v) for k, v in p["attribution"][OP].items() if v or inclusive.get(k)),
            key=lambda kv: (-inclusive.get(kv[0], kv[1]), kv[0]),
        )
        if ops:
            out += ["| op | kernel | incl. its dtype cases |", "|---|---:|---:|"]
            out += [f"| {k} | {n(v)} | {n(inclusive.get(k, v))} |" for k, v in ops[:top]]
            if len(ops) > top:
                out.append(f"| ({len(ops) - top} more) | | |")
            out.append("")
        for bucket, title in ((KERNEL_DTYPE, "kernel tag/dtype"), (CLASS, "class")):
            items = sorted(((k, v) for k, v in p["attribution"][bucket].items() if v), key=lambda kv: (-kv[1], kv[0]))
            if items:
                out += [f"| {title} | bytes |", "|---|---:|"]
                out += [f"| {k} | {n(v)} |" for k, v in items[:top]]
                if len(items) > top:
                    out.append(f"| ({len(items) - top} more) | |")
                out.append("")
        out += ["| section | bytes | attributed | unattributed |", "|---|---:|---:|---:|"]
        for s in p["sections"]:
            mark = "" if s["file_backed"] else " (no file bytes)"
            out.append(f"| `{s['name']}`{mark} | {n(s['bytes'])} | {n(s['attributed'])} | {n(s['unattributed'])} |")
        out += ["", "| top symbols | bucket | bytes |", "|---|---|---:|"]
        for s in p["symbols"][:top]:
            label = s["bucket"] + (f" {s['key']}" if s["key"] else "")
            out.append(f"| `{_md_escape(s['name'])}` | {label} | {n(s['bytes'])} |")
    return "\n".join(out) + "\n"


def _md_escape(name: str, limit: int = 120) -> str:
    name = name.replace("|", "\\|").replace("`", "'")
    return name if len(name) <= limit else name[: limit - 3] + "..."


def write_markdown(report: dict, path: str | os.PathLike[str]) -> None:
    _write(path, render_markdown(report))
